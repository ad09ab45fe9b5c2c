//! Code generation for a checked op: the companion module with the schema, the registration,
//! the lowering (`call`) and the XLA handler. Creates no errors of its own.

use super::model::{AttrKind, Dim, Kind, Op, Ret, Shape};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// One result of the custom call, in order.
enum Res<'a> {
    Output(&'a Ident),
    Opaque(&'a syn::Type),
    Updated(&'a Ident, &'a syn::Type),
}

fn elem_tokens(p: &TokenStream, name: &str) -> TokenStream {
    let variant = super::model::Elem::SUPPORTED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .unwrap_or("F32");
    let v = Ident::new(variant, Span::call_site());
    quote!(#p::types::ElementType::#v)
}

/// The element type and shape rule of output parameter `id`.
fn output_of<'m>(
    op: &'m Op<'_>,
    id: &Ident,
) -> Option<(&'m super::model::Elem, &'m Option<Shape>)> {
    op.params
        .iter()
        .find(|q| &q.ident == id)
        .and_then(|prm| match &prm.kind {
            Kind::Output { elem, shape, .. } => Some((elem, shape)),
            _ => None,
        })
}

/// `RANK` of a view type: the declared rank, or `ANY_RANK`.
fn rank_tokens(p: &TokenStream, rank: &Option<usize>) -> TokenStream {
    match rank {
        Some(r) => quote!(#r),
        None => quote!({ #p::tensor::ANY_RANK }),
    }
}

/// The symbol of the op's exported XLA FFI handler.
pub(crate) fn handler_symbol(target: &str) -> String {
    let mut s = String::from("customop_handler_");
    for c in target.chars() {
        s.push(if c.is_ascii_alphanumeric() { c } else { '_' });
    }
    s
}

pub(crate) fn expand(op: &Op<'_>) -> TokenStream {
    let kr = &op.krate;
    let p = quote!(#kr::__private);
    let ident = op.ident;
    let vis = op.vis;
    let name = &op.name;
    let target = &op.target;
    let api_version = op.api_version;
    let side_effect = op.side_effect
        || op
            .params
            .iter()
            .any(|p| matches!(p.kind, Kind::External { mutable: true, .. }));

    // Results, in the custom call's order.
    let mut results: Vec<Res<'_>> = Vec::new();
    for prm in &op.params {
        if let Kind::Output { .. } = prm.kind {
            results.push(Res::Output(&prm.ident));
        }
    }
    if let Ret::Opaque(t) = &op.ret {
        results.push(Res::Opaque(t));
    }
    for prm in &op.params {
        if let Kind::External {
            inner,
            mutable: true,
        } = prm.kind
        {
            results.push(Res::Updated(&prm.ident, inner));
        }
    }
    // Operands: externals and tensors, in declaration order.
    let operands: Vec<&super::model::Param<'_>> = op
        .params
        .iter()
        .filter(|p| matches!(p.kind, Kind::Tensor { .. } | Kind::External { .. }))
        .collect();

    let schema = expand_schema(op, &p, &results, &operands, side_effect);
    let lowering = expand_lowering(op, &p, &results, &operands, side_effect);
    let handler = expand_handler(op, &p, &results, &operands);
    let symbol = handler_symbol(target);
    let doc = format!(
        "Companion items of the custom op `{name}` (target `{target}`): its schema, its lowering and its XLA handler."
    );

    quote! {
        #[doc = #doc]
        #[allow(non_snake_case, unused_imports, clippy::all)]
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

            #p::inventory::submit! {
                #p::schema::registry::OpEntry {
                    schema,
                    handler_symbol: HANDLER_SYMBOL,
                }
            }

            #lowering

            #handler
        }
    }
}

fn expand_handler(
    op: &Op<'_>,
    p: &TokenStream,
    results: &[Res<'_>],
    operands: &[&super::model::Param<'_>],
) -> TokenStream {
    let ffi = quote!(#p::ffi);
    let symbol = Ident::new(&handler_symbol(&op.target), Span::call_site());
    let user_fn = op.ident;
    let n_operands = operands.len();
    let n_results = results.len();
    let res_index = |id: &Ident| {
        results
            .iter()
            .position(|r| matches!(r, Res::Output(o) | Res::Updated(o, _) if *o == id))
            .unwrap_or(0)
    };
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut call_args = Vec::new();
    let mut write_back = Vec::new();
    for prm in &op.params {
        let id = &prm.ident;
        let pname = id.to_string();
        let oi = operands
            .iter()
            .position(|q| q.ident == prm.ident)
            .unwrap_or(0);
        match &prm.kind {
            Kind::Tensor { elem, rank } => {
                let e = Ident::new(&elem.name, elem.span);
                let rank = rank_tokens(p, rank);
                inputs.push(quote!(let #id = __cx.tensor_ref::<#e, #rank>(#oi, #pname)?;));
                call_args.push(quote!(#id));
            }
            Kind::External { inner, mutable } => {
                if *mutable {
                    let ri = res_index(id);
                    inputs
                        .push(quote!(let mut #id: #inner = __cx.external::<#inner>(#oi, #pname)?;));
                    call_args.push(quote!(&mut #id));
                    write_back.push(quote!(__cx.write_descriptor::<#inner>(#ri, #pname, &#id)?;));
                } else {
                    inputs.push(quote!(let #id: #inner = __cx.external::<#inner>(#oi, #pname)?;));
                    call_args.push(quote!(&#id));
                }
            }
            Kind::Attr(a) => match a {
                AttrKind::Scalar(e) if e.name == "bool" => {
                    inputs.push(quote!(let #id: bool = __cx.attr_bool(#pname)?;));
                    call_args.push(quote!(#id));
                }
                AttrKind::Scalar(e) => {
                    let t = Ident::new(&e.name, e.span);
                    inputs.push(quote!(let #id: #t = __cx.attr_scalar::<#t>(#pname)?;));
                    call_args.push(quote!(#id));
                }
                AttrKind::Str => {
                    inputs.push(quote!(let #id: &str = __cx.attr_str(#pname)?;));
                    call_args.push(quote!(#id));
                }
                AttrKind::Array(e) => {
                    let t = Ident::new(&e.name, e.span);
                    inputs.push(quote!(let #id: &[#t] = __cx.attr_array::<#t>(#pname)?;));
                    call_args.push(quote!(#id));
                }
                AttrKind::Descriptor(t) => {
                    inputs.push(quote!(let #id: #t = __cx.attr_descriptor::<#t>(#pname)?;));
                    call_args.push(quote!(&#id));
                }
            },
            Kind::Output {
                elem, shape, rank, ..
            } => {
                let e = Ident::new(&elem.name, elem.span);
                let ri = res_index(id);
                let rank = rank_tokens(p, rank);
                let dims = match shape {
                    Some(Shape::Of(src)) => quote!(#src.dims()),
                    Some(Shape::Dims(ds)) => {
                        let items = ds.iter().map(|d| match d {
                            Dim::Const(c) => quote!(#c),
                            Dim::Of(src, dim, _) => {
                                let sname = src.to_string();
                                let msg = format!("custom op `{}`: output `{pname}` takes dimension {dim} of `{sname}`, which XLA passed with fewer dimensions", op.name);
                                quote!(match #src.dims().get(#dim) {
                                    ::core::option::Option::Some(d) => *d,
                                    ::core::option::Option::None => {
                                        return ::core::result::Result::Err(#p::tensor::OpError::invalid_argument(#msg));
                                    }
                                })
                            }
                        });
                        quote!(&[#(#items),*])
                    }
                    None => quote!(&[]),
                };
                let dims_id = format_ident!("__{}_dims", id);
                outputs.push(quote! {
                    let #dims_id: &[i64] = #dims;
                    let #id = __cx.tensor_mut::<#e, #rank>(#ri, #pname, #dims_id)?;
                });
                call_args.push(quote!(#id));
            }
            Kind::Invalid(..) => {}
        }
    }
    let finish = match &op.ret {
        Ret::Opaque(t) => {
            let ri = results
                .iter()
                .position(|r| matches!(r, Res::Opaque(_)))
                .unwrap_or(0);
            quote! {
                let #p::tensor::Opaque(__value) = __result?;
                __cx.write_descriptor::<#t>(#ri, "result", &__value)?;
            }
        }
        _ => quote!(__result?;),
    };
    let doc = format!(
        "The XLA FFI handler of `{}` (register it for target `{}`).",
        op.name, op.target
    );
    quote! {
        #[doc = #doc]
        #[unsafe(no_mangle)]
        pub extern "C" fn #symbol(
            __frame: *mut #ffi::abi::XLA_FFI_CallFrame,
        ) -> *mut #ffi::abi::XLA_FFI_Error {
            // SAFETY: XLA calls a typed-FFI handler with a call frame that is valid for the
            // duration of the call (or null, which `handle` refuses).
            unsafe {
                #ffi::handle(__frame, NAME, |__cx| {
                    __cx.expect_counts(#n_operands, #n_results)?;
                    #(#inputs)*
                    #(#outputs)*
                    let __result = super::#user_fn(#(#call_args),*);
                    #finish
                    #(#write_back)*
                    ::core::result::Result::Ok(())
                })
            }
        }
    }
}

fn expand_schema(
    op: &Op<'_>,
    p: &TokenStream,
    results: &[Res<'_>],
    operands: &[&super::model::Param<'_>],
    side_effect: bool,
) -> TokenStream {
    let name = &op.name;
    let target = &op.target;
    let api_version = op.api_version;
    let sch = quote!(#p::schema);
    let s = quote!(#p::ToString::to_string);
    let params = op.params.iter().filter_map(|prm| {
        let pname = prm.ident.to_string();
        let kind = match &prm.kind {
            Kind::Tensor { elem, rank } => {
                let e = elem_tokens(p, &elem.name);
                let rank = match rank {
                    Some(r) => quote!(::core::option::Option::Some(#r)),
                    None => quote!(::core::option::Option::None),
                };
                quote!(#sch::ParamKind::Tensor { dtype: #e, rank: #rank })
            }
            Kind::External { inner, mutable } => {
                let layout = quote_spanned!(inner.span()=>
                    <#inner as #p::descriptor::Descriptor>::layout());
                quote!(#sch::ParamKind::External {
                    mutable: #mutable,
                    descriptor: ::core::clone::Clone::clone(#layout),
                })
            }
            Kind::Attr(a) => {
                let ty = match a {
                    AttrKind::Scalar(e) if e.name == "bool" => quote!(#sch::AttrType::Bool),
                    AttrKind::Scalar(e) => {
                        let e = elem_tokens(p, &e.name);
                        quote!(#sch::AttrType::Scalar { dtype: #e })
                    }
                    AttrKind::Str => quote!(#sch::AttrType::Str),
                    AttrKind::Array(e) => {
                        let e = elem_tokens(p, &e.name);
                        quote!(#sch::AttrType::Array { dtype: #e })
                    }
                    AttrKind::Descriptor(t) => {
                        let layout = quote_spanned!(t.span()=>
                            <#t as #p::descriptor::Descriptor>::layout());
                        quote!(#sch::AttrType::Descriptor {
                            descriptor: ::core::clone::Clone::clone(#layout),
                        })
                    }
                };
                quote!(#sch::ParamKind::Attribute { ty: #ty })
            }
            Kind::Output { .. } | Kind::Invalid(..) => return None,
        };
        Some(quote!(#sch::ParamSchema { name: #s(#pname), kind: #kind }))
    });
    let res = results.iter().map(|r| match r {
        Res::Output(id) => {
            let Some((elem, shape)) = output_of(op, id) else {
                return TokenStream::new();
            };
            let e = elem_tokens(p, &elem.name);
            let dims: Vec<TokenStream> = match shape {
                Some(Shape::Of(src)) => {
                    let src = src.to_string();
                    vec![quote!(#sch::DimRule::ShapeOf { param: #s(#src) })]
                }
                Some(Shape::Dims(ds)) => ds
                    .iter()
                    .map(|d| match d {
                        Dim::Const(c) => quote!(#sch::DimRule::Const { size: #c }),
                        Dim::Of(src, dim, _) => {
                            let src = src.to_string();
                            quote!(#sch::DimRule::DimOf { param: #s(#src), dim: #dim })
                        }
                    })
                    .collect(),
                None => Vec::new(),
            };
            let rname = id.to_string();
            quote!(#sch::ResultSchema {
                name: #s(#rname),
                kind: #sch::ResultKind::Tensor {
                    dtype: #e,
                    shape: ::core::convert::From::from([#(#dims),*]),
                },
            })
        }
        Res::Opaque(t) => {
            let layout = quote_spanned!(t.span()=> <#t as #p::descriptor::Descriptor>::layout());
            quote!(#sch::ResultSchema {
                name: #s("result"),
                kind: #sch::ResultKind::Opaque {
                    descriptor: ::core::clone::Clone::clone(#layout),
                },
            })
        }
        Res::Updated(id, _) => {
            let rname = id.to_string();
            let operand = operands.iter().position(|q| &q.ident == *id).unwrap_or(0);
            quote!(#sch::ResultSchema {
                name: #s(#rname),
                kind: #sch::ResultKind::UpdatedExternal { param: #s(#rname), operand: #operand },
            })
        }
    });
    let partition = expand_partition(op, p, results, operands);
    quote! {
        /// The op's schema.
        pub fn schema() -> &'static #sch::OpSchema {
            static SCHEMA: #p::OnceLock<#sch::OpSchema> = #p::OnceLock::new();
            SCHEMA.get_or_init(|| #sch::OpSchema {
                name: #s(#name),
                target: #s(#target),
                api_version: #api_version,
                side_effect: #side_effect,
                params: ::core::convert::From::from([#(#params),*]),
                results: ::core::convert::From::from([#(#res),*]),
                partition: #partition,
            })
        }

        /// The op's schema in PyTorch FunctionSchema syntax.
        pub fn schema_string() -> #p::String {
            schema().schema_string()
        }
    }
}

/// The schema's `PartitionRule` (or `None`): the inputs' entries by operand index, and each
/// output's factors as its shape rule carries them over.
fn expand_partition(
    op: &Op<'_>,
    p: &TokenStream,
    results: &[Res<'_>],
    operands: &[&super::model::Param<'_>],
) -> TokenStream {
    let Some(partition) = op.partition else {
        return quote!(::core::option::Option::None);
    };
    let sch = quote!(#p::schema);
    let s = quote!(#p::ToString::to_string);
    let mut factors: Vec<String> = Vec::new();
    for f in partition
        .entries
        .iter()
        .flat_map(|e| e.dims.iter().flatten())
    {
        let f = f.to_string();
        if !factors.contains(&f) {
            factors.push(f);
        }
    }
    let dims_tokens = |dims: Vec<Option<&Ident>>| {
        let items = dims.into_iter().map(|d| match d {
            Some(f) => {
                let f = f.to_string();
                quote!(::core::option::Option::Some(#s(#f)))
            }
            None => quote!(::core::option::Option::None),
        });
        quote!(::core::convert::From::from([#(#items),*]))
    };
    let entry = |name: &Ident, index: usize, dims: Vec<Option<&Ident>>| {
        let name = name.to_string();
        let dims = dims_tokens(dims);
        quote!(#sch::FactorDims { name: #s(#name), index: #index, dims: #dims })
    };
    let ins = operands.iter().enumerate().filter_map(|(i, prm)| {
        op.partition_of(&prm.ident)
            .map(|e| entry(&prm.ident, i, e.dims.iter().map(Option::as_ref).collect()))
    });
    let outs = results.iter().enumerate().filter_map(|(i, r)| {
        let Res::Output(id) = r else { return None };
        let (_, Some(shape)) = output_of(op, id)? else {
            return None;
        };
        op.output_factors(shape).map(|dims| entry(id, i, dims))
    });
    quote!(::core::option::Option::Some(#sch::PartitionRule {
        factors: ::core::convert::From::from([#(#s(#factors)),*]),
        operands: ::core::convert::From::from([#(#ins),*]),
        results: ::core::convert::From::from([#(#outs),*]),
    }))
}

fn expand_lowering(
    op: &Op<'_>,
    p: &TokenStream,
    results: &[Res<'_>],
    operands: &[&super::model::Param<'_>],
    side_effect: bool,
) -> TokenStream {
    let lw = quote!(#p::lower);
    let sup = quote!(#p::op_support);
    let name = &op.name;

    // Parameters of `call`: everything but outputs, in declaration order.
    let args = op.params.iter().filter_map(|prm| {
        let id = &prm.ident;
        match &prm.kind {
            Kind::Tensor { .. } => Some(quote!(#id: &#lw::Value)),
            Kind::External { inner, .. } => {
                Some(quote_spanned!(inner.span()=> #id: &#lw::Desc<#inner>))
            }
            Kind::Attr(_) => {
                let ty = prm.ty;
                Some(quote!(#id: #ty))
            }
            Kind::Output { .. } | Kind::Invalid(..) => None,
        }
    });
    let checks = op.params.iter().filter_map(|prm| {
        let id = &prm.ident;
        let pname = id.to_string();
        match &prm.kind {
            Kind::Tensor { elem, rank } => {
                let e = elem_tokens(p, &elem.name);
                let rank = match rank {
                    Some(r) => quote!(::core::option::Option::Some(#r)),
                    None => quote!(::core::option::Option::None),
                };
                Some(quote!(#sup::check_operand(NAME, #pname, #id, #e, #rank)?;))
            }
            _ => None,
        }
    });
    let operand_values = operands.iter().map(|prm| {
        let id = &prm.ident;
        match prm.kind {
            Kind::External { .. } => quote!(#id.value()),
            _ => quote!(#id),
        }
    });
    let result_types = results.iter().map(|r| match r {
        Res::Output(id) => {
            let Some((elem, shape)) = output_of(op, id) else {
                return TokenStream::new();
            };
            let e = elem_tokens(p, &elem.name);
            let oname = id.to_string();
            let shape = match shape {
                Some(Shape::Of(src)) => quote!(#src.shape().to_vec()),
                Some(Shape::Dims(ds)) => {
                    let dims = ds.iter().map(|d| match d {
                        Dim::Const(c) => quote!(#c),
                        Dim::Of(src, dim, _) => {
                            let sname = src.to_string();
                            quote!(#sup::dim_of(NAME, #oname, #sname, #src, #dim)?)
                        }
                    });
                    quote!(::core::convert::From::from([#(#dims),*]))
                }
                None => quote!(#p::Vec::new()),
            };
            quote!(#sup::output_type(NAME, #oname, #e, #shape)?)
        }
        Res::Opaque(t) => quote!(#sup::descriptor_type::<#t>(NAME, "opaque result")?),
        Res::Updated(id, _) => quote!(::core::clone::Clone::clone(#id.value().ty())),
    });
    let aliases = results.iter().enumerate().filter_map(|(ri, r)| match r {
        Res::Updated(id, _) => {
            let oi = operands.iter().position(|q| &q.ident == *id).unwrap_or(0);
            Some(quote!((#ri, #oi)))
        }
        _ => None,
    });
    let mark_mutable = results.iter().filter_map(|r| match r {
        Res::Updated(id, _) => Some(quote!(__f.mark_external_mutable(#id.value());)),
        _ => None,
    });
    let config = op.params.iter().filter_map(|prm| {
        let id = &prm.ident;
        let key = id.to_string();
        let Kind::Attr(a) = &prm.kind else {
            return None;
        };
        let value = match a {
            AttrKind::Scalar(e) => match e.name.as_str() {
                "bool" => quote!(#lw::Attr::Bool(#id)),
                "f32" => quote!(#lw::Attr::F32(#id)),
                "f64" => quote!(#lw::Attr::F64(#id)),
                "i32" => quote!(#lw::Attr::I32(#id)),
                "i64" => quote!(#lw::Attr::I64(#id)),
                other => {
                    let mlir = match other {
                        "u8" => "ui8",
                        "u16" => "ui16",
                        "u32" => "ui32",
                        "u64" => "ui64",
                        o => o,
                    };
                    quote!(#lw::Attr::Int(#id as i128, #mlir))
                }
            },
            AttrKind::Str => quote!(#lw::Attr::Str(::core::convert::From::from(#id.as_bytes()))),
            AttrKind::Array(_) => quote!(#sup::array_attr(#id)),
            AttrKind::Descriptor(t) => {
                quote!(#lw::Attr::Str(<#t as #p::descriptor::Descriptor>::pack(#id)))
            }
        };
        Some(quote!((#p::ToString::to_string(#key), #value)))
    });

    // What `call` returns.
    let result_names: Vec<Ident> = results
        .iter()
        .map(|r| match r {
            Res::Output(id) | Res::Updated(id, _) => (*id).clone(),
            Res::Opaque(_) => format_ident!("result"),
        })
        .collect();
    let wrap = |r: &Res<'_>, v: TokenStream| match r {
        Res::Output(_) => v,
        Res::Opaque(t) | Res::Updated(_, t) => quote!(#lw::Desc::<#t>::from_value_unchecked(#v)),
    };
    let ty_of = |r: &Res<'_>| match r {
        Res::Output(_) => quote!(#lw::Value),
        Res::Opaque(t) | Res::Updated(_, t) => quote!(#lw::Desc<#t>),
    };
    let take = quote!(__values.next().ok_or_else(|| #lw::BuildError::new("custom_call made too few results"))?);
    let (ret_ty, ret_items, ret_expr) = match results.len() {
        0 => (quote!(()), TokenStream::new(), quote!(())),
        1 => {
            let r = &results[0];
            (ty_of(r), TokenStream::new(), wrap(r, take.clone()))
        }
        _ => {
            let fields = results.iter().zip(&result_names).map(|(r, n)| {
                let t = ty_of(r);
                quote!(pub #n: #t)
            });
            let inits = results.iter().zip(&result_names).map(|(r, n)| {
                let v = wrap(r, take.clone());
                quote!(#n: #v)
            });
            (
                quote!(Outputs),
                quote! {
                    /// The op's results.
                    #[derive(Debug, Clone)]
                    pub struct Outputs { #(#fields),* }
                },
                quote!(Outputs { #(#inits),* }),
            )
        }
    };
    let partition = match op.partition {
        Some(_) => quote!(schema().partition.as_ref()),
        None => quote!(::core::option::Option::None),
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
            ) -> ::core::result::Result<#ret_ty, #lw::BuildError> {
                #(#checks)*
                let __result_types: #p::Vec<#p::types::TensorType> =
                    ::core::convert::From::from([#(#result_types),*]);
                let __operands: #p::Vec<&#lw::Value> = ::core::convert::From::from([#(#operand_values),*]);
                let __aliases: #p::Vec<(usize, usize)> = ::core::convert::From::from([#(#aliases),*]);
                #(#mark_mutable)*
                let __call = #lw::CustomCall {
                    target: TARGET,
                    operands: &__operands,
                    results: &__result_types,
                    api_version: #lw::ApiVersion::TypedFfi,
                    backend_config: #lw::BackendConfig::Dict(::core::convert::From::from([#(#config),*])),
                    has_side_effect: #side_effect,
                    output_operand_aliases: &__aliases,
                    partition: #partition,
                };
                #[allow(unused_mut, unused_variables)]
                let mut __values = __f.custom_call(__call)?.into_iter();
                ::core::result::Result::Ok(#ret_expr)
            }
        }
    }
}
