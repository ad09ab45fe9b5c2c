//! Constructors of the schema's records, for the code `#[custom_op]` generates (re-exported
//! through `__private`). The records are `#[non_exhaustive]`, so that they can grow without the
//! expansion changing: generated code builds them only through these functions.

use crate::descriptor::{EnumVariant, FieldLayout, Layout, TypeLayout};
use crate::schema::{
    AttrType, DimRule, FactorDims, OpSchema, ParamKind, ParamSchema, PartitionRule, ResultKind,
    ResultSchema, ShapeExpr, TensorDtype,
};
use crate::types::ElementType;
pub use customop_shape::BinOp;
use customop_shape::Expr;

/// An op's schema.
pub fn op_schema(
    name: &str,
    target: &str,
    api_version: u32,
    side_effect: bool,
    params: Vec<ParamSchema>,
    results: Vec<ResultSchema>,
    partition: Option<PartitionRule>,
) -> OpSchema {
    OpSchema {
        name: name.to_string(),
        target: target.to_string(),
        api_version,
        side_effect,
        params,
        results,
        partition,
        vjp: None,
        jvp: None,
    }
}

/// `schema` with its declared backward (the pairing was checked at compile time).
pub fn with_vjp(
    mut schema: OpSchema,
    fwd: &crate::vjp::Signature,
    bwd: &crate::vjp::Signature,
) -> OpSchema {
    schema.vjp = Some(crate::vjp::schema(fwd, bwd));
    schema
}

/// `schema` with its declared forward-mode rule (the pairing was checked at compile time).
pub fn with_jvp(
    mut schema: OpSchema,
    fwd: &crate::vjp::Signature,
    tan: &crate::vjp::Signature,
) -> OpSchema {
    schema.jvp = Some(crate::vjp::jvp_schema(fwd, tan));
    schema
}

/// A tensor input.
pub fn tensor_param(name: &str, dtype: ElementType, rank: Option<usize>) -> ParamSchema {
    ParamSchema {
        name: name.to_string(),
        kind: ParamKind::Tensor {
            dtype: TensorDtype::Fixed(dtype),
            rank,
            updated: false,
        },
    }
}

/// Tensor parameter `p` updated in place (`#[inout]`).
pub fn in_place(mut p: ParamSchema) -> ParamSchema {
    if let ParamKind::Tensor { updated, .. } = &mut p.kind {
        *updated = true;
    }
    p
}

/// A tensor input typed by the op's type parameter `var`, one of `allowed`.
pub fn tensor_param_var(
    name: &str,
    var: &str,
    allowed: Vec<ElementType>,
    rank: Option<usize>,
) -> ParamSchema {
    ParamSchema {
        name: name.to_string(),
        kind: ParamKind::Tensor {
            dtype: TensorDtype::Var {
                name: var.to_string(),
                allowed,
            },
            rank,
            updated: false,
        },
    }
}

/// An external of descriptor `descriptor`.
pub fn external_param(name: &str, mutable: bool, descriptor: &Layout) -> ParamSchema {
    ParamSchema {
        name: name.to_string(),
        kind: ParamKind::External {
            mutable,
            descriptor: descriptor.clone(),
        },
    }
}

/// An attribute.
pub fn attr_param(name: &str, ty: AttrType) -> ParamSchema {
    ParamSchema {
        name: name.to_string(),
        kind: ParamKind::Attribute { ty },
    }
}

/// The dictionary of all of a call's attributes (`#[attrs]`).
pub fn attributes_param(name: &str) -> ParamSchema {
    ParamSchema {
        name: name.to_string(),
        kind: ParamKind::Attributes,
    }
}

/// A tensor output with one rule per dimension.
pub fn tensor_result(name: &str, dtype: ElementType, shape: Vec<DimRule>) -> ResultSchema {
    ResultSchema {
        name: name.to_string(),
        kind: ResultKind::Tensor {
            dtype: TensorDtype::Fixed(dtype),
            shape,
        },
    }
}

/// A tensor output typed by the op's type parameter `var`, one of `allowed`.
pub fn tensor_result_var(
    name: &str,
    var: &str,
    allowed: Vec<ElementType>,
    shape: Vec<DimRule>,
) -> ResultSchema {
    ResultSchema {
        name: name.to_string(),
        kind: ResultKind::Tensor {
            dtype: TensorDtype::Var {
                name: var.to_string(),
                allowed,
            },
            shape,
        },
    }
}

/// The opaque result (`Opaque<T>`), of descriptor `descriptor`.
pub fn opaque_result(descriptor: &Layout) -> ResultSchema {
    ResultSchema {
        name: "result".to_string(),
        kind: ResultKind::Opaque {
            descriptor: descriptor.clone(),
        },
    }
}

/// One output dimension computed by `expr` (a literal or a copied dimension keeps its plain
/// form in the schema).
pub fn dim_rule(expr: ShapeExpr) -> DimRule {
    DimRule::from_expr(expr)
}

