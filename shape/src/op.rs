//! The binary operations of a shape expression and their checked `i64` arithmetic.

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
    pub(crate) const fn precedence(self) -> u8 {
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
