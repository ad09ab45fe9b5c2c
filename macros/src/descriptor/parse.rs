//! The `#[descriptor(...)]` options: syntax only.

use crate::ctxt::Ctxt;
use crate::options::{self, Attr};
use quote::ToTokens;

/// The options `#[descriptor(...)]` takes: the parser reads these and refuses any other (the
/// book's reference lists each, which a test checks).
pub(crate) const OPTIONS: &[&str] = &["name", "crate", "repr_c"];

/// The options as written, each with its span for later errors.
#[derive(Default)]
pub(crate) struct Options {
    /// `name = "my_lib::Blob"`.
    pub(crate) name: Option<syn::LitStr>,
    /// `crate = "path::to::customop"`.
    pub(crate) krate: Option<syn::Path>,
    /// `repr_c`: the struct is `#[repr(C)]` and read in place (its span).
    pub(crate) repr_c: Option<proc_macro2::Span>,
}

/// Reads every `#[descriptor(...)]` attribute; unknown and duplicate options are errors
/// (a duplicate is reported on its second occurrence), and a bad option is recorded and the
/// others still read.
pub(crate) fn options(cx: &mut Ctxt, attrs: &[syn::Attribute]) -> Options {
    let mut name = Attr::none("descriptor option", "name");
    let mut krate = Attr::none("descriptor option", "crate");
    let mut repr_c = Attr::none("descriptor option", "repr_c");
    for attr in attrs.iter().filter(|a| a.path().is_ident("descriptor")) {
        let args = match attr.parse_args::<proc_macro2::TokenStream>() {
            Ok(args) => args,
            Err(e) => {
                cx.syn_error(e);
                continue;
            }
        };
        options::parse_entries(cx, args, |cx, meta| {
            let p = &meta.path;
            let Some(&key) = OPTIONS.iter().find(|o| p.is_ident(o)) else {
                return Err(meta.error(format!(
                    "unknown descriptor option `{}`: expected one of: {}",
                    p.to_token_stream().to_string().replace(' ', ""),
                    options::one_of(OPTIONS)
                )));
            };
            if key == "name" {
                let value: syn::LitStr = meta.value()?.parse()?;
                if value.value().is_empty() {
                    cx.error_spanned_by(&value, "the descriptor name must not be empty");
                } else {
                    name.set(cx, p, value);
                }
            } else if key == "repr_c" {
                options::no_value(&meta)?;
                repr_c.set(cx, p, syn::spanned::Spanned::span(p));
            } else if key == "crate" {
                let value: syn::LitStr = meta.value()?.parse()?;
                match value.parse::<syn::Path>() {
                    Ok(path) => krate.set(cx, p, path),
                    Err(_) => {
                        cx.error_spanned_by(&value, "`crate` must be a path, e.g. \"::customop\"")
                    }
                }
            } else {
                unreachable!("descriptor option `{key}` is in OPTIONS but not read");
            }
            Ok(())
        });
    }
    Options {
        name: name.get(),
        krate: krate.get(),
        repr_c: repr_c.get(),
    }
}
