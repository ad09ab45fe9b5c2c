//! Declared forward-mode rules: a forward op names its tangent op (`#[custom_op(jvp = op_jvp)]`),
//! and the pairing is checked at compile time, like a backward's.
//!
//! The tangent op says what it takes and returns by name:
//! - a parameter named as a forward tensor input, output, attribute or external is that value;
//! - a parameter `t_<input>` is the tangent of differentiable forward input `<input>`, one for
//!   every differentiable input (a tangent not taken would be dropped: a wrong derivative);
//! - an output `t_<output>` is the tangent of forward output `<output>`, one for every
//!   differentiable output, of its element type and shape.
//!
//! The tangent op is linear in the tangents it takes. Externals, attributes and other tensors
//! have none. An op with a `&mut` external or an opaque result declares none.

use super::rule::{check_common, has_named, strip};
use super::{
    Msg, ParamSig, Role, Rule, Signature, check_residual_of, differentiable, find, same_tensor,
    str_eq,
};
use crate::schema::{JvpInput, JvpSchema, JvpSource, JvpTangent};

/// `name` without the `t_` prefix, or `None`.
const fn strip_t(name: &str) -> Option<&str> {
    strip(name, b't')
}

/// The forward parameter whose tangent `t` is (`t_<name>` naming a forward tensor input), if any.
const fn tangent_of(fwd: &Signature, t: ParamSig) -> Option<ParamSig> {
    match strip_t(t.name) {
        Some(of) => match find(fwd, of) {
            Some(p) if matches!(p.role, Role::Input) => Some(p),
            _ => None,
        },
        None => None,
    }
}

const fn head(fwd: &Signature, tan: &Signature) -> Msg {
    super::rule::head(fwd, tan, Rule::Tangent)
}

/// Checks that `tan` is a valid tangent op of `fwd` (see the module's documentation): `Err`
/// with what is wrong. The macro calls it in a constant that panics with the message, so a
/// wrong pairing is a compile error at the forward's `jvp = ...`.
// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
pub const fn check(fwd: &Signature, tan: &Signature) -> Result<(), Msg> {
    if let Err(m) = check_common(fwd, tan, Rule::Tangent) {
        return Err(m);
    }
    // Each output a tangent it returns, each other parameter a value it takes.
    let mut i = 0;
    while i < tan.params.len() {
        let p = tan.params[i];
        i += 1;
        let checked = match p.role {
            Role::Output => check_output_tangent(fwd, tan, p),
            _ => check_input(fwd, tan, p),
        };
        if let Err(m) = checked {
            return Err(m);
        }
    }
    // Every differentiable input's tangent is taken, every differentiable output's returned.
    let mut i = 0;
    while i < fwd.params.len() {
        let p = fwd.params[i];
        i += 1;
        let (role, what) = match p.role {
            Role::Input => (Role::Input, "it takes no tangent of input `"),
            Role::Output => (Role::Output, "it returns no tangent of output `"),
            _ => continue,
        };
        if !differentiable(p.dtype) || has_named(tan, role, b't', p.name) {
            continue;
        }
        let m = head(fwd, tan)
            .push(what)
            .push(p.name)
            .push("` (a tensor of ")
            .push_dtype(p.dtype)
            .push("): ");
        return Err(match role {
            Role::Input => m.push("take `t_").push(p.name).push("`"),
            _ => m
                .push("add `#[out(shape = ")
                .push(p.name)
                .push(")] t_")
                .push(p.name)
                .push("`"),
        });
    }
    Ok(())
}

// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
const fn check_input(fwd: &Signature, tan: &Signature, t: ParamSig) -> Result<(), Msg> {
    if !matches!(t.role, Role::Input) || strip_t(t.name).is_none() || find(fwd, t.name).is_some() {
        return check_residual_of(fwd, t, head(fwd, tan), Rule::Tangent);
    }
    let Some(input) = tangent_of(fwd, t) else {
        return Err(head(fwd, tan).push("`").push(t.name).push(
            "` is not `t_<input>` for a tensor input of the forward: a tangent op takes the \
             tangents of the forward's inputs",
        ));
    };
    if !differentiable(input.dtype) {
        return Err(head(fwd, tan)
            .push("`")
            .push(input.name)
            .push("` has no tangent (only tensor inputs of f16, bf16, f32 or f64 do), so the tangent op cannot take `")
            .push(t.name)
            .push("`"));
    }
    if !same_tensor(input, t) {
        return Err(head(fwd, tan)
            .push("`")
            .push(t.name)
            .push("`, the tangent of `")
            .push(input.name)
            .push("`, is a tensor of ")
            .push_tensor(t)
            .push(", but `")
            .push(input.name)
            .push("` is ")
            .push_tensor(input));
    }
    Ok(())
}

// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
const fn check_output_tangent(fwd: &Signature, tan: &Signature, t: ParamSig) -> Result<(), Msg> {
    let out = match strip_t(t.name) {
        Some(of) => find(fwd, of),
        None => None,
    };
    let Some(out) = out else {
        return Err(head(fwd, tan).push("output `").push(t.name).push(
            "` is not `t_<output>` for an output of the forward: a tangent op's outputs are \
             the tangents of the forward's outputs",
        ));
    };
    if !matches!(out.role, Role::Output) || !differentiable(out.dtype) {
        return Err(head(fwd, tan)
            .push("`")
            .push(out.name)
            .push("` has no tangent (only outputs of f16, bf16, f32 or f64 do), so the tangent op cannot return `")
            .push(t.name)
            .push("`"));
    }
    if !same_tensor(out, t) {
        return Err(head(fwd, tan)
            .push("`")
            .push(t.name)
            .push("` is a tensor of ")
            .push_tensor(t)
            .push(", but `")
            .push(out.name)
            .push("` is ")
            .push_tensor(out));
    }
    // Its shape is the output's: `shape = <a parameter with that shape>`: the output itself
    // (taken as a residual), or the input (or that input's tangent) the output's shape is.
    let s = t.shape_of;
    let shaped = !s.is_empty()
        && match find(tan, s) {
            Some(r) => {
                let of = match tangent_of(fwd, r) {
                    Some(input) => input.name,
                    None => r.name,
                };
                match find(fwd, of) {
                    Some(v) => {
                        (matches!(v.role, Role::Output) && str_eq(v.name, out.name))
                            || (matches!(v.role, Role::Input) && str_eq(out.shape_of, v.name))
                    }
                    None => false,
                }
            }
            None => false,
        };
    if !shaped {
        return Err(head(fwd, tan)
            .push("`")
            .push(t.name)
            .push("` must have the shape of output `")
            .push(out.name)
            .push("`: declare it `#[out(shape = ...)]` with a parameter of that shape (`")
            .push(out.name)
            .push("` taken as a residual, or the input its shape is)"));
    }
    Ok(())
}

/// The pairing as the manifest records it (the check above has passed).
pub fn schema(fwd: &Signature, tan: &Signature) -> JvpSchema {
    let mut inputs = Vec::new();
    let mut tangents = Vec::new();
    for t in tan.params {
        if t.role == Role::Output {
            if let Some(of) = strip_t(t.name) {
                tangents.push(JvpTangent {
                    result: t.name.to_string(),
                    of: of.to_string(),
                });
            }
            continue;
        }
        let (source, of) = match (find(fwd, t.name), tangent_of(fwd, *t)) {
            (None, Some(input)) => (JvpSource::Tangent, input.name),
            (f, _) => match f.map(|f| f.role) {
                Some(Role::Output) => (JvpSource::Output, t.name),
                Some(Role::Attr) => (JvpSource::Attribute, t.name),
                _ => (JvpSource::Input, t.name),
            },
        };
        inputs.push(JvpInput {
            param: t.name.to_string(),
            source,
            of: of.to_string(),
        });
    }
    JvpSchema {
        op: tan.name.to_string(),
        inputs,
        tangents,
    }
}

#[cfg(test)]
mod tests;
