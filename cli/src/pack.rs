//! A descriptor's bytes (wire format v1) from a JSON or TOML value, by the layout a kernel
//! library's manifest exports: what `customop run --external name=file.json` feeds. The rules
//! are the Python side's (`customop.descriptors.pack`): every field given and no other, numbers
//! of the field's type and range, enums by variant name, `[u8; N]` also as a string of exactly
//! N bytes, `Vec` and `String` tails after the fixed part.

use serde_json::Value;

/// The wire format's header: magic, version, flags, payload length, reserved, fingerprint.
const MAGIC: &[u8; 4] = b"CUOP";
const FORMAT_VERSION: u16 = 1;

/// Packs `value` as descriptor `layout` (the manifest's JSON layout); the error names the
/// descriptor and the field.
pub fn pack(layout: &Value, value: &Value) -> Result<Vec<u8>, String> {
    let name = text(layout, "name")?;
    let fingerprint = text(layout, "fingerprint")?;
    let fingerprint = u64::from_str_radix(fingerprint.trim_start_matches("0x"), 16)
        .map_err(|e| format!("descriptor `{name}`: fingerprint `{fingerprint}`: {e}"))?;
    let fixed = size(layout, "fixed_size")?;
    let mut payload = vec![0u8; fixed];
    let w = Writer { root: name };
    w.fixed(layout, value, &mut payload, 0, "")?;
    for f in fields(layout)? {
        let ty = &f["type"];
        let kind = text(ty, "kind")?;
        if kind != "vec" && kind != "string" {
            continue;
        }
        let fname = text(f, "name")?;
        let v = &value[fname];
        payload.resize(payload.len().next_multiple_of(4), 0);
        if kind == "string" {
            let s = v
                .as_str()
                .ok_or_else(|| w.fail(fname, format!("expected a string, got {v}")))?;
            payload.extend_from_slice(&count(s.len(), &w, fname)?.to_le_bytes());
            payload.extend_from_slice(s.as_bytes());
        } else {
            let items = v
                .as_array()
                .ok_or_else(|| w.fail(fname, format!("expected a list, got {v}")))?;
            payload.extend_from_slice(&count(items.len(), &w, fname)?.to_le_bytes());
            let (s, a) = size_align(&ty["element"])?;
            payload.resize(payload.len().next_multiple_of(a), 0);
            let start = payload.len();
            payload.resize(start + s * items.len(), 0);
            for (i, x) in items.iter().enumerate() {
                w.write(
                    &ty["element"],
                    x,
                    &mut payload,
                    start + i * s,
                    &format!("{fname}[{i}]"),
                )?;
            }
        }
    }
    let mut out = Vec::with_capacity(24 + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&count(payload.len(), &w, "")?.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

fn count(n: usize, w: &Writer<'_>, path: &str) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| w.fail(path, format!("{n} is more than a u32 length")))
}

fn text<'v>(v: &'v Value, key: &str) -> Result<&'v str, String> {
    v[key]
        .as_str()
        .ok_or_else(|| format!("the layout has no `{key}`: {v}"))
}

fn size(v: &Value, key: &str) -> Result<usize, String> {
    v[key]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("the layout has no `{key}`: {v}"))
}

fn fields(layout: &Value) -> Result<&Vec<Value>, String> {
    layout["fields"]
        .as_array()
        .ok_or_else(|| format!("the layout has no fields: {layout}"))
}

/// (size, alignment) of a fixed-layout type.
fn size_align(ty: &Value) -> Result<(usize, usize), String> {
    let kind = text(ty, "kind")?;
    Ok(match kind {
        "array" => {
            let (s, a) = size_align(&ty["element"])?;
            (s * size(ty, "len")?, a)
        }
        "struct" => (
            size(&ty["layout"], "fixed_size")?,
            size(&ty["layout"], "align")?,
        ),
        "enum" => {
            let s = prim_size(text(ty, "repr")?)?;
            (s, s)
        }
        k => {
            let s = prim_size(k)?;
            (s, s)
        }
    })
}

