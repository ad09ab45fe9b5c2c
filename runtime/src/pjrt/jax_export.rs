//! The module inside a serialized `jax.export.Exported` (`exported.serialize()`), read without
//! JAX: every offset checked against the bytes (fuzzed: runtime/fuzz, target `jax_export`).

/// MLIR bytecode's magic.
pub(crate) const BYTECODE: &[u8] = b"ML\xefR";

/// The module of a serialized `jax.export.Exported` (`exported.serialize()`, a flatbuffer whose
/// root table's field 13, `mlir_module_serialized`, holds the module's bytecode), or `None`
/// when `bytes` is not one. Every offset is checked against the buffer.
pub(crate) fn jax_export_module(bytes: &[u8]) -> Option<&[u8]> {
    let u32_at = |at: usize| -> Option<usize> {
        let b = bytes.get(at..at.checked_add(4)?)?;
        usize::try_from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()
    };
    let u16_at = |at: usize| -> Option<usize> {
        let b = bytes.get(at..at.checked_add(2)?)?;
        Some(usize::from(u16::from_le_bytes([b[0], b[1]])))
    };
    let table = u32_at(0)?;
    let b = bytes.get(table..table.checked_add(4)?)?;
    let vtable =
        i64::try_from(table).ok()? - i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let vtable = usize::try_from(vtable).ok()?;
    const FIELD: usize = 4 + 2 * 13;
    if u16_at(vtable)? <= FIELD {
        return None;
    }
    let field = u16_at(vtable + FIELD)?;
    if field == 0 {
        return None;
    }
    let at = table.checked_add(field)?;
    let vector = at.checked_add(u32_at(at)?)?;
    let len = u32_at(vector)?;
    let module = bytes.get(vector + 4..vector.checked_add(4)?.checked_add(len)?)?;
    module.starts_with(BYTECODE).then_some(module)
}
