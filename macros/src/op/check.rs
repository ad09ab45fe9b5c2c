//! The rules of a custom op, all checked (and every error collected) before expansion.

use super::model::{AttrKind, Kind, Op, Ret, ShapeRule};
use super::parse::ItemFn;
use super::partition::check_partition;
use super::shape_rule::{DimRule, Part};
use crate::ctxt::Ctxt;
use customop_shape::Facts;

pub(crate) fn check(cx: &mut Ctxt, op: &Op<'_>, item: &ItemFn) {
    let sig = &item.sig;
    if let Some(a) = &sig.asyncness {
        cx.error_spanned_by(
            a,
            "a custom op cannot be `async`: XLA calls the kernel synchronously",
        );
    }
    if let Some(c) = &sig.constness {
        cx.error_spanned_by(c, "a custom op cannot be `const`");
    }
    if let Some(u) = &sig.unsafety {
        cx.error_spanned_by(u, "a custom op cannot be `unsafe`: the handler checks everything before the kernel runs, so the kernel's contract is safe");
    }
    if let Some(a) = &sig.abi {
        cx.error_spanned_by(
            a,
            "a custom op is a Rust function: customop generates the `extern \"C\"` handler",
        );
    }
    if let Some(v) = &sig.variadic {
        cx.error_spanned_by(v, "a custom op cannot be variadic");
    }
    check_dtypes(cx, op, sig);
    check_cuda(cx, op);
    for arg in &sig.inputs {
        if let syn::FnArg::Receiver(r) = arg {
            cx.error_spanned_by(
                r,
                "a custom op is a free function, not a method: it cannot take `self`",
            );
        }
    }

    if let Some(span) = op.name_span
        && !valid_name(&op.name)
    {
        cx.syn_error(syn::Error::new(
            span,
            format!(
                "op name `{}` must be `namespace::name` (identifiers joined by `::`)",
                op.name
            ),
        ));
    }
    if let Some(span) = op.target_span
        && op.target.is_empty()
    {
        cx.syn_error(syn::Error::new(span, "the target must not be empty"));
    }
    if op.api_version != 4 {
        let span = op
            .api_version_span
            .unwrap_or_else(proc_macro2::Span::call_site);
        cx.syn_error(syn::Error::new(
            span,
            "only `api_version = 4` (the typed XLA FFI) is supported: legacy custom calls (1-3) \
             are deprecated on XLA CPU and cannot report errors there",
        ));
    }

    if let (Some(inout), Some(rule)) = (
        op.params
            .iter()
            .find(|p| matches!(p.kind, Kind::Tensor { inout: true, .. })),
        op.vjp.or(op.jvp),
    ) {
        cx.error_spanned_by(
            rule,
            format!(
                "an op that updates `{}` in place (`#[inout]`) declares no derivative: its input \
                 is gone when a backward or tangent op would read it",
                inout.ident
            ),
        );
    }
    let mut state_seen = false;
    let mut attrs_seen = false;
    for p in &op.params {
        match &p.kind {
            Kind::Invalid(span, message, _) => cx.syn_error(syn::Error::new(*span, message)),
            Kind::Attrs(span) => {
                if std::mem::replace(&mut attrs_seen, true) {
                    cx.syn_error(syn::Error::new(
                        *span,
                        "an op has one `#[attrs]` dictionary: it holds every attribute of the call",
                    ));
                }
            }
            Kind::Tensor { .. } => {}
            Kind::State { inner } => {
                if std::mem::replace(&mut state_seen, true) {
                    cx.error_spanned_by(
                        inner,
                        "an op has one `#[state]` parameter: put what it needs in one type",
                    );
                }
            }
            Kind::Output {
                rank,
                shape,
                out_span,
                ..
            } => match shape {
                None => cx.syn_error(syn::Error::new(
                    *out_span,
                    format!(
                        "output `{}` needs a shape rule: `#[out(shape = x)]` (the shape of input \
                             `x`) or `#[out(shape = [x.dim(0), 4])]`",
                        p.ident
                    ),
                )),
                Some(ShapeRule::Unread) => {}
                Some(ShapeRule::Of(src)) => {
                    if let Some(r) = check_source(cx, op, src)
                        && let (Some(r), Some(want)) = (r, rank)
                        && r != *want
                    {
                        cx.error_spanned_by(
                            src,
                            format!(
                                "`{src}` has rank {r}, but output `{}` has rank {want}",
                                p.ident
                            ),
                        );
                    }
                }
                Some(ShapeRule::Dims(dims)) => {
                    if let Some(want) = rank
                        && dims.len() != *want
                    {
                        cx.error_spanned_by(
                            p.ty,
                            format!(
                                "output `{}` has rank {want}, but its shape rule has {} dimensions",
                                p.ident,
                                dims.len()
                            ),
                        );
                    }
                    for d in dims {
                        check_dim(cx, op, d);
                    }
                }
                Some(ShapeRule::Parts(parts)) => {
                    for part in parts {
                        match part {
                            Part::One(d) => check_dim(cx, op, d),
                            Part::Run {
                                param, start, stop, ..
                            } => {
                                if let Some(Some(r)) = check_source(cx, op, param)
                                    && customop_shape::run_bounds(r, *start, *stop).is_none()
                                {
                                    cx.error_spanned_by(
                                        param,
                                        format!(
                                            "`{param}` has rank {r}: it has no dimensions {}..{}",
                                            start,
                                            stop.map(|v| v.to_string()).unwrap_or_default()
                                        ),
                                    );
                                }
                            }
                        }
                    }
                }
            },
            Kind::Attr(_) | Kind::External { .. } => {}
        }
    }
    if let Ret::Invalid(span, message) = &op.ret {
        cx.syn_error(syn::Error::new(*span, message));
    }
    check_partition(cx, op);
}

