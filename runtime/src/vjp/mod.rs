//! Declared gradients: a forward op names its backward op (`#[custom_op(vjp = op_bwd)]`), and the
//! pairing is checked at compile time, in a constant, from a signature each op's companion
//! module carries ([`Signature`]).
//!
//! The backward op says what it takes and returns by name:
//! - a parameter named as a forward tensor input, output, attribute or external is that value
//!   (a residual of the forward call: inputs, attributes and externals as given, outputs as
//!   computed);
//! - a parameter `d_<output>` is the cotangent of forward output `<output>`;
//! - an output `d_<input>` is the gradient of forward input `<input>`, one for every
//!   differentiable input (a tensor of `f16`, `bf16`, `f32` or `f64`, or of a type parameter
//!   allowing only those), of its element type and `shape = ` its shape.
//!
//! Externals, attributes and other tensors get no gradient. An op with a `&mut` external or an
//! opaque result declares none (its state or result has no cotangent).

use crate::schema::{ResidualSource, VjpInput, VjpSchema};
use crate::types::{ElementType, differentiable_types};

pub mod jvp;
mod msg;
mod rule;
pub use jvp::{check as check_jvp, schema as jvp_schema};
pub use msg::Msg;
use rule::{Rule, check_common, check_residual_of, has_named};

/// An element type as a signature carries it: one type, or a type parameter's allowed types.
#[derive(Clone, Copy, Debug)]
pub enum SigDtype {
    /// Not a tensor.
    None,
    /// A fixed element type.
    Fixed(ElementType),
    /// A type parameter of a generic op: its name and allowed types.
    Var(&'static str, &'static [ElementType]),
}

/// What a parameter of a signature is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A tensor input.
    Input,
    /// An output (`#[out]`).
    Output,
    /// An attribute.
    Attr,
    /// An external, `&T`.
    External,
    /// An external, `&mut T`.
    ExternalMut,
}

/// One parameter of a signature.
#[derive(Clone, Copy, Debug)]
pub struct ParamSig {
    /// The parameter's name.
    pub name: &'static str,
    /// What it is.
    pub role: Role,
    /// Its element type (tensors).
    pub dtype: SigDtype,
    /// Its rank, when the signature fixes it (tensors).
    pub rank: Option<usize>,
    /// For an output with `shape = x`, `x`; otherwise empty.
    pub shape_of: &'static str,
    /// For an attribute or an external, its Rust type as written (compared as text).
    pub ty: &'static str,
}

/// What an op's companion module records for gradient pairing, as constants.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    /// The op's name.
    pub name: &'static str,
    /// Its parameters, in declaration order.
    pub params: &'static [ParamSig],
    /// Whether it returns an opaque result.
    pub opaque_result: bool,
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `name` without the `d_` prefix, or `None`.
const fn strip_d(name: &str) -> Option<&str> {
    rule::strip(name, b'd')
}

const fn find(sig: &Signature, name: &str) -> Option<ParamSig> {
    let mut i = 0;
    while i < sig.params.len() {
        if str_eq(sig.params[i].name, name) {
            return Some(sig.params[i]);
        }
        i += 1;
    }
    None
}

/// Whether `t` is one of `ts`.
const fn contains(ts: &[ElementType], t: ElementType) -> bool {
    let mut i = 0;
    while i < ts.len() {
        if ts[i] as u8 == t as u8 {
            return true;
        }
        i += 1;
    }
    false
}

/// The same element type: one fixed type, or the same type parameter (by name: a generic
/// backward uses the forward's names) allowing the same types, in any order.
const fn same_dtype(a: SigDtype, b: SigDtype) -> bool {
    match (a, b) {
        (SigDtype::None, SigDtype::None) => true,
        (SigDtype::Fixed(x), SigDtype::Fixed(y)) => x as u8 == y as u8,
        (SigDtype::Var(v, xs), SigDtype::Var(w, ys)) => {
            if !str_eq(v, w) {
                return false;
            }
            let mut i = 0;
            while i < xs.len() {
                if !contains(ys, xs[i]) {
                    return false;
                }
                i += 1;
            }
            let mut i = 0;
            while i < ys.len() {
                if !contains(xs, ys[i]) {
                    return false;
                }
                i += 1;
            }
            true
        }
        _ => false,
    }
}

