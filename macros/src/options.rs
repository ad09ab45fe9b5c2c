//! Option lists shared by the macros (`#[custom_op(...)]`, `#[descriptor(...)]`, `#[out(...)]`):
//! a list parser that keeps going after a bad entry, and `Attr`, an option's slot that reports
//! a second occurrence.

use crate::ctxt::Ctxt;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;

/// One option: unset, or set once. A second `set` is reported at its own tokens as "duplicate
/// {what} `{name}`" and keeps the first value.
pub(crate) struct Attr<T> {
    what: &'static str,
    name: &'static str,
    value: Option<T>,
    /// Written at all, even with a value that failed to parse (so that no "missing" error
    /// follows the real one).
    written: bool,
}

impl<T> Attr<T> {
    /// An unset option; `what` is "option" or "descriptor option", `name` its keyword.
    pub(crate) fn none(what: &'static str, name: &'static str) -> Self {
        Attr {
            what,
            name,
            value: None,
            written: false,
        }
    }

    /// Notes that the option is written, before its value is parsed.
    pub(crate) fn written(&mut self) {
        self.written = true;
    }

    pub(crate) fn set(&mut self, cx: &mut Ctxt, at: impl ToTokens, value: T) {
        self.written = true;
        if self.value.is_some() {
            cx.error_spanned_by(at, format!("duplicate {} `{}`", self.what, self.name));
        } else {
            self.value = Some(value);
        }
    }

    pub(crate) fn is_written(&self) -> bool {
        self.written
    }

    pub(crate) fn get(self) -> Option<T> {
        self.value
    }
}

/// Parses `a, b = v, c(...)`, calling `entry` for each entry (with syn's meta parser). The list
/// is first split at its top-level commas, so an entry that fails (an ill-typed value, an
/// unknown option, tokens left after it) is recorded and the next entry is still read.
pub(crate) fn parse_entries(
    cx: &mut Ctxt,
    input: TokenStream,
    mut entry: impl FnMut(&mut Ctxt, ParseNestedMeta<'_>) -> syn::Result<()>,
) {
    let mut tokens = input.into_iter().peekable();
    while tokens.peek().is_some() {
        let mut one = TokenStream::new();
        let mut comma = None;
        for t in tokens.by_ref() {
            match &t {
                TokenTree::Punct(p) if p.as_char() == ',' => {
                    comma = Some(p.span());
                    break;
                }
                _ => one.extend([t]),
            }
        }
        if one.is_empty() {
            if let Some(span) = comma {
                cx.syn_error(syn::Error::new(span, "expected an option before `,`"));
            }
            continue;
        }
        let parser = syn::meta::parser(|meta| entry(cx, meta));
        if let Err(e) = syn::parse::Parser::parse2(parser, one) {
            cx.syn_error(e);
        }
    }
}

/// `` `a`, `b`, `c` ``: a list of keywords, for an error message.
pub(crate) fn one_of(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A flag option (`side_effect`) written with a value is an error at the value.
pub(crate) fn no_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    let name = meta.path.to_token_stream().to_string();
    if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
        return Err(meta.input.error(format!(
            "`{name}` is a flag and takes no value: write `{name}`"
        )));
    }
    Ok(())
}

/// Parses the inside of `meta`'s parentheses with `parse_entries`.
pub(crate) fn parse_nested(
    cx: &mut Ctxt,
    meta: &ParseNestedMeta<'_>,
    entry: impl FnMut(&mut Ctxt, ParseNestedMeta<'_>) -> syn::Result<()>,
) -> syn::Result<()> {
    let content;
    syn::parenthesized!(content in meta.input);
    parse_entries(cx, content.parse()?, entry);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn names(input: proc_macro2::TokenStream) -> (Vec<String>, Vec<String>) {
        let mut cx = Ctxt::new();
        let mut seen = Vec::new();
        parse_entries(&mut cx, input, |_, meta| {
            let name = meta.path.to_token_stream().to_string();
            if name == "bad" {
                return Err(meta.error("bad"));
            }
            if meta.input.peek(syn::Token![=]) {
                let _: syn::LitStr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                // The commas inside are not entry separators.
                let _: proc_macro2::Group = meta.input.parse()?;
            }
            seen.push(name);
            Ok(())
        });
        (seen, cx.messages())
    }

    #[test]
    fn every_entry_after_a_bad_one_is_read() {
        let (seen, errors) = names(quote!(
            a = ui::x, bad = [1, 2], "lit", c = "ok", d e, , crate, f(g, h), i,
        ));
        assert_eq!(seen, ["c", "d", "crate", "f", "i"]);
        assert_eq!(
            errors,
            [
                "expected string literal",
                "bad",
                "unexpected literal in nested attribute, expected ident",
                "expected `,`",
                "expected an option before `,`",
            ]
        );
    }

    #[test]
    fn a_second_set_is_a_duplicate() {
        let mut cx = Ctxt::new();
        let mut a = Attr::none("option", "name");
        assert!(!a.is_written());
        a.set(&mut cx, quote!(name), 1);
        a.set(&mut cx, quote!(name), 2);
        assert_eq!(cx.messages(), ["duplicate option `name`"]);
        assert!(a.is_written());
        assert_eq!(a.get(), Some(1));
    }
}
