//! An external's value from a JSON or TOML file, as the descriptor packer takes it
//! ([`customop::descriptor::pack_value`]); TOML's floats JSON cannot write become the strings
//! the packer reads (fuzzed: runtime/fuzz, target `external`).

use serde_json::Value;
use std::path::Path;

/// A JSON or TOML file's value (by its extension; JSON otherwise), as the descriptor packer
/// takes it ([`customop::descriptor::pack_value`]).
pub fn value_of(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let toml = path.extension().is_some_and(|x| x == "toml");
    let fail = |e: String| format!("{}: {e}", path.display());
    if toml {
        let table: toml::Table = toml::from_str(&text).map_err(|e| fail(e.to_string()))?;
        from_toml(toml::Value::Table(table)).map_err(fail)
    } else {
        serde_json::from_str(&text).map_err(|e| fail(e.to_string()))
    }
}

/// A TOML value as the packer's JSON: its floats JSON has no literal for (`inf`, `nan`, which
/// TOML writes) as the strings `"inf"`, `"-inf"`, `"nan"` the packer reads.
pub fn from_toml(v: toml::Value) -> Result<Value, String> {
    Ok(match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(x) if x.is_nan() => Value::from("nan"),
        toml::Value::Float(x) if x.is_infinite() => {
            Value::from(if x > 0.0 { "inf" } else { "-inf" })
        }
        toml::Value::Float(x) => Value::from(x),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => return Err(format!("a date ({d}) is no descriptor value")),
        toml::Value::Array(a) => {
            Value::Array(a.into_iter().map(from_toml).collect::<Result<_, _>>()?)
        }
        toml::Value::Table(t) => Value::Object(
            t.into_iter()
                .map(|(k, v)| Ok((k, from_toml(v)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}
