//! A tokenizer for MLIR's text form and a tree of its bracketed groups: what the runner needs
//! to read `@main`'s signature without being fooled by comments, strings, quoted symbol names
//! or dialect attributes whose bodies look like code. It does not know any dialect: it knows
//! MLIR's lexical rules (comments, string escapes, `@"quoted"` symbols, `->`, the
//! `{-# ... #-}` resource section) and that `( ) { } [ ] < >` nest. Text it cannot tokenize
//! or whose brackets do not balance is an error, never a guess.
//!
//! The body of a dialect attribute or type (`#dialect.name<...>`, `!dialect.name<...>`, the
//! `<` right after the name) is read as MLIR reads it: brackets and strings nest, and nothing
//! else is special, so `//` there is text, not a comment, and `{-#` opens no resource section.
//!
//! Nesting is bounded ([`MAX_DEPTH`]): every walk of the tree (and its drop) recurses once per
//! level, so a deeper text is refused by name instead of overflowing a thread's stack.

/// The deepest nesting of brackets the tokenizer accepts. StableHLO from JAX and torch nests
/// a few levels per region or attribute; reading a signature 256 levels deep fits a 512 KiB
/// stack in a debug build (tested), far less than a thread's default 2 MiB.
pub(super) const MAX_DEPTH: usize = 256;

/// A token; `raw` is its text in the source.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Tok<'a> {
    pub kind: Kind,
    pub raw: &'a str,
    /// A string's or a quoted symbol's unescaped value; otherwise empty.
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A bare identifier, keyword or number (`func.func`, `public`, `3x3xf32`, `1.0e-05`).
    Word,
    /// A string literal (`value` unescaped).
    Str,
    /// `@name` or `@"name"` (`value`: the name).
    Sym,
    /// `%name`.
    ValueId,
    /// `#name` (an attribute alias or a dialect attribute).
    Hash,
    /// `!name` (a type alias or a dialect type).
    Bang,
    /// `^name` (a block label).
    Caret,
    /// `->`.
    Arrow,
    /// Any other single character: `, : = ? * + -` ...
    Punct,
}

/// A token, or a bracketed group of nodes (`open` is `(`, `{`, `[`, `<`, or `r` for the
/// `{-# ... #-}` resource section).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Node<'a> {
    Tok(Tok<'a>),
    Group(char, Vec<Node<'a>>),
}

impl<'a> Node<'a> {
    /// The token, if this is one of `kind`.
    pub fn tok(&self, kind: Kind) -> Option<&Tok<'a>> {
        match self {
            Node::Tok(t) if t.kind == kind => Some(t),
            _ => None,
        }
    }

    /// Whether this is the word `w`.
    pub fn is_word(&self, w: &str) -> bool {
        self.tok(Kind::Word).is_some_and(|t| t.raw == w)
    }

    /// Whether this is the punctuation `c`.
    pub fn is_punct(&self, c: char) -> bool {
        self.tok(Kind::Punct).is_some_and(|t| t.raw.starts_with(c))
    }

    /// The items, if this is a group opened by `open`.
    pub fn group(&self, open: char) -> Option<&[Node<'a>]> {
        match self {
            Node::Group(o, items) if *o == open => Some(items),
            _ => None,
        }
    }
}

/// The text of `nodes` with every token as written and no white space or comments between
/// them (`tensor < 3x3xf32 >` and `tensor<3x3xf32>` give the same).
pub(super) fn compact(nodes: &[Node<'_>]) -> String {
    let mut out = String::new();
    fn walk(nodes: &[Node<'_>], out: &mut String) {
        for n in nodes {
            match n {
                Node::Tok(t) => out.push_str(t.raw),
                Node::Group(open, items) => {
                    let (o, c) = match open {
                        '(' => ("(", ")"),
                        '{' => ("{", "}"),
                        '[' => ("[", "]"),
                        '<' => ("<", ">"),
                        _ => ("{-#", "#-}"),
                    };
                    out.push_str(o);
                    walk(items, out);
                    out.push_str(c);
                }
            }
        }
    }
    walk(nodes, &mut out);
    out
}

/// `nodes` split at top-level commas.
pub(super) fn split_commas<'n, 'a>(nodes: &'n [Node<'a>]) -> Vec<&'n [Node<'a>]> {
    if nodes.is_empty() {
        return Vec::new();
    }
    nodes.split(|n| n.is_punct(',')).collect()
}

fn is_id_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

