//! Verifying and printing a built module: text through a buffered C++ stream
//! (`src/lower/print.cpp`), the generic form, or bytecode.

use super::super::{BuildError, Module};
use super::{Form, build, context, mlir_err};
use melior::ir::operation::{OperationLike, OperationPrintingFlags};
use std::cell::RefCell;
use std::rc::Rc;

/// Builds and verifies `m`, then hands the module to `out`.
fn with_module<R>(
    m: &Module,
    out: impl FnOnce(&melior::ir::Module<'_>) -> Result<R, BuildError>,
) -> Result<R, BuildError> {
    let ctx = context();
    let diagnostics = Rc::new(RefCell::new(Vec::<String>::new()));
    let sink = diagnostics.clone();
    let id = ctx.attach_diagnostic_handler(move |d| {
        sink.borrow_mut().push(d.to_string());
        true
    });
    let result = build(&ctx, m).and_then(|module| {
        if !module.as_operation().verify() {
            return Err(BuildError::new(format!(
                "MLIR's verifier rejected the module: {}",
                diagnostics.borrow().join("; ")
            )));
        }
        out(&module)
    });
    ctx.detach_diagnostic_handler(id);
    result
}

unsafe extern "C" {
    /// `src/lower/print.cpp`: prints `op` through a 1 MiB-buffered stream, calling `append`
    /// with each chunk.
    fn customop_print_operation(
        op: mlir_sys::MlirOperation,
        append: unsafe extern "C" fn(*const core::ffi::c_char, usize, *mut core::ffi::c_void),
        data: *mut core::ffi::c_void,
    );
}

/// Appends a printed chunk to the `Vec<u8>` behind `data`.
unsafe extern "C" fn append_chunk(
    ptr: *const core::ffi::c_char,
    len: usize,
    data: *mut core::ffi::c_void,
) {
    if ptr.is_null() || len == 0 {
        return;
    }
    // SAFETY: `data` is the `&mut Vec<u8>` that `print_to_string` passes, alive and not
    // otherwise borrowed during the print; the printer passes `len` valid bytes at `ptr`.
    unsafe {
        (*(data as *mut Vec<u8>)).extend_from_slice(core::slice::from_raw_parts(ptr.cast(), len))
    };
}

/// Prints an operation straight into one buffer, through a buffered C++ stream (MLIR's
/// `mlirOperationPrint` calls back once per token), and checks UTF-8 once.
fn print_to_string(op: &melior::ir::operation::OperationRef<'_, '_>) -> Result<String, BuildError> {
    let mut buf: Vec<u8> = Vec::new();
    // SAFETY: `op` is a live operation of a live context; `append_chunk` only appends to `buf`,
    // which outlives the call and is not touched elsewhere meanwhile.
    unsafe {
        customop_print_operation(op.to_raw(), append_chunk, (&mut buf as *mut Vec<u8>).cast());
    }
    String::from_utf8(buf).map_err(|e| BuildError::new(format!("MLIR printed invalid UTF-8: {e}")))
}

/// Builds, verifies and prints `m`.
pub(crate) fn print(m: &Module, form: Form) -> Result<String, BuildError> {
    with_module(m, |module| match form {
        Form::Pretty => print_to_string(&module.as_operation()),
        Form::Generic => module
            .as_operation()
            .to_string_with_flags(OperationPrintingFlags::new().print_generic_operation_form())
            .map_err(mlir_err),
    })
}

/// Builds, verifies and writes `m` as MLIR bytecode.
pub(crate) fn bytecode(m: &Module) -> Result<Vec<u8>, BuildError> {
    with_module(m, |module| Ok(module.as_operation().write_bytecode()))
}

/// MLIR text (ops of unknown dialects in generic form) as bytecode, for the runner's tests of
/// bytecode programs the builder cannot make (a `mhlo.layout_mode` argument, say).
#[cfg(test)]
pub(crate) fn text_to_bytecode(text: &str) -> Option<Vec<u8>> {
    let ctx = context();
    let module = melior::ir::Module::parse(&ctx, text)?;
    Some(module.as_operation().write_bytecode())
}