fn valid_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split("::").collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            let mut c = p.chars();
            matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
                && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        })
}

/// A generic op: every type parameter is listed in `dtypes(T = [...])` with at least one type
/// and no type twice, and types at least one tensor input (the handler reads it from that
/// input's buffer); `dtypes` names only type parameters; no other generics.
fn check_dtypes(cx: &mut Ctxt, op: &Op<'_>, sig: &syn::Signature) {
    for g in &sig.generics.params {
        match g {
            syn::GenericParam::Lifetime(_) => {}
            syn::GenericParam::Type(t) if op.dtype_vars.iter().any(|v| v.ident == t.ident) => {}
            syn::GenericParam::Type(t) => cx.error_spanned_by(
                &t.ident,
                format!(
                    "type parameter `{0}` has no element types: list them in the op's options, \
                     `dtypes({0} = [f32, f64])`, for one op that takes each",
                    t.ident
                ),
            ),
            syn::GenericParam::Const(c) => cx.error_spanned_by(
                c,
                "a custom op cannot have const generics: its schema, lowering and handler are \
                 for one set of types (type parameters are listed in `dtypes(...)`)",
            ),
        }
    }
    for v in op.dtype_vars {
        let declared = sig
            .generics
            .params
            .iter()
            .any(|g| matches!(g, syn::GenericParam::Type(t) if t.ident == v.ident));
        if !declared {
            cx.error_spanned_by(
                &v.ident,
                format!(
                    "`{}` is not a type parameter of `{}`: declare it, `fn {}<{}>(...)`",
                    v.ident, sig.ident, sig.ident, v.ident
                ),
            );
            continue;
        }
        if v.types.is_empty() {
            cx.syn_error(syn::Error::new(
                v.span,
                format!("`{}` needs at least one element type", v.ident),
            ));
        }
        let mut seen = Vec::new();
        for t in &v.types {
            let text = quote::ToTokens::to_token_stream(t).to_string();
            if seen.contains(&text) {
                cx.error_spanned_by(t, format!("`{text}` is listed twice for `{}`", v.ident));
            }
            seen.push(text);
        }
        let typed_input = op.params.iter().any(|p| {
            matches!(&p.kind, Kind::Tensor { elem, .. } if op.var_of(elem.ty).is_some_and(|w| w.ident == v.ident))
        });
        if !typed_input {
            cx.error_spanned_by(
                &v.ident,
                format!(
                    "`{0}` types no tensor input: the handler takes `{0}` from an input's \
                     buffer (`x: TensorRef<'_, {0}>`)",
                    v.ident
                ),
            );
        }
    }
}

