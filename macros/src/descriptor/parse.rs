//! The `#[descriptor(...)]` options: syntax only.

use crate::ctxt::Ctxt;
use quote::ToTokens;

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
/// (a duplicate is reported on its second occurrence).
pub(crate) fn options(cx: &mut Ctxt, attrs: &[syn::Attribute]) -> Options {
    let mut out = Options::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("descriptor")) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                let value: syn::LitStr = meta.value()?.parse()?;
                if out.name.is_some() {
                    cx.error_spanned_by(&meta.path, "duplicate descriptor option `name`");
                } else if value.value().is_empty() {
                    cx.error_spanned_by(&value, "the descriptor name must not be empty");
                } else {
                    out.name = Some(value);
                }
                Ok(())
            } else if meta.path.is_ident("repr_c") {
                if out.repr_c.is_some() {
                    cx.error_spanned_by(&meta.path, "duplicate descriptor option `repr_c`");
                } else {
                    out.repr_c = Some(syn::spanned::Spanned::span(&meta.path));
                }
                Ok(())
            } else if meta.path.is_ident("crate") {
                let value: syn::LitStr = meta.value()?.parse()?;
                if out.krate.is_some() {
                    cx.error_spanned_by(&meta.path, "duplicate descriptor option `crate`");
                } else {
                    match value.parse::<syn::Path>() {
                        Ok(p) => out.krate = Some(p),
                        Err(_) => cx.error_spanned_by(
                            &value,
                            "`crate` must be a path, e.g. \"::customop\"",
                        ),
                    }
                }
                Ok(())
            } else {
                Err(meta.error(format!(
                    "unknown descriptor option `{}`: expected one of: `name`, `crate`, `repr_c`",
                    meta.path.to_token_stream().to_string().replace(' ', "")
                )))
            }
        });
        if let Err(e) = result {
            cx.syn_error(e);
        }
    }
    out
}
