//! `#[derive(Descriptor)]`: parse → model → check → expand.

mod check;
mod expand;
mod model;
mod parse;

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;

pub(crate) fn derive(input: &syn::DeriveInput) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = parse::options(&mut cx, &input.attrs);
    let model = model::Descriptor::from_input(&mut cx, input, options);
    if let Some(model) = &model {
        check::check(&mut cx, model);
    }
    match (cx.check(), model) {
        (Ok(()), Some(model)) => expand::expand(&model),
        (Err(errors), _) => errors,
        (Ok(()), None) => TokenStream::new(),
    }
}
