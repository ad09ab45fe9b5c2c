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
    /// Written, but it failed to parse (already reported): no rule, and no second error.
    Unread,
}

/// One output dimension: the expression (customop-shape's, over the user's identifiers, so
/// errors point at the name) and the span of what the user wrote.
pub(crate) struct DimRule {
    pub(crate) expr: Expr<syn::Ident>,
    pub(crate) span: Span,
}

pub(crate) fn shape_rule(e: &syn::Expr) -> Result<ShapeRule, (Span, String)> {
    match e {
        syn::Expr::Path(p) => p
            .path
            .get_ident()
            .map(|i| ShapeRule::Of(i.clone()))
            .ok_or_else(|| (p.span(), SHAPE_RULE.to_string())),
        syn::Expr::Array(a) => a
            .elems
            .iter()
            .map(|el| {
                Ok(DimRule {
                    expr: dim_expr(el)?,
                    span: el.span(),
                })
            })
            .collect::<Result<_, _>>()
            .map(ShapeRule::Dims),
        other => Err((other.span(), SHAPE_RULE.to_string())),
    }
}

const SHAPE_RULE: &str = "a shape rule is a tensor parameter (`shape = x`) or a list of \
                          dimension expressions (`shape = [x.dim(0), (x.dim(1) - k) / stride + 1]`)";

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
            let op = match b.op {
                syn::BinOp::Add(_) => BinOp::Add,
                syn::BinOp::Sub(_) => BinOp::Sub,
                syn::BinOp::Mul(_) => BinOp::Mul,
                syn::BinOp::Div(_) => BinOp::Div,
                syn::BinOp::Rem(_) => BinOp::Rem,
                _ => return Err(bad(b.op.span())),
            };
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
            let f = ident(&c.func).map(|f| f.to_string());
            let op = match f.as_deref() {
                Some("min") => BinOp::Min,
                Some("max") => BinOp::Max,
                Some("ceil_div") => BinOp::CeilDiv,
                _ => return Err(bad(c.func.span())),
            };
            let mut args = c.args.iter();
            match (args.next(), args.next(), args.next()) {
                (Some(a), Some(b), None) => Ok(Expr::bin(op, dim_expr(a)?, dim_expr(b)?)),
                _ => Err((c.span(), format!("`{}` takes two arguments", op.name()))),
            }
        }
        other => Err(bad(other.span())),
    }
}
