//! The op's vjp signature (`SIGNATURE`) and the compile-time check of its declared backward.

use super::*;

/// The companion's `signature()`: what the vjp pairing is checked with (`vjp::check`).
pub(super) fn expand_signature(op: &Op<'_>, p: &TokenStream) -> TokenStream {
    let v = quote!(#p::vjp);
    let dtype = |ty: &syn::Type| match op.var_of(ty) {
        Some(var) => {
            let name = var.ident.to_string();
            let types = var.types.iter().map(|t| element(p, t));
            quote!(#v::SigDtype::Var(#name, &[#(#types),*]))
        }
        None => {
            let e = element(p, ty);
            quote!(#v::SigDtype::Fixed(#e))
        }
    };
    let params = op.params.iter().filter_map(|prm| {
        let name = prm.ident.to_string();
        let none = String::new;
        let (role, dt, rank, shape_of, ty) = match &prm.kind {
            Kind::Tensor { elem, rank, .. } => {
                (quote!(Input), dtype(elem.ty), *rank, none(), none())
            }
            Kind::Output {
                elem, shape, rank, ..
            } => {
                let of = match shape {
                    Some(ShapeRule::Of(src)) => src.to_string(),
                    _ => none(),
                };
                (quote!(Output), dtype(elem.ty), *rank, of, none())
            }
            Kind::Attr(_) => {
                let ty = prm.ty;
                let sig = quote!(#v::SigDtype::None);
                (quote!(Attr), sig, None, none(), quote!(#ty).to_string())
            }
            Kind::External { inner, mutable, .. } => {
                let role = if *mutable {
                    quote!(ExternalMut)
                } else {
                    quote!(External)
                };
                let sig = quote!(#v::SigDtype::None);
                (role, sig, None, none(), quote!(#inner).to_string())
            }
            Kind::State { .. } | Kind::Attrs(_) | Kind::Invalid(..) => return None,
        };
        let rank = option_usize(&rank);
        Some(quote! {
            #v::ParamSig {
                name: #name, role: #v::Role::#role, dtype: #dt, rank: #rank,
                shape_of: #shape_of, ty: #ty,
            }
        })
    });
    let opaque = matches!(op.ret, Ret::Opaque(_));
    // A function under the same bounds as `definition`: a type that does not satisfy them is
    // reported once, where a forward op's pairing check calls it.
    let bounds = bounds(op, p);
    quote! {
        /// The op's signature, for pairing it with a backward op (`vjp = ...`).
        #[doc(hidden)]
        pub const fn signature() -> #v::Signature #bounds {
            #v::Signature {
                name: NAME,
                params: &[#(#params),*],
                opaque_result: #opaque,
            }
        }
    }
}
