//! The op's schema as a constant (`SCHEMA`), with its registration in the link-time registry.

use super::*;

/// A `dtypes` variable's name and its element types, for the schema.
fn var_types(p: &TokenStream, v: &DtypeVar) -> (String, TokenStream) {
    let types = v.types.iter().map(|t| element(p, t));
    (
        v.ident.to_string(),
        quote!(::core::convert::From::from([#(#types),*])),
    )
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

pub(super) fn expand_schema(
    op: &Op<'_>,
    p: &TokenStream,
    results: &[Res<'_>],
    handler: bool,
) -> TokenStream {
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
            Kind::Tensor { elem, rank, inout } => {
                let rank = option_usize(rank);
                let param = match op.var_of(elem.ty) {
                    Some(v) => {
                        let (var, allowed) = var_types(p, v);
                        quote!(#p::tensor_param_var(#pname, #var, #allowed, #rank))
                    }
                    None => {
                        let e = element(p, elem.ty);
                        quote!(#p::tensor_param(#pname, #e, #rank))
                    }
                };
                if *inout {
                    quote!(#p::in_place(#param))
                } else {
                    param
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
            Kind::Attrs(_) => quote!(#p::attributes_param(#pname)),
            Kind::Output { .. } | Kind::State { .. } | Kind::Invalid(..) => return None,
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
                Some(ShapeRule::Parts(parts)) => parts
                    .iter()
                    .map(|part| match part {
                        Part::One(d) => {
                            let e = shape_expr(p, &d.expr);
                            quote!(#p::dim_rule(#e))
                        }
                        Part::Run {
                            param, start, stop, ..
                        } => {
                            let param = param.to_string();
                            let stop = match stop {
                                Some(v) => quote!(::core::option::Option::Some(#v)),
                                None => quote!(::core::option::Option::None),
                            };
                            quote!(#p::dims_of(#param, #start, #stop))
                        }
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
        Res::InPlace(id) => {
            let rname = id.to_string();
            quote!(#p::updated_tensor(#rname))
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
    let schema_expr = match (handler, op.jvp) {
        (true, Some(tan)) => {
            let tan = in_companion(tan);
            quote!(#p::with_jvp(#schema_expr, &signature(), &#tan::signature()))
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