/// Reads `text` into a list of nodes.
pub(super) fn parse(text: &str) -> Result<Vec<Node<'_>>, String> {
    let b = text.as_bytes();
    let mut stack: Vec<Frame<'_>> = vec![Frame {
        open: '\0',
        at: 0,
        items: Vec::new(),
        body: false,
    }];
    let mut i = 0;
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    while i < b.len() {
        let c = b[i];
        let start = i;
        // Inside a dialect attribute's or type's body: only brackets and strings are special.
        let body = stack.last().is_some_and(|f| f.body);
        let tok = |kind: Kind, end: usize, value: String| -> Node<'_> {
            Node::Tok(Tok {
                kind,
                raw: &text[start..end],
                value,
            })
        };
        let node = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'/' if !body && b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' => {
                let (value, end) =
                    string(text, i).map_err(|m| format!("line {}: {m}", line_of(i)))?;
                i = end;
                tok(Kind::Str, end, value)
            }
            b'@' => {
                if b.get(i + 1) == Some(&b'"') {
                    let (value, end) =
                        string(text, i + 1).map_err(|m| format!("line {}: {m}", line_of(i)))?;
                    i = end;
                    tok(Kind::Sym, end, value)
                } else {
                    let end = word_end(b, i + 1);
                    if end == i + 1 {
                        return Err(format!("line {}: `@` without a name", line_of(i)));
                    }
                    i = end;
                    tok(Kind::Sym, end, text[start + 1..end].to_string())
                }
            }
            b'{' if !body && text[i..].starts_with("{-#") => {
                open(&mut stack, 'r', i, false, &line_of)?;
                i += 3;
                continue;
            }
            b'#' if !body && text[i..].starts_with("#-}") => {
                close(&mut stack, 'r', i, &line_of)?;
                i += 3;
                continue;
            }
            b'%' | b'#' | b'!' | b'^' => {
                let mut end = i + 1;
                while end < b.len() && (is_id_char(b[end]) || b[end] == b'-') {
                    end += 1;
                }
                if end == i + 1 {
                    if body {
                        i += 1;
                        if let Some(top) = stack.last_mut() {
                            top.items.push(tok(Kind::Punct, i, String::new()));
                        }
                        continue;
                    }
                    return Err(format!(
                        "line {}: `{}` without a name",
                        line_of(i),
                        c as char
                    ));
                }
                i = end;
                let kind = match c {
                    b'%' => Kind::ValueId,
                    b'#' => Kind::Hash,
                    b'!' => Kind::Bang,
                    _ => Kind::Caret,
                };
                tok(kind, end, String::new())
            }
            b'-' if b.get(i + 1) == Some(&b'>') => {
                i += 2;
                tok(Kind::Arrow, i, String::new())
            }
            b'(' | b'{' | b'[' | b'<' => {
                // A `<` right after `#name` or `!name` opens a dialect body.
                let opens_body = c == b'<'
                    && stack
                        .last()
                        .and_then(|f| f.items.last())
                        .and_then(|n| match n {
                            Node::Tok(t) if matches!(t.kind, Kind::Hash | Kind::Bang) => Some(t),
                            _ => None,
                        })
                        .is_some_and(|t| {
                            t.raw.as_ptr() as usize + t.raw.len() == text[i..].as_ptr() as usize
                        });
                open(&mut stack, c as char, i, body || opens_body, &line_of)?;
                i += 1;
                continue;
            }
            b')' | b'}' | b']' | b'>' => {
                let open = match c {
                    b')' => '(',
                    b'}' => '{',
                    b']' => '[',
                    _ => '<',
                };
                close(&mut stack, open, i, &line_of)?;
                i += 1;
                continue;
            }
            c if is_id_char(c) || (c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) => {
                let mut end = word_end(b, i + 1);
                // A number's exponent sign: `1.0e-05`.
                let number = b[start].is_ascii_digit() || b[start] == b'-';
                if number
                    && matches!(b[end - 1], b'e' | b'E')
                    && matches!(b.get(end), Some(b'+' | b'-'))
                    && b.get(end + 1).is_some_and(u8::is_ascii_digit)
                {
                    end = word_end(b, end + 1);
                }
                i = end;
                tok(Kind::Word, end, String::new())
            }
            c if c.is_ascii_punctuation() => {
                i += 1;
                tok(Kind::Punct, i, String::new())
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(format!(
                    "line {}: unexpected character `{ch}` outside a string",
                    line_of(i)
                ));
            }
        };
        if let Some(top) = stack.last_mut() {
            top.items.push(node);
        }
    }
    if stack.len() > 1 {
        let f = &stack[stack.len() - 1];
        return Err(format!(
            "line {}: `{}` is never closed",
            line_of(f.at),
            if f.open == 'r' {
                "{-#".to_string()
            } else {
                f.open.to_string()
            }
        ));
    }
    Ok(stack.pop().map(|s| s.items).unwrap_or_default())
}

