//! Output shape rules as the user writes them (`#[out(shape = x)]`, `shape = [x.dim(0), ...]`),
//! read into customop-shape's expressions over the user's identifiers, so that the check phase
//! reports errors at the name.

use customop_shape::{BinOp, Expr};
use proc_macro2::Span;
use syn::spanned::Spanned;

/// An output's shape rule.
pub(crate) enum ShapeRule {
    /// `shape = x`: the shape of tensor parameter `x`.
    Of(syn::Ident),
    /// `shape = [x.dim(0), (x.dim(1) - k) / stride + 1]`: one expression per dimension.
    Dims(Vec<DimRule>),
    /// `shape = [..x.dims(..-1), k]`: expressions and runs of an input's dimensions, a rank
    /// that follows the input's.
    Parts(Vec<Part>),
    /// Written, but it failed to parse (already reported): no rule, and no second error.
    Unread,
}

/// One output dimension: the expression (customop-shape's, over the user's identifiers, so
/// errors point at the name) and the span of what the user wrote.
pub(crate) struct DimRule {
    pub(crate) expr: Expr<syn::Ident>,
    pub(crate) span: Span,
}

/// A part of a [`ShapeRule::Parts`].
pub(crate) enum Part {
    /// One dimension.
    One(DimRule),
    /// `..x.dims(start..stop)`: dimensions of tensor input `x`, as Python's `x.shape[start:stop]`
    /// (negative bounds from the rank; `stop` absent: the rank).
    Run {
        param: syn::Ident,
        start: i64,
        stop: Option<i64>,
        span: Span,
    },
}

impl ShapeRule {
    /// The rule's one-dimension expressions (of `Dims`, or the `One` parts of `Parts`).
    pub(crate) fn dims(&self) -> Vec<&DimRule> {
        match self {
            ShapeRule::Dims(d) => d.iter().collect(),
            ShapeRule::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    Part::One(d) => Some(d),
                    Part::Run { .. } => None,
                })
                .collect(),
            ShapeRule::Of(_) | ShapeRule::Unread => Vec::new(),
        }
    }
}

