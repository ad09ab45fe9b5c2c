//! Syntax only: the options, the function (its body kept as tokens) and each parameter's
//! attributes.

use crate::ctxt::Ctxt;
use crate::options::{self, Attr};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;

/// The options of `#[custom_op(...)]` as written.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) name: Option<syn::LitStr>,
    /// `name` is written, maybe with a value that failed to parse (already reported).
    pub(crate) name_written: bool,
    pub(crate) target: Option<syn::LitStr>,
    pub(crate) side_effect: Option<Span>,
    pub(crate) api_version: Option<syn::LitInt>,
    pub(crate) krate: Option<syn::Path>,
    pub(crate) partition: Option<Partition>,
    pub(crate) dtypes: Option<Dtypes>,
    /// `vjp = op_bwd`: the backward op (a path to its function, whose companion module it
    /// names).
    pub(crate) vjp: Option<syn::Path>,
    /// `jvp = op_jvp`: the tangent op (a path to its function, whose companion module it
    /// names), the op's forward-mode rule.
    pub(crate) jvp: Option<syn::Path>,
    /// `#[cuda(op_cuda)]` on the function: its CUDA side (a path to a host function).
    pub(crate) cuda: Option<syn::Path>,
    /// Where the attribute is, for "missing `name`".
    pub(crate) span: Option<Span>,
}

/// `dtypes(T = [f32, bf16, f16])`: the element types each type parameter of a generic op may be.
pub(crate) struct Dtypes {
    pub(crate) vars: Vec<DtypeVar>,
}

/// One type parameter of `dtypes(...)` and its types, as written.
pub(crate) struct DtypeVar {
    pub(crate) ident: syn::Ident,
    pub(crate) types: Vec<syn::Type>,
    /// The `[...]` list's span.
    pub(crate) span: Span,
}

/// Parses the inside of `dtypes(...)`; a bad entry is recorded and the rest still read.
fn dtypes(cx: &mut Ctxt, meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Dtypes> {
    let mut d = Dtypes { vars: Vec::new() };
    options::parse_nested(cx, meta, |cx, inner| {
        let Some(ident) = inner.path.get_ident().cloned() else {
            return Err(inner.error("expected a type parameter: `dtypes(T = [f32, f64])`"));
        };
        let value = inner.value()?;
        let content;
        let bracket = syn::bracketed!(content in value);
        let types =
            syn::punctuated::Punctuated::<syn::Type, syn::Token![,]>::parse_terminated(&content)?;
        if d.vars.iter().any(|v| v.ident == ident) {
            cx.error_spanned_by(&ident, format!("duplicate `{ident}` in `dtypes`"));
        } else {
            d.vars.push(DtypeVar {
                ident,
                types: types.into_iter().collect(),
                span: bracket.span.join(),
            });
        }
        Ok(())
    })?;
    Ok(d)
}

/// `partition(x = [rows, _], w = [rows])`: for tensor inputs, the factor (or `_`) of each
/// dimension.
pub(crate) struct Partition {
    /// The `partition` keyword.
    pub(crate) span: Span,
    pub(crate) entries: Vec<PartitionEntry>,
    /// An entry was refused while parsing (reported): the rule may be incomplete, so the rules
    /// about the whole of it are not checked.
    pub(crate) unread: bool,
}

pub(crate) struct PartitionEntry {
    pub(crate) param: syn::Ident,
    /// The `[...]` list's span.
    pub(crate) span: Span,
    /// Per dimension, the factor's name, or `None` for `_`.
    pub(crate) dims: Vec<Option<syn::Ident>>,
}

/// Parses the inside of `partition(...)`; a bad entry is recorded and the rest still read.
fn partition(cx: &mut Ctxt, meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Partition> {
    let mut p = Partition {
        span: meta.path.span(),
        entries: Vec::new(),
        unread: false,
    };
    let before = cx.error_count();
    options::parse_nested(cx, meta, |cx, inner| {
        let Some(param) = inner.path.get_ident().cloned() else {
            return Err(inner.error("expected a parameter name: `partition(x = [rows, _])`"));
        };
        let list: syn::ExprArray = inner.value()?.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the factor of each dimension: `x = [rows, _]` (`_`: never split)",
            )
        })?;
        let mut dims = Vec::new();
        for el in &list.elems {
            match el {
                syn::Expr::Infer(_) => dims.push(None),
                syn::Expr::Path(e) if e.qself.is_none() && e.path.get_ident().is_some() => {
                    dims.push(e.path.get_ident().cloned())
                }
                other => {
                    cx.error_spanned_by(
                        other,
                        "a dimension's entry is a factor name (`rows`) or `_` (never split)",
                    );
                    dims.push(None);
                }
            }
        }
        if p.entries.iter().any(|e| e.param == param) {
            cx.error_spanned_by(&param, format!("duplicate `{param}` in `partition`"));
        } else {
            p.entries.push(PartitionEntry {
                param,
                span: list.bracket_token.span.join(),
                dims,
            });
        }
        Ok(())
    })?;
    p.unread = cx.error_count() > before;
    Ok(p)
}

