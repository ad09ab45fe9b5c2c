//! The book's command-line reference (`book/src/reference/cli.md`) against the code: every
//! command and long option clap knows is on the page, each option (and positional argument)
//! in its command's section, and the exit-status table is [`Failure::code`]'s, kind by kind.
//! A new option or failure kind fails here until the page has it.

use crate::{Cli, Failure};
use clap::CommandFactory;

/// The page, read where the workspace keeps the book (test code only: the packaged crate has
/// no book, and this module is not compiled into it).
fn page() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src/reference/cli.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The heading level of a Markdown line (`## x` is 2), or `None` for any other line.
fn level(line: &str) -> Option<usize> {
    let n = line.chars().take_while(|c| *c == '#').count();
    (n > 0 && line[n..].starts_with(' ')).then_some(n)
}

/// The section under the heading that names `` `command ``, up to the next heading of the
/// same or a higher level (its subsections included).
fn section<'p>(page: &'p str, command: &str) -> Option<&'p str> {
    let lines: Vec<&str> = page.lines().collect();
    let wanted = format!("`{command}");
    let start = lines.iter().position(|l| {
        level(l).is_some()
            && l.contains(&wanted)
            && l[l.find(&wanted).unwrap_or(0) + wanted.len()..].starts_with([' ', '`'])
    })?;
    let own = level(lines[start])?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| level(l).is_some_and(|n| n <= own))
        .map_or(lines.len(), |k| start + 1 + k);
    let from = lines[..start].iter().map(|l| l.len() + 1).sum::<usize>();
    let to = lines[..end].iter().map(|l| l.len() + 1).sum::<usize>();
    Some(&page[from..to.min(page.len())])
}

/// Every command with no subcommand of its own, as `customop plugin install` with its clap
/// command; and every command with subcommands, by name only.
fn commands(cmd: &clap::Command, path: &str, leaves: &mut Vec<(String, clap::Command)>) {
    for sub in cmd.get_subcommands() {
        let name = format!("{path} {}", sub.get_name());
        if sub.has_subcommands() {
            commands(sub, &name, leaves);
        } else {
            leaves.push((name, sub.clone()));
        }
    }
}

/// What the page must say about each command: its long options (`--json`) and its
/// positional arguments by their value name (`LIBRARY`).
fn spellings(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .map(|a| match a.get_long() {
            Some(long) => format!("`--{long}"),
            None => a
                .get_value_names()
                .and_then(|v| v.first())
                .map_or_else(|| a.get_id().as_str().to_uppercase(), |v| v.to_string()),
        })
        .collect()
}

#[test]
fn every_command_and_option_is_in_the_reference() {
    let page = page();
    let cli = Cli::command();
    let mut missing = Vec::new();
    for arg in ["`--help`", "`--version`", "`customop help"] {
        if !page.contains(arg) {
            missing.push(format!("{arg} (every command's)"));
        }
    }
    let mut leaves = Vec::new();
    commands(&cli, "customop", &mut leaves);
    assert!(leaves.len() >= 5, "clap knows only {leaves:?}");
    for (name, cmd) in &leaves {
        let Some(text) = section(&page, name) else {
            missing.push(format!("a heading that names `{name}`"));
            continue;
        };
        for spelled in spellings(cmd) {
            if !text.contains(&spelled) {
                missing.push(format!("{spelled} in the section of `{name}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "book/src/reference/cli.md lacks: {}",
        missing.join("; ")
    );
}

/// Every kind of failure, once. The `match` is exhaustive: a new variant does not compile
/// until it is listed here, and so until the page's table is checked for it.
fn every_failure() -> Vec<Failure> {
    let all = vec![
        Failure::Input(String::new()),
        Failure::Library(String::new()),
        Failure::Plugin(String::new()),
        Failure::Program(String::new()),
        Failure::Execute(String::new()),
        Failure::Output(String::new()),
    ];
    for f in &all {
        match f {
            Failure::Input(_)
            | Failure::Library(_)
            | Failure::Plugin(_)
            | Failure::Program(_)
            | Failure::Execute(_)
            | Failure::Output(_) => {}
        }
    }
    all
}

#[test]
fn the_exit_status_table_is_the_binarys() {
    let page = page();
    let lines: Vec<&str> = page.lines().collect();
    let start = lines
        .iter()
        .position(|l| level(l) == Some(2) && l.trim_start_matches('#').trim() == "Exit status")
        .expect("reference/cli.md has no `## Exit status`");
    // The table's rows: `| status | kind | what |`, status a number, kind the message's word.
    let mut rows: Vec<(u8, String)> = lines[start + 1..]
        .iter()
        .take_while(|l| level(l).is_none())
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .strip_prefix('|')?
                .split('|')
                .map(str::trim)
                .collect();
            let status = cells.first()?.parse::<u8>().ok()?;
            Some((status, cells.get(1)?.trim_matches('`').to_string()))
        })
        .collect();
    rows.sort();
    let mut want: Vec<(u8, String)> = vec![(0, String::new()), (2, String::new())];
    want.extend(
        every_failure()
            .iter()
            .map(|f| (f.code(), f.message().0.to_string())),
    );
    want.sort();
    assert_eq!(
        rows, want,
        "reference/cli.md's exit-status table (status, kind) against `Failure::code` and the \
         messages' kinds, with 0 (done) and 2 (clap's usage errors)"
    );
}
