//! The op's model: every parameter classified, with the user's spans kept for errors.

use super::parse::{DtypeVar, ItemFn, Options, ParamAttrs, Partition, PartitionEntry};
pub(crate) use super::shape_rule::ShapeRule;
use super::shape_rule::shape_rule;
use crate::ctxt::Ctxt;
use proc_macro2::Span;
use syn::spanned::Spanned;

pub(crate) struct Op<'a> {
    pub(crate) ident: &'a syn::Ident,
    pub(crate) vis: &'a syn::Visibility,
    /// The user's name, or a placeholder when it is missing or ill-typed (already reported),
    /// so that the companion module still expands and names keep resolving.
    pub(crate) name: String,
    /// The `name` literal's span, when the user gave one.
    pub(crate) name_span: Option<Span>,
    pub(crate) target: String,
    /// The `target` literal's span, when the user gave one.
    pub(crate) target_span: Option<Span>,
    pub(crate) side_effect: bool,
    pub(crate) api_version: u32,
    pub(crate) api_version_span: Option<Span>,
    pub(crate) krate: syn::Path,
    pub(crate) params: Vec<Param<'a>>,
    pub(crate) ret: Ret<'a>,
    pub(crate) partition: Option<&'a Partition>,
    /// The type parameters of a generic op and their element types (`dtypes(...)`).
    pub(crate) dtype_vars: &'a [DtypeVar],
    /// The function's type parameters, in declaration order, as indices into `dtype_vars`
    /// (only when every one is listed there: the handler's turbofish).
    pub(crate) generic_order: Vec<usize>,
    /// `vjp = op_bwd`: the backward op's function path.
    pub(crate) vjp: Option<&'a syn::Path>,
    /// `jvp = op_jvp`: the tangent op's function path.
    pub(crate) jvp: Option<&'a syn::Path>,
}

pub(crate) struct Param<'a> {
    pub(crate) ident: syn::Ident,
    pub(crate) ty: &'a syn::Type,
    pub(crate) kind: Kind<'a>,
}

/// The element type of a tensor parameter, as the user wrote it (`f32`, or an alias of it):
/// the schema takes its `ElementType` from the `Element` trait, so the macro keeps no table of
/// element types.
#[derive(Clone)]
pub(crate) struct Elem<'a> {
    pub(crate) ty: &'a syn::Type,
}

/// How an attribute parameter is passed. Which types are allowed is the runtime's attribute
/// traits' business (`AttrValue`, `AttrRef`), not a list here.
pub(crate) enum AttrKind<'a> {
    /// By value: a scalar or `bool`; the whole type.
    Value(&'a syn::Type),
    /// An array, `&[T]`: the whole type and `T`.
    Slice(&'a syn::Type, &'a syn::Type),
    /// By reference, `&T` (`&str`, a descriptor): `T`.
    Ref(&'a syn::Type),
}

pub(crate) enum Kind<'a> {
    Tensor {
        elem: Elem<'a>,
        rank: Option<usize>,
        /// `#[inout] x: TensorMut<'_, T>`: also a result, aliased to the operand.
        inout: bool,
    },
    Output {
        elem: Elem<'a>,
        rank: Option<usize>,
        shape: Option<ShapeRule>,
        out_span: Span,
    },
    Attr(AttrKind<'a>),
    External {
        inner: &'a syn::Type,
        mutable: bool,
        /// `#[external(borrow)]`: bound as `&T` into XLA's buffer (`T: ReprC`).
        borrow: bool,
    },
    /// `#[state] s: &T`: built once per call site from the attributes (`T: OpState`).
    State {
        inner: &'a syn::Type,
    },
    /// `#[attrs] a: Dictionary<'_>`: every attribute of the call.
    Attrs(Span),
    /// Something `check` will refuse, with the span and message, and what it is meant to be.
    Invalid(Span, String, Intent),
}

/// What a parameter that could not be classified is meant to be, as far as the companion's
/// `call` is concerned: so that calls written for the intended signature still type-check.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intent {
    /// An output (it has `#[out]`, or is a `TensorMut`): not an argument of `call`.
    Output,
    /// Anything else: an argument of `call`, of any type.
    Argument,
}

impl Kind<'_> {
    /// What the parameter is meant to be, for `call`.
    pub(crate) fn intent(&self) -> Intent {
        match self {
            Kind::Output { .. } | Kind::Invalid(_, _, Intent::Output) => Intent::Output,
            _ => Intent::Argument,
        }
    }
}

fn invalid<'a>(span: Span, message: String) -> Kind<'a> {
    Kind::Invalid(span, message, Intent::Argument)
}

pub(crate) enum Ret<'a> {
    Unit,
    Opaque(&'a syn::Type),
    Invalid(Span, String),
}