fn prim_size(kind: &str) -> Result<usize, String> {
    Ok(match kind {
        "bool" | "i8" | "u8" => 1,
        k if k.starts_with("f8") => 1,
        "i16" | "u16" | "f16" | "bf16" => 2,
        "i32" | "u32" | "f32" => 4,
        "i64" | "u64" | "f64" => 8,
        k => return Err(format!("`{k}` is not a fixed-layout field type")),
    })
}

struct Writer<'a> {
    root: &'a str,
}

impl Writer<'_> {
    fn fail(&self, path: &str, why: String) -> String {
        if path.is_empty() {
            format!("descriptor `{}`: {why}", self.root)
        } else {
            format!("descriptor `{}`, field `{path}`: {why}", self.root)
        }
    }

    /// The fixed fields of `layout` from the object `value`, at `at` of `buf`.
    fn fixed(
        &self,
        layout: &Value,
        value: &Value,
        buf: &mut [u8],
        at: usize,
        path: &str,
    ) -> Result<(), String> {
        let join = |n: &str| {
            if path.is_empty() {
                n.to_string()
            } else {
                format!("{path}.{n}")
            }
        };
        let obj = value.as_object().ok_or_else(|| {
            self.fail(
                path,
                format!(
                    "expected an object of the fields of `{}`, got {value}",
                    text(layout, "name").unwrap_or("?")
                ),
            )
        })?;
        let known: Vec<&str> = fields(layout)?
            .iter()
            .filter_map(|f| f["name"].as_str())
            .collect();
        if let Some(missing) = known.iter().find(|k| !obj.contains_key(**k)) {
            return Err(format!(
                "descriptor `{}` has no value for field `{}`",
                self.root,
                join(missing)
            ));
        }
        if let Some(unknown) = obj.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!(
                "descriptor `{}` has no field `{}` ({}: {})",
                self.root,
                join(unknown),
                if path.is_empty() {
                    "its fields".to_string()
                } else {
                    format!("fields of `{path}`")
                },
                known.join(", ")
            ));
        }
        for f in fields(layout)? {
            let Some(offset) = f["offset"].as_u64().and_then(|o| usize::try_from(o).ok()) else {
                continue; // a tail
            };
            let name = text(f, "name")?;
            self.write(&f["type"], &obj[name], buf, at + offset, &join(name))?;
        }
        Ok(())
    }

    fn write(
        &self,
        ty: &Value,
        v: &Value,
        buf: &mut [u8],
        at: usize,
        path: &str,
    ) -> Result<(), String> {
        let kind = text(ty, "kind")?;
        let put = |buf: &mut [u8], bytes: &[u8]| -> Result<(), String> {
            buf.get_mut(at..at + bytes.len())
                .ok_or_else(|| self.fail(path, "lies beyond the descriptor's size".into()))?
                .copy_from_slice(bytes);
            Ok(())
        };
        match kind {
            "bool" => {
                let b = v
                    .as_bool()
                    .ok_or_else(|| self.fail(path, format!("expected true or false, got {v}")))?;
                put(buf, &[u8::from(b)])
            }
            "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => {
                let n = int(v).ok_or_else(|| {
                    self.fail(path, format!("expected an integer ({kind}), got {v}"))
                })?;
                let range = || self.fail(path, format!("{n} is out of range for {kind}"));
                // Its little-endian bytes as integer type `$t`, or out of range.
                macro_rules! le {
                    ($t:ty) => {
                        <$t>::try_from(n)
                            .map_err(|_| range())?
                            .to_le_bytes()
                            .to_vec()
                    };
                }
                let bytes: Vec<u8> = match kind {
                    "i8" => le!(i8),
                    "i16" => le!(i16),
                    "i32" => le!(i32),
                    "i64" => le!(i64),
                    "u8" => le!(u8),
                    "u16" => le!(u16),
                    "u32" => le!(u32),
                    _ => le!(u64),
                };
                put(buf, &bytes)
            }
            "f16" | "bf16" | "f32" | "f64" => {
                let x = v.as_f64().ok_or_else(|| {
                    self.fail(path, format!("expected a number ({kind}), got {v}"))
                })?;
                let bytes = match kind {
                    "f64" => x.to_le_bytes().to_vec(),
                    "f32" => finite(x, x as f32, kind, self, path)?
                        .to_le_bytes()
                        .to_vec(),
                    "f16" => {
                        let h = half::f16::from_f64(x);
                        finite(x, h.to_f32(), kind, self, path)?;
                        h.to_le_bytes().to_vec()
                    }
                    _ => {
                        let h = half::bf16::from_f64(x);
                        finite(x, h.to_f32(), kind, self, path)?;
                        h.to_le_bytes().to_vec()
                    }
                };
                put(buf, &bytes)
            }
            k if k.starts_with("f8") => {
                let x = v.as_f64().ok_or_else(|| {
                    self.fail(path, format!("expected a number ({kind}), got {v}"))
                })?;
                let bits = float8_bits(k, x)
                    .ok_or_else(|| self.fail(path, format!("`{k}` is no 8-bit float type")))?;
                put(buf, &[bits])
            }
            "enum" => {
                let name = v.as_str().ok_or_else(|| {
                    self.fail(path, format!("expected a variant's name, got {v}"))
                })?;
                let variants = ty["variants"].as_array().cloned().unwrap_or_default();
                let value = variants
                    .iter()
                    .find(|x| x["name"].as_str() == Some(name))
                    .and_then(|x| x["value"].as_i64())
                    .ok_or_else(|| {
                        let names: Vec<&str> =
                            variants.iter().filter_map(|x| x["name"].as_str()).collect();
                        self.fail(
                            path,
                            format!(
                                "`{name}` is not a variant of {} (its variants: {})",
                                text(ty, "name").unwrap_or("?"),
                                names.join(", ")
                            ),
                        )
                    })?;
                let repr = text(ty, "repr")?;
                self.write(
                    &serde_json::json!({ "kind": repr }),
                    &value.into(),
                    buf,
                    at,
                    path,
                )
            }
            "array" => {
                let len = size(ty, "len")?;
                let element = &ty["element"];
                let bytes_of_str = matches!(text(element, "kind")?, "u8" | "i8");
                let items: Vec<Value> = match v {
                    Value::String(s) if bytes_of_str => {
                        if s.len() != len {
                            return Err(self.fail(
                                path,
                                format!("a [u8; {len}] takes exactly {len} bytes, got {}", s.len()),
                            ));
                        }
                        s.bytes()
                            .map(|b| {
                                if text(element, "kind") == Ok("i8") {
                                    Value::from(i64::from(b as i8))
                                } else {
                                    Value::from(b)
                                }
                            })
                            .collect()
                    }
                    Value::Array(a) => a.clone(),
                    _ => return Err(self.fail(path, format!("expected a list, got {v}"))),
                };
                if items.len() != len {
                    return Err(self.fail(
                        path,
                        format!("expected {len} elements, got {}", items.len()),
                    ));
                }
                let (s, _) = size_align(element)?;
                for (i, x) in items.iter().enumerate() {
                    self.write(element, x, buf, at + i * s, &format!("{path}[{i}]"))?;
                }
                Ok(())
            }
            "struct" => self.fixed(&ty["layout"], v, buf, at, path),
            k => Err(self.fail(path, format!("`{k}` cannot be in the fixed part"))),
        }
    }
}

