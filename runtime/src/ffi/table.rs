//! XLA's API table beyond its head, as `customop::parallel`, `#[state]` and the runner's
//! registration read it: the table where it is long enough, the messages of the errors its
//! functions return and their destruction; and raw byte spans read as slices.

use super::abi::*;
use core::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The FFI API minor versions whose tables customop reads beyond the head, each with the
/// layout [`XLA_FFI_Api_ThreadPool`] describes up to `XLA_FFI_ThreadPool_NumThreads`, and
/// `XLA_FFI_TypeInfo` as `{struct_size, extension_start, deleter}`:
/// - 0.2: the `xla-cpu-pjrt` 0.0.1 plugin (its sizes probed by the runner's tests; its state
///   functions take [`XLA_FFI_State_Args_V2`]). Other builds at minor 2 differ (one header has
///   `TypeInfo` as `{deleter, serialize, deserialize}`), so its state functions are used only
///   on that plugin's table, verified by its hash ([`trusted_v2`]).
/// - 0.3 (jaxlib 0.10, the `fastatomstruct-xla-cpu` plugin), 0.4 (the `lammps-jax-pjrt-cpu`
///   plugin, jaxlib 0.11) and 0.5 (jaxlib 0.12): the suites run on each; the layout tests
///   compile against jaxlib 0.10's and 0.12's headers.
///
/// XLA does not only append within major 0 (0.1 to 0.2 inserted `ThreadPool_NumThreads`
/// before `Future_Create`; 0.3 inserted `stage` in the state functions' arguments; 0.4
/// appended `record` to the handler bundle, moving `traits`), so any other minor, older or
/// newer, is read no further than its head: kernels run their ranges inline, `#[state]` is
/// refused (`[bad_state]`), and the runner does not register handlers through it.
pub(crate) const KNOWN_MINORS: core::ops::RangeInclusive<i32> = 2..=5;

/// The address of the one minor-2 table whose state functions are used: the pinned plugin's,
/// as the runner found it (0: none).
static TRUSTED_V2: AtomicUsize = AtomicUsize::new(0);

/// Marks `api`, a minor-2 table, as the verified plugin's: its state functions are then used
/// by this copy of customop (the binary's; a kernel library's own copy is told through
/// [`customop_trust_xla_ffi_table_v2`]).
pub(crate) fn trust_v2(api: *const XLA_FFI_Api) {
    TRUSTED_V2.store(api as usize, Ordering::SeqCst);
}

/// Whether `t` is a minor-2 table the runner verified.
pub(crate) fn trusted_v2(t: &XLA_FFI_Api_ThreadPool) -> bool {
    let at = t as *const XLA_FFI_Api_ThreadPool as usize;
    at != 0 && TRUSTED_V2.load(Ordering::SeqCst) == at
}

/// Tells this library's copy of customop that `api` is the XLA FFI table of the PJRT plugin
/// the Rust runner verified by hash as `xla-cpu-pjrt` 0.0.1 (its FFI API 0.2 layouts were
/// measured on that plugin), so that `#[state]` uses its state functions. The runner calls it
/// in each kernel library it registers; nothing else should.
///
/// # Safety
/// `api` is null or the XLA FFI API table of that hash-verified plugin, which lives for the
/// rest of the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn customop_trust_xla_ffi_table_v2(api: *const core::ffi::c_void) {
    // SAFETY: the caller's contract.
    if let Some(t) = unsafe { table_at(api.cast()) }
        && t.head.api_version.minor_version == 2
    {
        trust_v2(api.cast());
    }
}

/// The frame's API table as far as [`XLA_FFI_Api_ThreadPool`] describes it, if the frame has
/// a table of a known minor ([`KNOWN_MINORS`]) that long and an invoke context for its
/// functions.
pub(crate) fn api_table(frame: &XLA_FFI_CallFrame) -> Option<&XLA_FFI_Api_ThreadPool> {
    if frame.ctx.is_null() {
        return None;
    }
    // SAFETY: a frame's `api` is null or XLA's table, valid for the call (the frame's life).
    unsafe { table_at(frame.api) }
}

/// The FFI API version `(major, minor)` of the table XLA calls with, when XLA calls (a frame
/// with a table and an invoke context; fabricated frames and the eager path have none).
pub(crate) fn version(frame: &XLA_FFI_CallFrame) -> Option<(i32, i32)> {
    if frame.ctx.is_null() || frame.api.is_null() {
        return None;
    }
    // SAFETY: a frame's `api` is XLA's table, valid for the call; its head is the same in
    // every version.
    let head = unsafe { &*frame.api };
    Some((
        head.api_version.major_version,
        head.api_version.minor_version,
    ))
}