/// What the parameter a shape expression names is, for customop-shape's checks. Whether a
/// by-value attribute is an integer is left to the type system (the expansion bounds it by
/// `IntegerAttr`), so that aliases work.
fn facts(op: &Op<'_>, name: &syn::Ident) -> Facts {
    match op.params.iter().find(|p| p.ident == *name).map(|p| &p.kind) {
        None => Facts::Unknown,
        Some(Kind::Tensor { rank, .. }) => Facts::Tensor { rank: *rank },
        Some(Kind::Attr(AttrKind::Value(_))) => Facts::ScalarAttr { integer: None },
        Some(Kind::Attr(AttrKind::Slice(..))) => Facts::ArrayAttr,
        Some(Kind::Attr(AttrKind::Ref(_))) => Facts::Other("a string or descriptor attribute"),
        Some(Kind::External { .. }) => Facts::Other("an external"),
        Some(Kind::Output { .. }) => Facts::Other("an output"),
        Some(Kind::State { .. }) => Facts::Other("a state"),
        Some(Kind::Attrs(_)) => Facts::Other("the dictionary of attributes"),
        Some(Kind::Invalid(..)) => Facts::Other("a parameter customop cannot take"),
    }
}

/// Reports the errors of one dimension expression, at the name or the dimension.
fn check_dim(cx: &mut Ctxt, op: &Op<'_>, d: &DimRule) {
    for e in d.expr.check(&|n| facts(op, n)) {
        match e.at {
            Some(name) => cx.error_spanned_by(name, e.message),
            None => cx.syn_error(syn::Error::new(d.span, e.message)),
        }
    }
}

/// Checks that a shape rule's source is a tensor input; returns its declared rank (`Some(None)`
/// when not fixed), or `None` after reporting an error.
fn check_source(cx: &mut Ctxt, op: &Op<'_>, src: &syn::Ident) -> Option<Option<usize>> {
    match facts(op, src) {
        Facts::Tensor { rank } => Some(rank),
        Facts::Unknown => {
            cx.error_spanned_by(src, format!("`{src}` is not a parameter of this op"));
            None
        }
        _ => {
            cx.error_spanned_by(
                src,
                format!("`{src}` is not a tensor input (`TensorRef`): `shape = {src}` takes the shape of one"),
            );
            None
        }
    }
}

/// What an op's CUDA side (`#[cuda(...)]`) takes: tensors, outputs, externals by value and
/// attributes. The rest is refused by name, at the parameter, rather than half-supported.
fn check_cuda(cx: &mut Ctxt, op: &Op<'_>) {
    if op.cuda.is_none() {
        return;
    }
    if let Ret::Opaque(t) = &op.ret {
        cx.error_spanned_by(
            t,
            "`#[cuda(...)]`: an opaque result is not written from the device yet",
        );
    }
    for prm in &op.params {
        let refused = match &prm.kind {
            Kind::Tensor { elem, .. } | Kind::Output { elem, .. } if elem.packed => {
                Some("a packed sub-byte tensor")
            }
            Kind::External { mutable: true, .. } => Some("an external updated in place (`&mut`)"),
            Kind::External { borrow: true, .. } => Some(
                "an external read in place (`#[external(borrow)]`): on the device it is \
                      copied and checked, take it as `#[external] x: &T`",
            ),
            Kind::State { .. } => Some("a `#[state]`"),
            _ => None,
        };
        if let Some(what) = refused {
            cx.error_spanned_by(
                prm.ty,
                format!("`#[cuda(...)]`: a CUDA side cannot take {what} yet"),
            );
        }
    }
}
