//! XLA's API table beyond its head, as `customop::parallel` and `#[state]` read it: the
//! frame's table where it is long enough, and destroying the errors its functions return.

use super::abi::*;
use core::ptr::null_mut;

/// The frame's API table as far as [`XLA_FFI_Api_ThreadPool`] describes it, if the frame has
/// a table that long (XLA appends fields within a major version, never moves them) and an
/// invoke context for its functions.
pub(crate) fn api_table(frame: &XLA_FFI_CallFrame) -> Option<&XLA_FFI_Api_ThreadPool> {
    if frame.api.is_null() || frame.ctx.is_null() {
        return None;
    }
    // SAFETY: a non-null `api` points at XLA's table, whose head is the same in every version.
    let head = unsafe { &*frame.api };
    if head.api_version.major_version != XLA_FFI_API_MAJOR
        || head.struct_size < size_of::<XLA_FFI_Api_ThreadPool>()
    {
        return None;
    }
    // SAFETY: the table is at least that long, and its fields are the header's in order.
    Some(unsafe { &*frame.api.cast::<XLA_FFI_Api_ThreadPool>() })
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
