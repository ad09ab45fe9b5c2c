//! The rules a shape expression must keep, given what each of its names is ([`Expr::check`]).

use crate::display::ShowExpr;
use crate::{BinOp, Expr};
use core::fmt;

/// What a name in a shape expression refers to, as the caller knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Facts {
    /// A tensor input of this rank (`None`: not fixed by its type).
    Tensor {
        /// Its rank, if fixed.
        rank: Option<usize>,
    },
    /// A scalar attribute; `integer` says whether it has an integer type (`None`: the caller
    /// cannot tell, and checks it otherwise, as the macro does with a trait bound).
    ScalarAttr {
        /// Whether its type is an integer type.
        integer: Option<bool>,
    },
    /// An array attribute (`&[T]`).
    ArrayAttr,
    /// Another kind of parameter (an external, an output, a string attribute...), named for
    /// the message.
    Other(&'static str),
    /// No parameter has this name.
    Unknown,
}

/// A rule that a shape expression breaks, found by [`Expr::check`]: at a name of the
/// expression (`Some`), or in the whole expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError<'e, N> {
    /// The name the error is about, if it is about one.
    pub at: Option<&'e N>,
    /// What is wrong, in a sentence.
    pub message: String,
}

impl<N> Expr<N> {
    /// Every rule the expression breaks, given what each name is (`facts`): `.dim(k)` of a
    /// tensor input within its rank, integer scalar attributes, `.len()` of array attributes,
    /// no division by a literal zero, no negative literal.
    pub fn check(&self, facts: &impl Fn(&N) -> Facts) -> Vec<CheckError<'_, N>>
    where
        N: fmt::Display,
    {
        let mut errors = Vec::new();
        self.check_into(facts, &mut errors);
        errors
    }

    fn check_into<'e>(&'e self, facts: &impl Fn(&N) -> Facts, out: &mut Vec<CheckError<'e, N>>)
    where
        N: fmt::Display,
    {
        let mut at = |n: &'e N, message: String| {
            out.push(CheckError {
                at: Some(n),
                message,
            })
        };
        match self {
            Expr::Lit(v) if *v < 0 => out.push(CheckError {
                at: None,
                message: format!("a shape rule has no negative literals ({v})"),
            }),
            Expr::Lit(_) => {}
            Expr::Dim { param, dim } => match facts(param) {
                Facts::Tensor { rank: Some(r) } if *dim >= r => at(
                    param,
                    format!("`{param}` has rank {r}: it has no dimension {dim}"),
                ),
                Facts::Tensor { .. } => {}
                other => at(param, not_what(param, other, "a tensor input (`.dim(k)`)")),
            },
            Expr::Attr(n) => match facts(n) {
                Facts::ScalarAttr {
                    integer: Some(false),
                } => at(
                    n,
                    format!(
                        "attribute `{n}` is not an integer: shape rules take integer attributes"
                    ),
                ),
                Facts::ScalarAttr { .. } => {}
                Facts::Tensor { .. } => at(
                    n,
                    format!("`{n}` is a tensor input: take one of its dimensions, `{n}.dim(0)`"),
                ),
                Facts::ArrayAttr => at(
                    n,
                    format!("`{n}` is an array attribute: take its length, `{n}.len()`"),
                ),
                other => at(n, not_what(n, other, "an integer attribute")),
            },
            Expr::Len(n) => match facts(n) {
                Facts::ArrayAttr => {}
                other => at(n, not_what(n, other, "an array attribute (`.len()`)")),
            },
            Expr::Bin { op, lhs, rhs } => {
                lhs.check_into(facts, out);
                rhs.check_into(facts, out);
                if matches!(op, BinOp::Div | BinOp::Rem | BinOp::CeilDiv)
                    && matches!(**rhs, Expr::Lit(0))
                {
                    out.push(CheckError {
                        at: None,
                        message: format!("`{}` divides by zero", ShowExpr(self)),
                    });
                }
            }
        }
    }
}

fn not_what(n: &impl fmt::Display, facts: Facts, wanted: &str) -> String {
    match facts {
        Facts::Unknown => format!("`{n}` is not a parameter of this op"),
        Facts::Tensor { .. } => format!("`{n}` is a tensor input, not {wanted}"),
        Facts::ScalarAttr { .. } => format!("`{n}` is a scalar attribute, not {wanted}"),
        Facts::ArrayAttr => format!("`{n}` is an array attribute, not {wanted}"),
        Facts::Other(what) => format!("`{n}` is {what}, not {wanted}"),
    }
}
