//! The rules a descriptor must follow, all checked before anything is expanded.

use super::model::{Body, Descriptor, FieldType};
use crate::ctxt::Ctxt;

/// The integer representations a descriptor enum may have (the book's reference lists each,
/// which a test checks).
pub(crate) const REPRS: &[&str] = &["u8", "u16", "u32", "i32"];

pub(crate) fn check(cx: &mut Ctxt, d: &Descriptor<'_>) {
    if !d.generics.params.is_empty() {
        cx.error_spanned_by(
            d.generics,
            "descriptors cannot be generic: the layout and its fingerprint must be fixed",
        );
    }
    if let Some(span) = d.repr_c {
        match &d.body {
            Body::Struct(fields) => {
                if !d.has_repr_c {
                    cx.syn_error(syn::Error::new(
                        span,
                        "`repr_c` reads the payload in place, so the struct needs `#[repr(C)]` \
                         (field order and alignment as C lays them out)",
                    ));
                }
                for f in fields {
                    if matches!(f.kind, FieldType::VecTail(..) | FieldType::StringTail) {
                        cx.error_spanned_by(
                            f.ty,
                            "a `repr_c` descriptor is read in place, so it has a fixed size: \
                             no `Vec` or `String` fields",
                        );
                    }
                }
            }
            Body::Enum(_) => cx.syn_error(syn::Error::new(
                span,
                "`repr_c` is for structs; a field-less enum with an integer `repr` is already \
                 read in place",
            )),
            Body::Unsupported(..) => {}
        }
    }
    match &d.body {
        Body::Unsupported(span, message) => cx.syn_error(syn::Error::new(*span, message)),
        Body::Struct(fields) => {
            for f in fields {
                field_type(cx, &f.kind);
            }
        }
        Body::Enum(e) => {
            match &e.repr {
                None => cx.error_spanned_by(
                    d.ident,
                    "a descriptor enum needs an explicit integer representation: add \
                     `#[repr(u8)]` (or u16, u32, i32)",
                ),
                Some(r) if !REPRS.contains(&r.to_string().as_str()) => cx.error_spanned_by(
                    r,
                    format!(
                        "`repr({r})` is not supported for descriptor enums: use u8, u16, u32 or i32"
                    ),
                ),
                Some(_) => {}
            }
            if e.variants.is_empty() {
                cx.error_spanned_by(d.ident, "a descriptor enum needs at least one variant");
            }
            for v in &e.variants {
                if !matches!(v.fields, syn::Fields::Unit) {
                    cx.error_spanned_by(
                        v.fields,
                        format!(
                            "variant `{}` has data: descriptor enums must be field-less; put the \
                             data in a struct field next to the enum",
                            v.ident
                        ),
                    );
                }
                match v.discriminant {
                    None => cx.error_spanned_by(
                        v.ident,
                        format!(
                            "variant `{}` needs an explicit discriminant (`{} = 0`): the values are \
                             part of the wire format",
                            v.ident, v.ident
                        ),
                    ),
                    Some(expr) => {
                        if let Err(e) = discriminant_value(expr) {
                            cx.syn_error(e);
                        }
                    }
                }
            }
        }
    }
}

fn field_type(cx: &mut Ctxt, t: &FieldType<'_>) {
    match t {
        FieldType::Unsupported(span, message) => cx.syn_error(syn::Error::new(*span, message)),
        FieldType::Array(inner) | FieldType::VecTail(_, inner) => field_type(cx, inner),
        FieldType::Fixed | FieldType::StringTail => {}
    }
}

/// The value of an explicit discriminant: an integer literal, optionally negated.
pub(crate) fn discriminant_value(expr: &syn::Expr) -> syn::Result<i64> {
    let bad = || {
        syn::Error::new_spanned(
            expr,
            "a descriptor enum discriminant must be an integer literal, e.g. `= 3` or `= -1`",
        )
    };
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<i64>().map_err(|_| bad()),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr: inner,
            ..
        }) => match &**inner {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse::<i64>().map(|v| -v).map_err(|_| bad()),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}
