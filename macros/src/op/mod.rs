//! `#[custom_op]`: parse → model → check → expand.
//!
//! The user's function is always re-emitted (with the parameter attributes taken out), and so
//! is its companion module (see below), also when there are errors, so that names keep
//! resolving and only the real errors show.

mod build;
mod check;
mod classify;
mod expand;
mod model;
mod names;
mod parse;
mod partition;
mod shape_rule;

/// What the macro accepts, for the test that the book's reference lists it.
#[cfg(test)]
pub(crate) use parse::{EXTERNAL_OPTIONS, OPTIONS, OUT_OPTIONS, PARAM_ATTRS};

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn custom_op(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::new();
    let mut options = parse::options(&mut cx, args);
    let mut item = match syn::parse2::<parse::ItemFn>(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            // The options' errors too (checked here: the guard would catch it otherwise).
            cx.syn_error(syn::Error::new(
                e.span(),
                "#[custom_op] goes on a function: `#[custom_op(name = \"ns::op\")] fn op(...)`",
            ));
            let errors = cx.check().err().unwrap_or_default();
            return quote!(#errors #item);
        }
    };
    options.cuda = parse::take_cuda(&mut cx, &mut item.attrs);
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
    check::check(&mut cx, &model, &item);
    // The companion module is emitted whenever the signature could be modelled, also with
    // errors (options fall back to defaults, parameters that could not be classified are left
    // out of the schema), so that `op::call(...)` and the other names keep resolving and only
    // the real errors show; the `compile_error!`s fail the build. Not for a generic signature
    // with parameters outside `dtypes(...)` (it names types the module cannot resolve) nor a
    // method (a module cannot go in an `impl`). The handler, which calls the user's function, needs the signature exactly as
    // modelled: it is emitted only without errors.
    let listed = |id: &syn::Ident| {
        options
            .dtypes
            .iter()
            .flat_map(|d| &d.vars)
            .any(|v| v.ident == *id)
    };
    let generic = item.sig.generics.params.iter().any(|p| match p {
        syn::GenericParam::Lifetime(_) => false,
        syn::GenericParam::Type(t) => !listed(&t.ident),
        syn::GenericParam::Const(_) => true,
    });
    let method = item.sig.receiver().is_some();
    let errors = cx.check();
    let companion = if generic || method {
        TokenStream::new()
    } else {
        expand::expand(&model, errors.is_ok())
    };
    let errors = errors.err().unwrap_or_default();
    quote!(#user_fn #errors #companion)
}
