//! Code generation for a checked descriptor. Creates no errors of its own.

use super::check::discriminant_value;
use super::model::{Body, Descriptor, Enum, Field, FieldType};
use crate::tokens::respan;
use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

pub(crate) fn expand(d: &Descriptor<'_>) -> TokenStream {
    match &d.body {
        Body::Struct(fields) => expand_struct(d, fields),
        Body::Enum(e) => expand_enum(d, e),
        Body::Unsupported(..) => TokenStream::new(),
    }
}

fn expand_struct(d: &Descriptor<'_>, fields: &[Field<'_>]) -> TokenStream {
    let ident = d.ident;
    let name = &d.name;
    let kr = &d.krate;
    let p = quote!(#kr::__private);
    let de = quote!(#p::descriptor);
    let h = quote!(#p::descriptor::__derive);

    let fixed: Vec<&Field<'_>> = fields
        .iter()
        .filter(|f| matches!(f.kind, FieldType::Fixed | FieldType::Array(_)))
        .collect();
    let n_fixed = fixed.len();
    let has_tails = fixed.len() != fields.len();

    // `(SIZE, ALIGN)` of each fixed field.
    let sizes: Vec<TokenStream> = fixed
        .iter()
        .map(|f| {
            let ty = f.ty;
            quote!((<#ty as #de::Wire>::SIZE, <#ty as #de::Wire>::ALIGN))
        })
        .collect();
    let layout = quote!(#h::layout_offsets::<#n_fixed>([#(#sizes),*]));
    // Every fixed field type and tail element type must be a descriptor field: one `where`
    // bound each, spanned at the type. A bound that does not hold is then reported once, there,
    // and not again at every use of the type inside the impls.
    // (The trait's path is re-spanned too: a predicate whose tokens come from the user and from
    // the macro would be reported at the derive.)
    let bound = |ty: &syn::Type| {
        let wire = respan(quote!(#de::Wire), ty.span());
        quote!(#ty: #wire)
    };
    let bounds: Vec<TokenStream> = fields
        .iter()
        .filter_map(|f| match &f.kind {
            FieldType::VecTail(elem, _) => Some(bound(elem)),
            FieldType::StringTail => None,
            _ => Some(bound(f.ty)),
        })
        .collect();
    let where_clause = quote!(where #(#bounds),*);

    let offset = |i: usize| quote!(<Self as #de::Descriptor>::__OFFSETS[#i]);
    let fixed_size = quote!(<Self as #de::Descriptor>::FIXED_SIZE);
    let mut fixed_index = 0usize;
    let field_layouts: Vec<TokenStream> = fields
        .iter()
        .map(|f| {
            let fname = f.ident.to_string();
            let ty = f.ty;
            match &f.kind {
                FieldType::VecTail(elem, _) => quote! {
                    #p::tail_field(#fname, #p::vec_type(<#elem as #de::Wire>::describe()))
                },
                FieldType::StringTail => quote!(#p::tail_field(#fname, #p::string_type())),
                _ => {
                    let off = offset(fixed_index);
                    fixed_index += 1;
                    quote! {
                        #p::fixed_field(
                            #fname,
                            #off,
                            <#ty as #de::Wire>::SIZE,
                            <#ty as #de::Wire>::describe(),
                        )
                    }
                }
            }
        })
        .collect();

    // Calls that need `T: Wire` are spanned at the field type too, so that a type that is not
    // a descriptor field is reported only there.
    let writes_fixed = fixed.iter().enumerate().map(|(i, f)| {
        let fi = f.ident;
        let off = offset(i);
        quote_spanned!(f.ty.span()=> #h::write_field(&self.#fi, __payload, #off);)
    });
    let writes_fixed2 = writes_fixed.clone();
    let tail_lens = fields.iter().filter_map(|f| {
        let fi = f.ident;
        match &f.kind {
            FieldType::VecTail(elem, _) => Some(
                quote_spanned!(elem.span()=> __at = #h::tail_len_vec::<#elem>(__at, self.#fi.len());),
            ),
            FieldType::StringTail => Some(quote!(__at = #h::tail_len_string(__at, self.#fi.len());)),
            _ => None,
        }
    });
    let tail_writes = fields.iter().filter_map(|f| {
        let fi = f.ident;
        match &f.kind {
            FieldType::VecTail(elem, _) => Some(
                quote_spanned!(elem.span()=> __at = #h::write_vec_tail(&self.#fi, __payload, __at);),
            ),
            FieldType::StringTail => Some(quote!(__at = #h::write_string_tail(&self.#fi, __payload, __at);)),
            _ => None,
        }
    });
    // Padding between fixed fields and after the last one must be zero.
    let paddings = (0..n_fixed).map(|i| {
        let ty = fixed[i].ty;
        let start = offset(i);
        let end = if i + 1 < n_fixed {
            offset(i + 1)
        } else {
            fixed_size.clone()
        };
        quote_spanned!(ty.span()=> #h::check_zero(__payload, #start + <#ty as #de::Wire>::SIZE, #end)?;)
    });
    let reads = fields.iter().map(|f| {
        let fi = f.ident;
        let fname = f.ident.to_string();
        let ty = f.ty;
        match &f.kind {
            FieldType::VecTail(elem, _) => quote_spanned! {elem.span()=>
                let (#fi, __end) = #h::read_vec_tail(__payload, __at, #fname)?;
                __at = __end;
            },
            FieldType::StringTail => quote! {
                let (#fi, __end) = #h::read_string_tail(__payload, __at, #fname)?;
                __at = __end;
            },
            _ => {
                let i = fixed.iter().position(|g| g.ident == f.ident).unwrap_or(0);
                let off = offset(i);
                quote_spanned!(ty.span()=> let #fi: #ty = #h::read_field(__payload, #off, #fname)?;)
            }
        }
    });
    let names = fields.iter().map(|f| f.ident);
    let placeholders = fields.iter().map(|f| {
        let fi = f.ident;
        let ty = f.ty;
        quote!(#fi: <#ty as #de::Wire>::placeholder())
    });

    // `repr_c`: read in place. The Rust layout is asserted equal to the wire layout at compile
    // time (size, alignment, every field's offset) and every field type must be `InPlace`.
    let (validate_fn, repr_c_items) = if d.repr_c.is_some() && !has_tails {
        let checks = fixed.iter().enumerate().map(|(i, f)| {
            let ty = f.ty;
            let off = offset(i);
            let fname = f.ident.to_string();
            quote_spanned!(ty.span()=> #h::check_field::<#ty>(__payload, #off, #fname)?;)
        });
        let paddings2 = paddings.clone();
        let offsets = fixed.iter().enumerate().map(|(i, f)| {
            let fi = f.ident;
            let off = quote!(<#ident as #de::Descriptor>::__OFFSETS[#i]);
            let msg = format!("field `{fi}` of `{ident}` is not where the wire format puts it");
            quote!(::core::assert!(::core::mem::offset_of!(#ident, #fi) == #off, #msg);)
        });
        let in_place_bounds = fixed.iter().map(|f| {
            let ty = f.ty;
            let tr = respan(quote!(#de::InPlace), ty.span());
            quote!(#ty: #tr)
        });
        let in_place_bounds: Vec<TokenStream> = in_place_bounds.collect();
        let in_place_bounds2 = in_place_bounds.clone();
        let size_msg = format!("`{ident}`'s size is not its wire size");
        let align_msg = format!("`{ident}`'s alignment is not its wire alignment");
        (
            quote! {
                fn __validate_payload(
                    __payload: &[u8],
                ) -> ::core::result::Result<(), #de::DescriptorError> {
                    let __check = || -> ::core::result::Result<(), #de::DescriptorError> {
                        // Exactly the fixed part: no tails, so no bytes after it.
                        let __fixed = <Self as #de::Descriptor>::FIXED_SIZE;
                        if __payload.len() < __fixed {
                            return ::core::result::Result::Err(#de::DescriptorError::field_error(
                                #de::ErrorKind::TooShort {
                                    needed: #de::HEADER_SIZE + __fixed,
                                    got: #de::HEADER_SIZE + __payload.len(),
                                },
                            ));
                        }
                        if __payload.len() > __fixed {
                            return ::core::result::Result::Err(#de::DescriptorError::field_error(
                                #de::ErrorKind::TooLong {
                                    used: #de::HEADER_SIZE + __fixed,
                                    got: #de::HEADER_SIZE + __payload.len(),
                                },
                            ));
                        }
                        #(#paddings2)*
                        #(#checks)*
                        ::core::result::Result::Ok(())
                    };
                    __check().map_err(|e| e.in_descriptor(#name))
                }
            },
            quote! {
                const _: () = {
                    ::core::assert!(
                        ::core::mem::size_of::<#ident>() == <#ident as #de::Descriptor>::FIXED_SIZE,
                        #size_msg
                    );
                    ::core::assert!(
                        ::core::mem::align_of::<#ident>() == <#ident as #de::Descriptor>::ALIGN,
                        #align_msg
                    );
                    #(#offsets)*
                };
                // SAFETY: the assertions above: size, alignment and every field offset are the
                // wire format's, and every field type is `InPlace` (the bounds).
                unsafe impl #de::InPlace for #ident where #(#in_place_bounds),* {}
                // SAFETY: as for `InPlace`; `view` validates every byte before it borrows.
                unsafe impl #de::ReprC for #ident where #(#in_place_bounds2),* {}
            },
        )
    } else {
        (TokenStream::new(), TokenStream::new())
    };

    let wire_impl = if has_tails {
        TokenStream::new()
    } else {
        quote! {
            impl #de::Wire for #ident #where_clause {
                const SIZE: usize = <Self as #de::Descriptor>::FIXED_SIZE;
                const ALIGN: usize = <Self as #de::Descriptor>::ALIGN;
                fn describe() -> #de::TypeLayout {
                    #p::struct_type(<#ident as #de::Descriptor>::layout())
                }
                #[inline]
                fn write(&self, __payload: &mut [u8]) {
                    #(#writes_fixed2)*
                }
                #[inline]
                fn read(__bytes: &[u8]) -> ::core::result::Result<Self, #de::DescriptorError> {
                    <#ident as #de::Descriptor>::__read_payload(__bytes)
                }
                fn placeholder() -> Self {
                    #ident { #(#placeholders),* }
                }
            }
        }
    };

    quote! {
        const _: () = {
            impl #de::Descriptor for #ident #where_clause {
                const NAME: &'static str = #name;
                const FIXED_SIZE: usize = #layout.1;
                const ALIGN: usize = #layout.2;
                const HAS_TAILS: bool = #has_tails;
                const __OFFSETS: &'static [usize] = &#layout.0;

                fn layout() -> &'static #de::Layout {
                    static LAYOUT: #p::OnceLock<#de::Layout> = #p::OnceLock::new();
                    LAYOUT.get_or_init(|| {
                        #p::descriptor_layout(
                            #name,
                            <Self as #de::Descriptor>::ALIGN,
                            <Self as #de::Descriptor>::FIXED_SIZE,
                            <#ident as #de::Descriptor>::PACKED_SIZE,
                            ::core::convert::From::from([#(#field_layouts),*]),
                        )
                    })
                }

                fn __payload_len(&self) -> usize {
                    #[allow(unused_mut)]
                    let mut __at: usize = <Self as #de::Descriptor>::FIXED_SIZE;
                    #(#tail_lens)*
                    __at
                }

                fn __write_payload(&self, __payload: &mut [u8]) {
                    #(#writes_fixed)*
                    #[allow(unused_mut, unused_assignments)]
                    let mut __at: usize = <Self as #de::Descriptor>::FIXED_SIZE;
                    #(#tail_writes)*
                    let _ = __at;
                }

                #validate_fn

                fn __read_payload(
                    __payload: &[u8],
                ) -> ::core::result::Result<Self, #de::DescriptorError> {
                    let __read = || -> ::core::result::Result<Self, #de::DescriptorError> {
                        if __payload.len() < <Self as #de::Descriptor>::FIXED_SIZE {
                            return ::core::result::Result::Err(#de::DescriptorError::field_error(
                                #de::ErrorKind::TooShort {
                                    needed: #de::HEADER_SIZE + <Self as #de::Descriptor>::FIXED_SIZE,
                                    got: #de::HEADER_SIZE + __payload.len(),
                                },
                            ));
                        }
                        #(#paddings)*
                        #[allow(unused_mut)]
                        let mut __at: usize = <Self as #de::Descriptor>::FIXED_SIZE;
                        #(#reads)*
                        if __at != __payload.len() {
                            return ::core::result::Result::Err(#de::DescriptorError::field_error(
                                #de::ErrorKind::TooLong {
                                    used: #de::HEADER_SIZE + __at,
                                    got: #de::HEADER_SIZE + __payload.len(),
                                },
                            ));
                        }
                        ::core::result::Result::Ok(#ident { #(#names),* })
                    };
                    __read().map_err(|e| e.in_descriptor(#name))
                }
            }

            #wire_impl

            #repr_c_items
        };
    }
}

fn expand_enum(d: &Descriptor<'_>, e: &Enum<'_>) -> TokenStream {
    let ident = d.ident;
    let name = &d.name;
    let kr = &d.krate;
    let p = quote!(#kr::__private);
    let de = quote!(#p::descriptor);
    let Some(repr) = &e.repr else {
        return TokenStream::new();
    };
    let repr_name = repr.to_string();
    let values: Vec<i64> = e
        .variants
        .iter()
        .map(|v| {
            v.discriminant
                .and_then(|x| discriminant_value(x).ok())
                .unwrap_or(0)
        })
        .collect();
    let lit = |v: i64| {
        if v < 0 {
            let l = Literal::i64_unsuffixed(-v);
            quote!(-#l)
        } else {
            let l = Literal::i64_unsuffixed(v);
            quote!(#l)
        }
    };
    let idents: Vec<&syn::Ident> = e.variants.iter().map(|v| v.ident).collect();
    let Some(first) = idents.first() else {
        return TokenStream::new();
    };
    let lits: Vec<TokenStream> = values.iter().map(|&v| lit(v)).collect();
    let vnames = idents.iter().map(|i| i.to_string());
    let vvalues = values.iter().map(|&v| Literal::i64_suffixed(v));
    let dvalues = values.iter().map(|&v| Literal::i64_suffixed(v));
    let enum_msg = format!("`{ident}` is not the size of its `repr({repr})`");
    quote! {
        const _: () = {
            ::core::assert!(
                ::core::mem::size_of::<#ident>() == ::core::mem::size_of::<#repr>(),
                #enum_msg
            );
            // SAFETY: a field-less `#[repr(int)]` enum is its discriminant, of the repr's size
            // (asserted above), and reading one checks that it names a variant.
            unsafe impl #de::InPlace for #ident {}

            impl #de::Wire for #ident {
                const SIZE: usize = ::core::mem::size_of::<#repr>();
                const ALIGN: usize = ::core::mem::size_of::<#repr>();
                fn describe() -> #de::TypeLayout {
                    #p::enum_type(#name, #repr_name, &[#((#vnames, #vvalues)),*])
                }
                #[inline]
                fn write(&self, __out: &mut [u8]) {
                    let __v: #repr = match self { #(#ident::#idents => #lits,)* };
                    <#repr as #de::Wire>::write(&__v, __out)
                }
                #[inline]
                fn read(__bytes: &[u8]) -> ::core::result::Result<Self, #de::DescriptorError> {
                    match <#repr as #de::Wire>::read(__bytes)? {
                        #(#lits => ::core::result::Result::Ok(#ident::#idents),)*
                        __other => ::core::result::Result::Err(#de::DescriptorError::field_error(
                            #de::ErrorKind::InvalidEnum { name: #name, value: __other as i64 },
                        )),
                    }
                }
                fn placeholder() -> Self {
                    #ident::#first
                }
            }
            impl #de::WireEnum for #ident {
                const DISCRIMINANTS: &'static [i64] = &[#(#dvalues),*];
            }
        };
    }
}
