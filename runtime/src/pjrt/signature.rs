//! Reading `@main`'s signature from MLIR text, over the token tree of `mlir_text`: the one
//! `func.func @main` in operation position (never one in a comment, a string, a quoted symbol
//! name or a dialect attribute's body), each argument's type, `customop.external` annotation
//! and Shardy sharding, each result's type and sharding, and the module's device mesh; and
//! the types that hold them.

use super::error::RunError;
use super::mlir_text::{self, Kind, Node, compact, split_commas};
use crate::types::{ElementType, TensorType};

/// The most devices a program's mesh may have (the product of its axis sizes); a larger mesh
/// is refused when the signature is read.
pub const MAX_MESH_DEVICES: i64 = 1 << 16;

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
    /// Reads `@main`'s signature from MLIR text (the entry function in pretty form; the
    /// rest of the module in any form).
    pub fn parse(text: &str) -> Result<Signature, RunError> {
        let sig = read(text).map_err(RunError::Program)?;
        sig.check()?;
        Ok(sig)
    }

    /// Whether the signature is one the runner can use: parameters numbered by position, one
    /// sharding entry per result, mesh axes of positive size.
    pub(super) fn check(&self) -> Result<(), RunError> {
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
        if self.checked_mesh_devices().is_none() {
            return Err(RunError::Program(format!(
                "the mesh {:?} has more than {MAX_MESH_DEVICES} devices",
                self.mesh
            )));
        }
        Ok(())
    }

    /// The product of the mesh's axis sizes, if it is at most [`MAX_MESH_DEVICES`] (checked
    /// arithmetic: sizes come from the program's text).
    pub(super) fn checked_mesh_devices(&self) -> Option<i64> {
        self.mesh
            .iter()
            .try_fold(1i64, |acc, (_, n)| acc.checked_mul(*n))
            .filter(|&d| d <= MAX_MESH_DEVICES)
    }
}

/// Reads the signature of the program `text`.
pub(super) fn read(text: &str) -> Result<Signature, String> {
    let tree = mlir_text::parse(text)?;
    let mut found = Vec::new();
    let mut meshes = Vec::new();
    scan(&tree, &mut found, &mut meshes)?;
    let (args, after) = match found.len() {
        0 => {
            return Err(
                "no `func.func @main` (the entry function PJRT runs) in the program".into(),
            );
        }
        1 => found[0],
        n => {
            return Err(format!(
                "the program defines `@main` {n} times (nested modules?); the runner reads one"
            ));
        }
    };
    let mut params = Vec::new();
    for (index, arg) in split_commas(args).into_iter().enumerate() {
        let at = |m: String| format!("argument {index} of `@main`: {m}");
        let colon = arg
            .iter()
            .position(|n| n.is_punct(':'))
            .ok_or_else(|| at(format!("no type in `{}`", compact(arg))))?;
        let (ty, attrs) = type_and_attrs(&arg[colon + 1..]).map_err(at)?;
        let ty = parse_tensor_type(&ty).map_err(at)?;
        let external = match attrs.and_then(|a| dict_value(a, "customop.external")) {
            Some(v) => Some(
                external(v).map_err(|m| format!("argument {index}'s customop.external: {m}"))?,
            ),
            None => None,
        };
        let sharding =
            sharding_of(attrs).map_err(|m| format!("argument {index}'s sdy.sharding: {m}"))?;
        params.push(Param {
            index,
            ty,
            external,
            sharding,
        });
    }
    let mut results = Vec::new();
    let mut result_shardings = Vec::new();
    if after.first().is_some_and(|n| n.tok(Kind::Arrow).is_some()) {
        let items: Vec<&[Node<'_>]> = match after.get(1).and_then(|n| n.group('(')) {
            Some(inner) => split_commas(inner),
            None => vec![&after[1..]],
        };
        for (i, item) in items.into_iter().enumerate() {
            let (ty, attrs) =
                type_and_attrs(item).map_err(|m| format!("result {i} of `@main`: {m}"))?;
            results
                .push(parse_tensor_type(&ty).map_err(|m| format!("result {i} of `@main`: {m}"))?);
            result_shardings
                .push(sharding_of(attrs).map_err(|m| format!("result {i}'s sdy.sharding: {m}"))?);
        }
    }
    let mesh = match meshes.len() {
        0 => Vec::new(),
        1 => mesh(meshes[0]).map_err(|m| format!("sdy.mesh: {m}"))?,
        n => {
            return Err(format!(
                "sdy.mesh: the module defines {n} meshes; the runner splits over one"
            ));
        }
    };
    Ok(Signature {
        params,
        results,
        result_shardings,
        mesh,
    })
}

type Found<'n, 'a> = (&'n [Node<'a>], &'n [Node<'a>]);

