//! Classifying a parameter by its type and attributes (`TensorRef`, `#[out] TensorMut`,
//! `#[inout]`, `#[attr]`, `#[attrs]`, `#[external]`, `#[state]`), and the return type, into
//! the op's model.

use super::model::{AttrKind, Elem, Intent, Kind, Ret};
use super::parse::ParamAttrs;
use super::shape_rule::{ShapeRule, shape_rule};
use proc_macro2::Span;
use syn::spanned::Spanned;

pub(super) fn invalid<'a>(span: Span, message: String) -> Kind<'a> {
    Kind::Invalid(span, message, Intent::Argument)
}

fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        syn::Type::Group(g) => last_segment(&g.elem),
        syn::Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

fn generic_types(seg: &syn::PathSegment) -> Vec<&syn::GenericArgument> {
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter(|a| !matches!(a, syn::GenericArgument::Lifetime(_)))
            .collect(),
        _ => Vec::new(),
    }
}

/// `TensorRef<'_, T>` / `TensorRef<'_, T, 2>` (and the same for `TensorMut`): the element and
/// the optional rank.
fn tensor_parts(seg: &syn::PathSegment) -> Result<(Elem<'_>, Option<usize>), (Span, String)> {
    let args = generic_types(seg);
    let kind = seg.ident.to_string();
    let bad = || {
        (
            seg.span(),
            format!(
                "`{kind}` takes an element type and an optional rank: `{kind}<'_, f32>` or `{kind}<'_, f32, 2>`"
            ),
        )
    };
    let elem = match args.first() {
        Some(syn::GenericArgument::Type(ty)) => Elem {
            ty,
            packed: kind.starts_with("Packed"),
        },
        _ => return Err(bad()),
    };
    let rank = match args.get(1) {
        None => None,
        Some(syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }))) => Some(i.base10_parse::<usize>().map_err(|_| bad())?),
        Some(syn::GenericArgument::Type(syn::Type::Path(p)))
            if p.path.segments.len() == 1 && p.path.segments[0].ident == "ANY_RANK" =>
        {
            None
        }
        Some(other) => {
            return Err((
                other.span(),
                "the rank must be an integer literal, e.g. `TensorRef<'_, f32, 2>`".into(),
            ));
        }
    };
    if args.len() > 2 {
        return Err(bad());
    }
    Ok((elem, rank))
}

/// The parameter's kind; one that cannot be classified keeps what it is meant to be (an
/// output when it has `#[out]` or is a `TensorMut`).
pub(super) fn classify<'a>(ty: &'a syn::Type, pa: &ParamAttrs) -> Kind<'a> {
    match classify_kind(ty, pa) {
        Kind::Invalid(span, message, _) => {
            let tensor_mut =
                last_segment(ty).is_some_and(|s| s.ident == "TensorMut" || s.ident == "PackedMut");
            let intent = if pa.out.is_some() || tensor_mut {
                Intent::Output
            } else {
                Intent::Argument
            };
            Kind::Invalid(span, message, intent)
        }
        kind => kind,
    }
}

