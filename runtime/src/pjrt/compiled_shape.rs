//! What the runner reads of a compiled program: the serialized `HloModuleProto` a PJRT
//! plugin returns for an executable (`PJRT_Executable_OptimizedProgram`), read by hand as
//! protobuf wire format (field numbers from XLA's `xla_data.proto` and `hlo.proto`): each entry
//! parameter's element type and dimensions, and every parameter's and result's layout, which
//! must be the runner's (dense, row-major, static). Every count and size is bounded; any input
//! is an error or a result, never a panic (fuzzed: `runtime/fuzz`, target `compiled_program`).

use super::error::RunError;
use crate::types::{ElementType, TensorType};

/// One field of a protobuf message: its number and its value (a varint, or the bytes of a
/// length-delimited field; fixed-width fields are skipped as `None`).
type Field<'a> = (u64, Option<Value<'a>>);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or("a varint runs past the end")?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("a varint longer than 10 bytes".into())
}

/// The fields of a protobuf message, in order.
fn fields(b: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let key = varint(b, &mut at)?;
        let value = match key & 7 {
            0 => Some(Value::Varint(varint(b, &mut at)?)),
            1 | 5 => {
                at += if key & 7 == 1 { 8 } else { 4 };
                None
            }
            2 => {
                let len = usize::try_from(varint(b, &mut at)?).map_err(|e| e.to_string())?;
                let end = at.checked_add(len).filter(|&e| e <= b.len());
                let end = end.ok_or("a field runs past the end")?;
                let v = &b[at..end];
                at = end;
                Some(Value::Bytes(v))
            }
            w => return Err(format!("wire type {w} is not read")),
        };
        if at > b.len() {
            return Err("a field runs past the end".into());
        }
        out.push((key >> 3, value));
    }
    Ok(out)
}

/// The bytes of field `n` (the first), if it is length-delimited.
fn bytes_field(message: &[u8], n: u64) -> Result<Option<&[u8]>, String> {
    Ok(fields(message)?.into_iter().find_map(|f| match f {
        (k, Some(Value::Bytes(b))) if k == n => Some(b),
        _ => None,
    }))
}

/// The entry parameters of a serialized `HloModuleProto`, or of the
/// `HloModuleProtoWithConfig` (its `hlo_module`, field 1) the CPU plugin returns: the
/// module's `host_program_shape` (field 4), a `ProgramShapeProto` whose `parameters` (field 1)
/// and `result` (field 2) are `ShapeProto`s (field numbers from XLA's `xla_data.proto`).
///
/// Every parameter and every array of the result must be laid out as the runner feeds and
/// reads it: dense, row-major, static. A parameter or result the compiler laid out otherwise
/// (`mhlo.layout_mode`, a tiled or padded layout) is [`RunError::Layout`], one with a dynamic
/// dimension [`RunError::DynamicShape`]; a module that cannot be read is [`RunError::Program`].
pub(super) fn entry_parameters(module: &[u8]) -> Result<Vec<TensorType>, RunError> {
    let unreadable = |m: String| RunError::Program(m);
    let shape = match bytes_field(module, 4).map_err(unreadable)? {
        Some(s) => s,
        None => bytes_field(module, 1)
            .map_err(unreadable)?
            .and_then(|inner| bytes_field(inner, 4).ok().flatten())
            .ok_or_else(|| unreadable("the compiled module has no host program shape".into()))?,
    };
    let mut params = Vec::new();
    let mut result = None;
    for f in fields(shape).map_err(unreadable)? {
        match f {
            (1, Some(Value::Bytes(p))) => {
                let what = format!("compiled parameter {}", params.len());
                match array_shape(p, &what)? {
                    Some(t) => params.push(t),
                    None => {
                        return Err(unreadable(format!("{what} is a tuple")));
                    }
                }
            }
            (2, Some(Value::Bytes(r))) => result = Some(r),
            _ => {}
        }
    }
    // The result: one array, or a tuple of arrays (one per output).
    if let Some(r) = result
        && array_shape(r, "the compiled result")?.is_none()
    {
        let mut k = 0;
        for f in fields(r).map_err(unreadable)? {
            if let (4, Some(Value::Bytes(leaf))) = f {
                let what = format!("compiled result {k}");
                if array_shape(leaf, &what)?.is_none() {
                    return Err(unreadable(format!("{what} is a nested tuple")));
                }
                k += 1;
            }
        }
    }
    Ok(params)
}

