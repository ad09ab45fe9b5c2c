//! Output shapes resolved to operands and attribute slots, and their evaluation: the one place
//! the lowering (result types) and the handler (output checks) compute an output's shape.

use super::ParamSlot;
use customop_shape::{Env, EvalError, Expr};

/// A name in a shape rule, resolved: the parameter's name (for messages) and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamRef {
    /// The parameter's name.
    pub name: String,
    /// Its operand (a tensor input) or attribute slot.
    pub slot: ParamSlot,
}

impl core::fmt::Display for ParamRef {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.name)
    }
}

/// One dimension of an output: an expression over operand dimensions and attributes.
pub type OutputDim = Expr<ParamRef>;

/// The shape of an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputShape {
    /// The shape of operand `n`.
    Of(usize),
    /// One expression per dimension.
    Dims(Vec<OutputDim>),
}

/// What a shape rule reads when it is evaluated: the operands' dimensions and the attributes'
/// values (the lowering's from its operand types and attribute literals, the handler's from the
/// call frame).
pub trait ShapeEnv {
    /// The dimensions of operand `operand`, if there is one.
    fn operand_dims(&self, operand: usize) -> Option<&[i64]>;
    /// The value of the integer attribute in slot `slot`, named `name`.
    fn attr_int(&self, slot: usize, name: &str) -> Option<i64>;
    /// The length of the array attribute in slot `slot`, named `name`.
    fn attr_len(&self, slot: usize, name: &str) -> Option<i64>;
}

struct Resolved<'e, E>(&'e E);

impl<E: ShapeEnv> Env<ParamRef> for Resolved<'_, E> {
    #[inline]
    fn dim(&self, param: &ParamRef, dim: usize) -> Option<i64> {
        match param.slot {
            ParamSlot::Operand(o) => self.0.operand_dims(o)?.get(dim).copied(),
            ParamSlot::Attribute(_) | ParamSlot::Attributes => None,
        }
    }
    fn attr(&self, name: &ParamRef) -> Option<i64> {
        match name.slot {
            ParamSlot::Attribute(a) => self.0.attr_int(a, &name.name),
            ParamSlot::Operand(_) | ParamSlot::Attributes => None,
        }
    }
    fn len(&self, name: &ParamRef) -> Option<i64> {
        match name.slot {
            ParamSlot::Attribute(a) => self.0.attr_len(a, &name.name),
            ParamSlot::Operand(_) | ParamSlot::Attributes => None,
        }
    }
}

impl OutputShape {
    /// The shape, given the operands' dimensions and the attributes' values; `Err` gives the
    /// dimension whose rule has no value, and why.
    pub fn eval(&self, env: &impl ShapeEnv) -> Result<Vec<i64>, (usize, EvalError)> {
        match self {
            OutputShape::Of(o) => env
                .operand_dims(*o)
                .map(<[i64]>::to_vec)
                .ok_or((0, EvalError::Missing(format!("operand {o}")))),
            OutputShape::Dims(dims) => dims
                .iter()
                .enumerate()
                .map(|(i, d)| d.eval_size(&Resolved(env)).map_err(|e| (i, e)))
                .collect(),
        }
    }

    /// What went wrong with dimension `d`, for a message: its rule and the error.
    pub fn explain(&self, d: usize, e: &EvalError) -> String {
        let text = match self {
            OutputShape::Dims(rules) => rules.get(d).map(ToString::to_string),
            OutputShape::Of(_) => None,
        }
        .unwrap_or_default();
        match e {
            EvalError::NotASize(v) => format!("dimension {d}, `{text}`, is {v}, not a size"),
            e => format!("dimension {d}, `{text}`: {e}"),
        }
    }

    /// Whether `dims` is the shape, without building it: the handler's check of an output
    /// buffer, on the hot path.
    #[inline]
    pub fn matches(&self, dims: &[i64], env: &impl ShapeEnv) -> bool {
        match self {
            OutputShape::Of(o) => env.operand_dims(*o) == Some(dims),
            OutputShape::Dims(rules) => {
                rules.len() == dims.len()
                    && rules
                        .iter()
                        .zip(dims)
                        .all(|(r, &d)| r.eval_size(&Resolved(env)) == Ok(d))
            }
        }
    }
}