fn word_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_id_char(b[i]) {
        i += 1;
    }
    i
}

/// An open bracket: which, where, what it holds so far, and whether it is (inside) a dialect
/// attribute's or type's body.
struct Frame<'a> {
    open: char,
    at: usize,
    items: Vec<Node<'a>>,
    body: bool,
}

fn open(
    stack: &mut Vec<Frame<'_>>,
    open: char,
    at: usize,
    body: bool,
    line_of: &dyn Fn(usize) -> usize,
) -> Result<(), String> {
    // The bottom frame is the text itself, not a bracket.
    if stack.len() > MAX_DEPTH {
        return Err(format!(
            "line {}: brackets nested deeper than {MAX_DEPTH} levels",
            line_of(at)
        ));
    }
    stack.push(Frame {
        open,
        at,
        items: Vec::new(),
        body,
    });
    Ok(())
}

fn close(
    stack: &mut Vec<Frame<'_>>,
    open: char,
    at: usize,
    line_of: &dyn Fn(usize) -> usize,
) -> Result<(), String> {
    if stack.len() < 2 || stack[stack.len() - 1].open != open {
        return Err(format!(
            "line {}: a closing bracket that does not match",
            line_of(at)
        ));
    }
    let Some(f) = stack.pop() else {
        return Err("unbalanced brackets".into());
    };
    if let Some(top) = stack.last_mut() {
        top.items.push(Node::Group(f.open, f.items));
    }
    Ok(())
}

/// The string literal whose `"` is at `at`: its unescaped value and the index after it.
/// MLIR's escapes: `\\`, `\"`, `\n`, `\t` and two hex digits; no raw line breaks.
fn string(text: &str, at: usize) -> Result<(String, usize), String> {
    let b = text.as_bytes();
    let mut bytes = Vec::new();
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let value = String::from_utf8_lossy(&bytes).into_owned();
                return Ok((value, i + 1));
            }
            b'\n' => return Err("a string literal runs past the end of its line".into()),
            b'\\' => {
                let e = *b.get(i + 1).ok_or("a string literal ends in `\\`")?;
                match e {
                    b'\\' | b'"' => bytes.push(e),
                    b'n' => bytes.push(b'\n'),
                    b't' => bytes.push(b'\t'),
                    _ => {
                        let hex = text.get(i + 1..i + 3).ok_or("a bad escape")?;
                        let v = u8::from_str_radix(hex, 16)
                            .map_err(|_| format!("a bad escape `\\{hex}` in a string"))?;
                        bytes.push(v);
                        i += 1;
                    }
                }
                i += 2;
            }
            c => {
                bytes.push(c);
                i += 1;
            }
        }
    }
    Err("a string literal is never closed".into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_dialect_body_is_read_as_mlir_reads_it() {
        // `//` in a body is text: the `>` after it closes the body, as in MLIR.
        let tree = parse("#d.x<\"s\" // (a) > 1").unwrap();
        assert_eq!(compact(&tree), "#d.x<\"s\"//(a)>1");
        assert_eq!(tree.len(), 3);
        // Outside a body it is a comment to the end of the line.
        let tree = parse("a // (a) >\nb").unwrap();
        assert_eq!(compact(&tree), "ab");
        // `!type<...>` bodies too, nested brackets inside, and `{-#` is no resource there.
        let tree = parse("!d.t<[{-# x}]> y").unwrap();
        assert_eq!(compact(&tree), "!d.t<[{-#x}]>y");
        // A `<` after white space opens no body: `//` is a comment again.
        assert!(parse("#d.x <a // >\n>").is_ok());
        assert!(
            parse("#d.x<a // >\n>").is_err(),
            "the second `>` closes nothing"
        );
        // A lone `#` or `!` is text in a body, an error outside.
        assert!(parse("#d.x<# !>").is_ok());
        assert!(parse("# a").is_err());
    }

    #[test]
    fn nesting_is_bounded() {
        let ok = format!("{}{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        let deep = format!("{}{}", "(".repeat(MAX_DEPTH + 1), ")".repeat(MAX_DEPTH + 1));
        assert!(parse(&deep).unwrap_err().contains("deeper than 256"));
    }
}
