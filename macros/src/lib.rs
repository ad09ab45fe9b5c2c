//! Procedural macros of customop. Use them through the `customop` crate, which re-exports them.
//!
//! Each macro follows parse → model → check → expand: syntax is parsed into an owned model that
//! keeps the user's spans, checked as a whole with every error collected, then expanded.
//! Expansion creates no errors of its own.

#[cfg(test)]
mod book_reference;
mod ctxt;
mod descriptor;
mod op;
mod options;
mod tokens;

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

/// Expansion snapshots: what the macros generate for a few representative inputs, pretty-printed
/// and compared with the checked-in files in `macros/tests/expand/`, so that reviewers can read
/// the generated code and any change to it shows in a diff. Regenerate with
/// `CUSTOMOP_BLESS=1 cargo test -p customop-macros` and read the diff.
#[cfg(test)]
mod snapshots {
    use proc_macro2::TokenStream;
    use quote::quote;

    fn check(name: &str, generated: TokenStream) {
        let file: syn::File = match syn::parse2(generated.clone()) {
            Ok(f) => f,
            Err(e) => panic!("{name}: the expansion does not parse ({e}):\n{generated}"),
        };
        let text = prettyplease::unparse(&file);
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/expand")
            .join(format!("{name}.expanded.rs"));
        if std::env::var_os("CUSTOMOP_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
            return;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{} is missing: run with CUSTOMOP_BLESS=1", path.display()));
        assert!(
            want == text,
            "the expansion of {name} changed; rerun with CUSTOMOP_BLESS=1 and read the diff of {}",
            path.display()
        );
    }

    #[test]
    fn seed_op() {
        check(
            "seed_op",
            crate::op::custom_op(
                quote!(
                    name = "my_custom_library::custom_op_external",
                    side_effect,
                    partition(x = [rows, _])
                ),
                quote! {
                    pub fn custom_op_external(
                        #[external] blob: &Blob,
                        x: TensorRef<'_, f32, 2>,
                        #[out(shape = [x.dim(0)])] mut y: TensorMut<'_, i8>,
                    ) -> Result<(), OpError> {
                        kernel(blob, x, y)
                    }
                },
            ),
        );
    }

    #[test]
    fn stateful_op_with_attributes() {
        check(
            "stateful_op_with_attributes",
            crate::op::custom_op(
                quote!(name = "example::step"),
                quote! {
                    pub fn step(
                        #[external] state: &mut Counter,
                        x: TensorRef<'_, f32>,
                        #[out(shape = x)] mut y: TensorMut<'_, f32>,
                        #[attr] eps: f32,
                        #[attr] label: &str,
                        #[attr] cfg: &Cfg,
                    ) -> Result<(), OpError> {
                        kernel(state, x, y, eps, label, cfg)
                    }
                },
            ),
        );
    }

    #[test]
    fn opaque_result() {
        check(
            "opaque_result",
            crate::op::custom_op(
                quote!(name = "example::make_stats"),
                quote! {
                    pub fn make_stats(x: TensorRef<'_, f32>) -> Result<Opaque<Stats>, OpError> {
                        kernel(x)
                    }
                },
            ),
        );
    }

    #[test]
    fn generic_op() {
        check(
            "generic_op",
            crate::op::custom_op(
                quote!(name = "nn::rms_norm", dtypes(T = [f32, bf16])),
                quote! {
                    pub fn rms_norm<T: Real>(
                        x: TensorRef<'_, T, 2>,
                        #[attr] eps: f32,
                        #[out(shape = x)] mut y: TensorMut<'_, T>,
                    ) -> Result<(), OpError> {
                        kernel(x, eps, y)
                    }
                },
            ),
        );
    }

    #[test]
    fn op_with_a_declared_backward() {
        check(
            "vjp_op",
            crate::op::custom_op(
                quote!(name = "nn::scale", vjp = scale_bwd),
                quote! {
                    pub fn scale(
                        x: TensorRef<'_, f32>,
                        #[attr] k: f32,
                        #[out(shape = x)] mut y: TensorMut<'_, f32>,
                    ) -> Result<(), OpError> {
                        kernel(x, k, y)
                    }
                },
            ),
        );
    }

    #[test]
    fn descriptor_struct_and_enum() {
        let s: syn::DeriveInput = syn::parse_quote! {
            #[descriptor(name = "my_lib::Cfg")]
            pub struct Cfg { pub scale: f32, pub mode: Mode, pub tag: [u8; 4], pub offsets: Vec<u64> }
        };
        let e: syn::DeriveInput = syn::parse_quote! {
            #[repr(u8)]
            pub enum Mode { Fast = 0, Exact = 1 }
        };
        let s = crate::descriptor::derive(&s);
        let e = crate::descriptor::derive(&e);
        check("descriptor", quote!(#s #e));
    }
}
