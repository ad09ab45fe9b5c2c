//! Evaluation, printing, integer semantics, checks and partition factors of shape expressions.

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
    let msgs = |e: E| -> Vec<String> { e.check(&facts).into_iter().map(|c| c.message).collect() };
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