/// The forward output whose cotangent backward parameter `b` is (`d_<output>`), if it is one.
const fn cotangent_of(fwd: &Signature, b: ParamSig) -> Option<ParamSig> {
    if !matches!(b.role, Role::Input) {
        return None;
    }
    match strip_d(b.name) {
        Some(of) => match find(fwd, of) {
            Some(out) if matches!(out.role, Role::Output) => Some(out),
            _ => None,
        },
        None => None,
    }
}

/// The same element type, and the same rank where both fix one.
const fn same_tensor(a: ParamSig, b: ParamSig) -> bool {
    let ranks = match (a.rank, b.rank) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    };
    ranks && same_dtype(a.dtype, b.dtype)
}

/// Whether a tensor of this type gets a gradient: `f16`, `bf16`, `f32`, `f64`, or a type
/// parameter allowing only those (`types::differentiable_types`).
pub const fn differentiable(d: SigDtype) -> bool {
    match d {
        SigDtype::None => false,
        SigDtype::Fixed(t) => differentiable_types(&[t]),
        SigDtype::Var(_, allowed) => differentiable_types(allowed),
    }
}

const fn head(fwd: &Signature, bwd: &Signature) -> Msg {
    rule::head(fwd, bwd, Rule::Backward)
}

/// Checks that `bwd` is a valid backward op of `fwd` (see the module's documentation): `Err`
/// with what is wrong. The macro calls it in a constant that panics with the message, so a
/// wrong pairing is a compile error at the forward's `vjp = ...`.
// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
pub const fn check(fwd: &Signature, bwd: &Signature) -> Result<(), Msg> {
    if let Err(m) = check_common(fwd, bwd, Rule::Backward) {
        return Err(m);
    }
    // Each output a gradient it returns, each other parameter a value it takes.
    let mut i = 0;
    while i < bwd.params.len() {
        let p = bwd.params[i];
        i += 1;
        let checked = match p.role {
            Role::Output => check_gradient(fwd, bwd, p),
            _ => check_residual(fwd, bwd, p),
        };
        if let Err(m) = checked {
            return Err(m);
        }
    }
    // Every differentiable input has its gradient.
    let mut i = 0;
    while i < fwd.params.len() {
        let p = fwd.params[i];
        i += 1;
        if !matches!(p.role, Role::Input) || !differentiable(p.dtype) {
            continue;
        }
        if !has_named(bwd, Role::Output, b'd', p.name) {
            return Err(head(fwd, bwd)
                .push("it returns no gradient of `")
                .push(p.name)
                .push("` (a tensor of ")
                .push_dtype(p.dtype)
                .push("): add `#[out(shape = ")
                .push(p.name)
                .push(")] d_")
                .push(p.name)
                .push("`"));
        }
    }
    let mut cotangents = 0;
    let mut i = 0;
    while i < bwd.params.len() {
        if cotangent_of(fwd, bwd.params[i]).is_some() {
            cotangents += 1;
        }
        i += 1;
    }
    if cotangents == 0 {
        return Err(head(fwd, bwd).push(
            "the backward takes no cotangent: take `d_<output>` for the outputs the gradients \
             depend on",
        ));
    }
    Ok(())
}

// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
pub(super) const fn check_residual(
    fwd: &Signature,
    bwd: &Signature,
    b: ParamSig,
) -> Result<(), Msg> {
    // The cotangent of an output.
    if let Some(out) = cotangent_of(fwd, b) {
        let of = out.name;
        if !differentiable(out.dtype) {
            return Err(head(fwd, bwd)
                .push("output `")
                .push(of)
                .push("` is a tensor of ")
                .push_dtype(out.dtype)
                .push(", which has no cotangent (only f16, bf16, f32 and f64 outputs do): the backward cannot take `")
                .push(b.name)
                .push("`"));
        }
        if !same_tensor(out, b) {
            return Err(head(fwd, bwd)
                .push("`")
                .push(b.name)
                .push("`, the cotangent of output `")
                .push(of)
                .push("`, is a tensor of ")
                .push_tensor(b)
                .push(", but `")
                .push(of)
                .push("` is ")
                .push_tensor(out));
        }
        return Ok(());
    }
    check_residual_of(fwd, b, head(fwd, bwd), Rule::Backward)
}

// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
pub(super) const fn check_gradient(
    fwd: &Signature,
    bwd: &Signature,
    b: ParamSig,
) -> Result<(), Msg> {
    let input = match strip_d(b.name) {
        Some(of) => find(fwd, of),
        None => None,
    };
    let Some(input) = input else {
        return Err(head(fwd, bwd).push("output `").push(b.name).push(
            "` is not `d_<input>` for a tensor input of the forward: a backward's outputs \
                   are the gradients of the forward's inputs",
        ));
    };
    if !matches!(input.role, Role::Input) || !differentiable(input.dtype) {
        return Err(head(fwd, bwd)
            .push("`")
            .push(input.name)
            .push(
                "` gets no gradient (only tensor inputs of f16, bf16, f32 or f64 do), so the \
                   backward cannot return `",
            )
            .push(b.name)
            .push("`"));
    }
    if !same_tensor(input, b) {
        return Err(head(fwd, bwd)
            .push("`")
            .push(b.name)
            .push("` is a tensor of ")
            .push_tensor(b)
            .push(", but `")
            .push(input.name)
            .push("` is ")
            .push_tensor(input));
    }
    // Its shape is the input's: `shape = <input>`, or of a value known to have that shape.
    let s = b.shape_of;
    let shaped = !s.is_empty()
        && (str_eq(s, input.name)
            || match find(bwd, s) {
                Some(r) => {
                    let of = match cotangent_of(fwd, r) {
                        Some(out) => Some(out),
                        None => find(fwd, r.name),
                    };
                    match of {
                        Some(out) => {
                            matches!(out.role, Role::Output) && str_eq(out.shape_of, input.name)
                        }
                        None => false,
                    }
                }
                None => false,
            });
    if !shaped {
        return Err(head(fwd, bwd)
            .push("`")
            .push(b.name)
            .push("` must have the shape of `")
            .push(input.name)
            .push("`: declare it `#[out(shape = ")
            .push(input.name)
            .push(")]`"));
    }
    Ok(())
}

/// The pairing as the manifest records it (the check above has passed).
pub fn schema(fwd: &Signature, bwd: &Signature) -> VjpSchema {
    let mut inputs = Vec::new();
    let mut gradients = Vec::new();
    for b in bwd.params {
        if b.role == Role::Output {
            if let Some(of) = strip_d(b.name) {
                gradients.push((b.name.to_string(), of.to_string()));
            }
            continue;
        }
        let (source, of) = match cotangent_of(fwd, *b) {
            Some(out) => (ResidualSource::Cotangent, out.name),
            None => match find(fwd, b.name).map(|f| f.role) {
                Some(Role::Output) => (ResidualSource::Output, b.name),
                Some(Role::Attr) => (ResidualSource::Attribute, b.name),
                _ => (ResidualSource::Input, b.name),
            },
        };
        inputs.push(VjpInput {
            param: b.name.to_string(),
            source,
            of: of.to_string(),
        });
    }
    VjpSchema {
        op: bwd.name.to_string(),
        inputs,
        gradients: gradients
            .into_iter()
            .map(|(result, of)| crate::schema::VjpGradient { result, of })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
