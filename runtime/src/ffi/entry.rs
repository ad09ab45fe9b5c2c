//! The entry point of every generated handler: XLA's probe, the frame's checks, and errors
//! (a kernel's, a refusal, a panic) turned into XLA errors.

use super::abi::*;
use super::frame::{CallCx, op_err};
use crate::error::{ErrorCode, OpError, Refusal};
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Builds an XLA error from `e` with the frame's API, or null if XLA gave no way to.
fn make_error(frame: &XLA_FFI_CallFrame, e: &OpError) -> *mut XLA_FFI_Error {
    if frame.api.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: `api` points at XLA's API table, valid for the call.
    let api = unsafe { &*frame.api };
    if api.struct_size < size_of::<XLA_FFI_Api>() {
        // Too short to hold `XLA_FFI_Error_Create`: nothing to call.
        return core::ptr::null_mut();
    }
    let Some(create) = api.error_create else {
        return core::ptr::null_mut();
    };
    let message = CString::new(e.message().replace('\0', "\\0")).unwrap_or_default();
    let mut args = XLA_FFI_Error_Create_Args {
        struct_size: core::mem::size_of::<XLA_FFI_Error_Create_Args>(),
        extension_start: core::ptr::null_mut(),
        message: message.as_ptr(),
        errc: e.code().xla_code(),
    };
    // SAFETY: XLA's XLA_FFI_Error_Create copies the message; `args` is valid for the call.
    unsafe { create(&mut args) }
}

/// The entry point of every generated handler.
///
/// Answers XLA's registration probe (the metadata extension) with the API version, ignores
/// stages other than execution, and runs `body` with a [`CallCx`]; an `Err` or a panic in the
/// body becomes an XLA error naming `op`, never an unwind into C.
///
/// # Safety
/// `frame` must be null or the call frame XLA passes to a typed-FFI handler, valid for the
/// duration of this call.
pub unsafe fn handle(
    frame: *mut XLA_FFI_CallFrame,
    op: &'static str,
    body: impl FnOnce(&CallCx<'_>) -> Result<(), OpError>,
) -> *mut XLA_FFI_Error {
    // SAFETY: the caller's contract, passed on.
    unsafe { handle_stages(frame, op, None, body) }
}

/// A stage-zero hook: what an op with state does at XLA's instantiate stage.
pub type Instantiate = fn(&CallCx<'_>) -> Result<(), OpError>;

/// [`handle`], and at XLA's instantiate stage `instantiate` (an error fails XLA's compile).
///
/// # Safety
/// As for [`handle`].
pub(crate) unsafe fn handle_stages(
    frame: *mut XLA_FFI_CallFrame,
    op: &'static str,
    instantiate: Option<Instantiate>,
    body: impl FnOnce(&CallCx<'_>) -> Result<(), OpError>,
) -> *mut XLA_FFI_Error {
    if frame.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: the caller guarantees `frame` is a valid call frame for this call.
    let frame_ref = unsafe { &*frame };
    let mut ext = frame_ref.extension_start;
    while !ext.is_null() {
        // SAFETY: extensions form a linked list of valid nodes.
        let e = unsafe { &*ext };
        if e.type_ == XLA_FFI_EXTENSION_METADATA {
            // SAFETY: a metadata extension node is an XLA_FFI_Metadata_Extension.
            let m = unsafe { &*(ext as *const XLA_FFI_Metadata_Extension) };
            if !m.metadata.is_null() {
                // SAFETY: XLA passes a writable metadata struct to fill in.
                unsafe {
                    (*m.metadata).api_version.major_version = XLA_FFI_API_MAJOR;
                    (*m.metadata).api_version.minor_version = XLA_FFI_API_MINOR_SUPPORTED;
                }
            }
            return core::ptr::null_mut();
        }
        ext = e.next;
    }
    // Only execution, and the instantiate stage of an op with state, do anything.
    let instantiating = frame_ref.stage == XLA_FFI_EXECUTION_STAGE_INSTANTIATE;
    if frame_ref.stage != XLA_FFI_EXECUTION_STAGE_EXECUTE
        && !(instantiating && instantiate.is_some())
    {
        return core::ptr::null_mut();
    }
    if !frame_ref.api.is_null() {
        // SAFETY: a non-null `api` points at XLA's API table; its header (size, extensions,
        // version) is the same in every version.
        let version = unsafe { &(*frame_ref.api).api_version };
        if version.major_version != XLA_FFI_API_MAJOR {
            // A table of another major version may have another layout: nothing in it is
            // called, and the kernel does not run. (XLA itself refuses to register a handler
            // whose metadata names another major version, so only a fabricated frame gets here.)
            return core::ptr::null_mut();
        }
    }
    // The header's STRUCT_SIZEs: what XLA writes, and the extent this runtime reads.
    let sizes = [
        (
            frame_ref.struct_size,
            XLA_FFI_CallFrame_STRUCT_SIZE,
            "call frame",
        ),
        (
            frame_ref.args.struct_size,
            XLA_FFI_Args_STRUCT_SIZE,
            "arguments",
        ),
        (
            frame_ref.rets.struct_size,
            XLA_FFI_Rets_STRUCT_SIZE,
            "results",
        ),
        (
            frame_ref.attrs.struct_size,
            XLA_FFI_Attrs_STRUCT_SIZE,
            "attributes",
        ),
    ];
    for (got, want, what) in sizes {
        if got < want {
            let e = op_err(
                op,
                Refusal::BadFrame,
                format!("the {what} struct has {got} bytes, this runtime reads {want}"),
            );
            return make_error(frame_ref, &e);
        }
    }
    let cx = CallCx::new(op, frame_ref);
    let outcome = match instantiate {
        Some(init) if instantiating => catch_unwind(AssertUnwindSafe(|| init(&cx))),
        _ => {
            // XLA's intra-op pool for `customop::parallel`, while the kernel runs (a frame
            // without one, as eager calls make, keeps the caller's: torch's, or inline).
            let _pool =
                crate::parallel::Pool::of_frame(frame_ref).map(crate::parallel::Current::enter);
            catch_unwind(AssertUnwindSafe(|| body(&cx)))
        }
    };
    let error = match outcome {
        Ok(Ok(())) => return core::ptr::null_mut(),
        Ok(Err(e)) if e.refusal().is_some() => e,
        Ok(Err(e)) => OpError::new(format!(
            "custom op `{op}` [{}]: {}",
            Refusal::KernelError,
            e.message()
        ))
        .with_code(e.code())
        .with_refusal(Refusal::KernelError),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            OpError::new(format!(
                "custom op `{op}` [{}]: the kernel panicked: {what}",
                Refusal::KernelPanic
            ))
            .with_code(ErrorCode::Internal)
            .with_refusal(Refusal::KernelPanic)
        }
    };
    make_error(frame_ref, &error)
}
