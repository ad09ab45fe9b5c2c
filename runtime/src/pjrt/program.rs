//! A program to compile, and what the runner reads of its entry function `@main` before
//! compiling: each argument's type, its `customop.external` annotation and its Shardy
//! sharding, each result's type and sharding, and the device mesh. The runner checks inputs
//! against this (the plugin aborts the process on some bad input instead of returning an
//! error) and feeds externals by the name their annotation carries.

use super::error::RunError;
use crate::types::{ElementType, TensorType};

/// StableHLO to compile: text (read for its signature) or bytecode (a portable artifact,
/// compiled as is; its signature is given, or only counts are checked after compiling).
#[derive(Clone, Debug)]
pub struct Program {
    pub(super) code: Vec<u8>,
    pub(super) signature: Option<Signature>,
}

impl Program {
    /// A program from StableHLO (or any MLIR the plugin reads) text; its `@main` signature
    /// is read now.
    pub fn text(text: &str) -> Result<Program, RunError> {
        let signature = Signature::parse(text)?;
        Ok(Program {
            code: text.as_bytes().to_vec(),
            signature: Some(signature),
        })
    }

    /// A program from MLIR bytecode (`Module::to_bytecode`, a StableHLO portable
    /// artifact). With `signature` (read from the same program's text, say), inputs are
    /// checked and externals fed by name as for text; without, inputs are taken in order and
    /// checked only by the plugin. A signature is checked for consistency (its parameters
    /// numbered in order, a sharding per result, mesh axes of positive size).
    pub fn bytecode(bytes: &[u8], signature: Option<Signature>) -> Result<Program, RunError> {
        if let Some(s) = &signature {
            s.check()?;
        }
        Ok(Program {
            code: bytes.to_vec(),
            signature,
        })
    }

    /// A module built with customop's builder.
    #[cfg(feature = "mlir")]
    pub fn module(module: &crate::lower::Module) -> Result<Program, RunError> {
        let text = module
            .to_text()
            .map_err(|e| RunError::Program(e.to_string()))?;
        Program::text(&text)
    }

    /// The signature read from the program, if any.
    pub fn signature(&self) -> Option<&Signature> {
        self.signature.as_ref()
    }
}

/// What a `customop.external` annotation says of an argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalSpec {
    /// The external's name (`f.external::<T>("name")`), by which inputs give it.
    pub name: Option<String>,
    /// The descriptor's name.
    pub descriptor: String,
    /// The descriptor layout's fingerprint.
    pub fingerprint: u64,
    /// The packed size in bytes.
    pub size: usize,
    /// Whether an op updates it.
    pub mutable: bool,
}

/// How a value is split over the mesh: per dimension, the mesh axes it is split along
/// (none: not split), as Shardy's `#sdy.sharding<@mesh, [{"x"}, {}]>` says.
pub type DimSharding = Vec<Vec<String>>;

/// One argument of `@main`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its position.
    pub index: usize,
    /// Its type.
    pub ty: TensorType,
    /// Its `customop.external` annotation.
    pub external: Option<ExternalSpec>,
    /// Its sharding, in a program with a mesh.
    pub sharding: Option<DimSharding>,
}

/// `@main`'s signature as the runner reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The arguments, in order.
    pub params: Vec<Param>,
    /// The results' types, in order.
    pub results: Vec<TensorType>,
    /// The results' shardings (`None` each when the program has no mesh).
    pub result_shardings: Vec<Option<DimSharding>>,
    /// The device mesh (`sdy.mesh`): axis names and sizes, in order.
    pub mesh: Vec<(String, i64)>,
}

