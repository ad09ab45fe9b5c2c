//! State built once per call site: a kernel's `#[state] s: &T` parameter, `T: OpState`, built
//! from the op's attributes.
//!
//! - Under XLA with handlers registered for the instantiate stage too (jaxlib, XLA FFI API 0.3
//!   and later; the Rust runner's plugin, API 0.2, whose state functions take no `stage`), `T`
//!   is built at XLA's INSTANTIATE stage, once per custom call in each compiled executable,
//!   handed to XLA (`XLA_FFI_State_Set`; the type's registered deleter runs when the
//!   executable is destroyed) and read back at each execution (`XLA_FFI_State_Get`).
//! - Everywhere else (torch eager, the Python path, a handler registered for execution only,
//!   a fabricated frame), `T` comes from a process-wide cache keyed by the op, `T` and the
//!   call's attribute values: built on the first call with those values, shared by every
//!   later one.
//!
//! A constructor's error is the call's `[bad_state]` refusal (at XLA's instantiate stage it
//! fails the compilation).

use super::abi::*;
use super::frame::{CallCx, op_err};
use super::table::{api_table, bytes, destroy_error, trusted_v2};
use super::{AttrRef, AttrValue};
use crate::error::{OpError, Refusal};
use crate::types::ElementType;
use core::ffi::c_void;
use core::ptr::null_mut;
use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// State a kernel builds once per call site from its op's attributes: the type of an
/// `#[state]` parameter (`#[state] table: &T`).
///
/// Under XLA (jaxlib, the Rust runner) each call site of each compiled executable has its own
/// `T`, dropped with the executable; in eager calls (torch, the Python path) call sites with
/// equal attribute values share one, kept until the process ends, one per distinct set of
/// values. Either way it is shared by concurrent calls:
/// read-only, or with its own locking.
pub trait OpState: Send + Sync + Sized + 'static {
    /// Builds the state from the op's attributes (`attrs.get::<i64>("n")`); an error is the
    /// call's `[bad_state]` refusal. Under XLA it runs during compilation (`jax.jit`,
    /// `Client::compile`), so it must not itself compile programs or register handlers.
    fn build(attrs: &StateAttrs<'_, '_>) -> Result<Self, OpError>;
}

/// The attributes of the call site a state is built for.
#[derive(Debug)]
pub struct StateAttrs<'c, 'f> {
    cx: &'c CallCx<'f>,
}

impl<'f> StateAttrs<'_, 'f> {
    /// The attribute `name` by value (a scalar, `bool`, or `&[T]`), checked as the kernel's
    /// own `#[attr]` parameters are.
    pub fn get<V: AttrValue<'f>>(&self, name: &str) -> Result<V, OpError> {
        V::decode(&self.cx.attrs(), name)
    }

    /// The attribute `name` by reference (`&str`, or a descriptor's value).
    pub fn get_ref<V: AttrRef<'f> + ?Sized>(&self, name: &str) -> Result<V::Decoded, OpError> {
        V::decode(&self.cx.attrs(), name)
    }

    /// The op's name.
    pub fn op(&self) -> &'static str {
        self.cx.op
    }
}

/// What a kernel's `#[state]` parameter borrows: the state XLA holds for this call site, or
/// the shared one of the process cache.
#[derive(Debug)]
pub enum StateRef<'f, T> {
    /// Held by XLA for the executable.
    Xla(&'f T),
    /// From the process cache.
    Shared(Arc<T>),
}

impl<T> core::ops::Deref for StateRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            StateRef::Xla(t) => t,
            StateRef::Shared(t) => t,
        }
    }
}

/// Builds `T` for the call `cx`, its error named as the `[bad_state]` refusal.
fn build<T: OpState>(cx: &CallCx<'_>) -> Result<T, OpError> {
    T::build(&StateAttrs { cx }).map_err(|e| {
        if e.refusal().is_some() {
            e
        } else {
            op_err(
                cx.op,
                Refusal::BadState,
                format!("building its state failed: {}", e.message()),
            )
            .with_code(e.code())
        }
    })
}

