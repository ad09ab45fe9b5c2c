//! XLA's API table beyond its head, as `customop::parallel`, `#[state]` and the runner's
//! registration read it: the table where it is long enough, the messages of the errors its
//! functions return and their destruction; and raw byte spans read as slices.

use super::abi::*;
use core::ptr::null_mut;

/// The frame's API table as far as [`XLA_FFI_Api_ThreadPool`] describes it, if the frame has
/// a table that long (XLA appends fields within a major version, never moves them) and an
/// invoke context for its functions.
pub(crate) fn api_table(frame: &XLA_FFI_CallFrame) -> Option<&XLA_FFI_Api_ThreadPool> {
    if frame.ctx.is_null() {
        return None;
    }
    // SAFETY: a frame's `api` is null or XLA's table, valid for the call (the frame's life).
    unsafe { table_at(frame.api) }
}

/// The table at `api` as far as [`XLA_FFI_Api_ThreadPool`] describes it, if it is of this
/// major version and that long.
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
#[cfg(feature = "pjrt")]
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