/// The options `#[custom_op(...)]` takes: the parser reads these and refuses any other (the
/// book's reference lists each, which a test checks).
pub(crate) const OPTIONS: &[&str] = &[
    "name",
    "target",
    "side_effect",
    "api_version",
    "crate",
    "partition",
    "dtypes",
    "vjp",
    "jvp",
];

/// Reads the options; a bad one is recorded and the others still read, so that a later `name`
/// is not lost.
pub(crate) fn options(cx: &mut Ctxt, args: TokenStream) -> Options {
    let span = args.clone().into_iter().next().map(|t| t.span());
    let mut name = Attr::none("option", "name");
    let mut target = Attr::none("option", "target");
    let mut side_effect = Attr::none("option", "side_effect");
    let mut api_version = Attr::none("option", "api_version");
    let mut krate = Attr::none("option", "crate");
    let mut partition_ = Attr::none("option", "partition");
    let mut dtypes_ = Attr::none("option", "dtypes");
    let mut vjp = Attr::none("option", "vjp");
    let mut jvp = Attr::none("option", "jvp");
    options::parse_entries(cx, args, |cx, meta| {
        let p = &meta.path;
        let Some(&key) = OPTIONS.iter().find(|o| p.is_ident(o)) else {
            return Err(meta.error(format!(
                "unknown option `{}`: expected one of: {}",
                p.to_token_stream().to_string().replace(' ', ""),
                options::one_of(OPTIONS)
            )));
        };
        match key {
            "name" => {
                name.written();
                name.set(cx, p, meta.value()?.parse()?);
            }
            "target" => target.set(cx, p, meta.value()?.parse()?),
            "side_effect" => {
                options::no_value(&meta)?;
                side_effect.set(cx, p, p.span());
            }
            "api_version" => api_version.set(cx, p, meta.value()?.parse()?),
            "crate" => {
                let v: syn::LitStr = meta.value()?.parse()?;
                match v.parse::<syn::Path>() {
                    Ok(path) => krate.set(cx, p, path),
                    Err(_) => {
                        cx.error_spanned_by(&v, "`crate` must be a path, e.g. \"::customop\"")
                    }
                }
            }
            "partition" => {
                let v = partition(cx, &meta)?;
                partition_.set(cx, p, v);
            }
            "dtypes" => {
                let v = dtypes(cx, &meta)?;
                dtypes_.set(cx, p, v);
            }
            "vjp" => {
                let v: syn::Path = meta.value()?.parse().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "`vjp` names the backward op's function: `vjp = my_op_bwd`",
                    )
                })?;
                vjp.set(cx, p, v);
            }
            "jvp" => {
                let v: syn::Path = meta.value()?.parse().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "`jvp` names the tangent op's function: `jvp = my_op_jvp`",
                    )
                })?;
                jvp.set(cx, p, v);
            }
            _ => unreachable!("option `{key}` is in OPTIONS but not read"),
        }
        Ok(())
    });
    Options {
        name_written: name.is_written(),
        name: name.get(),
        target: target.get(),
        side_effect: side_effect.get(),
        api_version: api_version.get(),
        krate: krate.get(),
        partition: partition_.get(),
        dtypes: dtypes_.get(),
        vjp: vjp.get(),
        jvp: jvp.get(),
        cuda: None,
        span,
    }
}

/// A function with its body kept as tokens (tracing-attributes' `MaybeItemFn`).
pub(crate) struct ItemFn {
    pub(crate) attrs: Vec<syn::Attribute>,
    pub(crate) vis: syn::Visibility,
    pub(crate) sig: syn::Signature,
    pub(crate) body: TokenStream,
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(syn::Attribute::parse_outer)?;
        let vis: syn::Visibility = input.parse()?;
        let sig: syn::Signature = input.parse()?;
        let body: proc_macro2::Group = input.parse()?;
        if body.delimiter() != proc_macro2::Delimiter::Brace {
            return Err(syn::Error::new(body.span(), "expected a function body"));
        }
        Ok(ItemFn {
            attrs,
            vis,
            sig,
            body: body.into_token_stream(),
        })
    }
}

/// Takes `#[cuda(path)]` off the function's attributes: the path of the op's CUDA side. A
/// crate gates it as any attribute, `#[cfg_attr(feature = "cuda", cuda(op_cuda))]` (rustc
/// expands `cfg_attr` before the macro sees the function).
pub(crate) fn take_cuda(cx: &mut Ctxt, attrs: &mut Vec<syn::Attribute>) -> Option<syn::Path> {
    let mut found: Option<syn::Path> = None;
    attrs.retain(|a| {
        if !a.path().is_ident("cuda") {
            return true;
        }
        match a.parse_args::<syn::Path>() {
            Ok(p) if found.is_none() => found = Some(p),
            Ok(_) => cx.error_spanned_by(a, "`#[cuda(...)]` is given twice"),
            Err(_) => cx.error_spanned_by(
                a,
                "`#[cuda(...)]` names the op's CUDA side, a function: `#[cuda(my_op_cuda)]`",
            ),
        }
        false
    });
    found
}