/// Every `func.func [visibility] @main(args) rest` and every mesh definition in operation
/// position: at the top level and inside regions (`{...}`, and the `({...})` of generic ops),
/// never inside `<...>` (dialect attributes and types) or `[...]` (arrays).
fn scan<'n, 'a>(
    nodes: &'n [Node<'a>],
    found: &mut Vec<Found<'n, 'a>>,
    meshes: &mut Vec<&'n [Node<'a>]>,
) -> Result<(), String> {
    for (i, n) in nodes.iter().enumerate() {
        match n {
            Node::Group('(' | '{', items) => scan(items, found, meshes)?,
            Node::Group(..) => {}
            Node::Tok(t) if t.kind == Kind::Word && t.raw == "func.func" => {
                let mut j = i + 1;
                while nodes
                    .get(j)
                    .is_some_and(|n| ["public", "private", "nested"].iter().any(|v| n.is_word(v)))
                {
                    j += 1;
                }
                let is_main = nodes
                    .get(j)
                    .and_then(|n| n.tok(Kind::Sym))
                    .is_some_and(|s| s.value == "main");
                if let (true, Some(args)) = (is_main, nodes.get(j + 1).and_then(|n| n.group('('))) {
                    found.push((args, &nodes[j + 2..]));
                }
            }
            Node::Tok(t)
                if t.kind == Kind::Str
                    && t.value == "func.func"
                    && nodes.get(i + 1).and_then(|n| n.group('(')).is_some() =>
            {
                return Err(
                    "the program has a `func.func` in generic form; the runner reads \
                            the entry function in MLIR's pretty form (as customop, JAX and \
                            torch_xla print it)"
                        .into(),
                );
            }
            // `sdy.mesh @m = <[...]>`
            Node::Tok(t) if t.kind == Kind::Word && t.raw == "sdy.mesh" => {
                if let Some(body) = nodes.get(i + 3).and_then(|n| n.group('<')) {
                    meshes.push(body);
                }
            }
            // `"sdy.mesh"() {mesh = #sdy.mesh<[...]>, sym_name = "m"}` (or `<{...}>`).
            Node::Tok(t) if t.kind == Kind::Str && t.value == "sdy.mesh" => {
                let dict = nodes[i + 1..].iter().take(3).find_map(|n| {
                    n.group('{')
                        .or_else(|| n.group('<').and_then(|g| g.first()?.group('{')))
                });
                if let Some(body) = dict
                    .and_then(|d| dict_value(d, "mesh"))
                    .and_then(|v| match v {
                        [h, g] if h.tok(Kind::Hash).is_some_and(|h| h.raw == "#sdy.mesh") => {
                            g.group('<')
                        }
                        _ => None,
                    })
                {
                    meshes.push(body);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A type and the attribute dictionary that may follow it (then perhaps `loc(...)`).
fn type_and_attrs<'n, 'a>(
    nodes: &'n [Node<'a>],
) -> Result<(String, Option<&'n [Node<'a>]>), String> {
    let end = nodes
        .iter()
        .position(|n| n.group('{').is_some() || n.is_word("loc"))
        .unwrap_or(nodes.len());
    if end == 0 {
        return Err("no type".into());
    }
    let attrs = nodes.get(end).and_then(|n| n.group('{'));
    Ok((compact(&nodes[..end]), attrs))
}

/// The value nodes of `key` in a dictionary's items (`k = v, ...`; keys bare or quoted).
fn dict_value<'n, 'a>(items: &'n [Node<'a>], key: &str) -> Option<&'n [Node<'a>]> {
    split_commas(items).into_iter().find_map(|entry| {
        let k = entry.first()?;
        let name = match k {
            Node::Tok(t) if t.kind == Kind::Word => t.raw,
            Node::Tok(t) if t.kind == Kind::Str => t.value.as_str(),
            _ => return None,
        };
        (name == key && entry.get(1).is_some_and(|n| n.is_punct('='))).then(|| &entry[2..])
    })
}

fn string_value(v: &[Node<'_>]) -> Option<String> {
    match v {
        [n] => n.tok(Kind::Str).map(|t| t.value.clone()),
        _ => None,
    }
}

/// `{descriptor = "a::B", fingerprint = "0x...", mutable = false, name = "x", size = 56 : i64}`.
fn external(v: &[Node<'_>]) -> Result<ExternalSpec, String> {
    let [d] = v else {
        return Err(format!("`{}` is not a dictionary", compact(v)));
    };
    let d = d
        .group('{')
        .ok_or_else(|| format!("`{}` is not a dictionary", compact(v)))?;
    let field = |k: &str| dict_value(d, k).ok_or_else(|| format!("no `{k}`"));
    let descriptor = string_value(field("descriptor")?).ok_or("`descriptor` is not a string")?;
    let fp = string_value(field("fingerprint")?).ok_or("`fingerprint` is not a string")?;
    let fingerprint = fp
        .strip_prefix("0x")
        .filter(|h| h.len() == 16)
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or_else(|| format!("fingerprint `{fp}` is not 0x and 16 hex digits"))?;
    let size_nodes = field("size")?;
    let size = match size_nodes {
        [n, rest @ ..] if rest.is_empty() || rest.first().is_some_and(|c| c.is_punct(':')) => {
            n.tok(Kind::Word).and_then(|t| t.raw.parse::<usize>().ok())
        }
        _ => None,
    }
    .ok_or_else(|| format!("size `{}` is not a number", compact(size_nodes)))?;
    let mutable = match dict_value(d, "mutable") {
        None => false,
        Some([n]) if n.is_word("false") => false,
        Some([n]) if n.is_word("true") => true,
        Some(o) => return Err(format!("mutable `{}` is not a bool", compact(o))),
    };
    let name = match dict_value(d, "name") {
        None => None,
        Some(v) => Some(string_value(v).ok_or("`name` is not a string")?),
    };
    Ok(ExternalSpec {
        name,
        descriptor,
        fingerprint,
        size,
        mutable,
    })
}

fn sharding_of(attrs: Option<&[Node<'_>]>) -> Result<Option<DimSharding>, String> {
    match attrs.and_then(|a| dict_value(a, "sdy.sharding")) {
        Some(v) => sharding(v).map(Some),
        None => Ok(None),
    }
}

/// `#sdy.sharding<@mesh, [{"x"}, {}]>` → `[["x"], []]`. Open dimensions (`?`) and
/// `replicated=` are read as given (replicated axes split nothing).
fn sharding(v: &[Node<'_>]) -> Result<DimSharding, String> {
    let text = compact(v);
    let inner = match v {
        [h, g] if h.tok(Kind::Hash).is_some_and(|h| h.raw == "#sdy.sharding") => g.group('<'),
        _ => None,
    }
    .ok_or_else(|| format!("`{text}` is not #sdy.sharding<...>"))?;
    if inner.iter().any(|n| n.is_word("unreduced")) {
        return Err(format!(
            "`{text}` leaves axes unreduced (partial values); the runner assembles only split \
             or replicated values"
        ));
    }
    let parts = split_commas(inner);
    if !parts
        .first()
        .is_some_and(|p| p.len() == 1 && p[0].tok(Kind::Sym).is_some())
    {
        return Err(format!("`{text}` does not name its mesh (`@mesh`)"));
    }
    let list = parts
        .get(1)
        .and_then(|p| match p {
            [g] => g.group('['),
            _ => None,
        })
        .ok_or_else(|| format!("`{text}` has no dimension list"))?;
    let mut dims = Vec::new();
    for d in split_commas(list) {
        let axes = match d {
            [g] => g.group('{'),
            _ => None,
        }
        .ok_or_else(|| format!("dimension `{}` is not {{...}}", compact(d)))?;
        let mut names = Vec::new();
        for a in split_commas(axes) {
            match a {
                [] => {}
                [q] if q.is_punct('?') => {}
                [s] if s.tok(Kind::Str).is_some() => {
                    names.push(string_value(a).unwrap_or_default())
                }
                _ => {
                    return Err(format!(
                        "axis `{}` is not a quoted name (sub-axes are not supported)",
                        compact(a)
                    ));
                }
            }
        }
        dims.push(names);
    }
    Ok(dims)
}

/// A mesh's `<["x"=4, "y"=2]>` body.
fn mesh(body: &[Node<'_>]) -> Result<Vec<(String, i64)>, String> {
    let text = compact(body);
    if body.iter().any(|n| n.is_word("device_ids")) {
        return Err(format!(
            "`{text}` orders its devices (device_ids); the runner places partition d on \
             device d"
        ));
    }
    let list = body
        .first()
        .and_then(|n| n.group('['))
        .ok_or_else(|| format!("`{text}` is not [axes]"))?;
    let mut axes = Vec::new();
    for a in split_commas(list) {
        let [n, eq, s] = a else {
            return Err(format!("axis `{}`", compact(a)));
        };
        let name = n
            .tok(Kind::Str)
            .filter(|_| eq.is_punct('='))
            .map(|t| t.value.clone())
            .ok_or_else(|| format!("axis `{}`", compact(a)))?;
        let size = s
            .tok(Kind::Word)
            .and_then(|t| t.raw.parse::<i64>().ok())
            .ok_or_else(|| format!("axis size `{}`", compact(&a[2..])))?;
        axes.push((name, size));
    }
    Ok(axes)
}

/// `tensor<3x4xf32>`, `tensor<f32>`, `tensor<2xcomplex<f32>>` (compact text).
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
    if rest.contains(',') {
        return Err(format!(
            "`{s}` has an encoding; the runner reads plain tensor types"
        ));
    }
    let element = ElementType::ALL
        .into_iter()
        .find(|t| t.mlir_name() == rest)
        .ok_or_else(|| format!("element type `{rest}` of `{s}` is not one customop supports"))?;
    TensorType::new(element, dims).map_err(|e| e.to_string())
}
