//! Op schemas: what `#[custom_op]` declares, as data (JSON) and as a PyTorch FunctionSchema
//! string.

use crate::descriptor::Layout;
use crate::types::ElementType;
use serde::{Serialize, Serializer};
use std::fmt::Write;

mod derivatives;
mod rules;

pub use derivatives::Derivatives;
pub use rules::{
    JvpInput, JvpSchema, JvpSource, JvpTangent, ResidualSource, VjpGradient, VjpInput, VjpSchema,
};

/// One op: its name, target, parameters, results and properties. In JSON (the manifest), also
/// its [`derivatives`](OpSchema::derivatives), which follow from the rest.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct OpSchema {
    /// `ns::op`.
    pub name: String,
    /// The custom call target (`call_target_name`) and FFI registration name.
    pub target: String,
    /// The custom call API version (4: typed XLA FFI).
    pub api_version: u32,
    /// Whether the op has side effects (`has_side_effect`): the `side_effect` option only, not
    /// a `&mut` external, whose new state is a result.
    pub side_effect: bool,
    /// The parameters, in declaration order (outputs are results, not parameters).
    pub params: Vec<ParamSchema>,
    /// The results, in the custom call's result order.
    pub results: Vec<ResultSchema>,
    /// How the op may be split across devices (`partition(...)`), if it says.
    pub partition: Option<PartitionRule>,
    /// The op's declared backward (`vjp = op_bwd`): what it takes and returns, or `None` (the op
    /// declares no gradient).
    pub vjp: Option<VjpSchema>,
    /// The op's declared forward-mode rule (`jvp = op_jvp`): what its tangent op takes and
    /// returns, or `None` (forward mode refuses the op).
    pub jvp: Option<JvpSchema>,
}

/// How an op may be split across devices: named factors, and for each tensor operand and result
/// the factor (or none) of each dimension. A factor split along some mesh axes splits every
/// dimension it names alike; a dimension with no factor is never split (the kernel needs it
/// whole). Operands and results not listed, externals among them, are replicated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartitionRule {
    /// The factors, in order of first appearance.
    pub factors: Vec<String>,
    /// The custom call's operands that have a rule, by operand index.
    pub operands: Vec<FactorDims>,
    /// The results that have a rule (derived from their shape rules), by result index.
    pub results: Vec<FactorDims>,
}

/// The factor of each dimension of one operand or result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FactorDims {
    /// The parameter's name (for an output, the output parameter).
    pub name: String,
    /// Its index among the custom call's operands (or results).
    pub index: usize,
    /// Per dimension, the factor that may split it (`None`: never split).
    pub dims: Vec<Option<String>>,
}

impl PartitionRule {
    /// The rule in Shardy's `op_sharding_rule` notation over the listed operands and results,
    /// e.g. `([rows, _])->([rows])`.
    pub fn notation(&self) -> String {
        let side = |entries: &[FactorDims]| {
            entries
                .iter()
                .map(|e| {
                    let dims: Vec<&str> =
                        e.dims.iter().map(|d| d.as_deref().unwrap_or("_")).collect();
                    format!("[{}]", dims.join(", "))
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!("({})->({})", side(&self.operands), side(&self.results))
    }
}

/// A parameter of an op.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParamSchema {
    /// The Rust parameter name.
    pub name: String,
    /// What it is.
    #[serde(flatten)]
    pub kind: ParamKind,
}

/// The kinds of parameters.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParamKind {
    /// A tensor operand.
    Tensor {
        /// Its element type: fixed, or a type parameter of a generic op.
        dtype: TensorDtype,
        /// Its rank, when the signature fixes it.
        rank: Option<usize>,
        /// Updated in place (`#[inout]`): also a result, aliased to this operand
        /// ([`ResultKind::UpdatedTensor`]).
        #[serde(default)]
        updated: bool,
    },
    /// A compile-time attribute, an entry of the `backend_config` dictionary.
    Attribute {
        /// Its type.
        #[serde(rename = "type")]
        ty: AttrType,
    },
    /// Every attribute of the call, as one dictionary (`#[attrs]`): the named attributes and
    /// any others the call carries. At most one per op; the handler then refuses no attribute
    /// as undeclared.
    Attributes,
    /// An opaque external structure: an operand of packed descriptor bytes.
    External {
        /// Whether the op updates it (`&mut`).
        mutable: bool,
        /// The descriptor's layout.
        descriptor: Layout,
    },
}

/// The types of attributes.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttrType {
    /// `bool`.
    Bool,
    /// A scalar of this element type.
    Scalar {
        /// The element type.
        #[serde(serialize_with = "ser_dtype")]
        dtype: ElementType,
    },
    /// A string.
    Str,
    /// An array of scalars.
    Array {
        /// The element type.
        #[serde(serialize_with = "ser_dtype")]
        dtype: ElementType,
    },
    /// A whole descriptor, packed (wire format v1) into a byte string.
    Descriptor {
        /// Its layout.
        descriptor: Layout,
    },
}

