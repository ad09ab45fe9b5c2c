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

mod check;
mod display;
mod expr;
mod op;
mod run;
#[cfg(test)]
mod tests;

pub use check::{CheckError, Facts};
pub use expr::{Env, EvalError, Expr};
pub use op::{ArithError, BinOp};
pub use run::run_bounds;
