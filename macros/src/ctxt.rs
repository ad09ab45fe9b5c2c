//! The error collector shared by every phase (serde_derive's `Ctxt`, cxx's `Errors`).

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

/// Errors found so far; every phase pushes into it and the phase boundary checks it.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// An error spanning `tokens`.
    pub(crate) fn error_spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.errors
            .push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// An already-built error.
    pub(crate) fn syn_error(&mut self, e: syn::Error) {
        self.errors.push(e);
    }

    /// How many errors so far.
    pub(crate) fn error_count(&self) -> usize {
        self.errors.len()
    }

    /// The messages so far (for tests).
    #[cfg(test)]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.errors.iter().map(ToString::to_string).collect()
    }

    /// All errors as `compile_error!`s, or `None` when there were none.
    pub(crate) fn check(self) -> Result<(), TokenStream> {
        if self.errors.is_empty() {
            return Ok(());
        }
        Err(self
            .errors
            .iter()
            .map(syn::Error::to_compile_error)
            .collect())
    }
}