/// A result of an op.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultSchema {
    /// The Rust name (the output parameter, or the external it updates).
    pub name: String,
    /// What it is.
    #[serde(flatten)]
    pub kind: ResultKind,
}

/// The kinds of results.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResultKind {
    /// A tensor output with a shape rule.
    Tensor {
        /// Its element type: fixed, or a type parameter of a generic op (the type of the first
        /// tensor input it types).
        dtype: TensorDtype,
        /// One rule per dimension.
        shape: Vec<DimRule>,
    },
    /// A descriptor returned as packed bytes (`Opaque<T>`).
    Opaque {
        /// Its layout.
        descriptor: Layout,
    },
    /// The updated bytes of a `&mut` external, aliased to its operand.
    UpdatedExternal {
        /// The external parameter.
        param: String,
        /// The operand index it aliases.
        operand: usize,
    },
    /// A tensor updated in place (`#[inout]`): the same buffer as its operand, when the host
    /// aliases them (`output_operand_aliases`), with the operand's type.
    UpdatedTensor {
        /// The tensor parameter.
        param: String,
        /// The operand index it aliases.
        operand: usize,
    },
}

/// How one dimension of an output is computed.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DimRule {
    /// A constant size.
    Const {
        /// The size.
        size: i64,
    },
    /// The size of dimension `dim` of tensor parameter `param`.
    DimOf {
        /// The parameter.
        param: String,
        /// The dimension.
        dim: usize,
    },
    /// All dimensions of tensor parameter `param` (the output has its shape).
    ShapeOf {
        /// The parameter.
        param: String,
    },
    /// A run of tensor parameter `param`'s dimensions, `..x.dims(start..stop)`, for an input of
    /// any rank: as Python slices `x.shape[start:stop]` (a negative bound counts from the
    /// rank; `stop` absent is the rank), except that a bound outside the rank is an error, not
    /// clamped. `[..x.dims(..-1)]` is `x.shape[:-1]`.
    DimsOf {
        /// The parameter.
        param: String,
        /// The first dimension.
        start: i64,
        /// One past the last dimension (`None`: the rank).
        stop: Option<i64>,
    },
    /// A computed size: an expression over tensor dimensions, integer attributes, lengths of
    /// array attributes and literals (`(x.dim(1) + 2 * pad - k) / stride + 1`). In JSON, the
    /// expression as a tree (`{"op": "add", "lhs": ..., "rhs": ...}`, leaves `{"op": "lit",
    /// "value": 2}`, `{"op": "dim", "param": "x", "dim": 1}`, `{"op": "attr", "name": "k"}`,
    /// `{"op": "len", "name": "taps"}`) and as the text the user wrote.
    Expr {
        /// The expression.
        #[serde(serialize_with = "ser_expr")]
        expr: ShapeExpr,
        /// The expression as text (for messages).
        text: String,
    },
}

/// A shape expression over parameter names.
pub type ShapeExpr = customop_shape::Expr<String>;

