//! The book's reference chapters list everything the macros accept: every `#[custom_op(...)]`
//! option, parameter attribute and shape-rule operation (`book/src/reference/custom-op.md`),
//! every `#[descriptor(...)]` option and enum representation (`reference/descriptor.md`). The
//! lists come from the parsers' own definitions, so that a new option fails these tests until
//! the book has it. (Tests only: the chapters are outside the packaged crate.)

use customop_shape::BinOp;
use std::path::Path;

/// A reference chapter's text.
fn chapter(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../book/src/reference")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines under `heading` (written in full, `## Options`), up to the next heading of its
/// level or a higher one, without fenced code blocks (whose lines are neither headings nor
/// tables).
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let mut fenced = false;
    let mut inside = false;
    let mut found = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        let is_heading = hashes > 0 && line[hashes..].starts_with(' ');
        if is_heading {
            if line.trim_end() == heading {
                inside = true;
                found = true;
                continue;
            }
            if inside && hashes <= level {
                inside = false;
            }
        }
        if inside {
            out.push(line);
        }
    }
    assert!(found, "the chapter has no heading `{heading}`");
    out
}

/// The code spans of the first cell of each table row in `lines` (`\|` is a `|` inside a cell).
fn first_cells(lines: &[&str]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in lines {
        let Some(rest) = line.trim_start().strip_prefix('|') else {
            continue;
        };
        let mut cell = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&'|') => cell.push(chars.next().unwrap_or('|')),
                '|' => break,
                c => cell.push(c),
            }
        }
        let spans = cell
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        rows.push(spans);
    }
    rows
}

/// The keyword a code span starts with: `name` of `name = "ns::op"`, `external` of
/// `#[external(borrow)]`.
fn keyword(span: &str) -> &str {
    let s = span.strip_prefix("#[").unwrap_or(span);
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The keywords of the first cells of the table(s) in `heading`'s section.
fn table_keywords(text: &str, heading: &str) -> Vec<String> {
    first_cells(&section(text, heading))
        .iter()
        .flatten()
        .map(|s| keyword(s).to_string())
        .filter(|k| !k.is_empty())
        .collect()
}

/// Every one of `accepted` is a keyword of the table, and the table has no other.
fn same_keywords(chapter: &str, heading: &str, what: &str, accepted: &[&str], listed: &[String]) {
    for a in accepted {
        assert!(
            listed.iter().any(|l| l == a),
            "the macro accepts {what} `{a}`, but reference/{chapter}'s `{heading}` table does \
             not list it: add a row for it"
        );
    }
    for l in listed {
        assert!(
            accepted.contains(&l.as_str()),
            "reference/{chapter}'s `{heading}` table lists {what} `{l}`, which the macro does \
             not accept"
        );
    }
}

#[test]
fn every_custom_op_option_is_in_the_reference() {
    let text = chapter("custom-op.md");
    let listed = table_keywords(&text, "## Options");
    same_keywords(
        "custom-op.md",
        "## Options",
        "the option",
        crate::op::OPTIONS,
        &listed,
    );
}

#[test]
fn every_parameter_attribute_and_its_options_are_in_the_reference() {
    let text = chapter("custom-op.md");
    let heading = "### Parameter attributes";
    let listed = table_keywords(&text, heading);
    let what = "the parameter attribute";
    same_keywords(
        "custom-op.md",
        heading,
        what,
        crate::op::PARAM_ATTRS,
        &listed,
    );
    let spans: Vec<String> = first_cells(&section(&text, heading))
        .into_iter()
        .flatten()
        .collect();
    for (attr, options) in [
        ("external", crate::op::EXTERNAL_OPTIONS),
        ("out", crate::op::OUT_OPTIONS),
    ] {
        for o in options {
            let form = format!("#[{attr}({o}");
            assert!(
                spans.iter().any(|s| s.starts_with(&form)),
                "the macro accepts `#[{attr}({o})]`, but reference/custom-op.md's `{heading}` \
                 table has no row for it (a first cell starting `{form}`)"
            );
        }
    }
}

#[test]
fn every_shape_rule_operation_is_in_the_reference() {
    let text = chapter("custom-op.md");
    let heading = "### Operations";
    let spans: Vec<String> = first_cells(&section(&text, heading))
        .into_iter()
        .flatten()
        .collect();
    for op in BinOp::ALL {
        let found = match op.symbol() {
            Some(symbol) => spans.iter().any(|s| s == symbol),
            None => spans
                .iter()
                .any(|s| s.starts_with(&format!("{}(", op.name()))),
        };
        assert!(
            found,
            "shape rules take `{}`, but reference/custom-op.md's `{heading}` table does not \
             list it",
            op.symbol().unwrap_or(op.name())
        );
    }
}

#[test]
fn every_descriptor_option_and_enum_repr_is_in_the_reference() {
    let text = chapter("descriptor.md");
    let listed = table_keywords(&text, "## Options");
    same_keywords(
        "descriptor.md",
        "## Options",
        "the descriptor option",
        crate::descriptor::OPTIONS,
        &listed,
    );
    let types = section(&text, "## Field types").join("\n");
    for r in crate::descriptor::REPRS {
        assert!(
            types.contains(&format!("`#[repr({r})]`")),
            "descriptor enums take `#[repr({r})]`, but reference/descriptor.md's field types do \
             not list it"
        );
    }
}

/// The helpers read tables as the chapters write them.
#[test]
fn tables_are_read_cell_by_cell() {
    let text = "# T\n\n## Options\n\n| option | meaning |\n|---|---|\n\
                | `name = \"a\"` | x `notme` |\n| `#[out(shape = RULE)]` | y |\n\
                | `a\\|b` | z |\n\n```text\n## Not a heading\n| `fenced` |\n```\n\n## Next\n\
                | `after` | |\n";
    let rows = first_cells(&section(text, "## Options"));
    let spans: Vec<String> = rows.into_iter().flatten().collect();
    assert_eq!(spans, ["name = \"a\"", "#[out(shape = RULE)]", "a|b"]);
    assert_eq!(table_keywords(text, "## Options"), ["name", "out", "a"]);
}
