//! The error collector shared by every phase (serde_derive's `Ctxt`, cxx's `Errors`).

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

/// Errors found so far; every phase pushes into it and the phase boundary checks it. Checking
/// is enforced: a `Ctxt` dropped without [`Ctxt::check`] (its errors would be lost, and a
/// malformed input would compile) panics, which fails the build with the macro's name.
pub(crate) struct Ctxt {
    /// `None` once checked.
    errors: Option<Vec<syn::Error>>,
}

impl Ctxt {
    pub(crate) fn new() -> Ctxt {
        Ctxt {
            errors: Some(Vec::new()),
        }
    }

    fn errors(&mut self) -> &mut Vec<syn::Error> {
        self.errors.get_or_insert_with(Vec::new)
    }

    /// An error spanning `tokens`.
    pub(crate) fn error_spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.errors()
            .push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// An already-built error.
    pub(crate) fn syn_error(&mut self, e: syn::Error) {
        self.errors().push(e);
    }

    /// How many errors so far.
    pub(crate) fn error_count(&self) -> usize {
        self.errors.as_ref().map_or(0, Vec::len)
    }

    /// The messages so far, checking them (for tests).
    #[cfg(test)]
    pub(crate) fn messages(mut self) -> Vec<String> {
        let errors = self.errors.take().unwrap_or_default();
        errors.iter().map(ToString::to_string).collect()
    }

    /// All errors as `compile_error!`s, or `None` when there were none.
    pub(crate) fn check(mut self) -> Result<(), TokenStream> {
        let errors = self.errors.take().unwrap_or_default();
        if errors.is_empty() {
            return Ok(());
        }
        Err(errors.iter().map(syn::Error::to_compile_error).collect())
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if self.errors.is_some() && !std::thread::panicking() {
            panic!("customop-macros: a Ctxt was dropped without check(): its errors would be lost");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "dropped without check()")]
    fn dropping_an_unchecked_ctxt_panics() {
        let mut cx = Ctxt::new();
        cx.syn_error(syn::Error::new(proc_macro2::Span::call_site(), "lost"));
        drop(cx);
    }

    #[test]
    fn checking_returns_every_error_in_order() {
        let mut cx = Ctxt::new();
        cx.syn_error(syn::Error::new(proc_macro2::Span::call_site(), "first"));
        cx.syn_error(syn::Error::new(proc_macro2::Span::call_site(), "second"));
        assert_eq!(cx.error_count(), 2);
        let errors = cx.check().err().map(|t| t.to_string()).unwrap_or_default();
        assert!(errors.find("first") < errors.find("second"), "{errors}");
        assert!(Ctxt::new().check().is_ok());
    }
}
