//! The op's model: every parameter classified, with the user's spans kept for errors.

use super::parse::{DtypeVar, Partition, PartitionEntry};
pub(crate) use super::shape_rule::ShapeRule;
use proc_macro2::Span;

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
    /// `#[cuda(op_cuda)]`: the CUDA side's function path.
    pub(crate) cuda: Option<&'a syn::Path>,
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
pub(super) fn var_in<'v>(vars: &'v [DtypeVar], ty: &syn::Type) -> Option<&'v DtypeVar> {
    let syn::Type::Path(p) = ty else { return None };
    let id = p.path.get_ident().filter(|_| p.qself.is_none())?;
    vars.iter().find(|v| v.ident == *id)
}