/// A literal of a shape expression.
pub fn expr_lit(value: i64) -> ShapeExpr {
    Expr::Lit(value)
}

/// `param.dim(dim)` in a shape expression.
pub fn expr_dim(param: &str, dim: usize) -> ShapeExpr {
    Expr::Dim {
        param: param.to_string(),
        dim,
    }
}

/// The integer attribute `name` in a shape expression.
pub fn expr_attr(name: &str) -> ShapeExpr {
    Expr::Attr(name.to_string())
}

/// `name.len()` of an array attribute in a shape expression.
pub fn expr_len(name: &str) -> ShapeExpr {
    Expr::Len(name.to_string())
}

/// `lhs op rhs` in a shape expression.
pub fn expr_bin(op: BinOp, lhs: ShapeExpr, rhs: ShapeExpr) -> ShapeExpr {
    Expr::bin(op, lhs, rhs)
}

/// The whole shape of tensor input `param`.
pub fn shape_of(param: &str) -> DimRule {
    DimRule::ShapeOf {
        param: param.to_string(),
    }
}

/// A run of tensor `param`'s dimensions, `..param.dims(start..stop)`.
pub fn dims_of(param: &str, start: i64, stop: Option<i64>) -> DimRule {
    DimRule::DimsOf {
        param: param.to_string(),
        start,
        stop,
    }
}

/// The result that carries the new bytes of `&mut` external `param` (its operand index is
/// filled in by [`OpDef::new`](crate::plan::OpDef::new)). For generated code.
pub fn updated_external(param: &str) -> ResultSchema {
    let param = param.to_string();
    ResultSchema {
        name: param.clone(),
        kind: ResultKind::UpdatedExternal { param, operand: 0 },
    }
}

/// The result that is tensor `param` updated in place (its operand index is filled in by
/// [`OpDef::new`](crate::plan::OpDef::new)). For generated code.
pub fn updated_tensor(param: &str) -> ResultSchema {
    let param = param.to_string();
    ResultSchema {
        name: param.clone(),
        kind: ResultKind::UpdatedTensor { param, operand: 0 },
    }
}

/// A partition rule from its entries, `(tensor input, factor of each dimension)`; the factors
/// are listed in order of first appearance, and the indices and the outputs' entries are
/// filled in by [`OpDef::new`](crate::plan::OpDef::new).
pub fn partition_rule(entries: Vec<(&str, Vec<Option<&str>>)>) -> PartitionRule {
    let mut factors: Vec<String> = Vec::new();
    for &f in entries.iter().flat_map(|(_, dims)| dims.iter().flatten()) {
        if !factors.iter().any(|g| g == f) {
            factors.push(f.to_string());
        }
    }
    PartitionRule {
        factors,
        operands: entries
            .into_iter()
            .map(|(name, dims)| FactorDims {
                name: name.to_string(),
                index: 0,
                dims: dims.into_iter().map(|d| d.map(str::to_string)).collect(),
            })
            .collect(),
        results: Vec::new(),
    }
}

// --- Descriptor layouts (for `#[derive(Descriptor)]`) --------------------------------------

/// A descriptor's layout, built from its fields and recorded in the process's table of known
/// fingerprints (so that a mismatch can name what the bytes were packed as).
pub fn descriptor_layout(
    name: &'static str,
    align: usize,
    fixed_size: usize,
    packed_size: Option<usize>,
    fields: Vec<FieldLayout>,
) -> Layout {
    let layout = Layout::build(name, align, fixed_size, packed_size, fields);
    crate::descriptor::record_name(layout.fingerprint, name);
    layout
}

/// A field of the fixed part, at `offset`.
pub fn fixed_field(name: &str, offset: usize, size: usize, ty: TypeLayout) -> FieldLayout {
    FieldLayout {
        name: name.to_string(),
        offset: Some(offset),
        size,
        ty,
    }
}

/// A tail field (`Vec<T>` or `String`): no offset, no size in the fixed part.
pub fn tail_field(name: &str, ty: TypeLayout) -> FieldLayout {
    FieldLayout {
        name: name.to_string(),
        offset: None,
        size: 0,
        ty,
    }
}

/// `Vec<T>`.
pub fn vec_type(element: TypeLayout) -> TypeLayout {
    TypeLayout::Vec {
        element: Box::new(element),
    }
}

/// `String`.
pub fn string_type() -> TypeLayout {
    TypeLayout::String
}

/// A nested descriptor.
pub fn struct_type(layout: &Layout) -> TypeLayout {
    TypeLayout::Struct {
        layout: Box::new(layout.clone()),
    }
}

/// A field-less enum with its `repr` and `(variant, discriminant)` pairs.
pub fn enum_type(name: &str, repr: &str, variants: &[(&str, i64)]) -> TypeLayout {
    TypeLayout::Enum {
        name: name.to_string(),
        repr: repr.to_string(),
        variants: variants
            .iter()
            .map(|&(name, value)| EnumVariant {
                name: name.to_string(),
                value,
            })
            .collect(),
    }
}