/// XLA's `PrimitiveType` number for a tuple (`xla_data.proto`).
const TUPLE: u64 = 13;

/// One `ShapeProto`: the array's type, checked to be laid out as the runner reads it, or
/// `None` for a tuple (read by the caller).
fn array_shape(p: &[u8], what: &str) -> Result<Option<TensorType>, RunError> {
    let unreadable = |m: String| RunError::Program(format!("{what}: {m}"));
    let mut code = 0;
    let mut dims = Vec::new();
    let mut dynamic = Vec::new();
    let mut layout = None;
    for g in fields(p).map_err(unreadable)? {
        match g {
            (2, Some(Value::Varint(v))) => code = v,
            (3, v) => repeated_ints(v, &mut dims).map_err(unreadable)?,
            (6, v) => repeated_ints(v, &mut dynamic).map_err(unreadable)?,
            (5, Some(Value::Bytes(l))) => layout = Some(l),
            _ => {}
        }
    }
    if code == TUPLE {
        return Ok(None);
    }
    let element = u32::try_from(code)
        .ok()
        .and_then(ElementType::from_xla_code)
        .ok_or_else(|| {
            RunError::Program(format!(
                "{what} has XLA type {code}, which customop does not feed"
            ))
        })?;
    let dims: Vec<i64> = dims.into_iter().map(|d| d as i64).collect();
    let ty = TensorType::new(element, dims).map_err(|e| unreadable(e.message))?;
    if let Some(d) = dynamic.iter().position(|&x| x != 0) {
        return Err(RunError::DynamicShape(format!(
            "{what} ({ty}) has a dynamic dimension {d} (at most {}): the runner feeds and \
             reads static shapes only",
            ty.shape().get(d).copied().unwrap_or(0)
        )));
    }
    if let Some(l) = layout {
        check_layout(l, &ty, what)?;
    }
    Ok(Some(ty))
}

/// The most dimensions a compiled shape may have (XLA's own limit is far lower in practice).
const MAX_RANK: usize = 64;

/// Appends a repeated integer field's values, packed (bytes) or not (one varint): at most
/// [`MAX_RANK`] in all (dimensions, `minor_to_major` and `is_dynamic_dimension` have one per
/// dimension).
fn repeated_ints(v: Option<Value<'_>>, out: &mut Vec<u64>) -> Result<(), String> {
    let mut push = |x: u64| {
        out.push(x);
        if out.len() > MAX_RANK {
            return Err(format!("more than {MAX_RANK} entries in a repeated field"));
        }
        Ok(())
    };
    match v {
        Some(Value::Varint(x)) => push(x),
        Some(Value::Bytes(packed)) => {
            let mut at = 0;
            while at < packed.len() {
                push(varint(packed, &mut at)?)?;
            }
            Ok(())
        }
        None => Err("a repeated integer field of a fixed-width wire type".into()),
    }
}

