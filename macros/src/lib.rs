//! Procedural macros of customop. Use them through the `customop` crate, which re-exports them.
//!
//! Each macro follows parse → model → check → expand: syntax is parsed into an owned model that
//! keeps the user's spans, checked as a whole with every error collected, then expanded.
//! Expansion creates no errors of its own.

mod ctxt;
mod descriptor;

use proc_macro::TokenStream;

/// Derives `customop::Descriptor` for a struct (and the field trait `Wire` for a field-less
/// enum with an explicit `#[repr]`). See the book's "Descriptors" chapter.
#[proc_macro_derive(Descriptor, attributes(descriptor))]
pub fn derive_descriptor(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    descriptor::derive(&input).into()
}