fn classify_kind<'a>(ty: &'a syn::Type, pa: &ParamAttrs) -> Kind<'a> {
    let marks = [
        pa.external.is_some(),
        pa.attr.is_some(),
        pa.state.is_some(),
        pa.out.is_some(),
        pa.attrs.is_some(),
        pa.inout.is_some(),
    ];
    if marks.iter().filter(|m| **m).count() > 1 {
        let span = pa
            .attr
            .or(pa.state)
            .or(pa.out.as_ref().map(|o| o.0))
            .unwrap_or_else(|| ty.span());
        return invalid(
            span,
            "a parameter is one of: a tensor, `#[inout]`, `#[external]`, `#[attr]`, `#[attrs]`, \
             `#[state]` or `#[out]`, not several"
                .into(),
        );
    }
    if let Some(span) = pa.attrs {
        return match last_segment(ty) {
            Some(s) if s.ident == "Dictionary" => Kind::Attrs(span),
            _ => invalid(
                ty.span(),
                "an `#[attrs]` parameter is `Dictionary<'_>` (`customop::Dictionary`): every \
                 attribute of the call, by name"
                    .into(),
            ),
        };
    }
    if pa.state.is_some() {
        return match ty {
            syn::Type::Reference(r) if r.mutability.is_none() => Kind::State { inner: &r.elem },
            other => invalid(
                other.span(),
                "a `#[state]` parameter is `&T` with `T: OpState`: built once per call site and \
                 shared by its calls, so never `&mut`"
                    .into(),
            ),
        };
    }
    if pa.external.is_some() {
        return match ty {
            syn::Type::Reference(r) if pa.borrow && r.mutability.is_some() => invalid(
                r.span(),
                "a borrowed external (`#[external(borrow)]`) is read in place, so it is `&T`: \
                 `&mut` state is unpacked and written back, so drop `borrow`"
                    .into(),
            ),
            syn::Type::Reference(r) => Kind::External {
                inner: &r.elem,
                mutable: r.mutability.is_some(),
                borrow: pa.borrow,
            },
            other => invalid(
                other.span(),
                "an `#[external]` parameter is taken by reference: `&T` (or `&mut T` to update it), \
                 with `T: Descriptor`"
                    .into(),
            ),
        };
    }
    if pa.attr.is_some() {
        return classify_attr(ty);
    }
    let seg = last_segment(ty);
    // A packed sub-byte tensor is a tensor, bound differently (`Elem::packed`).
    let kind = seg.map(|s| match s.ident.to_string().as_str() {
        "PackedRef" => "TensorRef".to_string(),
        "PackedMut" => "TensorMut".to_string(),
        other => other.to_string(),
    });
    if let Some(span) = pa.inout {
        return match (kind.as_deref(), seg.map(tensor_parts)) {
            (Some("TensorMut"), Some(Ok((elem, rank)))) if !elem.packed => Kind::Tensor {
                elem,
                rank,
                inout: true,
            },
            (Some("TensorMut"), Some(Err((s, m)))) => invalid(s, m),
            _ => invalid(
                span,
                "`#[inout]` goes on a `TensorMut<'_, T>` parameter: a tensor the op updates in \
                 place (an input and a result in one buffer)"
                    .into(),
            ),
        };
    }
    match (kind.as_deref(), &pa.out) {
        (Some("TensorMut"), Some((out_span, shape))) => match seg.map(tensor_parts) {
            Some(Ok((elem, rank))) => match shape
                .as_ref()
                .map(shape_rule)
                .transpose()
                .map(|s| s.or(pa.shape_written.then_some(ShapeRule::Unread)))
            {
                Ok(shape) => Kind::Output {
                    elem,
                    rank,
                    shape,
                    out_span: *out_span,
                },
                Err((s, m)) => invalid(s, m),
            },
            Some(Err((s, m))) => invalid(s, m),
            None => invalid(ty.span(), "unsupported parameter type".into()),
        },
        (Some("TensorMut"), None) => invalid(
            ty.span(),
            "a `TensorMut` parameter is an output, `#[out(shape = [...])]` with its shape rule, or a \
             tensor updated in place, `#[inout]`"
                .into(),
        ),
        (Some("TensorRef"), None) => match seg.map(tensor_parts) {
            Some(Ok((elem, rank))) => Kind::Tensor {
                elem,
                rank,
                inout: false,
            },
            Some(Err((s, m))) => invalid(s, m),
            None => invalid(ty.span(), "unsupported parameter type".into()),
        },
        (_, Some((span, _))) => invalid(
            *span,
            "`#[out]` goes on a `TensorMut<'_, T>` parameter".into(),
        ),
        _ => invalid(
            ty.span(),
            "unsupported parameter type: a custom op takes tensors (`TensorRef<'_, T>`), outputs \
             (`#[out(shape = ...)] TensorMut<'_, T>`), attributes (`#[attr]`) and external \
             structures (`#[external] &T`)"
                .into(),
        ),
    }
}

fn classify_attr(ty: &syn::Type) -> Kind<'_> {
    match ty {
        syn::Type::Reference(r) if r.mutability.is_some() => invalid(
            r.span(),
            "an attribute is read-only: take it by value or as `&T`, not `&mut T`".into(),
        ),
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Slice(sl) => Kind::Attr(AttrKind::Slice(ty, &sl.elem)),
            inner => Kind::Attr(AttrKind::Ref(inner)),
        },
        _ => Kind::Attr(AttrKind::Value(ty)),
    }
}

pub(super) fn classify_ret(ty: &syn::Type) -> Ret<'_> {
    let bad = || {
        Ret::Invalid(
            ty.span(),
            "a custom op returns `Result<(), OpError>` or `Result<Opaque<T>, OpError>`".into(),
        )
    };
    let Some(seg) = last_segment(ty) else {
        return bad();
    };
    if seg.ident != "Result" {
        return bad();
    }
    match generic_types(seg).first() {
        Some(syn::GenericArgument::Type(syn::Type::Tuple(t))) if t.elems.is_empty() => Ret::Unit,
        Some(syn::GenericArgument::Type(t)) => match last_segment(t) {
            Some(s) if s.ident == "Opaque" => match generic_types(s).first() {
                Some(syn::GenericArgument::Type(inner)) => Ret::Opaque(inner),
                _ => bad(),
            },
            _ => bad(),
        },
        _ => bad(),
    }
}
