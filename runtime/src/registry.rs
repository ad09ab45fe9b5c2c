//! Everything the binary holds, across crates: every op `#[custom_op]` defined (with its
//! handler's symbol), and the manifest that lists them, with their descriptor layouts, for
//! other languages. (The table of descriptor names by fingerprint, which lets a mismatch say
//! what bytes were packed as, is kept by `descriptor::layout`, which fills it as layouts are
//! built: the descriptor layer cannot depend on this module, which depends on schemas.)

use crate::schema::OpSchema;
use crate::types::ElementType;

/// A registered op: its schema and the name of its handler symbol. Generated code submits one
/// per op.
#[doc(hidden)]
#[derive(Debug)]
pub struct OpEntry {
    /// The op's schema (built on first use).
    pub schema: fn() -> &'static OpSchema,
    /// The exported `extern "C"` XLA FFI handler's symbol, when the op has one.
    pub handler_symbol: &'static str,
}

/// An XLA FFI handler: `XLA_FFI_Error* handler(XLA_FFI_CallFrame*)`.
#[doc(hidden)]
pub type HandlerFn = unsafe extern "C" fn(
    *mut crate::ffi::abi::XLA_FFI_CallFrame,
) -> *mut crate::ffi::abi::XLA_FFI_Error;

inventory::collect!(OpEntry);

/// An op's CUDA handler (`#[cuda(...)]`): the symbol to register for platform CUDA. Generated
/// code submits one per op that has a CUDA side.
#[doc(hidden)]
#[derive(Debug)]
pub struct CudaEntry {
    /// The op's custom call target.
    pub target: &'static str,
    /// The exported CUDA handler's symbol.
    pub handler_symbol: &'static str,
}

inventory::collect!(CudaEntry);

/// The symbol of the CUDA handler of the op with custom call target `target`, if it has one.
pub fn cuda_handler_symbol(target: &str) -> Option<&'static str> {
    inventory::iter::<CudaEntry>
        .into_iter()
        .find(|e| e.target == target)
        .map(|e| e.handler_symbol)
}

fn entries() -> impl Iterator<Item = &'static OpEntry> {
    inventory::iter::<OpEntry>.into_iter()
}

/// The schema of every op in the binary (every `#[custom_op]` of every crate linked in), in no
/// particular order.
pub fn ops() -> impl Iterator<Item = &'static OpSchema> {
    entries().map(|e| (e.schema)())
}

/// The schema of the op named `name` (`ns::op`), if the binary has it.
pub fn find(name: &str) -> Option<&'static OpSchema> {
    ops().find(|s| s.name == name)
}

/// The handlers of the ops whose definitions were built in this process, by target (filled by
/// `OpDef::with_handler`, which each op's generated `definition()` calls).
fn handlers() -> &'static std::sync::Mutex<std::collections::HashMap<String, HandlerFn>> {
    static HANDLERS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, HandlerFn>>,
    > = std::sync::OnceLock::new();
    HANDLERS.get_or_init(Default::default)
}

/// Records `handler` as the handler of `target` (from the op's definition).
pub(crate) fn record_handler(target: &str, handler: HandlerFn) {
    handlers()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(target.to_string(), handler);
}

/// Every op linked into this binary that has a handler: its schema and handler.
#[cfg_attr(not(feature = "pjrt"), allow(dead_code))]
pub(crate) fn linked_handlers() -> Vec<(&'static OpSchema, HandlerFn)> {
    // Building each schema builds its definition, which records its handler.
    let schemas: Vec<&'static OpSchema> = ops().collect();
    let table = handlers().lock().unwrap_or_else(|e| e.into_inner());
    schemas
        .into_iter()
        .filter_map(|s| table.get(&s.target).map(|h| (s, *h)))
        .collect()
}

/// The JSON manifest of every op in this binary: names, targets, handler symbols, schemas
/// (with descriptor layouts).
pub fn manifest_json() -> String {
    let mut ops: Vec<serde_json::Value> = entries()
        .map(|e| {
            let schema = (e.schema)();
            serde_json::json!({
                "name": schema.name,
                "target": schema.target,
                "handler_symbol": e.handler_symbol,
                "cuda_handler_symbol": cuda_handler_symbol(&schema.target),
                "schema": schema,
                "schema_string": schema.schema_string(),
            })
        })
        .collect();
    ops.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    serde_json::json!({
        "customop_version": env!("CARGO_PKG_VERSION"),
        "wire_format_version": crate::descriptor::FORMAT_VERSION,
        "element_types": ElementType::table_json(),
        "ops": ops,
    })
    .to_string()
}