/// The table at `api` as far as [`XLA_FFI_Api_ThreadPool`] describes it, if it is of this
/// major version, a minor whose layout is known ([`KNOWN_MINORS`]), and that long.
///
/// # Safety
/// `api` is null or points at an XLA FFI API table that lives for `'a`.
pub(crate) unsafe fn table_at<'a>(api: *const XLA_FFI_Api) -> Option<&'a XLA_FFI_Api_ThreadPool> {
    if api.is_null() {
        return None;
    }
    // SAFETY: the caller's contract; the head is the same in every version.
    let head = unsafe { &*api };
    if head.api_version.major_version != XLA_FFI_API_MAJOR
        || !KNOWN_MINORS.contains(&head.api_version.minor_version)
        || head.struct_size < size_of::<XLA_FFI_Api_ThreadPool>()
    {
        return None;
    }
    // SAFETY: the table is at least that long, and its fields are the header's in order.
    Some(unsafe { &*api.cast::<XLA_FFI_Api_ThreadPool>() })
}

/// Destroys an error one of `t`'s functions returned (if the table can).
pub(crate) fn destroy_error(t: &XLA_FFI_Api_ThreadPool, err: *mut XLA_FFI_Error) {
    if let Some(f) = t.error_destroy {
        let mut args = XLA_FFI_Error_Destroy_Args {
            struct_size: size_of::<XLA_FFI_Error_Destroy_Args>(),
            extension_start: null_mut(),
            error: err,
        };
        // SAFETY: an error XLA returned, which nobody else holds, destroyed once.
        unsafe { f(&mut args) };
    }
}

/// The message of an error one of `t`'s functions returned, which is then destroyed.
pub(crate) fn take_message(t: &XLA_FFI_Api_ThreadPool, err: *mut XLA_FFI_Error) -> String {
    let mut message = String::from("(no message)");
    if let Some(f) = t.error_get_details {
        let mut args = XLA_FFI_Error_GetDetails_Args {
            struct_size: size_of::<XLA_FFI_Error_GetDetails_Args>(),
            extension_start: null_mut(),
            error: err,
            message: core::ptr::null(),
            errc: 0,
        };
        // SAFETY: a live error of this table; the message it writes is owned by the error.
        unsafe { f(&mut args) };
        if !args.message.is_null() {
            // SAFETY: a NUL-terminated message owned by the error, read before it is destroyed.
            message = unsafe { core::ffi::CStr::from_ptr(args.message) }
                .to_string_lossy()
                .into_owned();
        }
    }
    destroy_error(t, err);
    message
}

/// The `len` bytes at `p` (none for a null `p`).
///
/// # Safety
/// A non-null `p` points at `len` readable bytes that outlive `'a`.
pub(crate) unsafe fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { core::slice::from_raw_parts(p, len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `minor` with every function null, `struct_size` long enough.
    fn table(minor: i32) -> Box<XLA_FFI_Api_ThreadPool> {
        // SAFETY: every field is an integer, a raw pointer or an `Option` of a function
        // pointer, for which all-zero bytes are valid (0, null, None).
        let mut t: Box<XLA_FFI_Api_ThreadPool> = Box::new(unsafe { core::mem::zeroed() });
        t.head.struct_size = size_of::<XLA_FFI_Api_ThreadPool>();
        t.head.api_version.major_version = XLA_FFI_API_MAJOR;
        t.head.api_version.minor_version = minor;
        t
    }

    fn at(t: &XLA_FFI_Api_ThreadPool) -> *const XLA_FFI_Api {
        (t as *const XLA_FFI_Api_ThreadPool).cast()
    }

    #[test]
    fn only_tables_of_a_described_minor_are_read_past_their_head() {
        for minor in [0, 1, 6, 7, 100, -1] {
            let t = table(minor);
            // SAFETY: a live table of this test.
            assert!(unsafe { table_at(at(&t)) }.is_none(), "minor {minor}");
        }
        for minor in KNOWN_MINORS {
            let t = table(minor);
            // SAFETY: as above.
            assert!(unsafe { table_at(at(&t)) }.is_some(), "minor {minor}");
        }
        // Known minor, too short a table; another major.
        let mut t = table(5);
        t.head.struct_size = size_of::<XLA_FFI_Api>();
        // SAFETY: as above.
        assert!(unsafe { table_at(at(&t)) }.is_none());
        let mut t = table(5);
        t.head.api_version.major_version = 1;
        // SAFETY: as above.
        assert!(unsafe { table_at(at(&t)) }.is_none());
        // SAFETY: null is allowed.
        assert!(unsafe { table_at(core::ptr::null()) }.is_none());
    }

    #[test]
    fn a_minor_2_table_is_trusted_only_once_the_runner_marked_it() {
        let verified = table(2);
        let other = table(2);
        let newer = table(3);
        assert!(!trusted_v2(&other));
        // SAFETY: live tables of this test (the mark is process-wide: the test's own tables
        // are never the runner's).
        unsafe { customop_trust_xla_ffi_table_v2(at(&newer).cast()) };
        assert!(!trusted_v2(&newer), "only a minor-2 table is marked");
        // SAFETY: as above.
        unsafe { customop_trust_xla_ffi_table_v2(at(&verified).cast()) };
        assert!(trusted_v2(&verified));
        assert!(
            !trusted_v2(&other),
            "another minor-2 table, from an unverified host"
        );
        trust_v2(core::ptr::null());
        assert!(!trusted_v2(&verified));
    }
}
