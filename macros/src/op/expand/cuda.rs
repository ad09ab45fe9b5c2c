//! The op's CUDA handler (`#[cuda(op_cuda)]`): the call frame's device buffers bound as the
//! CPU kernel's parameters are, each as its device view, and the CUDA side called with the
//! call's `Cuda` first. The views are typed from the op's declaration, so a CUDA side whose
//! signature differs from the op's is a type error at the `#[cuda(...)]` path.

use super::*;

/// The symbol of the op's exported CUDA handler.
fn cuda_handler_symbol(target: &str) -> String {
    handler_symbol(target).replacen("customop_handler_", "customop_cuda_handler_", 1)
}

/// The CUDA handler and its registry entry, or nothing for an op without a CUDA side.
pub(super) fn expand_cuda(op: &Op<'_>, p: &TokenStream) -> TokenStream {
    let Some(path) = op.cuda else {
        return TokenStream::new();
    };
    let ffi = quote!(#p::ffi);
    let symbol_name = cuda_handler_symbol(&op.target);
    let symbol = Ident::new(&symbol_name, Span::call_site());
    let target = &op.target;
    let rank = |r: &Option<usize>| match r {
        Some(r) => quote!(#r),
        None => quote!({ #p::tensor::ANY_RANK }),
    };
    // An element type that is a `dtypes` variable is the type `dispatch` bound for it.
    let elem_ty = |t: &syn::Type| match op.var_of(t) {
        Some(v) => {
            let alias = format_ident!("__T_{}", v.ident);
            quote!(#alias)
        }
        None => quote!(#t),
    };
    let mut binds = Vec::new();
    // Externals are fetched from the device after every buffer is checked.
    let mut fetches = Vec::new();
    let mut call_args = Vec::new();
    for prm in &op.params {
        let id = &prm.ident;
        let at = prm.ty.span();
        match &prm.kind {
            Kind::Tensor {
                elem,
                rank: r,
                inout,
            } => {
                let (t, r) = (elem_ty(elem.ty), rank(r));
                binds.push(if *inout {
                    quote_spanned!(at=> let #id = __b.device_inout::<#t, #r>(__cuda)?;)
                } else {
                    quote_spanned!(at=> let #id = __b.device_input::<#t, #r>()?;)
                });
                call_args.push(quote!(#id));
            }
            Kind::Output { elem, rank: r, .. } => {
                let (t, r) = (elem_ty(elem.ty), rank(r));
                binds.push(quote_spanned!(at=> let #id = __b.device_output::<#t, #r>()?;));
                call_args.push(quote!(#id));
            }
            Kind::External { inner, .. } => {
                binds.push(quote_spanned!(at=> let #id = __b.device_external::<#inner>()?;));
                fetches.push(quote!(let #id = #id.fetch(__b, __cuda)?;));
                call_args.push(quote!(&#id));
            }
            Kind::Attr(AttrKind::Value(_) | AttrKind::Slice(..)) => {
                binds.push(quote_spanned!(at=> let #id = __b.attr()?;));
                call_args.push(quote!(#id));
            }
            Kind::Attr(AttrKind::Ref(t)) => {
                binds.push(quote_spanned!(at=> let #id = __b.attr_ref::<#t>()?;));
                call_args.push(quote!(&*#id));
            }
            Kind::Attrs(_) => {
                binds.push(quote_spanned!(at=> let #id = __b.attrs()?;));
                call_args.push(quote!(#id));
            }
            // Refused by `check_cuda`.
            Kind::State { .. } | Kind::Invalid(..) => {}
        }
    }
    let cuda_fn = in_companion(path);
    // A generic op's CUDA side is called with the types `dispatch` chose, as its kernel is.
    let turbofish = super::handler::turbofish(op);
    let call = quote_spanned!(path.span()=> #cuda_fn #turbofish (__cuda, #(#call_args),*));
    let body = super::handler::dispatch(
        op,
        p,
        &quote! {
            #(#binds)*
            #(#fetches)*
            __b.finish(#call)?;
            ::core::result::Result::Ok(())
        },
    );
    let doc = format!(
        "The XLA FFI handler of `{}` for platform CUDA (register it for target `{}`).\n\n\
         # Safety\n\
         `frame` must be null or a typed-FFI call frame of a CUDA call, valid for the duration \
         of the call, as XLA passes to a handler registered with API version 4.",
        op.name, op.target
    );
    quote! {
        #[doc = #doc]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn #symbol(
            frame: *mut #ffi::abi::XLA_FFI_CallFrame,
        ) -> *mut #ffi::abi::XLA_FFI_Error {
            // SAFETY: this function's contract: `frame` is null (which `run_cuda` refuses) or
            // a call frame valid for the duration of the call.
            unsafe {
                #ffi::run_cuda(frame, definition(), |__b, __cuda| { #body })
            }
        }

        #p::inventory::submit! {
            #p::CudaEntry {
                target: #target,
                handler_symbol: #symbol_name,
            }
        }
    }
}
