//! The descriptor's model: what was declared, with the user's spans, before any rule is checked.

use super::parse::Options;
use crate::ctxt::Ctxt;
use syn::spanned::Spanned;

pub(crate) struct Descriptor<'a> {
    pub(crate) ident: &'a syn::Ident,
    pub(crate) generics: &'a syn::Generics,
    /// The name in the schema and the fingerprint.
    pub(crate) name: String,
    /// The path of the runtime crate in generated code.
    pub(crate) krate: syn::Path,
    pub(crate) body: Body<'a>,
    /// `#[descriptor(repr_c)]`, with its span.
    pub(crate) repr_c: Option<proc_macro2::Span>,
    /// Whether `#[repr(C)]` is on the type.
    pub(crate) has_repr_c: bool,
}

pub(crate) enum Body<'a> {
    Struct(Vec<Field<'a>>),
    Enum(Enum<'a>),
    /// Unions and tuple/unit-less shapes are kept so that `check` can say why.
    Unsupported(proc_macro2::Span, &'static str),
}

pub(crate) struct Field<'a> {
    pub(crate) ident: &'a syn::Ident,
    pub(crate) ty: &'a syn::Type,
    pub(crate) kind: FieldType<'a>,
}

/// A field type as its syntax says.
pub(crate) enum FieldType<'a> {
    /// A fixed-layout type: a primitive, an array of fixed types, or a path to a type that must
    /// implement `Wire` (checked by the compiler, spanned at the type).
    Fixed,
    /// `[T; N]` (kept for checking the element).
    Array(Box<FieldType<'a>>),
    /// `Vec<T>`, a tail.
    VecTail(&'a syn::Type, Box<FieldType<'a>>),
    /// `String`, a tail.
    StringTail,
    /// Something that cannot be a field, with the span to blame and why.
    Unsupported(proc_macro2::Span, String),
}

pub(crate) struct Enum<'a> {
    /// The `repr` integer type, if any `#[repr(...)]` names one.
    pub(crate) repr: Option<syn::Ident>,
    pub(crate) variants: Vec<Variant<'a>>,
}

pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a syn::Ident,
    pub(crate) fields: &'a syn::Fields,
    pub(crate) discriminant: Option<&'a syn::Expr>,
}

impl<'a> Descriptor<'a> {
    pub(crate) fn from_input(
        cx: &mut Ctxt,
        input: &'a syn::DeriveInput,
        options: Options,
    ) -> Option<Descriptor<'a>> {
        let body = match &input.data {
            syn::Data::Struct(s) => match &s.fields {
                syn::Fields::Named(named) => Body::Struct(
                    named
                        .named
                        .iter()
                        .filter_map(|f| {
                            Some(Field {
                                ident: f.ident.as_ref()?,
                                ty: &f.ty,
                                kind: classify(&f.ty, true),
                            })
                        })
                        .collect(),
                ),
                syn::Fields::Unit => Body::Struct(Vec::new()),
                syn::Fields::Unnamed(u) => Body::Unsupported(
                    u.span(),
                    "tuple structs cannot be descriptors: name the fields, so that the layout \
                     (exported to other languages) has field names",
                ),
            },
            syn::Data::Enum(e) => Body::Enum(Enum {
                repr: repr_of(cx, &input.attrs),
                variants: e
                    .variants
                    .iter()
                    .map(|v| Variant {
                        ident: &v.ident,
                        fields: &v.fields,
                        discriminant: v.discriminant.as_ref().map(|(_, e)| e),
                    })
                    .collect(),
            }),
            syn::Data::Union(u) => Body::Unsupported(
                u.union_token.span,
                "unions cannot be descriptors: which field is live is not in the bytes, so \
                 unpacking could not check it; use a struct, or an enum for a tag",
            ),
        };
        let name = options
            .name
            .map(|n| n.value())
            .unwrap_or_else(|| input.ident.to_string());
        let krate = options
            .krate
            .unwrap_or_else(|| syn::parse_quote!(::customop));
        let has_repr_c = input
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("repr"))
            .any(|a| {
                let mut c = false;
                let _ = a.parse_nested_meta(|meta| {
                    c |= meta.path.is_ident("C");
                    if meta.input.peek(syn::token::Paren) {
                        let content;
                        syn::parenthesized!(content in meta.input);
                        let _: proc_macro2::TokenStream = content.parse()?;
                    }
                    Ok(())
                });
                c
            });
        Some(Descriptor {
            ident: &input.ident,
            generics: &input.generics,
            name,
            krate,
            body,
            repr_c: options.repr_c,
            has_repr_c,
        })
    }
}

