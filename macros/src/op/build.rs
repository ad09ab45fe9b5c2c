//! Building the op's model from its parsed syntax: options with their defaults, every
//! parameter classified (`classify.rs`), the return type.

use super::classify::{classify, classify_ret, invalid};
use super::model::{AttrKind, Kind, Op, Param, Ret, var_in};
use super::parse::{ItemFn, Options, ParamAttrs};
use crate::ctxt::Ctxt;
use syn::spanned::Spanned;

impl<'a> Op<'a> {
    pub(crate) fn build(
        cx: &mut Ctxt,
        item: &'a ItemFn,
        options: &'a Options,
        attrs: &[ParamAttrs],
    ) -> Op<'a> {
        let name = match &options.name {
            Some(n) => n.value(),
            None => {
                // Written with a value that failed to parse: already reported.
                if !options.name_written {
                    let span = options.span.unwrap_or(item.sig.fn_token.span);
                    cx.syn_error(syn::Error::new(
                        span,
                        "missing option `name`: `#[custom_op(name = \"my_lib::my_op\")]`",
                    ));
                }
                format!("customop_unnamed::{}", item.sig.ident)
            }
        };
        let target = options
            .target
            .as_ref()
            .map(|t| t.value())
            .unwrap_or_else(|| name.replace("::", "."));
        let (api_version, api_version_span) = match &options.api_version {
            None => (4, None),
            Some(v) => (v.base10_parse::<u32>().unwrap_or(0), Some(v.span())),
        };
        let mut params = Vec::new();
        for (i, (arg, pa)) in item.sig.inputs.iter().zip(attrs).enumerate() {
            let syn::FnArg::Typed(pt) = arg else {
                continue; // `self`: refused by check
            };
            let (ident, kind) = match &*pt.pat {
                syn::Pat::Ident(p) => (p.ident.clone(), classify(&pt.ty, pa)),
                // Kept (under a name no user writes) so that `call` still takes it.
                other => (
                    quote::format_ident!("__customop_param_{}", i),
                    Kind::Invalid(
                        other.span(),
                        "custom op parameters must be plain names (they name the schema's \
                         parameters)"
                            .into(),
                        classify(&pt.ty, pa).intent(),
                    ),
                ),
            };
            params.push(Param {
                kind,
                ident,
                ty: &pt.ty,
            });
        }
        // A type parameter of `dtypes(...)` types tensors only: an attribute or an external
        // typed by one is refused (and left out of the companion, which cannot name it).
        let vars = options
            .dtypes
            .as_ref()
            .map_or(&[][..], |d| d.vars.as_slice());
        for prm in &mut params {
            let ty = match &prm.kind {
                Kind::Attr(AttrKind::Value(t) | AttrKind::Ref(t) | AttrKind::Slice(_, t)) => *t,
                Kind::External { inner, .. } => *inner,
                _ => continue,
            };
            if let Some(v) = var_in(vars, ty) {
                prm.kind = invalid(
                    ty.span(),
                    format!(
                        "`{}` types tensors only: an attribute or external has one type",
                        v.ident
                    ),
                );
            }
        }
        let ret = match &item.sig.output {
            syn::ReturnType::Default => Ret::Invalid(
                item.sig.ident.span(),
                "a custom op returns `Result<(), OpError>` (or `Result<Opaque<T>, OpError>`), \
                 so that the kernel's errors reach XLA"
                    .into(),
            ),
            syn::ReturnType::Type(_, ty) => classify_ret(ty),
        };
        Op {
            ident: &item.sig.ident,
            vis: &item.vis,
            name,
            name_span: options.name.as_ref().map(|n| n.span()),
            target,
            target_span: options.target.as_ref().map(|t| t.span()),
            side_effect: options.side_effect.is_some(),
            api_version,
            api_version_span,
            krate: options
                .krate
                .clone()
                .unwrap_or_else(|| syn::parse_quote!(::customop)),
            params,
            ret,
            partition: options.partition.as_ref(),
            dtype_vars: vars,
            generic_order: item
                .sig
                .generics
                .type_params()
                .filter_map(|t| {
                    options
                        .dtypes
                        .as_ref()?
                        .vars
                        .iter()
                        .position(|v| v.ident == t.ident)
                })
                .collect(),
            vjp: options.vjp.as_ref(),
            jvp: options.jvp.as_ref(),
            cuda: options.cuda.as_ref(),
        }
    }
}
