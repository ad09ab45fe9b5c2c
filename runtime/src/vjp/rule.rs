//! What the backward and the tangent op's checks share: the words of each rule's messages,
//! the refusal of state, and the check that a rule's input is a value of the forward call.

use super::{Msg, ParamSig, Role, Signature, find, same_tensor, str_eq};

/// Which rule an input belongs to, for the messages.
#[derive(Clone, Copy)]
pub(super) enum Rule {
    /// A backward op (`vjp = ...`).
    Backward,
    /// A tangent op (`jvp = ...`).
    Tangent,
}

/// What a rule is called, what it takes, what it declares and what a value has, for the
/// messages.
const fn rule_words(rule: Rule) -> (&'static str, &'static str, &'static str, &'static str) {
    match rule {
        Rule::Backward => (
            "backward",
            "a backward takes the forward's inputs, outputs, attributes and externals by their \
             names, and `d_<output>` for an output's cotangent",
            "gradient",
            "cotangent",
        ),
        Rule::Tangent => (
            "tangent op",
            "a tangent op takes the forward's inputs, outputs, attributes and externals by \
             their names, and `t_<input>` for an input's tangent",
            "forward-mode rule",
            "tangent",
        ),
    }
}

/// `name` without the prefix `<p>_` (`d_`, `t_`), or `None`.
pub(super) const fn strip(name: &str, p: u8) -> Option<&str> {
    let b = name.as_bytes();
    if b.len() > 2 && b[0] == p && b[1] == b'_' {
        let (_, rest) = b.split_at(2);
        match core::str::from_utf8(rest) {
            Ok(s) => Some(s),
            Err(_) => None,
        }
    } else {
        None
    }
}

/// Whether `op` has a parameter of `role` named `<p>_<name>` (`d_x`, `t_y`).
pub(super) const fn has_named(op: &Signature, role: Role, p: u8, name: &str) -> bool {
    let mut j = 0;
    while j < op.params.len() {
        let t = op.params[j];
        j += 1;
        if t.role as u8 == role as u8
            && let Some(of) = strip(t.name, p)
            && str_eq(of, name)
        {
            return true;
        }
    }
    false
}

/// The head of a rule's messages: ``vjp of `fwd` by `bwd`: ``, ``jvp of `fwd` by `tan`: ``.
pub(super) const fn head(fwd: &Signature, rule_op: &Signature, rule: Rule) -> Msg {
    Msg::new()
        .push(match rule {
            Rule::Backward => "vjp of `",
            Rule::Tangent => "jvp of `",
        })
        .push(fwd.name)
        .push("` by `")
        .push(rule_op.name)
        .push("`: ")
}

/// What both rules check alike, first: neither op has an opaque result (it has no derivative;
/// the rule op returns derivatives only), the forward has no `&mut` external and the rule op
/// takes none. Each rule then checks each of the rule op's parameters: an output as a
/// derivative it returns, any other as a value it takes.
// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
pub(super) const fn check_common(
    fwd: &Signature,
    rule_op: &Signature,
    rule: Rule,
) -> Result<(), Msg> {
    check_opening(fwd, rule_op, head(fwd, rule_op, rule), rule)
}

// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
const fn check_opening(
    fwd: &Signature,
    rule_op: &Signature,
    m: Msg,
    rule: Rule,
) -> Result<(), Msg> {
    let (who, _, declares, value) = rule_words(rule);
    if fwd.opaque_result {
        return Err(m
            .push("an op with an opaque result declares no ")
            .push(declares)
            .push(" (the result has no ")
            .push(value)
            .push(")"));
    }
    if rule_op.opaque_result {
        let returns = match rule {
            Rule::Backward => "gradients",
            Rule::Tangent => "tangents",
        };
        return Err(m
            .push("a ")
            .push(who)
            .push(if matches!(rule, Rule::Backward) {
                " op"
            } else {
                ""
            })
            .push(" returns ")
            .push(returns)
            .push(" only, not an opaque result"));
    }
    check_no_state(fwd, rule_op, m, rule)
}

/// What both rules refuse alike: a forward op with a `&mut` external (its new state has no
/// derivative), and a rule op that takes one (`m` the message's head).
// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
const fn check_no_state(
    fwd: &Signature,
    rule_op: &Signature,
    m: Msg,
    rule: Rule,
) -> Result<(), Msg> {
    let (who, _, declares, value) = rule_words(rule);
    let mut i = 0;
    while i < fwd.params.len() {
        let p = fwd.params[i];
        i += 1;
        if matches!(p.role, Role::ExternalMut) {
            return Err(m
                .push("an op with a `&mut` external (`")
                .push(p.name)
                .push("`) declares no ")
                .push(declares)
                .push(" (its new state has no ")
                .push(value)
                .push(")"));
        }
    }
    let mut i = 0;
    while i < rule_op.params.len() {
        let p = rule_op.params[i];
        i += 1;
        if matches!(p.role, Role::ExternalMut) {
            return Err(m
                .push("the ")
                .push(who)
                .push(" takes `")
                .push(p.name)
                .push("` as `&mut`: a ")
                .push(who)
                .push(if matches!(rule, Rule::Backward) {
                    " op"
                } else {
                    ""
                })
                .push(" updates no external"));
        }
    }
    Ok(())
}

/// Checks that rule input `b` (of a backward or a tangent op, `m` the message's head) is a
/// value of the forward call: an input, output, attribute or external of it, of the same type.
// Evaluated at compile time only: the size of the error does not matter.
#[allow(clippy::result_large_err)]
pub(super) const fn check_residual_of(
    fwd: &Signature,
    b: ParamSig,
    m: Msg,
    rule: Rule,
) -> Result<(), Msg> {
    let (who, takes, _, _) = rule_words(rule);
    let Some(f) = find(fwd, b.name) else {
        return Err(m
            .push("the ")
            .push(who)
            .push("'s parameter `")
            .push(b.name)
            .push("` names nothing of the forward: ")
            .push(takes));
    };
    let ok = match (b.role, f.role) {
        (Role::Input, Role::Input | Role::Output) => same_tensor(b, f),
        (Role::Attr, Role::Attr) | (Role::External, Role::External) => str_eq(b.ty, f.ty),
        _ => false,
    };
    if !ok {
        let m = m.push("`").push(b.name).push("` is ");
        let m = match b.role {
            Role::Input => m.push("a tensor of ").push_tensor(b),
            Role::Attr => m.push("an attribute of type `").push(b.ty).push("`"),
            _ => m.push("an external of type `").push(b.ty).push("`"),
        };
        let m = m
            .push(" in the ")
            .push(who)
            .push(", but the forward's `")
            .push(f.name)
            .push("` is ");
        let m = match f.role {
            Role::Input | Role::Output => m.push("a tensor of ").push_tensor(f),
            Role::Attr => m.push("an attribute of type `").push(f.ty).push("`"),
            _ => m.push("an external of type `").push(f.ty).push("`"),
        };
        let m = match (b.role, f.role) {
            (Role::Attr, Role::Attr) | (Role::External, Role::External) => {
                m.push(" (types are compared as written: write the forward's)")
            }
            _ => m,
        };
        return Err(m);
    }
    Ok(())
}