/// The integer type named in `#[repr(...)]`, if any (`C`, `align` and the like are skipped).
fn repr_of(cx: &mut Ctxt, attrs: &[syn::Attribute]) -> Option<syn::Ident> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let r = attr.parse_nested_meta(|meta| {
            if let Some(id) = meta.path.get_ident() {
                let s = id.to_string();
                if s.starts_with('u') || s.starts_with('i') {
                    found = Some(id.clone());
                }
            }
            // Skip `align(N)` and other arguments.
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                let _: proc_macro2::TokenStream = content.parse()?;
            }
            Ok(())
        });
        if let Err(e) = r {
            cx.syn_error(e);
        }
    }
    found
}

/// Classifies a field type by its syntax. `top` is false inside arrays and `Vec`s, where tails
/// cannot appear.
fn classify(ty: &syn::Type, top: bool) -> FieldType<'_> {
    match ty {
        syn::Type::Paren(p) => classify(&p.elem, top),
        syn::Type::Group(g) => classify(&g.elem, top),
        syn::Type::Array(a) => match classify(&a.elem, false) {
            FieldType::Unsupported(s, m) => FieldType::Unsupported(s, m),
            inner => FieldType::Array(Box::new(inner)),
        },
        syn::Type::Reference(r) => FieldType::Unsupported(
            r.and_token.span,
            "references cannot be descriptor fields: a descriptor is plain data copied into the \
             program; store the value itself"
                .into(),
        ),
        syn::Type::Ptr(p) => FieldType::Unsupported(
            p.star_token.span,
            "raw pointers cannot be descriptor fields: an address means nothing in another \
             process; store the data, or an index into it"
                .into(),
        ),
        syn::Type::Tuple(t) => FieldType::Unsupported(
            t.span(),
            "tuples cannot be descriptor fields: use a nested `#[derive(Descriptor)]` struct with \
             named fields"
                .into(),
        ),
        syn::Type::Slice(s) => FieldType::Unsupported(
            s.span(),
            "unsized slices cannot be descriptor fields: use `[T; N]` or `Vec<T>`".into(),
        ),
        syn::Type::Path(p) if p.qself.is_none() => classify_path(&p.path, top),
        other => FieldType::Unsupported(
            other.span(),
            "this type cannot be a descriptor field: use bool, i8..i64, u8..u64, f16, bf16, f32, \
             f64, an fp8 type (F8E4M3FN, ...), [T; N], Vec<T>, String, a field-less enum or \
             another descriptor"
                .into(),
        ),
    }
}

fn classify_path(path: &syn::Path, top: bool) -> FieldType<'_> {
    let Some(last) = path.segments.last() else {
        return FieldType::Fixed;
    };
    let ident = last.ident.to_string();
    let span = last.ident.span();
    let unsupported = |m: &str| FieldType::Unsupported(span, m.to_string());
    match ident.as_str() {
        "usize" | "isize" => {
            return unsupported(&format!(
                "`{ident}` is not portable (its size depends on the target): use `{}64` or `{}32`",
                &ident[..1],
                &ident[..1]
            ));
        }
        "char" => return unsupported("`char` cannot be a descriptor field: store it as `u32`"),
        "Box" | "Rc" | "Arc" => {
            return unsupported(&format!(
                "`{ident}` cannot be a descriptor field: it is a pointer; store the value inline"
            ));
        }
        "String" => {
            return if top {
                FieldType::StringTail
            } else {
                unsupported(
                    "`String` can only be a top-level field (a tail), not inside an array or `Vec`",
                )
            };
        }
        "Vec" => {
            let elem = match &last.arguments {
                syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => {
                    match a.args.first() {
                        Some(syn::GenericArgument::Type(t)) => Some(t),
                        _ => None,
                    }
                }
                _ => None,
            };
            let Some(elem) = elem else {
                return unsupported("`Vec` needs one element type: `Vec<T>`");
            };
            if !top {
                return unsupported(
                    "`Vec` can only be a top-level field (a tail), not inside an array or `Vec`",
                );
            }
            return match classify(elem, false) {
                FieldType::Unsupported(s, m) => FieldType::Unsupported(s, m),
                inner => FieldType::VecTail(elem, Box::new(inner)),
            };
        }
        _ => {}
    }
    if !matches!(last.arguments, syn::PathArguments::None) {
        return FieldType::Unsupported(
            last.arguments.span(),
            format!(
                "`{ident}<...>` cannot be a descriptor field: generic types other than `Vec<T>` \
                 are not supported"
            ),
        );
    }
    // A primitive or a user type: the compiler checks that it implements `Wire`, with the
    // error spanned at the type.
    FieldType::Fixed
}
