//! Code generation for a checked op: the companion module with the schema, the registration,
//! the lowering shim (`call`) and the XLA handler. Creates no errors of its own.
//!
//! What follows from the schema (operand and result order, shape rules, aliases, the partition
//! rule's indices) is not computed here: the runtime derives it once from the schema
//! (`plan.rs`), for the lowering (`lower::call_op`) and the handler (`ffi::run`) alike.

use super::model::{AttrKind, Intent, Kind, Op, Param, Ret, ShapeRule};
use super::parse::DtypeVar;
use crate::tokens::respan;
use customop_shape::Expr;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

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
        expand_handler(op, &p)
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

            #p::inventory::submit! {
                #p::OpEntry {
                    schema,
                    handler_symbol: HANDLER_SYMBOL,
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

/// The companion's `signature()`: what the vjp pairing is checked with (`vjp::check`).
fn expand_signature(op: &Op<'_>, p: &TokenStream) -> TokenStream {
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
            Kind::Tensor { elem, rank } => (quote!(Input), dtype(elem.ty), *rank, none(), none()),
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
            Kind::Invalid(..) => return None,
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

/// A `dtypes` variable's name and its element types, for the schema.
fn var_types(p: &TokenStream, v: &DtypeVar) -> (String, TokenStream) {
    let types = v.types.iter().map(|t| element(p, t));
    (
        v.ident.to_string(),
        quote!(::core::convert::From::from([#(#types),*])),
    )
}

/// `<T as Element>::ELEMENT_TYPE`, at the user's type.
fn element(p: &TokenStream, ty: &syn::Type) -> TokenStream {
    quote_spanned!(ty.span()=> <#ty as #p::types::Element>::ELEMENT_TYPE)
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
            Kind::Tensor { elem, .. } | Kind::Output { elem, .. } => match op.var_of(elem.ty) {
                // A type parameter is out of scope here: each of its types is bounded instead.
                Some(v) => {
                    for t in &v.types {
                        out.push(bound(t, quote!(#p::types::Element)));
                    }
                }
                None => out.push(bound(elem.ty, quote!(#p::types::Element))),
            },
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
            Kind::Invalid(..) => {}
        }
    }
    if let Ret::Opaque(t) = &op.ret {
        out.push(bound(t, quote!(#p::descriptor::Descriptor)));
    }
    // An attribute a shape rule reads as a value must be an integer.
    for prm in &op.params {
        let Kind::Output {
            shape: Some(ShapeRule::Dims(dims)),
            ..
        } = &prm.kind
        else {
            continue;
        };
        for d in dims {
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

/// The runtime's constructors building a shape expression.
fn shape_expr(p: &TokenStream, e: &Expr<syn::Ident>) -> TokenStream {
    match e {
        Expr::Lit(v) => quote!(#p::expr_lit(#v)),
        Expr::Dim { param, dim } => {
            let param = param.to_string();
            quote!(#p::expr_dim(#param, #dim))
        }
        Expr::Attr(n) => {
            let n = n.to_string();
            quote!(#p::expr_attr(#n))
        }
        Expr::Len(n) => {
            let n = n.to_string();
            quote!(#p::expr_len(#n))
        }
        Expr::Bin { op, lhs, rhs } => {
            let op = syn::Ident::new(&format!("{op:?}"), proc_macro2::Span::call_site());
            let (l, r) = (shape_expr(p, lhs), shape_expr(p, rhs));
            quote!(#p::expr_bin(#p::BinOp::#op, #l, #r))
        }
    }
}

fn option_usize(v: &Option<usize>) -> TokenStream {
    match v {
        Some(r) => quote!(::core::option::Option::Some(#r)),
        None => quote!(::core::option::Option::None),
    }
}

fn expand_schema(op: &Op<'_>, p: &TokenStream, results: &[Res<'_>], handler: bool) -> TokenStream {
    let bounds = bounds(op, p);
    let name = &op.name;
    let target = &op.target;
    let api_version = op.api_version;
    // Only the `side_effect` option: a `&mut` external's new state is a result the program
    // uses (and returns), so XLA keeps the call without it, and JAX's effectful dispatch
    // (9x a plain op's cost per jitted call, benches/compare/mut_jit.py) is not paid for it.
    let side_effect = op.side_effect;
    let sch = quote!(#p::schema);
    let params = op.params.iter().filter_map(|prm| {
        let pname = prm.ident.to_string();
        Some(match &prm.kind {
            Kind::Tensor { elem, rank } => {
                let rank = option_usize(rank);
                match op.var_of(elem.ty) {
                    Some(v) => {
                        let (var, allowed) = var_types(p, v);
                        quote!(#p::tensor_param_var(#pname, #var, #allowed, #rank))
                    }
                    None => {
                        let e = element(p, elem.ty);
                        quote!(#p::tensor_param(#pname, #e, #rank))
                    }
                }
            }
            Kind::External { inner, mutable, .. } => {
                let layout = quote_spanned!(inner.span()=>
                    <#inner as #p::descriptor::Descriptor>::layout());
                quote!(#p::external_param(#pname, #mutable, #layout))
            }
            Kind::Attr(AttrKind::Value(t) | AttrKind::Slice(t, _)) => {
                let ty =
                    quote_spanned!(t.span()=> <#t as #p::ffi::AttrValue<'static>>::attr_type());
                quote!(#p::attr_param(#pname, #ty))
            }
            Kind::Attr(AttrKind::Ref(t)) => {
                let ty = quote_spanned!(t.span()=> <#t as #p::ffi::AttrRef<'static>>::attr_type());
                quote!(#p::attr_param(#pname, #ty))
            }
            Kind::Output { .. } | Kind::Invalid(..) => return None,
        })
    });
    let res = results.iter().map(|r| match r {
        Res::Output(prm) => {
            let Kind::Output { elem, shape, .. } = &prm.kind else {
                return TokenStream::new();
            };
            let dims: Vec<TokenStream> = match shape {
                Some(ShapeRule::Of(src)) => {
                    let src = src.to_string();
                    vec![quote!(#p::shape_of(#src))]
                }
                Some(ShapeRule::Dims(ds)) => ds
                    .iter()
                    .map(|d| {
                        let e = shape_expr(p, &d.expr);
                        quote!(#p::dim_rule(#e))
                    })
                    .collect(),
                None | Some(ShapeRule::Unread) => Vec::new(),
            };
            let rname = prm.ident.to_string();
            let dims = quote!(::core::convert::From::from([#(#dims),*]));
            match op.var_of(elem.ty) {
                Some(v) => {
                    let (var, allowed) = var_types(p, v);
                    quote!(#p::tensor_result_var(#rname, #var, #allowed, #dims))
                }
                None => {
                    let e = element(p, elem.ty);
                    quote!(#p::tensor_result(#rname, #e, #dims))
                }
            }
        }
        Res::Opaque(t) => {
            let layout = quote_spanned!(t.span()=> <#t as #p::descriptor::Descriptor>::layout());
            quote!(#p::opaque_result(#layout))
        }
        Res::Updated(id, _) => {
            let rname = id.to_string();
            quote!(#p::updated_external(#rname))
        }
    });
    let partition = match op.partition {
        None => quote!(::core::option::Option::None),
        Some(partition) => {
            let entries = partition.entries.iter().map(|e| {
                let param = e.param.to_string();
                let dims = e.dims.iter().map(|d| match d {
                    Some(f) => {
                        let f = f.to_string();
                        quote!(::core::option::Option::Some(#f))
                    }
                    None => quote!(::core::option::Option::None),
                });
                quote!((#param, ::core::convert::From::from([#(#dims),*])))
            });
            quote!(::core::option::Option::Some(#p::partition_rule(::core::convert::From::from([#(#entries),*]))))
        }
    };
    // The handler's address, recorded with the definition (inside `definition`, whose bounds
    // are the handler's: naming the handler anywhere else would report a type that does not
    // satisfy them a second time), for runners in this process to register.
    let with_handler = if handler {
        let f = Ident::new(&handler_symbol(&op.target), Span::call_site());
        quote!(.with_handler(#f))
    } else {
        TokenStream::new()
    };
    let schema_expr = quote!(#p::op_schema(
        #name,
        #target,
        #api_version,
        #side_effect,
        ::core::convert::From::from([#(#params),*]),
        ::core::convert::From::from([#(#res),*]),
        #partition,
    ));
    let schema_expr = match (handler, op.vjp) {
        (true, Some(bwd)) => {
            let bwd = in_companion(bwd);
            quote!(#p::with_vjp(#schema_expr, &signature(), &#bwd::signature()))
        }
        _ => schema_expr,
    };
    quote! {
        /// The op's definition: its schema and the plan the runtime derives from it once (operand
        /// and result order, shape rules, aliases, partitioning), which the lowering and the
        /// handler both read.
        pub fn definition() -> &'static #p::OpDef #bounds {
            static DEF: #p::OnceLock<#p::OpDef> = #p::OnceLock::new();
            DEF.get_or_init(|| #p::OpDef::new(#schema_expr)#with_handler)
        }

        /// The op's schema.
        pub fn schema() -> &'static #sch::OpSchema {
            definition().schema()
        }

        /// The op's schema in PyTorch FunctionSchema syntax.
        pub fn schema_string() -> #p::String {
            schema().schema_string()
        }
    }
}

fn expand_handler(op: &Op<'_>, p: &TokenStream) -> TokenStream {
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
            Kind::Tensor { .. } => {
                binds.push(quote_spanned!(at=> let #id = __b.input()?;));
                call_args.push(quote!(#id));
            }
            Kind::Output { .. } => {
                binds.push(quote_spanned!(at=> let #id = __b.output()?;));
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
            Kind::Invalid(..) => {}
        }
    }
    // A generic op's kernel is called with the types `dispatch` chose, in the order of its type
    // parameters (each bound to a local type alias, `__T_<name>`).
    let type_args: Vec<Ident> = op
        .dtype_vars
        .iter()
        .map(|v| format_ident!("__T_{}", v.ident))
        .collect();
    let turbofish = if op.dtype_vars.is_empty() {
        TokenStream::new()
    } else {
        let order = op.generic_order.iter().map(|i| &type_args[*i]);
        quote!(::<#(#order),*>)
    };
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
    quote! {
        #[doc = #doc]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn #symbol(
            frame: *mut #ffi::abi::XLA_FFI_CallFrame,
        ) -> *mut #ffi::abi::XLA_FFI_Error #bounds {
            // SAFETY: this function's contract: `frame` is null (which `run` refuses) or a call
            // frame valid for the duration of the call.
            unsafe {
                #ffi::run(frame, definition(), |__b| { #body })
            }
        }
    }
}

/// The handler's body for each combination of a generic op's types: for each `dtypes`
/// variable, the element type XLA passed (`Binder::dtype_var`) picks one of its listed types,
/// bound as `__T_<name>` for `body`; a type outside the list was already refused there.
fn dispatch(op: &Op<'_>, p: &TokenStream, body: &TokenStream) -> TokenStream {
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
                if #dt == <#t as #p::types::Element>::ELEMENT_TYPE {
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

fn expand_lowering(op: &Op<'_>, p: &TokenStream, results: &[Res<'_>]) -> TokenStream {
    let bounds = bounds(op, p);
    let lw = quote!(#p::lower);
    let sup = quote!(#p::op_call);
    let name = &op.name;

    // Parameters of `call`: everything but outputs, in declaration order.
    let mut args = Vec::new();
    let mut operands = Vec::new();
    let mut attrs = Vec::new();
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
            // Not modelled (reported): any type, so that calls written for the intended
            // signature still type-check.
            Kind::Invalid(_, _, Intent::Argument) => {
                args.push(quote!(_: impl ::core::marker::Sized));
            }
            Kind::Output { .. } | Kind::Invalid(..) => {}
        }
    }
    let ty_of = |r: &Res<'_>| match r {
        Res::Output(_) => quote!(#lw::Value),
        Res::Opaque(t) | Res::Updated(_, t) => quote!(#lw::DescriptorValue<#t>),
    };
    let take = |r: &Res<'_>| match r {
        Res::Output(_) => quote!(__r.value()),
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
                    Res::Updated(id, _) => (*id).clone(),
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
    quote! {
        #p::if_mlir! {
            #ret_items

            #[doc = #doc]
            pub fn call(
                __f: &mut #lw::FuncBuilder<'_>,
                #(#args),*
            ) -> ::core::result::Result<#ret_ty, #lw::BuildError> #bounds {
                #[allow(unused_mut, unused_variables)]
                let mut __r = #sup::CallResults::new(#sup::call_op(
                    __f,
                    definition(),
                    &[#(#operands),*],
                    ::core::convert::From::from([#(#attrs),*]),
                )?);
                #ret_expr
            }
        }
    }
}
