//! The checks of `partition(...)`, a part of the op's check phase.

use super::model::{Kind, Op, Ret, ShapeRule};
use super::shape_rule::Part;
use crate::ctxt::Ctxt;

/// The rules of `partition(...)`: entries name tensor inputs of fixed rank, one entry per
/// dimension, a factor at most once per tensor; every factor reaches every output (through
/// the shape rules), so that no device computes a partial result that would need combining;
/// and nothing per-device escapes as if it were replicated (updated externals, tensors updated
/// in place, opaque results).
pub(super) fn check_partition(cx: &mut Ctxt, op: &Op<'_>) {
    let Some(partition) = op.partition else {
        return;
    };
    let mut factors: Vec<&syn::Ident> = Vec::new();
    // A factor written twice for one input is reported there, not again on the outputs.
    let mut repeated = false;
    for entry in &partition.entries {
        let param = op.params.iter().find(|p| p.ident == entry.param);
        let rank = match param.map(|p| &p.kind) {
            None => {
                cx.error_spanned_by(
                    &entry.param,
                    format!(
                        "`partition` names `{}`, which is not a parameter of this op",
                        entry.param
                    ),
                );
                continue;
            }
            Some(Kind::Tensor { inout: true, .. }) => {
                cx.error_spanned_by(
                    &entry.param,
                    format!(
                        "`{}` is updated in place (`#[inout]`): an op that updates a tensor in \
                         place cannot be partitioned (its result is its own buffer, which \
                         `partition` cannot split apart from it)",
                        entry.param
                    ),
                );
                continue;
            }
            Some(Kind::Tensor { rank, .. }) => *rank,
            Some(Kind::Output { .. }) => {
                cx.error_spanned_by(
                    &entry.param,
                    format!(
                        "`{}` is an output: how it splits follows from its shape rule, so `partition` lists inputs only",
                        entry.param
                    ),
                );
                continue;
            }
            Some(Kind::External { .. }) => {
                cx.error_spanned_by(
                    &entry.param,
                    format!(
                        "`{}` is an external: externals are never split (every device gets the whole descriptor)",
                        entry.param
                    ),
                );
                continue;
            }
            Some(Kind::Attr(_) | Kind::Attrs(_) | Kind::State { .. } | Kind::Invalid(..)) => {
                cx.error_spanned_by(
                    &entry.param,
                    format!("`{}` is not a tensor input", entry.param),
                );
                continue;
            }
        };
        match rank {
            None => cx.error_spanned_by(
                &entry.param,
                format!(
                    "`{}` has no fixed rank: give it one (`TensorRef<'_, f32, 2>`) to say how its dimensions split",
                    entry.param
                ),
            ),
            Some(r) if r != entry.dims.len() => cx.syn_error(syn::Error::new(
                entry.span,
                format!(
                    "`{}` has rank {r}, but its partition lists {} dimensions",
                    entry.param,
                    entry.dims.len()
                ),
            )),
            Some(_) => {}
        }
        let mut seen: Vec<&syn::Ident> = Vec::new();
        for f in entry.dims.iter().flatten() {
            if seen.contains(&f) {
                repeated = true;
                cx.error_spanned_by(
                    f,
                    format!("factor `{f}` names two dimensions of `{}`", entry.param),
                );
            }
            seen.push(f);
            if !factors.contains(&f) {
                factors.push(f);
            }
        }
    }
    if partition.unread {
        return;
    }
    if partition
        .entries
        .iter()
        .all(|e| e.dims.iter().all(Option::is_none))
    {
        cx.syn_error(syn::Error::new(
            partition.span,
            "`partition` names no factor: name the dimensions that may be split, e.g. `partition(x = [rows, _])`",
        ));
    }
    if factors.is_empty() {
        return;
    }
    if let Some(p) = op
        .params
        .iter()
        .find(|p| matches!(p.kind, Kind::External { mutable: true, .. }))
    {
        cx.syn_error(syn::Error::new(
            partition.span,
            format!(
                "an op that updates an external (`{}`) cannot be partitioned: each device would write its own state",
                p.ident
            ),
        ));
    }
    // An `#[inout]` tensor left out of the rule would be each device's own copy, updated from
    // its shard, yet taken as replicated. (One the rule names is refused above.)
    if let Some(p) = op.params.iter().find(|p| {
        matches!(p.kind, Kind::Tensor { inout: true, .. })
            && !partition.entries.iter().any(|e| e.param == p.ident)
    }) {
        cx.syn_error(syn::Error::new(
            partition.span,
            format!(
                "an op that updates a tensor in place (`{}`) cannot be partitioned: each device \
                 would update its own copy from its shard, which would then pass for the whole",
                p.ident
            ),
        ));
    }
    if let Ret::Opaque(_) = op.ret {
        cx.syn_error(syn::Error::new(
            partition.span,
            "an op with an opaque result cannot be partitioned: each device would compute its own value",
        ));
    }
    for p in &op.params {
        let Kind::Output {
            shape: Some(shape),
            out_span,
            ..
        } = &p.kind
        else {
            continue;
        };
        if let ShapeRule::Parts(parts) = shape {
            for part in parts {
                if let Part::Run { span, .. } = part {
                    cx.syn_error(syn::Error::new(
                        *span,
                        "an output whose rank follows an input's (`..x.dims(..)`) has no fixed \
                         dimensions for `partition` to split: leave `partition` out",
                    ));
                }
            }
            continue;
        }
        let mut got = Vec::new();
        for (d, factor) in op
            .output_factors(shape)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            match factor {
                Ok(f) => got.push(f),
                Err(f) => {
                    got.push(Some(f));
                    let span = match shape {
                        ShapeRule::Dims(dims) => dims.get(d).map_or(*out_span, |r| r.span),
                        _ => *out_span,
                    };
                    cx.syn_error(syn::Error::new(
                        span,
                        format!(
                            "dimension {d} of output `{}` is computed from a dimension that \
                             factor `{f}` splits: each device would compute it from its shard. \
                             Write `_` for that dimension in `partition`, or copy it \
                             (`x.dim(k)`)",
                            p.ident
                        ),
                    ));
                }
            }
        }
        for f in &factors {
            let n = got.iter().filter(|g| **g == Some(*f)).count();
            if n == 0 {
                cx.error_spanned_by(
                    f,
                    format!(
                        "factor `{f}` does not reach output `{}` through its shape rule: each device would compute `{}` from part of `{f}` only, and customop does not combine partial results. Write `_` for that dimension",
                        p.ident, p.ident
                    ),
                );
            } else if n > 1 && !repeated {
                cx.syn_error(syn::Error::new(
                    *out_span,
                    format!(
                        "output `{}` takes factor `{f}` in {n} dimensions: a factor splits one dimension of each tensor",
                        p.ident
                    ),
                ));
            }
        }
    }
}
