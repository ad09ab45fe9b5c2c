//! Output shape rules of customop ops, in one place for the macros and the runtime.
//!
//! An output dimension is an [`Expr`]: integer literals, dimensions of tensor inputs
//! (`x.dim(1)`), integer attributes (`k`), lengths of array attributes (`taps.len()`), combined
//! with `+ - * / %`, `min(a, b)`, `max(a, b)` and `ceil_div(a, b)`. `#[custom_op]` builds the
//! expression from the user's tokens and checks it here ([`Expr::check`], spans kept through
//! the name type `N`); the runtime checks it again when it derives an op's plan, evaluates it
//! ([`Expr::eval_size`]) for the lowering's result types and the handler's output checks, and
//! asks which partition factor reaches an output ([`Expr::factor`]). The Python helpers mirror
//! [`Expr::eval`] from the manifest, where the expression travels as JSON.
//!
//! Arithmetic is on `i64`, checked: an overflow or a division by zero is an [`EvalError`],
//! never a panic or a wrapped value. `/` and `%` truncate toward zero (as Rust's do);
//! `ceil_div(a, b)` rounds the exact quotient up.
//!
//! An output whose rank follows an input's spreads a run of that input's dimensions
//! (`[..x.dims(..-1), k]`): [`run_bounds`] reads the run, for the macros and the runtime alike.

mod run;

pub use run::run_bounds;

use core::fmt;

/// A binary operation of a shape expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b` of non-negative numbers (rounding down).
    Div,
    /// `a % b` of non-negative numbers.
    Rem,
    /// `min(a, b)`.
    Min,
    /// `max(a, b)`.
    Max,
    /// `ceil_div(a, b)`: `a / b` rounded up.
    CeilDiv,
}

impl BinOp {
    /// Every operation.
    pub const ALL: [BinOp; 8] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::CeilDiv,
    ];

    /// The operation's stable name (`add`, `ceil_div`, ...), as the manifest spells it.
    pub const fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::CeilDiv => "ceil_div",
        }
    }

    /// The operation named `name`.
    pub fn from_name(name: &str) -> Option<BinOp> {
        BinOp::ALL.into_iter().find(|o| o.name() == name)
    }

    /// The infix symbol of an arithmetic operator (`None` for the functions).
    pub const fn symbol(self) -> Option<&'static str> {
        match self {
            BinOp::Add => Some("+"),
            BinOp::Sub => Some("-"),
            BinOp::Mul => Some("*"),
            BinOp::Div => Some("/"),
            BinOp::Rem => Some("%"),
            BinOp::Min | BinOp::Max | BinOp::CeilDiv => None,
        }
    }

    /// The operator with infix symbol `symbol`.
    pub fn from_symbol(symbol: &str) -> Option<BinOp> {
        BinOp::ALL.into_iter().find(|o| o.symbol() == Some(symbol))
    }

    /// Binding strength for printing: `*`, `/`, `%` bind tighter than `+`, `-`; functions are
    /// atoms.
    const fn precedence(self) -> u8 {
        match self {
            BinOp::Add | BinOp::Sub => 1,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 2,
            BinOp::Min | BinOp::Max | BinOp::CeilDiv => 3,
        }
    }

    /// `a op b`, checked. A division (`/`, `%`, `ceil_div`) of or by a negative number is an
    /// error: sizes never divide one (`(x.dim(1) - k) / stride + 1` with a window longer than
    /// the row would otherwise truncate `-2 / 4` to 0 and give a size of 1), and so truncating
    /// and flooring never differ.
    pub fn apply(self, a: i64, b: i64) -> Result<i64, ArithError> {
        let divisor = || {
            if b == 0 {
                Err(ArithError::DivisionByZero)
            } else if a < 0 || b < 0 {
                Err(ArithError::NegativeDivision)
            } else {
                Ok(b)
            }
        };
        let r = match self {
            BinOp::Add => a.checked_add(b),
            BinOp::Sub => a.checked_sub(b),
            BinOp::Mul => a.checked_mul(b),
            BinOp::Div => a.checked_div(divisor()?),
            BinOp::Rem => a.checked_rem(divisor()?),
            BinOp::Min => Some(a.min(b)),
            BinOp::Max => Some(a.max(b)),
            BinOp::CeilDiv => {
                let b = divisor()?;
                a.checked_div(b).and_then(|q| {
                    if a % b != 0 {
                        q.checked_add(1)
                    } else {
                        Some(q)
                    }
                })
            }
        };
        r.ok_or(ArithError::Overflow)
    }
}

/// Why an operation has no `i64` result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithError {
    /// The result does not fit an `i64`.
    Overflow,
    /// A `/`, `%` or `ceil_div` by zero.
    DivisionByZero,
    /// A `/`, `%` or `ceil_div` of or by a negative number.
    NegativeDivision,
}

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