impl DimRule {
    /// The rule for one dimension computed by `expr`: a literal and a copied dimension keep
    /// their plain forms (`Const`, `DimOf`).
    pub(crate) fn from_expr(expr: ShapeExpr) -> DimRule {
        match expr {
            customop_shape::Expr::Lit(size) => DimRule::Const { size },
            customop_shape::Expr::Dim { param, dim } => DimRule::DimOf { param, dim },
            expr => DimRule::Expr {
                text: expr.to_string(),
                expr,
            },
        }
    }

    /// The rule as an expression (`None` for `ShapeOf`, which is not one dimension).
    pub fn to_expr(&self) -> Option<ShapeExpr> {
        match self {
            DimRule::Const { size } => Some(customop_shape::Expr::Lit(*size)),
            DimRule::DimOf { param, dim } => Some(customop_shape::Expr::Dim {
                param: param.clone(),
                dim: *dim,
            }),
            DimRule::Expr { expr, .. } => Some(expr.clone()),
            DimRule::ShapeOf { .. } | DimRule::DimsOf { .. } => None,
        }
    }
}

/// A shape expression as a JSON tree (see [`DimRule::Expr`]).
pub(crate) fn expr_json(e: &ShapeExpr) -> serde_json::Value {
    use customop_shape::Expr;
    match e {
        Expr::Lit(v) => serde_json::json!({"op": "lit", "value": v}),
        Expr::Dim { param, dim } => serde_json::json!({"op": "dim", "param": param, "dim": dim}),
        Expr::Attr(n) => serde_json::json!({"op": "attr", "name": n}),
        Expr::Len(n) => serde_json::json!({"op": "len", "name": n}),
        Expr::Bin { op, lhs, rhs } => {
            serde_json::json!({"op": op.name(), "lhs": expr_json(lhs), "rhs": expr_json(rhs)})
        }
    }
}

fn ser_expr<S: Serializer>(e: &ShapeExpr, s: S) -> Result<S::Ok, S::Error> {
    expr_json(e).serialize(s)
}

fn ser_dtype<S: Serializer>(t: &ElementType, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(t.mlir_name())
}

/// A tensor's element type in a schema: one type, or a type parameter of a generic op
/// (`dtypes(T = [f32, bf16, f16])`), one of its allowed types per call. In JSON, `"f32"`, or
/// `{"var": "T", "allowed": ["f32", "bf16", "f16"]}`.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorDtype {
    /// This element type.
    Fixed(ElementType),
    /// The type parameter `name`: any of `allowed`, the same wherever it appears in one call.
    Var {
        /// The type parameter's name.
        name: String,
        /// The element types it may be.
        allowed: Vec<ElementType>,
    },
}

impl TensorDtype {
    /// Whether `element` fits: the fixed type, or one of the variable's allowed types.
    pub fn admits(&self, element: ElementType) -> bool {
        match self {
            TensorDtype::Fixed(e) => *e == element,
            TensorDtype::Var { allowed, .. } => allowed.contains(&element),
        }
    }

    /// The element types at which a tensor of this type has a derivative: all it may be, if
    /// every one has one ([`ElementType::is_differentiable`]), else none.
    pub fn derivative_types(&self) -> Vec<ElementType> {
        let allowed = match self {
            TensorDtype::Fixed(e) => core::slice::from_ref(e),
            TensorDtype::Var { allowed, .. } => allowed.as_slice(),
        };
        if crate::types::differentiable_types(allowed) {
            allowed.to_vec()
        } else {
            Vec::new()
        }
    }

    /// `f32`, or `T (f32, bf16 or f16)`, for messages.
    pub fn describe(&self) -> String {
        match self {
            TensorDtype::Fixed(e) => e.to_string(),
            TensorDtype::Var { name, allowed } => format!("{name} ({})", one_of(allowed)),
        }
    }
}