fn lock<T>(m: &'static OnceLock<Mutex<T>>, init: fn() -> T) -> MutexGuard<'static, T> {
    m.get_or_init(|| Mutex::new(init()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn read<T>(m: &'static OnceLock<RwLock<T>>, init: fn() -> T) -> RwLockReadGuard<'static, T> {
    m.get_or_init(|| RwLock::new(init()))
        .read()
        .unwrap_or_else(|e| e.into_inner())
}

fn write<T>(m: &'static OnceLock<RwLock<T>>, init: fn() -> T) -> RwLockWriteGuard<'static, T> {
    m.get_or_init(|| RwLock::new(init()))
        .write()
        .unwrap_or_else(|e| e.into_inner())
}

/// One cache entry: filled by the first call with its key, under its own lock.
type Slot = Arc<Mutex<Option<Arc<dyn Any + Send + Sync>>>>;
/// The process cache: (op, state type, attribute values) to the state.
type Cache = HashMap<(&'static str, TypeId, Vec<u8>), Slot>;
static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
/// Type ids XLA gave each state type, per XLA API table (jaxlib and a PJRT plugin each have
/// their own registry).
static TYPE_IDS: OnceLock<RwLock<HashMap<(usize, TypeId), i64>>> = OnceLock::new();
/// (API table, op) pairs whose call sites XLA instantiated: their executions ask XLA.
static INSTANTIATED: OnceLock<RwLock<HashSet<(usize, &'static str)>>> = OnceLock::new();

/// The state for `cx` from the process cache, built on the first call with these attributes
/// (under the entry's own lock: once per key even when calls race, while other keys go on).
fn cached<T: OpState>(cx: &CallCx<'_>) -> Result<Arc<T>, OpError> {
    let key = (cx.op, TypeId::of::<T>(), attrs_key(cx)?);
    let slot: Slot = lock(&CACHE, HashMap::new).entry(key).or_default().clone();
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = slot.as_ref()
        && let Ok(t) = Arc::clone(s).downcast::<T>()
    {
        return Ok(t);
    }
    let t = Arc::new(build::<T>(cx)?);
    *slot = Some(t.clone());
    Ok(t)
}

/// The frame's API table if its state functions are used: a table of a known minor
/// (`api_table`: 0.2 to 0.5; from 0.3, jaxlib's, their arguments have a `stage`), a 0.2 one
/// only if the runner verified it (its pinned plugin; other minor-2 builds laid
/// `XLA_FFI_TypeInfo` out otherwise). `None` where no XLA calls (a fabricated frame, the eager
/// path: the process cache serves); an error where XLA calls with a table customop does not
/// read, which would otherwise share one state among call sites without a word.
fn table<'f>(
    frame: &'f XLA_FFI_CallFrame,
    op: &str,
) -> Result<Option<&'f XLA_FFI_Api_ThreadPool>, OpError> {
    if let Some(t) = api_table(frame)
        && (t.head.api_version.minor_version != 2 || trusted_v2(t))
    {
        return Ok(Some(t));
    }
    match super::table::version(frame) {
        Some((major, minor)) => Err(op_err(
            op,
            Refusal::BadState,
            format!(
                "XLA calls with its FFI table {major}.{minor}, which customop cannot use for a \
                 state per call site (it reads 0.3 to 0.5, and 0.2 of the plugin the runner \
                 verified): refused rather than one state shared by every call site"
            ),
        )),
        None => Ok(None),
    }
}

/// XLA's deleter of a state of type `T`.
unsafe extern "C" fn drop_state<T>(object: *mut c_void) {
    let drop = std::panic::AssertUnwindSafe(|| {
        // SAFETY: `object` is the `Box<T>` `instantiate` handed to XLA, which deletes it once.
        drop(unsafe { Box::from_raw(object.cast::<T>()) })
    });
    // A panicking `Drop` must not unwind into XLA.
    let _ = std::panic::catch_unwind(drop);
}

/// `T`'s type id in `t`'s registry, registered on first use.
fn type_id<T: 'static>(op: &str, t: &XLA_FFI_Api_ThreadPool) -> Result<i64, OpError> {
    let key = (
        t as *const XLA_FFI_Api_ThreadPool as usize,
        TypeId::of::<T>(),
    );
    let mut ids = write(&TYPE_IDS, HashMap::new);
    if let Some(&id) = ids.get(&key) {
        return Ok(id);
    }
    let refused = |what: &str| op_err(op, Refusal::BadState, format!("XLA {what}"));
    let Some(register) = t.type_register else {
        return Err(refused("has no XLA_FFI_Type_Register"));
    };
    // Unique in the registry even when two libraries hold a type of the same name (the
    // deleter's address is this library's) or two types share a deleter (the TypeId).
    let name = format!(
        "customop::{}@{:p}/{:?}",
        core::any::type_name::<T>(),
        drop_state::<T> as *const (),
        TypeId::of::<T>()
    );
    // XLA may keep the pointer: one leaked, 24-byte `TypeInfo` per type and registry.
    let info: &'static XLA_FFI_TypeInfo = Box::leak(Box::new(XLA_FFI_TypeInfo {
        struct_size: size_of::<XLA_FFI_TypeInfo>(),
        extension_start: null_mut(),
        deleter: Some(drop_state::<T>),
    }));
    let mut id = XLA_FFI_TypeId { type_id: 0 };
    let mut args = XLA_FFI_Type_Register_Args {
        struct_size: size_of::<XLA_FFI_Type_Register_Args>(),
        extension_start: null_mut(),
        name: XLA_FFI_ByteSpan {
            ptr: name.as_ptr().cast(),
            len: name.len(),
        },
        type_id: &mut id,
        type_info: info,
    };
    // SAFETY: XLA's function with valid arguments; it copies the name.
    let err = unsafe { register(&mut args) };
    if !err.is_null() {
        destroy_error(t, err);
        return Err(refused("refused to register the state's type"));
    }
    ids.insert(key, id.type_id);
    Ok(id.type_id)
}

/// Calls `XLA_FFI_State_Set` or `Get` (`f`) of table `t` for `cx`'s call site with the layout
/// of `t`'s version: the state set at the instantiate stage (on CPU the one XLA keeps per
/// custom call). Returns XLA's error (null on success) and the state field afterwards.
///
/// # Safety
/// `f` is `t`'s `state_set` or `state_get`, and `cx` the call it is made for; for a set,
/// `state` is an object of the type registered as `type_id`, which XLA takes on success.
unsafe fn call_state(
    t: &XLA_FFI_Api_ThreadPool,
    f: XLA_FFI_State_Set,
    cx: &CallCx<'_>,
    type_id: i64,
    state: *mut c_void,
) -> (*mut XLA_FFI_Error, *mut c_void) {
    let mut id = XLA_FFI_TypeId { type_id };
    if t.head.api_version.minor_version == 2 {
        let mut args = XLA_FFI_State_Args_V2 {
            struct_size: size_of::<XLA_FFI_State_Args_V2>(),
            extension_start: null_mut(),
            ctx: cx.frame.ctx.cast(),
            type_id: &mut id,
            state,
        };
        // SAFETY: a 0.2 table's function reads its arguments in the 0.2 layout (the pointer's
        // declared type is the later one); the caller's contract for the rest.
        let err = unsafe { f((&raw mut args).cast()) };
        (err, args.state)
    } else {
        let mut args = XLA_FFI_State_Args {
            struct_size: size_of::<XLA_FFI_State_Args>(),
            extension_start: null_mut(),
            ctx: cx.frame.ctx.cast(),
            stage: XLA_FFI_EXECUTION_STAGE_INSTANTIATE,
            type_id: &mut id,
            state,
        };
        // SAFETY: the caller's contract.
        let err = unsafe { f(&mut args) };
        (err, args.state)
    }
}

/// The instantiate stage of an op with an `#[state]` parameter of type `T`: builds `T` from the
/// call site's attributes and hands it to XLA. Where XLA has no state functions, nothing is
/// built here (executions use the process cache).
pub fn instantiate<T: OpState>(cx: &CallCx<'_>) -> Result<(), OpError> {
    let Some(t) = table(cx.frame, cx.op)? else {
        return Ok(());
    };
    let Some(set) = t.state_set else {
        return Ok(());
    };
    let id = type_id::<T>(cx.op, t)?;
    let state = Box::into_raw(Box::new(build::<T>(cx)?));
    // SAFETY: XLA's function for this call, a `T` of the type registered as `id`; on success
    // XLA owns `state` and deletes it with `drop_state::<T>`.
    let (err, _) = unsafe { call_state(t, set, cx, id, state.cast()) };
    if !err.is_null() {
        // Whether XLA kept the pointer is not said: the state is leaked, never freed twice.
        destroy_error(t, err);
        return Err(op_err(
            cx.op,
            Refusal::BadState,
            "XLA did not take the state (XLA_FFI_State_Set failed)",
        ));
    }
    write(&INSTANTIATED, HashSet::new).insert((t as *const _ as usize, cx.op));
    Ok(())
}

/// The state of an execution: XLA's for this call site if it instantiated it, else the
/// process cache's.
pub(super) fn get<'f, T: OpState>(cx: &CallCx<'f>) -> Result<StateRef<'f, T>, OpError> {
    if let Some(t) = table(cx.frame, cx.op)?
        && let Some(get) = t.state_get
    {
        let api = t as *const XLA_FFI_Api_ThreadPool as usize;
        let instantiated = read(&INSTANTIATED, HashSet::new).contains(&(api, cx.op));
        let type_id = read(&TYPE_IDS, HashMap::new)
            .get(&(api, TypeId::of::<T>()))
            .copied();
        if let (true, Some(type_id)) = (instantiated, type_id) {
            // SAFETY: XLA's function for this call; it writes the object set at this call
            // site's instantiate stage, of the type id asked for.
            let (err, state) = unsafe { call_state(t, get, cx, type_id, null_mut()) };
            if err.is_null() && !state.is_null() {
                // SAFETY: the `Box<T>` `instantiate` gave XLA for this call site (XLA checked
                // the type id), alive until the executable is destroyed, after this call.
                return Ok(StateRef::Xla(unsafe { &*state.cast::<T>() }));
            }
            if !err.is_null() {
                destroy_error(t, err);
            }
        }
    }
    cached::<T>(cx).map(StateRef::Shared)
}

