//! The expression type, its environment of values and its evaluation; the partition factor
//! an output dimension carries.

use crate::{ArithError, BinOp};
use core::fmt;

/// One output dimension, as an expression over the op's parameters, named by `N` (the
/// macro's identifiers, the runtime's strings, or the plan's resolved references).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr<N> {
    /// An integer literal.
    Lit(i64),
    /// Dimension `dim` of tensor input `param`: `x.dim(1)`.
    Dim {
        /// The tensor input.
        param: N,
        /// Its dimension.
        dim: usize,
    },
    /// The value of an integer scalar attribute: `k`.
    Attr(N),
    /// The number of elements of an array attribute: `taps.len()`.
    Len(N),
    /// A binary operation.
    Bin {
        /// The operation.
        op: BinOp,
        /// The left operand.
        lhs: Box<Expr<N>>,
        /// The right operand.
        rhs: Box<Expr<N>>,
    },
}

/// Why an expression has no value, found by [`Expr::eval`] or [`Expr::eval_size`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// An operation overflowed `i64` or divided by zero; the text is the sub-expression, with
    /// its operands' values.
    Arith {
        /// What went wrong.
        error: ArithError,
        /// `a op b` with the values.
        at: String,
    },
    /// The environment has no value for this part (`x.dim(3)` of a rank-2 input, an absent
    /// attribute).
    Missing(String),
    /// A dimension that came out negative, or zero from a computed expression.
    NotASize(i64),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Arith {
                error: ArithError::Overflow,
                at,
            } => write!(f, "`{at}` overflows a 64-bit integer"),
            EvalError::Arith {
                error: ArithError::DivisionByZero,
                at,
            } => write!(f, "`{at}` divides by zero"),
            EvalError::Arith {
                error: ArithError::NegativeDivision,
                at,
            } => write!(
                f,
                "`{at}` divides a negative number (a size expression divides only sizes)"
            ),
            EvalError::Missing(what) => write!(f, "{what} has no value"),
            EvalError::NotASize(v) => write!(f, "it is {v}, not a size"),
        }
    }
}

/// The values an expression reads: the dimensions of tensor inputs and the values of
/// attributes, by name. `None` where there is no such value.
pub trait Env<N> {
    /// Dimension `dim` of tensor input `param`.
    fn dim(&self, param: &N, dim: usize) -> Option<i64>;
    /// The value of integer attribute `name`.
    fn attr(&self, name: &N) -> Option<i64>;
    /// The length of array attribute `name`.
    fn len(&self, name: &N) -> Option<i64>;
}

impl<N> Expr<N> {
    /// `lhs op rhs`.
    pub fn bin(op: BinOp, lhs: Expr<N>, rhs: Expr<N>) -> Expr<N> {
        Expr::Bin {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        }
    }

    /// Whether the expression computes anything (not a literal, not a plain `x.dim(k)`).
    pub fn is_computed(&self) -> bool {
        !matches!(self, Expr::Lit(_) | Expr::Dim { .. })
    }

    /// The same expression with every name mapped by `f`, or `f`'s first error.
    pub fn try_map<M, E>(&self, f: &mut impl FnMut(&N) -> Result<M, E>) -> Result<Expr<M>, E> {
        Ok(match self {
            Expr::Lit(v) => Expr::Lit(*v),
            Expr::Dim { param, dim } => Expr::Dim {
                param: f(param)?,
                dim: *dim,
            },
            Expr::Attr(n) => Expr::Attr(f(n)?),
            Expr::Len(n) => Expr::Len(f(n)?),
            Expr::Bin { op, lhs, rhs } => Expr::bin(*op, lhs.try_map(f)?, rhs.try_map(f)?),
        })
    }

    /// The same expression with every name mapped by `f`.
    pub fn map<M>(&self, f: &mut impl FnMut(&N) -> M) -> Expr<M> {
        match self.try_map(&mut |n| Ok::<M, core::convert::Infallible>(f(n))) {
            Ok(e) => e,
            Err(never) => match never {},
        }
    }

    /// Calls `f` on every leaf, left to right.
    pub fn visit<'e>(&'e self, f: &mut impl FnMut(&'e Expr<N>)) {
        match self {
            Expr::Bin { lhs, rhs, .. } => {
                lhs.visit(f);
                rhs.visit(f);
            }
            leaf => f(leaf),
        }
    }

    /// The expression's value, checked (see the crate documentation).
    pub fn eval(&self, env: &impl Env<N>) -> Result<i64, EvalError>
    where
        N: fmt::Display,
    {
        match self {
            Expr::Lit(v) => Ok(*v),
            Expr::Dim { param, dim } => env
                .dim(param, *dim)
                .ok_or_else(|| EvalError::Missing(format!("`{param}.dim({dim})`"))),
            Expr::Attr(n) => env
                .attr(n)
                .ok_or_else(|| EvalError::Missing(format!("attribute `{n}`"))),
            Expr::Len(n) => env
                .len(n)
                .ok_or_else(|| EvalError::Missing(format!("`{n}.len()`"))),
            Expr::Bin { op, lhs, rhs } => {
                let (a, b) = (lhs.eval(env)?, rhs.eval(env)?);
                op.apply(a, b).map_err(|error| EvalError::Arith {
                    error,
                    at: Expr::<i64>::bin(*op, Expr::Lit(a), Expr::Lit(b)).to_string(),
                })
            }
        }
    }

    /// The expression's value as a dimension size: as [`Expr::eval`], and refused when
    /// negative, or zero from a computed expression (a copied dimension or a literal may be
    /// zero: an empty tensor stays empty; a computed size of zero is a mistake in the
    /// arguments, such as a window longer than its input).
    pub fn eval_size(&self, env: &impl Env<N>) -> Result<i64, EvalError>
    where
        N: fmt::Display,
    {
        let v = self.eval(env)?;
        if v < 0 || (v == 0 && self.is_computed()) {
            return Err(EvalError::NotASize(v));
        }
        Ok(v)
    }

    /// The partition factor this dimension carries: a copied dimension (`x.dim(k)`) carries
    /// the factor of that input dimension (`factor_of`); a literal carries none. A computed
    /// expression carries none, and must not read a dimension that has a factor: `Err` gives
    /// that factor (each device would compute the size from its shard).
    pub fn factor<F>(&self, factor_of: &impl Fn(&N, usize) -> Option<F>) -> Result<Option<F>, F> {
        match self {
            Expr::Dim { param, dim } => Ok(factor_of(param, *dim)),
            Expr::Lit(_) => Ok(None),
            computed => {
                let mut found = None;
                computed.visit(&mut |leaf| {
                    if let (None, Expr::Dim { param, dim }) = (&found, leaf) {
                        found = factor_of(param, *dim);
                    }
                });
                match found {
                    Some(f) => Err(f),
                    None => Ok(None),
                }
            }
        }
    }
}
