//! Code generation for a checked op: the companion module with the schema, the registration,
//! the lowering shim (`call`) and the XLA handler. Creates no errors of its own.
//!
//! What follows from the schema (operand and result order, shape rules, aliases, the partition
//! rule's indices) is not computed here: the runtime derives it once from the schema
//! (`plan.rs`), for the lowering (`lower::call_op`) and the handler (`ffi::run`) alike.

use super::model::{AttrKind, Intent, Kind, Op, Param, Ret, ShapeRule};
use super::parse::DtypeVar;
use super::shape_rule::Part;
use crate::tokens::respan;
use customop_shape::Expr;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

mod cuda;
mod handler;
mod lowering;
mod schema;
mod signature;

use cuda::expand_cuda;
use handler::expand_handler;
use lowering::expand_lowering;
use schema::expand_schema;
use signature::expand_signature;

/// The symbol of the op's exported XLA FFI handler.
pub(crate) fn handler_symbol(target: &str) -> String {
    let mut s = String::from("customop_handler_");
    for c in target.chars() {
        s.push(if c.is_ascii_alphanumeric() { c } else { '_' });
    }
    s
}

/// One result of the custom call, in the schema's order: outputs, an opaque result, updated
/// externals. (The typed shim needs the Rust type of each.)
enum Res<'a> {
    Output(&'a Param<'a>),
    Opaque(&'a syn::Type),
    Updated(&'a Ident, &'a syn::Type),
    /// An `#[inout]` tensor's result (after every other result).
    InPlace(&'a Ident),
}

fn results<'a>(op: &'a Op<'a>) -> Vec<Res<'a>> {
    let mut out: Vec<Res<'a>> = op
        .params
        .iter()
        .filter(|p| matches!(p.kind, Kind::Output { .. }))
        .map(Res::Output)
        .collect();
    if let Ret::Opaque(t) = &op.ret {
        out.push(Res::Opaque(t));
    }
    for p in &op.params {
        if let Kind::External {
            inner,
            mutable: true,
            ..
        } = p.kind
        {
            out.push(Res::Updated(&p.ident, inner));
        }
    }
    for p in &op.params {
        if let Kind::Tensor { inout: true, .. } = p.kind {
            out.push(Res::InPlace(&p.ident));
        }
    }
    out
}

/// The companion module. `handler`: whether to emit the XLA handler, which calls the user's
/// function and so needs its signature exactly as modelled (off when there are errors; nothing
/// in Rust names it).
pub(crate) fn expand(op: &Op<'_>, handler: bool) -> TokenStream {
    let kr = &op.krate;
    let p = quote!(#kr::__private);
    let ident = op.ident;
    let vis = op.vis;
    let name = &op.name;
    let target = &op.target;
    let api_version = op.api_version;
    let results = results(op);
    let schema = expand_schema(op, &p, &results, handler);
    let lowering = expand_lowering(op, &p, &results);
    let emit_handler = handler;
    let handler = if emit_handler {
        let cuda = expand_cuda(op, &p);
        let host = expand_handler(op, &p);
        quote!(#host #cuda)
    } else {
        TokenStream::new()
    };
    let symbol = handler_symbol(target);
    // The signature the vjp pairing is checked with, and the check. Only without errors (the
    // signature reads the parameters as modelled).
    let signature = if emit_handler {
        expand_signature(op, &p)
    } else {
        TokenStream::new()
    };
    let vjp_check = match (emit_handler, op.vjp) {
        (true, Some(bwd)) => {
            let bwd = in_companion(bwd);
            respan(
                quote!(const _: () = match #p::vjp::check(&signature(), &#bwd::signature()) {
                    ::core::result::Result::Ok(()) => (),
                    ::core::result::Result::Err(e) => ::core::panic!("{}", e.as_str()),
                };),
                bwd.span(),
            )
        }
        _ => TokenStream::new(),
    };
    let jvp_check = match (emit_handler, op.jvp) {
        (true, Some(tan)) => {
            let tan = in_companion(tan);
            respan(
                quote!(const _: () = match #p::vjp::check_jvp(&signature(), &#tan::signature()) {
                    ::core::result::Result::Ok(()) => (),
                    ::core::result::Result::Err(e) => ::core::panic!("{}", e.as_str()),
                };),
                tan.span(),
            )
        }
        _ => TokenStream::new(),
    };
    let doc = format!(
        "Companion items of the custom op `{name}` (target `{target}`): its schema, its lowering and its XLA handler."
    );

    quote! {
        #[doc = #doc]
        #[allow(non_snake_case, unused_imports)]
        #vis mod #ident {
            use super::*;

            /// The op's name.
            pub const NAME: &str = #name;
            /// The custom call target and FFI registration name.
            pub const TARGET: &str = #target;
            /// The custom call API version.
            pub const API_VERSION: u32 = #api_version;
            /// The exported handler's symbol.
            pub const HANDLER_SYMBOL: &str = #symbol;

            #schema

            #signature

            #vjp_check

            #jvp_check

            /// The op's native torch kernels (CPU and Meta), registered by `customop.torch.load`.
            static TORCH_KERNELS: #p::TorchKernels =
                #p::TorchKernels::new(torch_cpu_kernel, torch_meta_kernel);

            /// The op's CPU kernel in torch's dispatcher.
            ///
            /// # Safety
            /// Called by torch with the boxed stack of this op's schema.
            unsafe extern "C-unwind" fn torch_cpu_kernel(
                stack: *mut ::core::primitive::u64,
                n_args: ::core::primitive::u64,
                n_outs: ::core::primitive::u64,
            ) {
                // SAFETY: this function's contract, passed on.
                unsafe { #p::torch_kernel(&TORCH_KERNELS, false, stack, n_args, n_outs) }
            }

            /// The op's Meta kernel (shapes and types, no data).
            ///
            /// # Safety
            /// As `torch_cpu_kernel`.
            unsafe extern "C-unwind" fn torch_meta_kernel(
                stack: *mut ::core::primitive::u64,
                n_args: ::core::primitive::u64,
                n_outs: ::core::primitive::u64,
            ) {
                // SAFETY: this function's contract, passed on.
                unsafe { #p::torch_kernel(&TORCH_KERNELS, true, stack, n_args, n_outs) }
            }

            #p::inventory::submit! {
                #p::OpEntry {
                    schema,
                    handler_symbol: HANDLER_SYMBOL,
                }
            }

            #p::inventory::submit! {
                #p::TorchEntry {
                    schema,
                    kernels: &TORCH_KERNELS,
                }
            }

            #lowering

            #handler
        }
    }
}

