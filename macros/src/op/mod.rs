//! `#[custom_op]`: parse → model → check → expand.
//!
//! The user's function is always re-emitted (with the parameter attributes taken out), also
//! when there are errors, so that names keep resolving and only the real errors show.

mod check;
mod expand;
mod model;
mod names;
mod parse;

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn custom_op(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = parse::options(&mut cx, args);
    let item = match syn::parse2::<parse::ItemFn>(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let e = syn::Error::new(
                e.span(),
                "#[custom_op] goes on a function: `#[custom_op(name = \"ns::op\")] fn op(...)`",
            )
            .to_compile_error();
            return quote!(#e #item);
        }
    };
    let (user_fn, params) = parse::take_param_attrs(&mut cx, &item);
    // The generated code reads the signature with its types resolvable inside the companion
    // module (see `names`); the user's function is re-emitted as written.
    let item = parse::ItemFn {
        attrs: Vec::new(),
        vis: item.vis.clone(),
        sig: names::in_parent(&item.sig),
        body: TokenStream::new(),
    };
    let model = model::Op::build(&mut cx, &item, &options, &params);
    if let Some(m) = &model {
        check::check(&mut cx, m, &item);
    }
    match (cx.check(), model) {
        (Ok(()), Some(m)) => {
            let generated = expand::expand(&m);
            quote!(#user_fn #generated)
        }
        (Err(errors), _) => quote!(#user_fn #errors),
        (Ok(()), None) => user_fn,
    }
}