/// Every attribute of the call, as bytes that are equal exactly when the attributes are
/// (names, kinds, element types and values, in name order): the key of the state cache. A
/// name given twice (only a raw eager call can) is refused: in name order, the two values
/// would make one key whichever order they came in.
fn attrs_key(cx: &CallCx<'_>) -> Result<Vec<u8>, OpError> {
    let mut entries: Vec<(&[u8], Vec<u8>)> = Vec::new();
    for (name, ty, ptr) in cx.attr_entries() {
        let Some(name) = name.filter(|_| !ptr.is_null()) else {
            continue;
        };
        let mut value = ty.to_le_bytes().to_vec();
        let elem = |dtype: i32| {
            u32::try_from(dtype)
                .ok()
                .and_then(ElementType::from_xla_code)
                .map_or(0, |e| e.byte_size())
        };
        match ty {
            XLA_FFI_ATTR_TYPE_SCALAR => {
                // SAFETY: a SCALAR attribute points at an XLA_FFI_Scalar whose value
                // holds one element of its dtype.
                let s = unsafe { &*(ptr as *const XLA_FFI_Scalar) };
                value.extend(s.dtype.to_le_bytes());
                // SAFETY: as above.
                value.extend(unsafe { bytes(s.value.cast(), elem(s.dtype)) });
            }
            XLA_FFI_ATTR_TYPE_ARRAY => {
                // SAFETY: an ARRAY attribute points at an XLA_FFI_Array of `size`
                // elements of its dtype.
                let arr = unsafe { &*(ptr as *const XLA_FFI_Array) };
                value.extend(arr.dtype.to_le_bytes());
                value.extend(arr.size.to_le_bytes());
                // SAFETY: as above.
                value.extend(unsafe {
                    bytes(arr.data.cast(), arr.size.saturating_mul(elem(arr.dtype)))
                });
            }
            XLA_FFI_ATTR_TYPE_STRING => {
                // SAFETY: a STRING attribute points at a byte span valid for the call.
                let b = unsafe { &*(ptr as *const XLA_FFI_ByteSpan) };
                // SAFETY: as above.
                value.extend(unsafe { bytes(b.ptr.cast(), b.len) });
            }
            _ => {}
        }
        entries.push((name, value));
    }
    entries.sort();
    if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(op_err(
            cx.op,
            Refusal::BadAttribute,
            format!(
                "attribute `{}` is given twice",
                String::from_utf8_lossy(w[0].0)
            ),
        ));
    }
    let mut key = Vec::new();
    for (name, value) in entries {
        key.extend(name.len().to_le_bytes());
        key.extend(name);
        key.extend(value.len().to_le_bytes());
        key.extend(value);
    }
    Ok(key)
}