impl Signature {
    /// Reads `@main`'s signature from pretty-printed MLIR text.
    pub fn parse(text: &str) -> Result<Signature, RunError> {
        let err = |m: String| RunError::Program(m);
        let head = find_main(text).ok_or_else(|| {
            err("no `func.func @main` (the entry function PJRT runs) in the program".into())
        })?;
        let rest = &text[head..];
        let close = matching(rest, 0)
            .ok_or_else(|| err("the arguments of `@main` are not closed".into()))?;
        let args_text = &rest[1..close];
        let mut params = Vec::new();
        for (index, arg) in split_top(args_text, ',').into_iter().enumerate() {
            let arg = arg.trim();
            if arg.is_empty() {
                continue;
            }
            let after_colon = arg
                .split_once(':')
                .map(|(_, t)| t.trim_start())
                .ok_or_else(|| err(format!("argument {index} of `@main` has no type: `{arg}`")))?;
            let (ty_text, attrs) = split_type(after_colon);
            let ty = parse_tensor_type(ty_text)
                .map_err(|m| err(format!("argument {index} of `@main`: {m}")))?;
            let external = match attr_value(attrs, "customop.external") {
                Some(v) => Some(
                    parse_external(v)
                        .map_err(|m| err(format!("argument {index}'s customop.external: {m}")))?,
                ),
                None => None,
            };
            let sharding = sharding_of(attrs)
                .map_err(|m| err(format!("argument {index}'s sdy.sharding: {m}")))?;
            params.push(Param {
                index,
                ty,
                external,
                sharding,
            });
        }
        // Results: `-> type`, `-> (type {attrs}, ...)`, or nothing.
        let after = rest[close + 1..].trim_start();
        let mut results = Vec::new();
        let mut result_shardings = Vec::new();
        if let Some(r) = after.strip_prefix("->") {
            let r = r.trim_start();
            let items: Vec<&str> = if r.starts_with('(') {
                let c = matching(r, 0)
                    .ok_or_else(|| err("the results of `@main` are not closed".into()))?;
                split_top(&r[1..c], ',')
            } else {
                vec![split_type(r).0]
            };
            for (i, item) in items.into_iter().enumerate() {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                let (ty_text, attrs) = split_type(item);
                results.push(
                    parse_tensor_type(ty_text)
                        .map_err(|m| err(format!("result {i} of `@main`: {m}")))?,
                );
                result_shardings.push(
                    sharding_of(attrs)
                        .map_err(|m| err(format!("result {i}'s sdy.sharding: {m}")))?,
                );
            }
        }
        let mesh = parse_mesh(text).map_err(|m| err(format!("sdy.mesh: {m}")))?;
        let sig = Signature {
            params,
            results,
            result_shardings,
            mesh,
        };
        sig.check()?;
        Ok(sig)
    }

    /// Whether the signature is one the runner can use: parameters numbered by position, one
    /// sharding entry per result, mesh axes of positive size.
    fn check(&self) -> Result<(), RunError> {
        if let Some((i, p)) = self.params.iter().enumerate().find(|(i, p)| p.index != *i) {
            return Err(RunError::Program(format!(
                "parameter {i} of the signature says it is argument {}",
                p.index
            )));
        }
        if self.result_shardings.len() != self.results.len() {
            return Err(RunError::Program(format!(
                "the signature has {} results but {} result shardings",
                self.results.len(),
                self.result_shardings.len()
            )));
        }
        if let Some((a, n)) = self.mesh.iter().find(|(_, n)| *n <= 0) {
            return Err(RunError::Program(format!("mesh axis `{a}` has size {n}")));
        }
        Ok(())
    }

    /// The argument fed by external `name`.
    pub fn external(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| {
            p.external
                .as_ref()
                .is_some_and(|e| e.name.as_deref() == Some(name))
        })
    }

    /// The number of devices the mesh has (1 without a mesh).
    pub fn mesh_devices(&self) -> i64 {
        self.mesh.iter().map(|(_, n)| *n).product::<i64>().max(1)
    }
}

/// Byte offset of the `(` that opens `@main`'s arguments.
fn find_main(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find("@main(") {
        let at = from + i;
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        if text[line_start..at].contains("func.func") {
            return Some(at + "@main".len());
        }
        from = at + 1;
    }
    None
}

/// The index of the bracket closing the one at `open` (`(`, `{`, `[` or `<`), skipping
/// strings.
fn matching(s: &str, open: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut i = open;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'(' | b'{' | b'[' | b'<' => depth += 1,
                b')' | b'}' | b']' | b'>' => {
                    // `->` inside types is not a bracket.
                    if c == b'>' && i > 0 && b[i - 1] == b'-' {
                        i += 1;
                        continue;
                    }
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// `s` split at top-level `sep` (outside brackets and strings).
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut start = 0;
    let mut prev = '\0';
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            prev = c;
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '{' | '[' | '<' => depth += 1,
            '>' if prev == '-' => {}
            ')' | '}' | ']' | '>' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
        prev = c;
    }
    out.push(&s[start..]);
    out
}

