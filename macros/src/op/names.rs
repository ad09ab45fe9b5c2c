//! The companion module resolves the user's types through `use super::*`, so a type of the
//! user's named like a type the module defines (`Outputs`) would resolve to the generated one.
//! The signature that the generated code reads has such paths written `super::Outputs` instead;
//! the user's function itself is re-emitted unchanged.

/// Types that the companion module defines.
const GENERATED_TYPES: &[&str] = &["Outputs"];

/// `sig` with every type path that starts with a generated type's name rooted at the parent
/// module (`Outputs` → `super::Outputs`).
pub(crate) fn in_parent(sig: &syn::Signature) -> syn::Signature {
    let mut sig = sig.clone();
    for arg in &mut sig.inputs {
        if let syn::FnArg::Typed(pt) = arg {
            fix(&mut pt.ty);
        }
    }
    if let syn::ReturnType::Type(_, ty) = &mut sig.output {
        fix(ty);
    }
    sig
}

fn fix(ty: &mut syn::Type) {
    match ty {
        syn::Type::Path(p) => {
            if let Some(q) = &mut p.qself {
                fix(&mut q.ty);
            }
            for seg in &mut p.path.segments {
                if let syn::PathArguments::AngleBracketed(a) = &mut seg.arguments {
                    for g in &mut a.args {
                        if let syn::GenericArgument::Type(t) = g {
                            fix(t);
                        }
                    }
                }
            }
            let shadowed = p.qself.is_none()
                && p.path.leading_colon.is_none()
                && p.path
                    .segments
                    .first()
                    .is_some_and(|s| GENERATED_TYPES.iter().any(|g| s.ident == g));
            if shadowed {
                let span = p.path.segments[0].ident.span();
                p.path
                    .segments
                    .insert(0, syn::PathSegment::from(syn::Ident::new("super", span)));
            }
        }
        syn::Type::Reference(r) => fix(&mut r.elem),
        syn::Type::Array(a) => fix(&mut a.elem),
        syn::Type::Slice(s) => fix(&mut s.elem),
        syn::Type::Paren(p) => fix(&mut p.elem),
        syn::Type::Group(g) => fix(&mut g.elem),
        syn::Type::Tuple(t) => t.elems.iter_mut().for_each(fix),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    #[test]
    fn only_paths_that_start_with_a_generated_name_move_to_the_parent() {
        let sig: syn::Signature = syn::parse_quote! {
            fn op(a: &Outputs, b: &mut Outputs, c: TensorRef<'_, f32>, d: &crate::Outputs,
                  e: &m::Outputs, f: [Outputs; 2]) -> Result<Opaque<Outputs>, OpError>
        };
        let got = super::in_parent(&sig).to_token_stream().to_string();
        let want = quote::quote! {
            fn op(a: &super::Outputs, b: &mut super::Outputs, c: TensorRef<'_, f32>,
                  d: &crate::Outputs, e: &m::Outputs, f: [super::Outputs; 2])
                  -> Result<Opaque<super::Outputs>, OpError>
        }
        .to_string();
        assert_eq!(got, want);
    }
}
