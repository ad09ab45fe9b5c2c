//! `customop ops LIB`: a kernel library's ops, from its manifest, as a table or JSON.

use crate::Failure;
use serde_json::{Value, json};
use std::path::Path;

/// The manifest of kernel library `path` (loading it).
pub fn manifest(path: &Path) -> Result<Value, Failure> {
    if !path.is_file() {
        return Err(Failure::Library(format!(
            "{}: no such file",
            path.display()
        )));
    }
    // SAFETY: the user names a customop kernel library; loading it runs its initialisers,
    // as `customop run` and every host that calls its ops do. A library without the
    // manifest symbol is refused by name.
    unsafe { customop::pjrt::library_manifest(path) }.map_err(|e| Failure::Library(e.to_string()))
}

/// Every descriptor layout the manifest's ops name (externals, descriptor attributes, opaque
/// results), by name, in first-seen order.
pub fn descriptors(manifest: &Value) -> Vec<&Value> {
    let mut out: Vec<&Value> = Vec::new();
    let ops = manifest["ops"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for op in ops {
        let schema = &op["schema"];
        let params = schema["params"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let results = schema["results"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for p in params.iter().chain(results) {
            for d in [&p["descriptor"], &p["type"]["layout"]] {
                if d.is_object() && !out.iter().any(|o| o["name"] == d["name"]) {
                    out.push(d);
                }
            }
        }
    }
    out
}

/// What `customop ops LIB --json` prints: per op its name, target, torch schema, attributes,
/// externals; and the descriptors' layouts.
pub fn summary(manifest: &Value) -> Value {
    let ops = manifest["ops"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let ops: Vec<Value> = ops
        .iter()
        .map(|op| {
            let params = op["schema"]["params"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let of = |kind: &str| -> Vec<Value> {
                params
                    .iter()
                    .filter(|p| p["kind"] == kind)
                    .cloned()
                    .collect()
            };
            json!({
                "name": op["name"],
                "target": op["target"],
                "schema": op["schema_string"],
                "attributes": of("attribute").iter().map(|a| json!({
                    "name": a["name"], "type": a["type"],
                })).collect::<Vec<_>>(),
                "externals": of("external").iter().map(|e| json!({
                    "name": e["name"],
                    "descriptor": e["descriptor"]["name"],
                    "mutable": e["mutable"],
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "customop_version": manifest["customop_version"],
        "ops": ops,
        "descriptors": descriptors(manifest),
    })
}

/// A field type as Rust spells it (`[u8; 16]`, `Vec<f32>`, a struct or enum by name).
fn spelled(ty: &Value) -> String {
    match ty["kind"].as_str().unwrap_or("?") {
        "array" => format!("[{}; {}]", spelled(&ty["element"]), ty["len"]),
        "vec" => format!("Vec<{}>", spelled(&ty["element"])),
        "string" => "String".into(),
        "struct" => ty["layout"]["name"].as_str().unwrap_or("?").into(),
        "enum" => format!(
            "{}({})",
            ty["name"].as_str().unwrap_or("?"),
            ty["repr"].as_str().unwrap_or("?")
        ),
        k => k.into(),
    }
}

/// What `customop ops LIB` prints: one line per op (its torch schema), its attributes and
/// externals under it, then each descriptor's fields with their offsets.
pub fn table(manifest: &Value) -> String {
    let s = summary(manifest);
    let mut out = String::new();
    let ops = s["ops"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    out.push_str(&format!(
        "{} ops (customop {}):\n",
        ops.len(),
        s["customop_version"].as_str().unwrap_or("?")
    ));
    for op in ops {
        out.push_str(&format!(
            "  {}\n      target {}\n",
            op["schema"].as_str().unwrap_or("?"),
            op["target"].as_str().unwrap_or("?")
        ));
        for e in op["externals"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            out.push_str(&format!(
                "      external {}: {}{}\n",
                e["name"].as_str().unwrap_or("?"),
                e["descriptor"].as_str().unwrap_or("?"),
                if e["mutable"] == true {
                    " (updated)"
                } else {
                    ""
                }
            ));
        }
    }
    let descriptors = s["descriptors"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !descriptors.is_empty() {
        out.push_str(&format!("{} descriptors:\n", descriptors.len()));
    }
    for d in descriptors {
        let size = match d["packed_size"].as_u64() {
            Some(n) => format!("{n} bytes packed"),
            None => "with tails".into(),
        };
        out.push_str(&format!(
            "  {} ({size}, fingerprint {})\n",
            d["name"].as_str().unwrap_or("?"),
            d["fingerprint"].as_str().unwrap_or("?")
        ));
        for f in d["fields"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let at = match f["offset"].as_u64() {
                Some(o) => format!("@{o:<5}"),
                None => "tail  ".into(),
            };
            out.push_str(&format!(
                "      {at} {}: {}\n",
                f["name"].as_str().unwrap_or("?"),
                spelled(&f["type"])
            ));
        }
    }
    out
}
