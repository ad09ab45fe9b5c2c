//! numpy's `.npy` format (versions 1 to 3), read and written for the element types numpy has,
//! little-endian, C order; and `.npz` archives of them (a zip of `.npy` files, stored).

use customop::ElementType;
use std::io::Write;
use std::path::Path;

/// An array as a `.npy` file holds it: element type, shape, row-major little-endian bytes.
#[derive(Debug, PartialEq)]
pub struct Array {
    pub element: ElementType,
    pub shape: Vec<i64>,
    pub data: Vec<u8>,
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// numpy's `descr` of `e` (`<f4`), for the types numpy has without ml_dtypes.
fn descr(e: ElementType) -> Option<&'static str> {
    use ElementType as E;
    Some(match e {
        E::Bool => "|b1",
        E::I8 => "|i1",
        E::I16 => "<i2",
        E::I32 => "<i4",
        E::I64 => "<i8",
        E::U8 => "|u1",
        E::U16 => "<u2",
        E::U32 => "<u4",
        E::U64 => "<u8",
        E::F16 => "<f2",
        E::F32 => "<f4",
        E::F64 => "<f8",
        E::C64 => "<c8",
        E::C128 => "<c16",
        _ => return None,
    })
}

/// The element type of numpy's `descr`, with `=` and `<` alike (this is a little-endian
/// machine) and `|` for one-byte types.
fn element_of(d: &str) -> Result<ElementType, String> {
    let normal = d.replacen('=', "<", 1);
    ElementType::ALL
        .into_iter()
        .find(|e| descr(*e).is_some_and(|x| x == normal || x.replacen('|', "<", 1) == normal))
        .ok_or_else(|| {
            if d.starts_with('>') {
                format!("dtype `{d}` is big-endian: save it little-endian (`a.astype(a.dtype.newbyteorder('<'))`)")
            } else if d.contains('V') {
                format!(
                    "dtype `{d}` is numpy's raw bytes, which is how ml_dtypes' types (bfloat16, \
                     float8_*, int4, ...) are saved: give such an input as a type numpy has \
                     (float32, ...) and convert inside the program"
                )
            } else {
                format!("dtype `{d}` is no element type customop runs")
            }
        })
}

/// The value of key `key` in numpy's header dictionary `h` (a Python literal), as text.
fn field<'h>(h: &'h str, key: &str) -> Result<&'h str, String> {
    let at = h
        .find(&format!("'{key}'"))
        .ok_or_else(|| format!("the header has no `{key}`"))?;
    let rest = h[at + key.len() + 2..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format!("the header's `{key}` has no value"))?
        .trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else if let Some(q) = rest.strip_prefix('\'') {
        q.find('\'').map(|i| i + 2)
    } else {
        rest.find([',', '}'])
    }
    .ok_or_else(|| format!("the header's `{key}` does not end"))?;
    Ok(rest[..end].trim())
}

