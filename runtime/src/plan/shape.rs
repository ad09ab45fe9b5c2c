//! Output shapes resolved to operands and attribute slots, and their evaluation: the one place
//! the lowering (result types) and the handler (output checks) compute an output's shape.

use super::ParamSlot;
pub use customop_shape::run_bounds;
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
    /// Expressions and runs of an operand's dimensions (`[..x.dims(..-1), k]`): a rank that
    /// follows an input's.
    Parts(Vec<ShapePart>),
}

/// A part of an [`OutputShape::Parts`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapePart {
    /// One dimension.
    One(OutputDim),
    /// Dimensions `start..stop` of operand `operand` (tensor parameter `param`), as
    /// [`run_bounds`] reads them.
    Run {
        /// The operand.
        operand: usize,
        /// Its parameter's name (for messages).
        param: String,
        /// The first dimension (negative: from the rank).
        start: i64,
        /// One past the last (negative: from the rank; `None`: the rank).
        stop: Option<i64>,
    },
}

/// `..x.dims(1..-1)` as the user writes it.
pub fn run_text(param: &str, start: i64, stop: Option<i64>) -> String {
    let start = if start == 0 {
        String::new()
    } else {
        start.to_string()
    };
    let stop = stop.map(|v| v.to_string()).unwrap_or_default();
    format!("..{param}.dims({start}..{stop})")
}

impl core::fmt::Display for ShapePart {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ShapePart::One(d) => write!(f, "{d}"),
            ShapePart::Run {
                param, start, stop, ..
            } => f.write_str(&run_text(param, *start, *stop)),
        }
    }
}

impl ShapePart {
    /// The dimensions of a run in `env`, or why there are none.
    fn run<'e>(&self, env: &'e impl ShapeEnv) -> Result<&'e [i64], EvalError> {
        let ShapePart::Run {
            operand,
            param,
            start,
            stop,
        } = self
        else {
            return Ok(&[]);
        };
        let dims = env
            .operand_dims(*operand)
            .ok_or_else(|| EvalError::Missing(format!("`{param}`")))?;
        run_bounds(dims.len(), *start, *stop)
            .map(|(s, e)| &dims[s..e])
            .ok_or_else(|| {
                EvalError::Missing(format!(
                    "`{}` of a rank-{} `{param}`",
                    run_text(param, *start, *stop),
                    dims.len()
                ))
            })
    }
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
            // The error's index is the part's.
            OutputShape::Parts(parts) => {
                let mut out = Vec::new();
                for (i, p) in parts.iter().enumerate() {
                    match p {
                        ShapePart::One(d) => {
                            out.push(d.eval_size(&Resolved(env)).map_err(|e| (i, e))?);
                        }
                        ShapePart::Run { .. } => {
                            out.extend_from_slice(p.run(env).map_err(|e| (i, e))?);
                        }
                    }
                }
                Ok(out)
            }
        }
    }

    /// What went wrong with dimension `d`, for a message: its rule and the error.
    pub fn explain(&self, d: usize, e: &EvalError) -> String {
        let text = match self {
            OutputShape::Dims(rules) => rules.get(d).map(ToString::to_string),
            OutputShape::Parts(parts) => {
                return format!(
                    "`{}`: {e}",
                    parts.get(d).map(ToString::to_string).unwrap_or_default()
                );
            }
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
            OutputShape::Parts(parts) => {
                let mut rest = dims;
                for p in parts {
                    let n = match p {
                        ShapePart::One(r) => match (rest.first(), r.eval_size(&Resolved(env))) {
                            (Some(&d), Ok(v)) if d == v => 1,
                            _ => return false,
                        },
                        ShapePart::Run { .. } => match p.run(env) {
                            Ok(run) if rest.starts_with(run) => run.len(),
                            _ => return false,
                        },
                    };
                    rest = &rest[n..];
                }
                rest.is_empty()
            }
        }
    }
}