/// A type followed by optional attributes: `tensor<3xf32> {a = 1}` → (`tensor<3xf32>`,
/// `{a = 1}`).
fn split_type(s: &str) -> (&str, &str) {
    let s = s.trim();
    let (ty, rest) = match s.find('<').and_then(|open| matching(s, open)) {
        Some(close) => s.split_at(close + 1),
        None => match s.find([' ', '{']) {
            Some(i) => s.split_at(i),
            None => (s, ""),
        },
    };
    // The attribute dictionary, without what may follow it (`loc(...)` with debug info).
    let rest = rest.trim();
    let attrs = match rest
        .find('{')
        .and_then(|open| Some((open, matching(rest, open)?)))
    {
        Some((open, close)) => &rest[open..=close],
        None => "",
    };
    (ty.trim(), attrs)
}

/// `tensor<3x4xf32>`, `tensor<f32>`, `tensor<2xcomplex<f32>>`.
pub(super) fn parse_tensor_type(s: &str) -> Result<TensorType, String> {
    let inner = s
        .strip_prefix("tensor<")
        .and_then(|r| r.strip_suffix('>'))
        .ok_or_else(|| format!("`{s}` is not a ranked tensor type"))?;
    let mut dims = Vec::new();
    let mut rest = inner;
    loop {
        let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && rest[digits..].starts_with('x') {
            let d: i64 = rest[..digits]
                .parse()
                .map_err(|_| format!("dimension `{}` of `{s}` is too large", &rest[..digits]))?;
            dims.push(d);
            rest = &rest[digits + 1..];
        } else if rest.starts_with("?x") {
            return Err(format!(
                "`{s}` has a dynamic dimension; shapes must be static"
            ));
        } else {
            break;
        }
    }
    // Encodings (`tensor<4xf32, #enc>`) are not read.
    let elem = rest.split(',').next().unwrap_or(rest).trim();
    let element = ElementType::ALL
        .into_iter()
        .find(|t| t.mlir_name() == elem)
        .ok_or_else(|| format!("element type `{elem}` of `{s}` is not one customop supports"))?;
    TensorType::new(element, dims).map_err(|e| e.to_string())
}

/// The value text of attribute `key` in a dictionary `{k = v, ...}`.
fn attr_value<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let d = dict.trim();
    let inner = d.strip_prefix('{')?.strip_suffix('}')?;
    for entry in split_top(inner, ',') {
        // A unit attribute (`{llvm.noalias, ...}`) has no value.
        let Some((k, v)) = entry.split_once('=') else {
            continue;
        };
        if k.trim().trim_matches('"') == key {
            return Some(v.trim());
        }
    }
    None
}

fn unquote(v: &str) -> Option<&str> {
    v.strip_prefix('"')?.strip_suffix('"')
}

/// `{descriptor = "a::B", fingerprint = "0x...", mutable = false, name = "x", size = 56 : i64}`.
fn parse_external(v: &str) -> Result<ExternalSpec, String> {
    let field = |k: &str| attr_value(v, k).ok_or_else(|| format!("no `{k}`"));
    let descriptor = unquote(field("descriptor")?)
        .ok_or("`descriptor` is not a string")?
        .to_string();
    let fp = unquote(field("fingerprint")?).ok_or("`fingerprint` is not a string")?;
    let fingerprint = fp
        .strip_prefix("0x")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or_else(|| format!("fingerprint `{fp}` is not 0x and 16 hex digits"))?;
    let size_text = field("size")?;
    let size = size_text
        .split(':')
        .next()
        .unwrap_or("")
        .trim()
        .parse::<usize>()
        .map_err(|_| format!("size `{size_text}` is not a number"))?;
    let mutable = match attr_value(v, "mutable") {
        None | Some("false") => false,
        Some("true") => true,
        Some(o) => return Err(format!("mutable `{o}` is not a bool")),
    };
    let name = attr_value(v, "name").and_then(unquote).map(str::to_string);
    Ok(ExternalSpec {
        name,
        descriptor,
        fingerprint,
        size,
        mutable,
    })
}

/// The `sdy.sharding` of an argument or result's attributes.
fn sharding_of(attrs: &str) -> Result<Option<DimSharding>, String> {
    let Some(v) = attr_value(attrs, "sdy.sharding") else {
        return Ok(None);
    };
    parse_sharding(v).map(Some)
}