/// A `LayoutProto` must say what the runner assumes: dense and row-major (dimensions from
/// major to minor in order, so `minor_to_major` descending; dimensions of size 1 may sit
/// anywhere), with no tiles, element size, split, padding or metadata prefix.
fn check_layout(l: &[u8], ty: &TensorType, what: &str) -> Result<(), RunError> {
    let unreadable = |m: String| RunError::Program(format!("{what}: {m}"));
    let mut m2m = Vec::new();
    let mut other = Vec::new();
    for f in fields(l).map_err(unreadable)? {
        match f {
            (1, v) => repeated_ints(v, &mut m2m).map_err(unreadable)?,
            // `memory_space` (8): where the buffer lives, not how its elements are arranged.
            (8, _) => {}
            // `dim_level_types` (9) all DENSE, `element_size_in_bits` (7) and
            // `tail_padding_alignment_in_elements` (16) at their defaults, and
            // `dynamic_shape_metadata_prefix_bytes` (15) 0 change nothing.
            (9 | 7 | 15, Some(Value::Varint(0))) => {}
            // A packed sub-byte type's own width: XLA packs `i4` two a byte on the device,
            // and PJRT takes and gives host buffers one element a byte.
            (7, Some(Value::Varint(bits)))
                if ty.element().is_packed() && bits == u64::from(ty.element().bits()) => {}
            (16, Some(Value::Varint(0 | 1))) => {}
            (9, Some(Value::Bytes(b))) if b.iter().all(|&x| x == 0) => {}
            // `dim_unique` / `dim_ordered` (13, 14) are for sparse arrays.
            (13 | 14, _) => {}
            (n, _) => other.push(n),
        }
    }
    let rank = ty.rank();
    let laid_out = |m: &str| {
        RunError::Layout(format!(
            "{what} ({ty}) is laid out {m}: the runner feeds and reads row-major buffers only \
             (a program that asks for another layout, with `mhlo.layout_mode` say, is refused \
             rather than run on transposed bytes)"
        ))
    };
    if let Some(n) = other.first() {
        let name = match n {
            6 => "with tiles",
            7 => "with a narrower element size",
            9 => "sparse",
            10 => "with a physical shape (sparse)",
            15 => "with a dynamic-shape metadata prefix",
            16 => "with tail padding",
            17 => "split over memories",
            _ => "with a layout field the runner does not know",
        };
        return Err(laid_out(&format!("{name} (LayoutProto field {n})")));
    }
    if m2m.is_empty() {
        // No order given: XLA's default, row-major.
        return Ok(());
    }
    let mut seen = vec![false; rank];
    let permutation = m2m.len() == rank
        && m2m.iter().all(|&d| {
            usize::try_from(d)
                .ok()
                .and_then(|d| seen.get_mut(d))
                .is_some_and(|s| !std::mem::replace(s, true))
        });
    if !permutation {
        return Err(unreadable(format!(
            "minor_to_major {m2m:?} is not an order of {rank} dimensions"
        )));
    }
    // Row-major: the dimensions that span more than one element, from minor to major, in
    // descending order.
    let spanning: Vec<u64> = m2m
        .iter()
        .copied()
        .filter(|&d| ty.shape().get(d as usize).is_some_and(|&n| n > 1))
        .collect();
    if spanning.windows(2).any(|w| w[0] < w[1]) {
        return Err(laid_out(&format!(
            "with minor_to_major {{{}}}",
            m2m.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A message with one length-delimited field.
    fn msg(field: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![(field << 3) | 2, body.len() as u8];
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn entry_parameters_are_read_from_the_module_proto() {
        // f32[3,4] with packed dimensions, then u8[56] with unpacked ones; a name field (1)
        // and a fixed64 field around them are skipped.
        let f32_34 = [vec![0x10, 11], msg(3, &[3, 4])].concat();
        let u8_56 = vec![0x10, 6, 0x18, 56];
        let shape = [msg(1, &f32_34), msg(1, &u8_56), msg(3, b"x")].concat();
        let module = [
            msg(1, b"main"),
            vec![0x29, 0, 0, 0, 0, 0, 0, 0, 0],
            msg(4, &shape),
        ]
        .concat();
        let p = entry_parameters(&module).unwrap();
        // The same module inside an `HloModuleProtoWithConfig` (a config in field 2).
        let with_config = [msg(1, &module), msg(2, &[0x08, 1])].concat();
        assert_eq!(entry_parameters(&with_config).unwrap(), p);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].to_string(), "tensor<3x4xf32>");
        assert_eq!(p[1].to_string(), "tensor<56xui8>");
        // Malformed: truncated, a tuple parameter, an unknown element type, no shape.
        assert!(entry_parameters(&module[..module.len() - 1]).is_err());
        let tuple = msg(4, &msg(1, &[vec![0x10, 13], msg(4, &u8_56)].concat()));
        let e = entry_parameters(&tuple).unwrap_err();
        assert!(
            matches!(&e, RunError::Program(m) if m.contains("tuple")),
            "{e}"
        );
        let token = msg(4, &msg(1, &[0x10, 17]));
        let e = entry_parameters(&token).unwrap_err();
        assert!(
            matches!(&e, RunError::Program(m) if m.contains("XLA type 17")),
            "{e}"
        );
        assert!(entry_parameters(&msg(1, b"m")).is_err());
    }

    /// `f32[2,3]` with a layout message `layout` (empty: none).
    fn f32_23(layout: &[u8]) -> Vec<u8> {
        let mut p = [vec![0x10, 11], msg(3, &[2, 3])].concat();
        if !layout.is_empty() {
            p.extend(msg(5, layout));
        }
        p
    }

    /// A module whose parameter is `param` and whose result is `result`.
    fn module_of(param: &[u8], result: &[u8]) -> Vec<u8> {
        msg(4, &[msg(1, param), msg(2, result)].concat())
    }

    #[test]
    fn a_row_major_layout_is_read_and_any_other_refused_by_name() {
        let row_major = f32_23(&msg(1, &[1, 0]));
        let column_major = f32_23(&msg(1, &[0, 1]));
        // Row-major, or no layout at all (XLA's default): read.
        for p in [&row_major, &f32_23(&[])] {
            let t = entry_parameters(&module_of(p, p)).unwrap();
            assert_eq!(t[0].to_string(), "tensor<2x3xf32>");
        }
        // Column-major parameter, then column-major result (alone, then in a tuple).
        let tuple = [vec![0x10, 13], msg(4, &row_major), msg(4, &column_major)].concat();
        for (m, what) in [
            (module_of(&column_major, &row_major), "compiled parameter 0"),
            (module_of(&row_major, &column_major), "the compiled result"),
            (module_of(&row_major, &tuple), "compiled result 1"),
        ] {
            let e = entry_parameters(&m).unwrap_err();
            let RunError::Layout(text) = &e else {
                panic!("not a layout error: {e:?}");
            };
            assert!(text.starts_with(what), "{text}");
            assert!(text.contains("minor_to_major {0,1}"), "{text}");
        }
        // Dimensions of size 1 may sit anywhere: f32[1,3] with {0,1} is the same memory.
        let one_row = [vec![0x10, 11], msg(3, &[1, 3]), msg(5, &msg(1, &[0, 1]))].concat();
        assert!(entry_parameters(&module_of(&one_row, &row_major)).is_ok());
        // Tiles, a sub-byte element size, and a minor_to_major that is not an order.
        let tiled = f32_23(&[msg(1, &[1, 0]), msg(6, &msg(1, &[8]))].concat());
        let e = entry_parameters(&module_of(&tiled, &row_major)).unwrap_err();
        assert!(
            matches!(&e, RunError::Layout(m) if m.contains("tiles")),
            "{e}"
        );
        let narrow = f32_23(&[msg(1, &[1, 0]), vec![0x38, 4]].concat());
        let e = entry_parameters(&module_of(&narrow, &row_major)).unwrap_err();
        assert!(
            matches!(&e, RunError::Layout(m) if m.contains("element size")),
            "{e}"
        );
        for bad in [&[1u8, 1][..], &[0], &[2, 0]] {
            let e = entry_parameters(&module_of(&f32_23(&msg(1, bad)), &row_major)).unwrap_err();
            assert!(
                matches!(&e, RunError::Program(m) if m.contains("not an order")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_dynamic_dimension_is_refused_by_name() {
        // f32[<=2, 3]: is_dynamic_dimension [true, false], packed.
        let dynamic = [vec![0x10, 11], msg(3, &[2, 3]), msg(6, &[1, 0])].concat();
        let e = entry_parameters(&module_of(&dynamic, &f32_23(&[]))).unwrap_err();
        assert!(
            matches!(&e, RunError::DynamicShape(m) if m.contains("dynamic dimension 0")),
            "{e}"
        );
        // All static: read.
        let fixed = [vec![0x10, 11], msg(3, &[2, 3]), msg(6, &[0, 0])].concat();
        assert!(entry_parameters(&module_of(&fixed, &fixed)).is_ok());
    }

    #[test]
    fn a_rank_past_the_bound_is_refused() {
        let dims = vec![1u8; MAX_RANK + 1];
        let deep = [vec![0x10, 11], msg(3, &dims)].concat();
        let e = entry_parameters(&module_of(&deep, &f32_23(&[]))).unwrap_err();
        assert!(
            matches!(&e, RunError::Program(m) if m.contains("more than")),
            "{e}"
        );
    }
}