pub(crate) fn shape_rule(e: &syn::Expr) -> Result<ShapeRule, (Span, String)> {
    match e {
        syn::Expr::Path(p) => p
            .path
            .get_ident()
            .map(|i| ShapeRule::Of(i.clone()))
            .ok_or_else(|| (p.span(), SHAPE_RULE.to_string())),
        syn::Expr::Array(a) => {
            let parts = a
                .elems
                .iter()
                .map(|el| match el {
                    syn::Expr::Range(r) if r.start.is_none() => run(r),
                    el => Ok(Part::One(DimRule {
                        expr: dim_expr(el)?,
                        span: el.span(),
                    })),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if parts.iter().any(|p| matches!(p, Part::Run { .. })) {
                Ok(ShapeRule::Parts(parts))
            } else {
                Ok(ShapeRule::Dims(
                    parts
                        .into_iter()
                        .filter_map(|p| match p {
                            Part::One(d) => Some(d),
                            Part::Run { .. } => None,
                        })
                        .collect(),
                ))
            }
        }
        other => Err((other.span(), SHAPE_RULE.to_string())),
    }
}

const RUN: &str = "a run of an input's dimensions is `..x.dims(start..stop)`, bounds integer \
                   literals as in Python's `x.shape[start:stop]` (negative: from the rank; either \
                   may be left out): `..x.dims(..-1)` is every dimension but the last";

/// `..x.dims(a..b)`: the spread of a run of dimensions.
fn run(r: &syn::ExprRange) -> Result<Part, (Span, String)> {
    let bad = |s: Span| (s, RUN.to_string());
    let Some(syn::Expr::MethodCall(m)) = r.end.as_deref() else {
        return Err(bad(r.span()));
    };
    if !matches!(r.limits, syn::RangeLimits::HalfOpen(_)) || m.method != "dims" {
        return Err(bad(r.span()));
    }
    let param = match &*m.receiver {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
        _ => None,
    }
    .ok_or_else(|| bad(m.receiver.span()))?;
    let (start, stop) = match (m.args.len(), m.args.first()) {
        (1, Some(syn::Expr::Range(b))) if matches!(b.limits, syn::RangeLimits::HalfOpen(_)) => {
            let bound = |e: &Option<Box<syn::Expr>>| -> Result<Option<i64>, (Span, String)> {
                e.as_deref()
                    .map(|e| match dim_expr(e) {
                        Ok(Expr::Lit(v)) => Ok(v),
                        _ => Err(bad(e.span())),
                    })
                    .transpose()
            };
            (bound(&b.start)?.unwrap_or(0), bound(&b.end)?)
        }
        _ => return Err(bad(m.args.span())),
    };
    Ok(Part::Run {
        param,
        start,
        stop,
        span: r.span(),
    })
}

const SHAPE_RULE: &str = "a shape rule is a tensor parameter (`shape = x`) or a list of \
                          dimension expressions (`shape = [x.dim(0), (x.dim(1) - k) / stride + 1]`) \
                          and runs of an input's dimensions (`shape = [..x.dims(..-1), k]`)";

const DIM_EXPR: &str = "a dimension is an integer, a tensor input's dimension (`x.dim(1)`), an \
                        integer attribute (`k`), an array attribute's length (`taps.len()`), or \
                        `+ - * / %`, `min(a, b)`, `max(a, b)`, `ceil_div(a, b)` of those";

/// One dimension expression, as customop-shape's [`Expr`] over the user's identifiers.
fn dim_expr(e: &syn::Expr) -> Result<Expr<syn::Ident>, (Span, String)> {
    let bad = |s: Span| (s, DIM_EXPR.to_string());
    let ident = |e: &syn::Expr| match e {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
        _ => None,
    };
    let int = |l: &syn::LitInt| {
        l.base10_parse::<i64>()
            .map_err(|_| (l.span(), "this integer does not fit an i64".to_string()))
    };
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => int(i).map(Expr::Lit),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => int(i).map(|v| Expr::Lit(-v)),
            other => Err(bad(other.span())),
        },
        syn::Expr::Paren(p) => dim_expr(&p.expr),
        syn::Expr::Group(g) => dim_expr(&g.expr),
        syn::Expr::Path(_) => ident(e).map(Expr::Attr).ok_or_else(|| bad(e.span())),
        syn::Expr::Binary(b) => {
            // The operators are customop-shape's (`+ - * / %`), by their symbols.
            let symbol = quote::ToTokens::to_token_stream(&b.op).to_string();
            let op = BinOp::from_symbol(&symbol).ok_or_else(|| bad(b.op.span()))?;
            Ok(Expr::bin(op, dim_expr(&b.left)?, dim_expr(&b.right)?))
        }
        syn::Expr::MethodCall(m) => {
            let recv = ident(&m.receiver).ok_or_else(|| bad(m.receiver.span()))?;
            match (m.method.to_string().as_str(), m.args.len()) {
                ("dim", 1) => match m.args.first() {
                    Some(syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    })) => Ok(Expr::Dim {
                        param: recv,
                        dim: i.base10_parse::<usize>().map_err(|_| bad(i.span()))?,
                    }),
                    _ => Err((
                        m.args.span(),
                        "`.dim(k)` takes an integer literal".to_string(),
                    )),
                },
                ("len", 0) => Ok(Expr::Len(recv)),
                ("dims", _) => Err((
                    m.span(),
                    "`x.dims(..)` is several dimensions: spread them into the list, \
                     `[..x.dims(..-1)]`"
                        .to_string(),
                )),
                _ => Err(bad(m.method.span())),
            }
        }
        syn::Expr::Field(f) => Err((
            f.span(),
            format!(
                "a shape rule cannot read a field (`{}`): descriptors are opaque to shape rules; \
                 pass the size as an integer attribute",
                quote::ToTokens::to_token_stream(f)
                    .to_string()
                    .replace(' ', "")
            ),
        )),
        syn::Expr::Call(c) => {
            // The functions are customop-shape's operations without a symbol (`min`, `max`,
            // `ceil_div`), by their names.
            let op = ident(&c.func)
                .and_then(|f| BinOp::from_name(&f.to_string()))
                .filter(|op| op.symbol().is_none())
                .ok_or_else(|| bad(c.func.span()))?;
            let mut args = c.args.iter();
            match (args.next(), args.next(), args.next()) {
                (Some(a), Some(b), None) => Ok(Expr::bin(op, dim_expr(a)?, dim_expr(b)?)),
                _ => Err((c.span(), format!("`{}` takes two arguments", op.name()))),
            }
        }
        other => Err(bad(other.span())),
    }
}