/// A path of the user's, as written beside the function, resolved from inside the companion
/// module (`self::x` → `super::x`, `super::x` → `super::super::x`; a plain name resolves
/// through `use super::*`).
fn in_companion(path: &syn::Path) -> syn::Path {
    let mut path = path.clone();
    if let Some(first) = path.segments.first_mut()
        && first.ident == "self"
    {
        first.ident = Ident::new("super", first.ident.span());
    } else if path.leading_colon.is_none()
        && path.segments.first().is_some_and(|s| s.ident == "super")
    {
        let span = path.segments[0].ident.span();
        path.segments
            .insert(0, syn::PathSegment::from(Ident::new("super", span)));
    }
    path
}

/// `<T as Element>::ELEMENT_TYPE`, at the user's type.
fn element(p: &TokenStream, ty: &syn::Type) -> TokenStream {
    quote_spanned!(ty.span()=> <#ty as #p::types::ElementOf>::ELEMENT_TYPE)
}

/// The `where` clause of every generated function that names the user's types (`definition`,
/// the shim, the handler): one bound per type and trait, spanned (trait path included) at the
/// user's type. Inside those functions the bounds are assumed, so a type that does not satisfy
/// one is reported once: where `schema()` calls `definition()`, pointing at the bound, that is
/// at the user's type.
fn bounds(op: &Op<'_>, p: &TokenStream) -> TokenStream {
    // Every bound is higher-ranked (`for<'__f>`), even where the trait has no lifetime: a bound
    // without one that does not hold would also be reported where it is declared, a second
    // report of the same mistake.
    let bound = |ty: &syn::Type, tr: TokenStream| {
        let lead = respan(quote!(for<'__f>), ty.span());
        let tr = respan(tr, ty.span());
        quote!(#lead #ty: #tr)
    };
    let mut out: Vec<TokenStream> = Vec::new();
    for prm in &op.params {
        match &prm.kind {
            Kind::Tensor { elem, .. } | Kind::Output { elem, .. } => {
                let tr = if elem.packed {
                    quote!(#p::packed::Packed)
                } else {
                    quote!(#p::types::Element)
                };
                match op.var_of(elem.ty) {
                    // A type parameter is out of scope here: each of its types is bounded
                    // instead.
                    Some(v) => {
                        for t in &v.types {
                            out.push(bound(t, tr.clone()));
                        }
                    }
                    None => out.push(bound(elem.ty, tr)),
                }
            }
            Kind::External {
                inner,
                borrow: false,
                ..
            } => {
                out.push(bound(inner, quote!(#p::descriptor::Descriptor)));
            }
            Kind::External {
                inner,
                borrow: true,
                ..
            } => {
                out.push(bound(inner, quote!(#p::descriptor::ReprC)));
            }
            Kind::Attr(AttrKind::Value(t)) => {
                out.push(bound(t, quote!(#p::ffi::AttrValue<'__f>)));
            }
            Kind::Attr(AttrKind::Slice(_, e)) => {
                out.push(bound(e, quote!(#p::ffi::ArrayAttrElement)));
            }
            Kind::Attr(AttrKind::Ref(t)) => {
                out.push(bound(t, quote!(#p::ffi::AttrRef<'__f>)));
            }
            Kind::State { inner } => {
                out.push(bound(inner, quote!(#p::state::OpState)));
            }
            Kind::Attrs(_) | Kind::Invalid(..) => {}
        }
    }
    if let Ret::Opaque(t) = &op.ret {
        out.push(bound(t, quote!(#p::descriptor::Descriptor)));
    }
    // An attribute a shape rule reads as a value must be an integer.
    for prm in &op.params {
        let Kind::Output {
            shape: Some(shape), ..
        } = &prm.kind
        else {
            continue;
        };
        for d in shape.dims() {
            d.expr.visit(&mut |leaf| {
                let Expr::Attr(name) = leaf else { return };
                if let Some(Kind::Attr(AttrKind::Value(t))) =
                    op.params.iter().find(|q| q.ident == *name).map(|q| &q.kind)
                {
                    out.push(bound(t, quote!(#p::ffi::IntegerAttr)));
                }
            });
        }
    }
    // One bound per type and trait (`x: TensorRef<'_, f32>, y: TensorMut<'_, f32>` need one).
    let mut seen = std::collections::HashSet::new();
    out.retain(|b| seen.insert(b.to_string()));
    quote!(where #(#out),*)
}

fn option_usize(v: &Option<usize>) -> TokenStream {
    match v {
        Some(r) => quote!(::core::option::Option::Some(#r)),
        None => quote!(::core::option::Option::None),
    }
}