impl<'a> Op<'a> {
    pub(crate) fn build(
        cx: &mut Ctxt,
        item: &'a ItemFn,
        options: &'a Options,
        attrs: &[ParamAttrs],
    ) -> Op<'a> {
        let name = match &options.name {
            Some(n) => n.value(),
            None => {
                // Written with a value that failed to parse: already reported.
                if !options.name_written {
                    let span = options.span.unwrap_or(item.sig.fn_token.span);
                    cx.syn_error(syn::Error::new(
                        span,
                        "missing option `name`: `#[custom_op(name = \"my_lib::my_op\")]`",
                    ));
                }
                format!("customop_unnamed::{}", item.sig.ident)
            }
        };
        let target = options
            .target
            .as_ref()
            .map(|t| t.value())
            .unwrap_or_else(|| name.replace("::", "."));
        let (api_version, api_version_span) = match &options.api_version {
            None => (4, None),
            Some(v) => (v.base10_parse::<u32>().unwrap_or(0), Some(v.span())),
        };
        let mut params = Vec::new();
        for (i, (arg, pa)) in item.sig.inputs.iter().zip(attrs).enumerate() {
            let syn::FnArg::Typed(pt) = arg else {
                continue; // `self`: refused by check
            };
            let (ident, kind) = match &*pt.pat {
                syn::Pat::Ident(p) => (p.ident.clone(), classify(&pt.ty, pa)),
                // Kept (under a name no user writes) so that `call` still takes it.
                other => (
                    quote::format_ident!("__customop_param_{}", i),
                    Kind::Invalid(
                        other.span(),
                        "custom op parameters must be plain names (they name the schema's \
                         parameters)"
                            .into(),
                        classify(&pt.ty, pa).intent(),
                    ),
                ),
            };
            params.push(Param {
                kind,
                ident,
                ty: &pt.ty,
            });
        }
        // A type parameter of `dtypes(...)` types tensors only: an attribute or an external
        // typed by one is refused (and left out of the companion, which cannot name it).
        let vars = options
            .dtypes
            .as_ref()
            .map_or(&[][..], |d| d.vars.as_slice());
        for prm in &mut params {
            let ty = match &prm.kind {
                Kind::Attr(AttrKind::Value(t) | AttrKind::Ref(t) | AttrKind::Slice(_, t)) => *t,
                Kind::External { inner, .. } => *inner,
                _ => continue,
            };
            if let Some(v) = var_in(vars, ty) {
                prm.kind = invalid(
                    ty.span(),
                    format!(
                        "`{}` types tensors only: an attribute or external has one type",
                        v.ident
                    ),
                );
            }
        }
        let ret = match &item.sig.output {
            syn::ReturnType::Default => Ret::Invalid(
                item.sig.ident.span(),
                "a custom op returns `Result<(), OpError>` (or `Result<Opaque<T>, OpError>`), \
                 so that the kernel's errors reach XLA"
                    .into(),
            ),
            syn::ReturnType::Type(_, ty) => classify_ret(ty),
        };
        Op {
            ident: &item.sig.ident,
            vis: &item.vis,
            name,
            name_span: options.name.as_ref().map(|n| n.span()),
            target,
            target_span: options.target.as_ref().map(|t| t.span()),
            side_effect: options.side_effect.is_some(),
            api_version,
            api_version_span,
            krate: options
                .krate
                .clone()
                .unwrap_or_else(|| syn::parse_quote!(::customop)),
            params,
            ret,
            partition: options.partition.as_ref(),
            dtype_vars: vars,
            generic_order: item
                .sig
                .generics
                .type_params()
                .filter_map(|t| {
                    options
                        .dtypes
                        .as_ref()?
                        .vars
                        .iter()
                        .position(|v| v.ident == t.ident)
                })
                .collect(),
            vjp: options.vjp.as_ref(),
            jvp: options.jvp.as_ref(),
        }
    }

    /// The `dtypes` variable that `ty` is (a bare type parameter listed there), if any.
    pub(crate) fn var_of(&self, ty: &syn::Type) -> Option<&'a DtypeVar> {
        var_in(self.dtype_vars, ty)
    }

    /// The `partition` entry of parameter `name`, if any.
    pub(crate) fn partition_of(&self, name: &syn::Ident) -> Option<&'a PartitionEntry> {
        self.partition?.entries.iter().find(|e| e.param == *name)
    }

    /// Per dimension, the factor of an output with this shape rule, as the rule carries the
    /// inputs' factors over (`Err`: a computed dimension reads a dimension split by that
    /// factor); `None` when the output is not split (no partition, or `shape = x` with `x` not
    /// in it).
    pub(crate) fn output_factors(
        &self,
        shape: &ShapeRule,
    ) -> Option<Vec<Result<Option<&'a syn::Ident>, &'a syn::Ident>>> {
        self.partition?;
        match shape {
            ShapeRule::Of(src) => self
                .partition_of(src)
                .map(|e| e.dims.iter().map(|d| Ok(d.as_ref())).collect()),
            ShapeRule::Dims(dims) => {
                let factor_of = |src: &syn::Ident, k: usize| {
                    self.partition_of(src)
                        .and_then(|e| e.dims.get(k))
                        .and_then(Option::as_ref)
                };
                Some(dims.iter().map(|d| d.expr.factor(&factor_of)).collect())
            }
            // Refused with a partition (`check`): its rank follows an input's.
            ShapeRule::Parts(_) | ShapeRule::Unread => None,
        }
    }
}

/// The variable of `vars` that `ty` is: a bare path naming it.
fn var_in<'v>(vars: &'v [DtypeVar], ty: &syn::Type) -> Option<&'v DtypeVar> {
    let syn::Type::Path(p) = ty else { return None };
    let id = p.path.get_ident().filter(|_| p.qself.is_none())?;
    vars.iter().find(|v| v.ident == *id)
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
        Some(syn::GenericArgument::Type(ty)) => Elem { ty },
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
fn classify<'a>(ty: &'a syn::Type, pa: &ParamAttrs) -> Kind<'a> {
    match classify_kind(ty, pa) {
        Kind::Invalid(span, message, _) => {
            let tensor_mut = last_segment(ty).is_some_and(|s| s.ident == "TensorMut");
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
    let kind = seg.map(|s| s.ident.to_string());
    if let Some(span) = pa.inout {
        return match (kind.as_deref(), seg.map(tensor_parts)) {
            (Some("TensorMut"), Some(Ok((elem, rank)))) => Kind::Tensor {
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

fn classify_ret(ty: &syn::Type) -> Ret<'_> {
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