/// `f32`, `f32 or f64`, `f32, bf16 or f16`.
pub(crate) fn one_of(types: &[ElementType]) -> String {
    let names: Vec<String> = types.iter().map(ToString::to_string).collect();
    match names.split_last() {
        None => "nothing".to_string(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

impl Serialize for TensorDtype {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TensorDtype::Fixed(e) => ser_dtype(e, s),
            TensorDtype::Var { name, allowed } => {
                let allowed: Vec<&str> = allowed.iter().map(|e| e.mlir_name()).collect();
                serde_json::json!({"var": name, "allowed": allowed}).serialize(s)
            }
        }
    }
}

impl OpSchema {
    /// The schema as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The schema in PyTorch FunctionSchema syntax (what `torch.library` and
    /// `torch._C.parse_schema` take): tensors and externals as `Tensor` (a mutable external as
    /// `Tensor(a!)`), attributes after `*` with their types, results after `->`.
    pub fn schema_string(&self) -> String {
        self.schema_text(&self.name, false)
    }

    /// The schema string torch's native kernels are registered on (`customop.torch`), for
    /// the op named `name`: string, descriptor and array attributes are `Tensor`s (bytes,
    /// int64 or float64), since torch 2.9's stable ABI passes no strings or lists to a kernel.
    pub(crate) fn native_schema_string(&self, name: &str) -> String {
        self.schema_text(name, true)
    }

    fn schema_text(&self, name: &str, native: bool) -> String {
        let mut s = format!("{name}(");
        let mut first = true;
        let mut sep = |s: &mut String| {
            if !first {
                s.push_str(", ");
            }
            first = false;
        };
        let mut alias = b'a';
        for p in &self.params {
            match &p.kind {
                ParamKind::Tensor { updated: true, .. } => {
                    sep(&mut s);
                    let _ = write!(s, "Tensor({}!) {}", alias as char, p.name);
                    alias = alias.saturating_add(1);
                }
                ParamKind::Tensor { .. } => {
                    sep(&mut s);
                    let _ = write!(s, "Tensor {}", p.name);
                }
                ParamKind::External { mutable, .. } => {
                    sep(&mut s);
                    if *mutable {
                        let _ = write!(s, "Tensor({}!) {}", alias as char, p.name);
                        alias = alias.saturating_add(1);
                    } else {
                        let _ = write!(s, "Tensor {}", p.name);
                    }
                }
                // Not expressible in a FunctionSchema: torch refuses such an op by name.
                ParamKind::Attribute { .. } | ParamKind::Attributes => {}
            }
        }
        let attrs: Vec<&ParamSchema> = self
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Attribute { .. }))
            .collect();
        if !attrs.is_empty() {
            sep(&mut s);
            s.push('*');
            for p in attrs {
                if let ParamKind::Attribute { ty } = &p.kind {
                    let t = match ty {
                        AttrType::Str | AttrType::Descriptor { .. } | AttrType::Array { .. }
                            if native =>
                        {
                            "Tensor".to_string()
                        }
                        AttrType::Bool => "bool".to_string(),
                        AttrType::Scalar { dtype } if dtype.is_float() => "float".to_string(),
                        AttrType::Scalar { .. } => "int".to_string(),
                        AttrType::Str | AttrType::Descriptor { .. } => "str".to_string(),
                        AttrType::Array { dtype } if dtype.is_float() => "float[]".to_string(),
                        AttrType::Array { .. } => "int[]".to_string(),
                    };
                    let _ = write!(s, ", {t} {}", p.name);
                }
            }
        }
        s.push_str(") -> ");
        let returned: Vec<&ResultSchema> = self
            .results
            .iter()
            .filter(|r| {
                !matches!(
                    r.kind,
                    ResultKind::UpdatedExternal { .. } | ResultKind::UpdatedTensor { .. }
                )
            })
            .collect();
        match returned.len() {
            0 => s.push_str("()"),
            1 => s.push_str("Tensor"),
            n => {
                s.push('(');
                s.push_str(&vec!["Tensor"; n].join(", "));
                s.push(')');
            }
        }
        s
    }
}