/// The customop attributes of one parameter.
#[derive(Default)]
pub(crate) struct ParamAttrs {
    pub(crate) external: Option<Span>,
    /// `#[external(borrow)]`: read in place.
    pub(crate) borrow: bool,
    pub(crate) attr: Option<Span>,
    /// `#[state]`: built once per call site from the attributes.
    pub(crate) state: Option<Span>,
    /// `#[attrs]`: the dictionary of all the call's attributes.
    pub(crate) attrs: Option<Span>,
    /// `#[inout]`: a tensor updated in place.
    pub(crate) inout: Option<Span>,
    /// `#[out(...)]`: its span and the `shape = ...` expression, if given.
    pub(crate) out: Option<(Span, Option<syn::Expr>)>,
    /// `shape = ...` is written, maybe with a value that failed to parse (already reported).
    pub(crate) shape_written: bool,
}

/// The parameter attributes: the parser takes these off the parameters and leaves any other
/// (the book's reference lists each, which a test checks).
pub(crate) const PARAM_ATTRS: &[&str] = &["external", "attr", "attrs", "inout", "state", "out"];

/// The options of `#[external(...)]`.
pub(crate) const EXTERNAL_OPTIONS: &[&str] = &["borrow"];

/// The options of `#[out(...)]`.
pub(crate) const OUT_OPTIONS: &[&str] = &["shape"];

/// Takes `#[external]`, `#[attr]`, `#[state]` and `#[out(...)]` off the parameters (even when they fail to
/// parse, with the error recorded) and returns the function to re-emit and the attributes.
pub(crate) fn take_param_attrs(cx: &mut Ctxt, item: &ItemFn) -> (TokenStream, Vec<ParamAttrs>) {
    let mut sig = item.sig.clone();
    let mut all = Vec::new();
    for arg in sig.inputs.iter_mut() {
        let attrs = match arg {
            syn::FnArg::Typed(t) => &mut t.attrs,
            syn::FnArg::Receiver(r) => &mut r.attrs,
        };
        let mut pa = ParamAttrs::default();
        attrs.retain(|a| {
            let Some(name) = PARAM_ATTRS.iter().find(|n| a.path().is_ident(n)) else {
                return true;
            };
            let span = a.path().span();
            let seen = match *name {
                "external" => {
                    if let syn::Meta::List(_) = a.meta {
                        match a.parse_args::<TokenStream>() {
                            Err(e) => cx.syn_error(e),
                            Ok(args) => options::parse_entries(cx, args, |_, meta| {
                                match EXTERNAL_OPTIONS.iter().find(|o| meta.path.is_ident(o)) {
                                    Some(&"borrow") => {
                                        options::no_value(&meta)?;
                                        pa.borrow = true;
                                        Ok(())
                                    }
                                    Some(o) => unreachable!(
                                        "`external` option `{o}` is in EXTERNAL_OPTIONS but not read"
                                    ),
                                    None => Err(meta.error(format!(
                                        "unknown `external` option: expected {}",
                                        options::one_of(EXTERNAL_OPTIONS)
                                    ))),
                                }
                            }),
                        }
                    }
                    pa.external.replace(span).is_some()
                }
                "attr" => pa.attr.replace(span).is_some(),
                "state" => pa.state.replace(span).is_some(),
                "attrs" => pa.attrs.replace(span).is_some(),
                "inout" => pa.inout.replace(span).is_some(),
                "out" => {
                    let mut shape = Attr::none("`out` option", "shape");
                    if let syn::Meta::List(_) = a.meta {
                        match a.parse_args::<TokenStream>() {
                            Err(e) => cx.syn_error(e),
                            Ok(args) => options::parse_entries(cx, args, |cx, meta| {
                                match OUT_OPTIONS.iter().find(|o| meta.path.is_ident(o)) {
                                    Some(&"shape") => {
                                        shape.written();
                                        shape.set(cx, &meta.path, meta.value()?.parse::<syn::Expr>()?);
                                        Ok(())
                                    }
                                    Some(o) => unreachable!(
                                        "`out` option `{o}` is in OUT_OPTIONS but not read"
                                    ),
                                    None => Err(meta.error(
                                        "unknown `out` option: expected `shape = [...]` or `shape = param`",
                                    )),
                                }
                            }),
                        }
                    }
                    pa.shape_written = shape.is_written();
                    pa.out.replace((span, shape.get())).is_some()
                }
                other => unreachable!("`#[{other}]` is in PARAM_ATTRS but not read"),
            };
            if seen {
                cx.error_spanned_by(a, format!("duplicate `#[{name}]`"));
            } else if let syn::Meta::NameValue(_) = a.meta {
                cx.error_spanned_by(a, format!("`#[{name} = ...]` is not a form `#[{name}]` takes"));
            } else if let syn::Meta::List(_) = a.meta
                && matches!(*name, "attr" | "state" | "attrs" | "inout")
            {
                cx.error_spanned_by(a, format!("`#[{name}]` takes no arguments"));
            }
            false
        });
        all.push(pa);
    }
    let attrs = &item.attrs;
    let vis = &item.vis;
    let body = &item.body;
    (quote!(#(#attrs)* #vis #sig #body), all)
}
