//! The exported XLA FFI handler: the call frame decoded and checked, the user's function run.

use super::*;

pub(super) fn expand_handler(op: &Op<'_>, p: &TokenStream) -> TokenStream {
    let bounds = bounds(op, p);
    let ffi = quote!(#p::ffi);
    let symbol = Ident::new(&handler_symbol(&op.target), Span::call_site());
    let user_fn = op.ident;
    let mut binds = Vec::new();
    let mut call_args = Vec::new();
    let mut write_back = Vec::new();
    // Each binding is spanned at the parameter's type, so that a type the runtime cannot bind
    // is reported there.
    for prm in &op.params {
        let id = &prm.ident;
        let at = prm.ty.span();
        match &prm.kind {
            Kind::Tensor {
                inout: false, elem, ..
            } => {
                if elem.packed {
                    binds.push(quote_spanned!(at=> let #id = __b.packed_input()?;));
                } else {
                    binds.push(quote_spanned!(at=> let #id = __b.input()?;));
                }
                call_args.push(quote!(#id));
            }
            Kind::Tensor { inout: true, .. } => {
                binds.push(quote_spanned!(at=> let #id = __b.inout()?;));
                call_args.push(quote!(#id));
            }
            Kind::Output { elem, .. } => {
                if elem.packed {
                    binds.push(quote_spanned!(at=> let #id = __b.packed_output()?;));
                } else {
                    binds.push(quote_spanned!(at=> let #id = __b.output()?;));
                }
                call_args.push(quote!(#id));
            }
            Kind::External {
                inner,
                borrow: true,
                ..
            } => {
                binds.push(quote_spanned!(at=> let #id = __b.external_ref::<#inner>()?;));
                call_args.push(quote!(#id));
            }
            Kind::External {
                inner,
                mutable: false,
                ..
            } => {
                binds.push(quote_spanned!(at=> let #id = __b.external::<#inner>()?;));
                call_args.push(quote!(&#id));
            }
            Kind::External {
                inner,
                mutable: true,
                ..
            } => {
                binds.push(quote_spanned!(at=> let mut #id = __b.external::<#inner>()?;));
                call_args.push(quote!(&mut #id));
                write_back.push(quote!(__b.write_back(&#id)?;));
            }
            Kind::Attr(AttrKind::Value(_) | AttrKind::Slice(..)) => {
                binds.push(quote_spanned!(at=> let #id = __b.attr()?;));
                call_args.push(quote!(#id));
            }
            Kind::Attr(AttrKind::Ref(t)) => {
                binds.push(quote_spanned!(at=> let #id = __b.attr_ref::<#t>()?;));
                call_args.push(quote!(&*#id));
            }
            Kind::State { inner } => {
                binds.push(quote_spanned!(at=> let #id = __b.state::<#inner>()?;));
                call_args.push(quote!(&*#id));
            }
            Kind::Attrs(_) => {
                binds.push(quote_spanned!(at=> let #id = __b.attrs()?;));
                call_args.push(quote!(#id));
            }
            Kind::Invalid(..) => {}
        }
    }
    let turbofish = turbofish(op);
    let doc = format!(
        "The XLA FFI handler of `{}` (register it for target `{}`).\n\n\
         # Safety\n\
         `frame` must be null or a typed-FFI call frame, valid for the duration of the call, \
         as XLA passes to a handler registered with API version 4.",
        op.name, op.target
    );
    let body = dispatch(
        op,
        p,
        &quote! {
            #(#binds)*
            __b.finish(super::#user_fn #turbofish (#(#call_args),*))?;
            #(#write_back)*
            ::core::result::Result::Ok(())
        },
    );
    // An op with state also builds it at XLA's instantiate stage.
    let state = op.params.iter().find_map(|prm| match &prm.kind {
        Kind::State { inner } => Some(*inner),
        _ => None,
    });
    let run = match state {
        Some(t) => quote!(#ffi::run_stateful::<#t>),
        None => quote!(#ffi::run),
    };
    quote! {
        #[doc = #doc]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn #symbol(
            frame: *mut #ffi::abi::XLA_FFI_CallFrame,
        ) -> *mut #ffi::abi::XLA_FFI_Error #bounds {
            // SAFETY: this function's contract: `frame` is null (which `run` refuses) or a call
            // frame valid for the duration of the call.
            unsafe {
                #run(frame, definition(), |__b| { #body })
            }
        }
    }
}

/// The handler's body for each combination of a generic op's types: for each `dtypes`
/// variable, the element type XLA passed (`Binder::dtype_var`) picks one of its listed types,
/// bound as `__T_<name>` for `body`; a type outside the list was already refused there.
pub(super) fn dispatch(op: &Op<'_>, p: &TokenStream, body: &TokenStream) -> TokenStream {
    fn level(vars: &[DtypeVar], p: &TokenStream, body: &TokenStream) -> TokenStream {
        let Some((v, rest)) = vars.split_first() else {
            return body.clone();
        };
        let name = v.ident.to_string();
        let dt = format_ident!("__dt_{}", v.ident);
        let alias = format_ident!("__T_{}", v.ident);
        let inner = level(rest, p, body);
        let arms = v.types.iter().map(|t| {
            quote! {
                if #dt == <#t as #p::types::ElementOf>::ELEMENT_TYPE {
                    #[allow(non_camel_case_types)]
                    type #alias = #t;
                    #inner
                }
            }
        });
        quote! {
            let #dt = __b.dtype_var(#name)?;
            #(#arms else)* {
                ::core::result::Result::Err(__b.dtype_refused(#name, #dt))
            }
        }
    }
    level(op.dtype_vars, p, body)
}

/// A generic op's kernel (or CUDA side) is called with the types `dispatch` chose, in the order
/// of its type parameters (each bound to a local type alias, `__T_<name>`): the turbofish, or
/// nothing for an op that is not generic.
pub(super) fn turbofish(op: &Op<'_>) -> TokenStream {
    if op.dtype_vars.is_empty() {
        return TokenStream::new();
    }
    let type_args: Vec<Ident> = op
        .dtype_vars
        .iter()
        .map(|v| format_ident!("__T_{}", v.ident))
        .collect();
    let order = op.generic_order.iter().map(|i| &type_args[*i]);
    quote!(::<#(#order),*>)
}
