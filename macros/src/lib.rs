//! Procedural macros of customop. Use them through the `customop` crate, which re-exports them.
//!
//! Each macro follows parse → model → check → expand: syntax is parsed into an owned model that
//! keeps the user's spans, checked as a whole with every error collected, then expanded.
//! Expansion creates no errors of its own.

mod ctxt;
mod descriptor;
mod op;

use proc_macro::TokenStream;

/// Derives `customop::Descriptor` for a struct (and the field trait `Wire` for a field-less
/// enum with an explicit `#[repr]`). See the book's "Descriptors" chapter.
#[proc_macro_derive(Descriptor, attributes(descriptor))]
pub fn derive_descriptor(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    descriptor::derive(&input).into()
}

/// Declares a custom op from a Rust function: generates a companion module (same name as the
/// function) with the op's schema, its StableHLO lowering (`call`) and its XLA FFI handler,
/// and registers the op. See the book's "Declaring ops" chapter.
#[proc_macro_attribute]
pub fn custom_op(args: TokenStream, item: TokenStream) -> TokenStream {
    op::custom_op(args.into(), item.into()).into()
}