/// `#sdy.sharding<@mesh, [{"x"}, {}]>` → `[["x"], []]`. Open dimensions (`?`) and
/// `replicated=` are read as given (replicated axes split nothing).
pub(super) fn parse_sharding(v: &str) -> Result<DimSharding, String> {
    if v.contains("unreduced") {
        return Err(format!(
            "`{v}` leaves axes unreduced (partial values); the runner assembles only split or \
             replicated values"
        ));
    }
    let inner = v
        .trim()
        .strip_prefix("#sdy.sharding<")
        .and_then(|r| r.strip_suffix('>'))
        .ok_or_else(|| format!("`{v}` is not #sdy.sharding<...>"))?;
    let parts = split_top(inner, ',');
    let dims_text = parts
        .get(1)
        .map(|s| s.trim())
        .ok_or_else(|| format!("`{v}` has no dimension list"))?;
    let list = dims_text
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(|| format!("`{dims_text}` is not a list of dimensions"))?;
    let mut dims = Vec::new();
    if list.trim().is_empty() {
        return Ok(dims);
    }
    for d in split_top(list, ',') {
        let d = d.trim();
        let axes = d
            .strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .ok_or_else(|| format!("dimension `{d}` is not {{...}}"))?;
        let mut names = Vec::new();
        for a in split_top(axes, ',') {
            let a = a.trim();
            if a.is_empty() || a == "?" {
                continue;
            }
            let name = unquote(a).ok_or_else(|| {
                format!("axis `{a}` is not a quoted name (sub-axes are not supported)")
            })?;
            names.push(name.to_string());
        }
        dims.push(names);
    }
    Ok(dims)
}