fn not_what(n: &impl fmt::Display, facts: Facts, wanted: &str) -> String {
    match facts {
        Facts::Unknown => format!("`{n}` is not a parameter of this op"),
        Facts::Tensor { .. } => format!("`{n}` is a tensor input, not {wanted}"),
        Facts::ScalarAttr { .. } => format!("`{n}` is a scalar attribute, not {wanted}"),
        Facts::ArrayAttr => format!("`{n}` is an array attribute, not {wanted}"),
        Facts::Other(what) => format!("`{n}` is {what}, not {wanted}"),
    }
}

/// Prints an expression as the user writes it: `(x.dim(1) + 2 * pad - k) / stride + 1`.
impl<N: fmt::Display> fmt::Display for Expr<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(self, f, 0, false)
    }
}

struct ShowExpr<'e, N>(&'e Expr<N>);

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    struct Vals;
    impl Env<&'static str> for Vals {
        fn dim(&self, param: &&'static str, dim: usize) -> Option<i64> {
            match (*param, dim) {
                ("x", 0) => Some(4),
                ("x", 1) => Some(10),
                ("y", 0) => Some(6),
                _ => None,
            }
        }
        fn attr(&self, name: &&'static str) -> Option<i64> {
            match *name {
                "k" => Some(3),
                "stride" => Some(2),
                "pad" => Some(1),
                "zero" => Some(0),
                "big" => Some(i64::MAX),
                _ => None,
            }
        }
        fn len(&self, name: &&'static str) -> Option<i64> {
            (*name == "taps").then_some(5)
        }
    }

    type E = Expr<&'static str>;
    fn dim(p: &'static str, d: usize) -> E {
        Expr::Dim { param: p, dim: d }
    }
    fn b(op: BinOp, l: E, r: E) -> E {
        Expr::bin(op, l, r)
    }
    fn pool() -> E {
        // (x.dim(1) + 2 * pad - k) / stride + 1
        let inner = b(
            BinOp::Sub,
            b(
                BinOp::Add,
                dim("x", 1),
                b(BinOp::Mul, Expr::Lit(2), Expr::Attr("pad")),
            ),
            Expr::Attr("k"),
        );
        b(
            BinOp::Add,
            b(BinOp::Div, inner, Expr::Attr("stride")),
            Expr::Lit(1),
        )
    }

    #[test]
    fn evaluates_and_prints_like_the_source() {
        assert_eq!(pool().eval(&Vals), Ok(5)); // (10 + 2 - 3) / 2 + 1
        assert_eq!(pool().to_string(), "(x.dim(1) + 2 * pad - k) / stride + 1");
        let concat = b(BinOp::Add, dim("x", 0), dim("y", 0));
        assert_eq!(concat.eval(&Vals), Ok(10));
        let m = b(BinOp::Min, Expr::Attr("k"), Expr::Len("taps"));
        assert_eq!(
            (m.eval(&Vals), m.to_string()),
            (Ok(3), "min(k, taps.len())".into())
        );
        // a - (b - c) keeps its parentheses; (a - b) - c needs none.
        let r = b(
            BinOp::Sub,
            Expr::Lit(9),
            b(BinOp::Sub, Expr::Lit(4), Expr::Lit(1)),
        );
        assert_eq!(
            (r.to_string(), r.eval(&Vals)),
            ("9 - (4 - 1)".into(), Ok(6))
        );
        let l = b(
            BinOp::Sub,
            b(BinOp::Sub, Expr::Lit(9), Expr::Lit(4)),
            Expr::Lit(1),
        );
        assert_eq!((l.to_string(), l.eval(&Vals)), ("9 - 4 - 1".into(), Ok(4)));
    }

    #[test]
    fn integer_semantics() {
        let cases = [
            (BinOp::Div, 7, 2, Ok(3)),
            (BinOp::Div, 0, 4, Ok(0)),
            (BinOp::Rem, 7, 2, Ok(1)),
            (BinOp::CeilDiv, 7, 2, Ok(4)),
            (BinOp::CeilDiv, 8, 2, Ok(4)),
            (BinOp::CeilDiv, 0, 2, Ok(0)),
            (BinOp::Div, -2, 4, Err(ArithError::NegativeDivision)),
            (BinOp::Div, 7, -2, Err(ArithError::NegativeDivision)),
            (BinOp::Rem, -7, 2, Err(ArithError::NegativeDivision)),
            (BinOp::CeilDiv, -7, 2, Err(ArithError::NegativeDivision)),
            (BinOp::CeilDiv, -7, -2, Err(ArithError::NegativeDivision)),
            (BinOp::Min, 3, -2, Ok(-2)),
            (BinOp::Max, 3, -2, Ok(3)),
            (BinOp::Div, 1, 0, Err(ArithError::DivisionByZero)),
            (BinOp::Rem, 1, 0, Err(ArithError::DivisionByZero)),
            (BinOp::CeilDiv, 1, 0, Err(ArithError::DivisionByZero)),
            (BinOp::Add, i64::MAX, 1, Err(ArithError::Overflow)),
            (BinOp::Mul, i64::MAX, 2, Err(ArithError::Overflow)),
            (BinOp::Div, i64::MIN, -1, Err(ArithError::NegativeDivision)),
        ];
        for (op, a, bb, want) in cases {
            assert_eq!(op.apply(a, bb), want, "{op:?} {a} {bb}");
        }
    }

    #[test]
    fn errors_name_the_values_never_panic() {
        let e = b(BinOp::Div, dim("x", 0), Expr::Attr("zero"));
        assert_eq!(
            e.eval(&Vals).unwrap_err().to_string(),
            "`4 / 0` divides by zero"
        );
        let e = b(BinOp::Mul, Expr::Attr("big"), Expr::Lit(2));
        assert_eq!(
            e.eval(&Vals).unwrap_err().to_string(),
            format!("`{} * 2` overflows a 64-bit integer", i64::MAX)
        );
        assert_eq!(
            dim("x", 2).eval(&Vals).unwrap_err().to_string(),
            "`x.dim(2)` has no value"
        );
        let e = b(BinOp::Sub, Expr::Attr("k"), dim("x", 1));
        assert_eq!(e.eval_size(&Vals), Err(EvalError::NotASize(-7)));
        let e = b(BinOp::Sub, Expr::Attr("k"), Expr::Attr("k"));
        assert_eq!(e.eval_size(&Vals), Err(EvalError::NotASize(0)));
        assert_eq!(Expr::<&str>::Lit(0).eval_size(&Vals), Ok(0));
    }

    #[test]
    fn checks_name_each_broken_rule() {
        let facts = |n: &&'static str| match *n {
            "x" => Facts::Tensor { rank: Some(2) },
            "v" => Facts::Tensor { rank: None },
            "k" | "pad" | "stride" => Facts::ScalarAttr {
                integer: Some(true),
            },
            "eps" => Facts::ScalarAttr {
                integer: Some(false),
            },
            "taps" => Facts::ArrayAttr,
            "cfg" => Facts::Other("an external"),
            _ => Facts::Unknown,
        };
        let msgs =
            |e: E| -> Vec<String> { e.check(&facts).into_iter().map(|c| c.message).collect() };
        assert!(msgs(pool()).is_empty());
        // Names are mapped, values kept.
        let renamed = pool().map(&mut |n| if *n == "pad" { "k" } else { *n });
        assert_eq!(renamed.to_string(), "(x.dim(1) + 2 * k - k) / stride + 1");
        assert_eq!(msgs(dim("x", 2)), ["`x` has rank 2: it has no dimension 2"]);
        assert!(msgs(dim("v", 9)).is_empty());
        assert_eq!(
            msgs(b(BinOp::Add, Expr::Attr("eps"), Expr::Attr("q"))),
            [
                "attribute `eps` is not an integer: shape rules take integer attributes",
                "`q` is not a parameter of this op",
            ]
        );
        assert_eq!(
            msgs(Expr::Attr("x")),
            ["`x` is a tensor input: take one of its dimensions, `x.dim(0)`"]
        );
        assert_eq!(
            msgs(Expr::Attr("taps")),
            ["`taps` is an array attribute: take its length, `taps.len()`"]
        );
        assert_eq!(
            msgs(Expr::Len("k")),
            ["`k` is a scalar attribute, not an array attribute (`.len()`)"]
        );
        assert_eq!(
            msgs(dim("cfg", 0)),
            ["`cfg` is an external, not a tensor input (`.dim(k)`)"]
        );
        assert_eq!(
            msgs(b(BinOp::CeilDiv, dim("x", 0), Expr::Lit(0))),
            ["`ceil_div(x.dim(0), 0)` divides by zero"]
        );
        assert_eq!(
            msgs(Expr::Lit(-1)),
            ["a shape rule has no negative literals (-1)"]
        );
        // Errors point at the name.
        let e = b(BinOp::Add, dim("x", 0), Expr::Attr("q"));
        assert_eq!(e.check(&facts)[0].at, Some(&"q"));
    }

    #[test]
    fn factors_reach_copies_and_refuse_computed_sizes() {
        let factor_of = |p: &&'static str, d: usize| (*p == "x" && d == 0).then_some("rows");
        assert_eq!(dim("x", 0).factor(&factor_of), Ok(Some("rows")));
        assert_eq!(dim("x", 1).factor(&factor_of), Ok(None));
        assert_eq!(Expr::<&str>::Lit(3).factor(&factor_of), Ok(None));
        assert_eq!(pool().factor(&factor_of), Ok(None));
        let split = b(BinOp::Mul, dim("x", 0), Expr::Lit(2));
        assert_eq!(split.factor(&factor_of), Err("rows"));
    }
}