/// Reads the `.npy` file `path`.
pub fn read(path: &Path) -> Result<Array, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses the bytes of a `.npy` file.
pub fn parse(bytes: &[u8]) -> Result<Array, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("not a .npy file (no \\x93NUMPY magic)".into());
    }
    let (len, start): (usize, usize) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => {
            let n = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            (usize::try_from(n).map_err(|e| e.to_string())?, 12)
        }
        v => return Err(format!(".npy format version {v} is not 1, 2 or 3")),
    };
    let header = bytes
        .get(start..start.saturating_add(len))
        .ok_or("the header is longer than the file")?;
    let header = std::str::from_utf8(header).map_err(|e| format!("the header: {e}"))?;
    let d = field(header, "descr")?.trim_matches('\'');
    let element = element_of(d)?;
    match field(header, "fortran_order")? {
        "False" => {}
        "True" => {
            return Err("the array is in Fortran (column-major) order: save \
                        `np.ascontiguousarray(a)`, whose bytes are row-major"
                .into());
        }
        v => return Err(format!("fortran_order is `{v}`")),
    }
    let shape: Vec<i64> = field(header, "shape")?
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<i64>()
                .map_err(|e| format!("shape entry `{s}`: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let count = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
        .ok_or("the shape's element count overflows")?;
    let data = &bytes[start + len..];
    let want = count
        .checked_mul(element.byte_size())
        .ok_or("the shape's byte count overflows")?;
    if data.len() != want {
        return Err(format!(
            "shape {shape:?} of {d} takes {want} bytes; the file has {}",
            data.len()
        ));
    }
    Ok(Array {
        element,
        shape,
        data: data.to_vec(),
    })
}

/// The `.npy` bytes of `a`, and what was changed to write it: a type numpy has no `descr` for
/// (bf16, the fp8 types) is written as the unsigned integers of its bits.
pub fn to_bytes(a: &Array) -> (Vec<u8>, Option<String>) {
    let (d, note) = match descr(a.element) {
        Some(d) => (d, None),
        None => {
            let bits = match a.element.byte_size() {
                2 => "<u2",
                _ => "|u1",
            };
            (
                bits,
                Some(format!(
                    "{} has no numpy dtype: written as its bits ({bits}); view them with \
                     ml_dtypes (`a.view(ml_dtypes.{})`)",
                    a.element,
                    a.element.numpy_name()
                )),
            )
        }
    };
    let dims: Vec<String> = a.shape.iter().map(i64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{d}', 'fortran_order': False, 'shape': {shape}, }}");
    // Padded with spaces so that the data starts at a multiple of 64, then a newline.
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + header.len() + a.data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(
        &u16::try_from(header.len())
            .unwrap_or(u16::MAX)
            .to_le_bytes(),
    );
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&a.data);
    (out, note)
}

/// Writes `arrays` (name, array) as the `.npz` archive `path` (`np.load(path)[name]`).
pub fn write_npz(path: &Path, arrays: &[(String, Array)]) -> Result<Vec<String>, String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    let mut notes = Vec::new();
    for (name, a) in arrays {
        let (bytes, note) = to_bytes(a);
        notes.extend(note.map(|n| format!("{name}: {n}")));
        zip.start_file(format!("{name}.npy"), options)
            .and_then(|()| zip.write_all(&bytes).map_err(Into::into))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    zip.finish()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        for (element, shape) in [
            (ElementType::F32, vec![3, 3]),
            (ElementType::I8, vec![3]),
            (ElementType::F64, vec![]),
            (ElementType::C64, vec![2, 0, 4]),
        ] {
            let n: i64 = shape.iter().product();
            let data: Vec<u8> = (0..n as usize * element.byte_size())
                .map(|i| i as u8)
                .collect();
            let a = Array {
                element,
                shape,
                data,
            };
            let (bytes, note) = to_bytes(&a);
            assert!(note.is_none());
            assert_eq!((bytes.len() - a.data.len()) % 64, 0);
            assert_eq!(parse(&bytes), Ok(a));
        }
    }

    /// A version 1 `.npy` file with header dictionary `dict` and `data`.
    fn npy_with(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn what_cannot_be_read_is_named() {
        let err = |dict: &str, data: &[u8]| parse(&npy_with(dict, data)).unwrap_err();
        let d = |descr: &str, order: &str| {
            format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': (2,), }}")
        };
        assert!(err(&d("<f4", "True"), &[0; 8]).contains("Fortran (column-major)"));
        assert!(err(&d(">f4", "False"), &[0; 8]).contains("big-endian"));
        assert!(err(&d("|V2", "False"), &[0; 4]).contains("ml_dtypes"));
        assert!(err(&d("<f4", "False"), &[0; 7]).contains("takes 8 bytes; the file has 7"));
        assert!(parse(b"PK\x03\x04").is_err_and(|e| e.contains("magic")));
        assert_eq!(
            parse(&npy_with(&d("=f4", "False"), &[0; 8])).map(|a| a.element),
            Ok(ElementType::F32)
        );
    }
}
