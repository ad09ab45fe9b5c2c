//! The typed lowering shim (`call`): the op's custom call emitted into a `FuncBuilder`.

use super::*;

pub(super) fn expand_lowering(op: &Op<'_>, p: &TokenStream, results: &[Res<'_>]) -> TokenStream {
    let bounds = bounds(op, p);
    let lw = quote!(#p::lower);
    let sup = quote!(#p::op_call);
    let name = &op.name;

    // Parameters of `call`: everything but outputs, in declaration order.
    let mut args = Vec::new();
    let mut operands = Vec::new();
    let mut attrs = Vec::new();
    let mut extra = None;
    for prm in &op.params {
        let id = &prm.ident;
        match &prm.kind {
            Kind::Tensor { .. } => {
                args.push(quote!(#id: &#lw::Value));
                operands.push(quote!(#id));
            }
            Kind::External { inner, .. } => {
                args.push(quote_spanned!(inner.span()=> #id: &#lw::DescriptorValue<#inner>));
                operands.push(quote!(#id.value()));
            }
            Kind::Attr(kind) => {
                let ty = prm.ty;
                args.push(quote!(#id: #ty));
                attrs.push(match kind {
                    AttrKind::Value(t) | AttrKind::Slice(t, _) => quote_spanned!(ty.span()=>
                        <#t as #p::ffi::AttrValue<'_>>::lit(&#id)),
                    AttrKind::Ref(t) => quote_spanned!(ty.span()=>
                        <#t as #p::ffi::AttrRef<'_>>::lit(#id)),
                });
            }
            Kind::Attrs(_) => {
                args.push(quote!(#id: &[(&str, #p::ffi::AttrLit)]));
                extra = Some(quote! {
                    #id.iter().map(|(k, v)| (#p::ToString::to_string(k), v.clone())).collect()
                });
            }
            // Not modelled (reported): any type, so that calls written for the intended
            // signature still type-check.
            Kind::Invalid(_, _, Intent::Argument) => {
                args.push(quote!(_: impl ::core::marker::Sized));
            }
            Kind::Output { .. } | Kind::State { .. } | Kind::Invalid(..) => {}
        }
    }
    let ty_of = |r: &Res<'_>| match r {
        Res::Output(_) | Res::InPlace(_) => quote!(#lw::Value),
        Res::Opaque(t) | Res::Updated(_, t) => quote!(#lw::DescriptorValue<#t>),
    };
    let take = |r: &Res<'_>| match r {
        Res::Output(_) | Res::InPlace(_) => quote!(__r.value()),
        Res::Opaque(_) | Res::Updated(..) => quote!(__r.desc()),
    };
    let (ret_ty, ret_items, ret_expr) = match results {
        [] => (
            quote!(()),
            TokenStream::new(),
            quote!(::core::result::Result::Ok(())),
        ),
        [r] => (ty_of(r), TokenStream::new(), take(r)),
        _ => {
            let names: Vec<Ident> = results
                .iter()
                .map(|r| match r {
                    Res::Output(prm) => prm.ident.clone(),
                    Res::Updated(id, _) | Res::InPlace(id) => (*id).clone(),
                    Res::Opaque(_) => format_ident!("result"),
                })
                .collect();
            let fields = results.iter().zip(&names).map(|(r, n)| {
                let t = ty_of(r);
                quote!(pub #n: #t)
            });
            let inits = results.iter().zip(&names).map(|(r, n)| {
                let v = take(r);
                quote!(#n: #v?)
            });
            (
                quote!(Outputs),
                quote! {
                    /// The op's results.
                    #[derive(Debug, Clone)]
                    pub struct Outputs { #(#fields),* }
                },
                quote!(::core::result::Result::Ok(Outputs { #(#inits),* })),
            )
        }
    };
    let mut doc = format!(
        "Emits `{name}` as a `stablehlo.custom_call`: checks the operands, computes the result types from the shape rules."
    );
    if op.partition.is_some() {
        doc.push_str(" In a module with a device mesh, the call is wrapped in an `sdy.manual_computation` split as the op's partition rule says.");
    }
    let call = match extra {
        None => quote!(#sup::call_op(
            __f,
            definition(),
            &[#(#operands),*],
            ::core::convert::From::from([#(#attrs),*]),
        )),
        Some(extra) => quote!(#sup::call_op_with(
            __f,
            definition(),
            &[#(#operands),*],
            ::core::convert::From::from([#(#attrs),*]),
            #extra,
        )),
    };
    quote! {
        #p::if_mlir! {
            #ret_items

            #[doc = #doc]
            // One parameter per operand and attribute: as many as the user's function has.
            #[allow(clippy::too_many_arguments)]
            pub fn call(
                __f: &mut #lw::FuncBuilder<'_>,
                #(#args),*
            ) -> ::core::result::Result<#ret_ty, #lw::BuildError> #bounds {
                #[allow(unused_mut, unused_variables)]
                let mut __r = #sup::CallResults::new(#call?);
                #ret_expr
            }
        }
    }
}