/// The first mesh of the module: `sdy.mesh @name = <["x"=4, "y"=2]>`, or in generic form
/// `"sdy.mesh"() {mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}`.
fn parse_mesh(text: &str) -> Result<Vec<(String, i64)>, String> {
    let Some(at) = text.find("#sdy.mesh<").or_else(|| text.find("sdy.mesh @")) else {
        return Ok(Vec::new());
    };
    // One mesh, its devices in order: the runner places partition d on device d.
    let defined = text.matches("sdy.mesh @").count() + text.matches("\"sdy.mesh\"(").count();
    if defined > 1 {
        return Err(format!(
            "the module defines {defined} meshes; the runner splits over one"
        ));
    }
    let rest = &text[at..];
    let open = rest.find('<').ok_or("no `<`")?;
    let close = matching(rest, open).ok_or("not closed")?;
    let inner = rest[open + 1..close].trim();
    if inner.contains("device_ids") {
        return Err(format!(
            "`{inner}` orders its devices (device_ids); the runner places partition d on \
             device d"
        ));
    }
    let list = inner
        .strip_prefix('[')
        .and_then(|r| r.split(']').next())
        .ok_or_else(|| format!("`{inner}` is not [axes]"))?;
    let mut axes = Vec::new();
    for a in split_top(list, ',') {
        let a = a.trim();
        if a.is_empty() {
            continue;
        }
        let (n, s) = a.split_once('=').ok_or_else(|| format!("axis `{a}`"))?;
        let name = unquote(n.trim()).ok_or_else(|| format!("axis name `{n}`"))?;
        let size: i64 = s.trim().parse().map_err(|_| format!("axis size `{s}`"))?;
        axes.push((name.to_string(), size));
    }
    Ok(axes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const SEED: &str = r#"module {
  func.func @main(%arg0: tensor<3x3xf32>, %arg1: tensor<56xui8> {customop.external = {descriptor = "my_lib::Blob", fingerprint = "0x0731d6f6ff09d648", mutable = false, name = "external", size = 56 : i64}}) -> tensor<3xi8> {
    return %x : tensor<3xi8>
  }
}"#;

    #[test]
    fn the_seed_signature_is_read() {
        let s = Signature::parse(SEED).unwrap();
        assert_eq!(s.params.len(), 2);
        assert_eq!(s.params[0].ty.to_string(), "tensor<3x3xf32>");
        assert_eq!(s.params[0].external, None);
        let e = s.params[1].external.as_ref().unwrap();
        assert_eq!(
            (
                e.name.as_deref(),
                e.descriptor.as_str(),
                e.fingerprint,
                e.size,
                e.mutable
            ),
            (
                Some("external"),
                "my_lib::Blob",
                0x0731d6f6ff09d648,
                56,
                false
            )
        );
        assert_eq!(s.external("external").unwrap().index, 1);
        assert_eq!(s.results.len(), 1);
        assert_eq!(s.results[0].to_string(), "tensor<3xi8>");
        assert!(s.mesh.is_empty());
    }

    #[test]
    fn results_in_parentheses_shardings_and_the_mesh_are_read() {
        let text = r#"module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%arg0: tensor<8x2xcomplex<f32>> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}, %arg1: tensor<i1>) -> (tensor<8xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<f8E4M3FN>) {
"#;
        let s = Signature::parse(text).unwrap();
        assert_eq!(s.mesh, vec![("x".into(), 2), ("y".into(), 2)]);
        let generic = text.replace(
            r#"sdy.mesh @mesh = <["x"=2, "y"=2]>"#,
            r#""sdy.mesh"() {mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"} : () -> ()"#,
        );
        assert_eq!(Signature::parse(&generic).unwrap().mesh, s.mesh);
        assert_eq!(s.mesh_devices(), 4);
        assert_eq!(s.params[0].ty.element(), ElementType::C64);
        assert_eq!(s.params[0].ty.shape(), &[8, 2]);
        assert_eq!(
            s.params[0].sharding,
            Some(vec![vec!["x".to_string(), "y".to_string()], vec![]])
        );
        assert_eq!(s.params[1].ty.element(), ElementType::Bool);
        assert_eq!(s.params[1].ty.shape(), &[] as &[i64]);
        assert_eq!(s.results.len(), 2);
        assert_eq!(s.results[0].element(), ElementType::BF16);
        assert_eq!(s.result_shardings[0], Some(vec![vec!["x".to_string()]]));
        assert_eq!(s.result_shardings[1], None);
        assert_eq!(s.results[1].element(), ElementType::F8E4M3FN);
    }

    #[test]
    fn what_cannot_be_read_is_an_error_not_a_guess() {
        for (text, needle) in [
            (
                "func.func @other(%a: tensor<f32>) {",
                "no `func.func @main`",
            ),
            (
                "func.func @main(%a: tensor<?x3xf32>) {",
                "dynamic dimension",
            ),
            (
                "func.func @main(%a: tensor<3xf128>) {",
                "element type `f128`",
            ),
            ("func.func @main(%a: tensor<3xf32>", "not closed"),
            (
                r#"func.func @main(%a: tensor<3xui8> {customop.external = {descriptor = "a", fingerprint = "12", size = 3 : i64}}) {"#,
                "fingerprint `12`",
            ),
            (
                r#"func.func @main(%a: tensor<3xui8> {customop.external = {fingerprint = "0x12", size = 3 : i64}}) {"#,
                "no `descriptor`",
            ),
        ] {
            let e = Signature::parse(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn unit_attributes_and_locations_do_not_hide_annotations() {
        let text = r#"func.func @main(%a: tensor<2xf32> {llvm.noalias, sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>} loc("x"), %b: tensor<4xui8> {customop.external = {descriptor = "a::B", fingerprint = "0x0000000000000001", name = "b", size = 4 : i64}} loc(unknown)) -> tensor<2xf32> {
  sdy.mesh @mesh = <["x"=2]>"#;
        let s = Signature::parse(text).unwrap();
        assert_eq!(s.params[0].sharding, Some(vec![vec!["x".to_string()]]));
        assert_eq!(s.external("b").unwrap().index, 1);
    }

    #[test]
    fn meshes_the_runner_cannot_place_are_refused() {
        for (text, needle) in [
            (
                "sdy.mesh @a = <[\"x\"=2]>\nsdy.mesh @b = <[\"y\"=2]>\nfunc.func @main(%a: tensor<2xf32>) {",
                "2 meshes",
            ),
            (
                "sdy.mesh @a = <[\"x\"=2], device_ids=[1, 0]>\nfunc.func @main(%a: tensor<2xf32>) {",
                "device_ids",
            ),
            (
                "sdy.mesh @a = <[\"x\"=0]>\nfunc.func @main(%a: tensor<2xf32>) {",
                "size 0",
            ),
            (
                r#"sdy.mesh @a = <["x"=2]>
func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32> {sdy.sharding = #sdy.sharding<@a, [{}], unreduced={"x"}>}) {"#,
                "unreduced",
            ),
        ] {
            let e = Signature::parse(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn a_signature_given_with_bytecode_is_checked() {
        let mut s = Signature::parse(SEED).unwrap();
        s.params[1].index = 5;
        let e = Program::bytecode(b"ML\xefR", Some(s))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("parameter 1 of the signature says it is argument 5"),
            "{e}"
        );
    }

    #[test]
    fn strings_with_brackets_do_not_confuse_the_splitter() {
        let text = r#"func.func @main(%a: tensor<2xf32> {a.b = "x, (y", c = ">"}, %b: tensor<1xi8>) -> tensor<2xf32> {"#;
        let s = Signature::parse(text).unwrap();
        assert_eq!(s.params.len(), 2);
        assert_eq!(s.params[1].ty.element(), ElementType::I8);
    }
}
