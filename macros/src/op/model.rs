//! The op's model: every parameter classified, with the user's spans kept for errors.

use super::classify::{classify, classify_ret, invalid};
use super::parse::{DtypeVar, ItemFn, Options, ParamAttrs, Partition, PartitionEntry};
pub(crate) use super::shape_rule::ShapeRule;
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
    /// A packed sub-byte type (`PackedRef`/`PackedMut`): bound by `Packed`, not `Element`.
    pub(crate) packed: bool,
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
