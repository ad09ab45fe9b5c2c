//! Printing an expression as the user writes it, with only the parentheses it needs.

use crate::Expr;
use core::fmt;

/// Prints an expression as the user writes it: `(x.dim(1) + 2 * pad - k) / stride + 1`.
impl<N: fmt::Display> fmt::Display for Expr<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(self, f, 0, false)
    }
}

pub(crate) struct ShowExpr<'e, N>(pub(crate) &'e Expr<N>);

impl<N: fmt::Display> fmt::Display for ShowExpr<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(self.0, f, 0, false)
    }
}

/// Writes `e` inside a context of binding strength `outer`; `right` says it is the right
/// operand of a non-commutative operator of that strength (so `a - (b - c)` keeps its
/// parentheses).
fn write_expr<N: fmt::Display>(
    e: &Expr<N>,
    f: &mut fmt::Formatter<'_>,
    outer: u8,
    right: bool,
) -> fmt::Result {
    match e {
        Expr::Lit(v) => write!(f, "{v}"),
        Expr::Dim { param, dim } => write!(f, "{param}.dim({dim})"),
        Expr::Attr(n) => write!(f, "{n}"),
        Expr::Len(n) => write!(f, "{n}.len()"),
        Expr::Bin { op, lhs, rhs } => match op.symbol() {
            None => {
                write!(f, "{}(", op.name())?;
                write_expr(lhs, f, 0, false)?;
                f.write_str(", ")?;
                write_expr(rhs, f, 0, false)?;
                f.write_str(")")
            }
            Some(sym) => {
                let p = op.precedence();
                let paren = p < outer || (p == outer && right);
                if paren {
                    f.write_str("(")?;
                }
                write_expr(lhs, f, p, false)?;
                write!(f, " {sym} ")?;
                write_expr(rhs, f, p, true)?;
                if paren {
                    f.write_str(")")?;
                }
                Ok(())
            }
        },
    }
}
