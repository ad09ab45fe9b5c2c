//! `#[derive(Descriptor)]`: parse → model → check → expand.

mod check;
mod expand;
mod model;
mod parse;

/// What the derive accepts, for the test that the book's reference lists it.
#[cfg(test)]
pub(crate) use {check::REPRS, parse::OPTIONS};

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn derive(input: &syn::DeriveInput) -> TokenStream {
    let mut cx = Ctxt::new();
    let options = parse::options(&mut cx, &input.attrs);
    let option_errors = cx.error_count();
    let model = model::Descriptor::from_input(&mut cx, input, options);
    if let Some(model) = &model {
        check::check(&mut cx, model);
    }
    // When only options are wrong (each already fell back to its default), still expand, so
    // that uses of the type as a descriptor keep compiling and only the real errors show.
    let expanded = match &model {
        Some(model) if cx.error_count() == option_errors => expand::expand(model),
        _ => TokenStream::new(),
    };
    let errors = cx.check().err().unwrap_or_default();
    quote!(#errors #expanded)
}