/// An integer JSON (or TOML) value, signed or unsigned, as an i128.
fn int(v: &Value) -> Option<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

/// `rounded`, the value `x` rounded to type `kind`, unless a finite `x` became infinite.
fn finite(x: f64, rounded: f32, kind: &str, w: &Writer<'_>, path: &str) -> Result<f32, String> {
    if x.is_finite() && rounded.is_infinite() {
        return Err(w.fail(path, format!("{x} does not fit {kind}")));
    }
    Ok(rounded)
}

/// The bits of the 8-bit float type `kind` nearest to `x` (customop's rounding, ml_dtypes').
fn float8_bits(kind: &str, x: f64) -> Option<u8> {
    use customop::*;
    Some(match kind {
        "f8E4M3FN" => F8E4M3FN::from_f64(x).to_bits(),
        "f8E5M2" => F8E5M2::from_f64(x).to_bits(),
        "f8E4M3" => F8E4M3::from_f64(x).to_bits(),
        "f8E3M4" => F8E3M4::from_f64(x).to_bits(),
        "f8E4M3FNUZ" => F8E4M3FNUZ::from_f64(x).to_bits(),
        "f8E5M2FNUZ" => F8E5M2FNUZ::from_f64(x).to_bits(),
        "f8E4M3B11FNUZ" => F8E4M3B11FNUZ::from_f64(x).to_bits(),
        "f8E8M0FNU" => F8E8M0FNU::from_f64(x).to_bits(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::pack;
    use customop::Descriptor;
    use serde_json::json;

    #[derive(Descriptor, Debug, Clone, Copy, PartialEq)]
    #[repr(u8)]
    enum Mode {
        Fast = 0,
        Exact = 7,
    }

    #[derive(Descriptor, Debug, Clone, PartialEq)]
    struct Inner {
        scale: half::bf16,
        taps: [i16; 3],
    }

    #[derive(Descriptor, Debug, Clone, PartialEq)]
    struct Config {
        on: bool,
        gain: f32,
        big: u64,
        mode: Mode,
        tag: [u8; 4],
        fp8: customop::F8E4M3FN,
        inner: Inner,
        weights: Vec<f64>,
        label: String,
    }

    fn layout() -> serde_json::Value {
        serde_json::to_value(Config::layout()).unwrap()
    }

    fn value() -> serde_json::Value {
        json!({"on": true, "gain": 0.1, "big": u64::MAX, "mode": "Exact", "tag": "abcd",
               "fp8": 0.3, "inner": {"scale": 1.5, "taps": [-1, 2, -3]},
               "weights": [1.5, -2.0], "label": "héllo"})
    }

    #[test]
    fn the_bytes_are_the_derives() {
        let want = Config {
            on: true,
            gain: 0.1,
            big: u64::MAX,
            mode: Mode::Exact,
            tag: *b"abcd",
            fp8: customop::F8E4M3FN::from_f64(0.3),
            inner: Inner {
                scale: half::bf16::from_f32(1.5),
                taps: [-1, 2, -3],
            },
            weights: vec![1.5, -2.0],
            label: "héllo".into(),
        };
        assert_eq!(pack(&layout(), &value()).unwrap(), want.pack());
        // From TOML (whose integers stop at i64::MAX), the same bytes as from JSON.
        let toml: serde_json::Value = toml::from_str(
            "on = true\ngain = 0.1\nbig = 5\nmode = 'Exact'\ntag = 'abcd'\nfp8 = 0.3\n\
             weights = [1.5, -2.0]\nlabel = 'héllo'\n[inner]\nscale = 1.5\ntaps = [-1, 2, -3]\n",
        )
        .unwrap();
        let mut json = value();
        json["big"] = 5.into();
        assert_eq!(
            pack(&layout(), &toml).unwrap(),
            pack(&layout(), &json).unwrap()
        );
    }

    #[test]
    fn each_mistake_is_named() {
        let cases = [
            ("on", json!(1), "field `on`: expected true or false"),
            ("big", json!(-1), "field `big`: -1 is out of range for u64"),
            (
                "gain",
                json!(1e39),
                "field `gain`: 1000000000000000000000000000000000000000 does not fit f32",
            ),
            (
                "mode",
                json!("Slow"),
                "`Slow` is not a variant of Mode (its variants: Fast, Exact)",
            ),
            (
                "tag",
                json!("abc"),
                "field `tag`: a [u8; 4] takes exactly 4 bytes, got 3",
            ),
            (
                "inner",
                json!({"scale": 1.0}),
                "has no value for field `inner.taps`",
            ),
            ("weights", json!(3), "field `weights`: expected a list"),
            ("label", json!(["x"]), "field `label`: expected a string"),
        ];
        for (field, bad, message) in cases {
            let mut v = value();
            v[field] = bad;
            let e = pack(&layout(), &v).unwrap_err();
            assert!(e.contains(message), "{field}: {e}");
            assert!(e.starts_with("descriptor `"), "{e}");
        }
        let mut v = value();
        v.as_object_mut().unwrap().remove("gain");
        assert!(
            pack(&layout(), &v)
                .unwrap_err()
                .contains("no value for field `gain`")
        );
        v["gian"] = json!(1.0);
        v["gain"] = json!(1.0);
        assert!(
            pack(&layout(), &v)
                .unwrap_err()
                .contains("has no field `gian` (its fields: on")
        );
    }
}
