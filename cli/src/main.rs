//! `customop`: the command line of customop.
//!
//! - `customop ops LIB.so [--json]`: the ops of a kernel library (schemas, externals,
//!   descriptor layouts);
//! - `customop plugin list | install | path | verify`: the PJRT plugins customop knows, pinned by
//!   hash;
//! - `customop cache path | clear`: the compile cache;
//! - `customop run MODULE --ops LIB.so --input x.npy --external name=config.json [--out
//!   out.npz]`: a StableHLO program run with the library's handlers.
//!
//! Exit status by kind of failure: 0 done; 2 the command line (clap's); 3 an input (a file that
//! cannot be read, a `.npy` of the wrong type or shape, a descriptor field missing, of the
//! wrong type or unknown, an unknown external); 4 a kernel library; 5 the plugin; 6 the program
//! (not parsed or not compiled); 7 running it (a kernel's refusal or error, XLA's); 8 writing
//! the outputs.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[cfg(test)]
mod book_reference;
mod npy;
mod ops;
mod plugin;
mod run;
mod values;

/// What went wrong, by kind (each its exit status): customop's message, then, where customop
/// says the cause in its own words, the plugin's diagnostic behind it after [`DETAIL`], which
/// only `-v` prints.
/// Where a failure's message ends and the plugin's diagnostic behind it begins (the ASCII record
/// separator, in no message).
pub const DETAIL: char = '\u{1e}';

#[derive(Debug)]
pub enum Failure {
    Input(String),
    Library(String),
    Plugin(String),
    Program(String),
    Execute(String),
    Output(String),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Input(_) => 3,
            Failure::Library(_) => 4,
            Failure::Plugin(_) => 5,
            Failure::Program(_) => 6,
            Failure::Execute(_) => 7,
            Failure::Output(_) => 8,
        }
    }

    fn message(&self) -> (&'static str, &str) {
        match self {
            Failure::Input(m) => ("input", m),
            Failure::Library(m) => ("library", m),
            Failure::Plugin(m) => ("plugin", m),
            Failure::Program(m) => ("program", m),
            Failure::Execute(m) => ("run", m),
            Failure::Output(m) => ("output", m),
        }
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "customop",
    version,
    about = "customop's command line: kernel libraries' ops, \
    XLA's CPU PJRT plugin, and running StableHLO programs with a library's handlers"
)]
struct Cli {
    /// On a failure, also print the diagnostic behind customop's one line (the plugin's, in
    /// full)
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The ops of a kernel library: schemas, targets, externals and descriptor layouts
    Ops {
        /// The kernel library (a cdylib built with customop)
        library: PathBuf,
        /// Print JSON rather than a table
        #[arg(long)]
        json: bool,
    },
    /// The PJRT plugins customop knows, which `customop run` and `Client::cpu` load
    Plugin {
        #[command(subcommand)]
        action: PluginAction,
    },
    /// The compile cache: executables compiled before, loaded rather than compiled again
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Runs a StableHLO program (text or bytecode) with kernel libraries' handlers
    Run {
        /// The program: MLIR text (`.mlir`) or bytecode (`.mlirbc`)
        module: PathBuf,
        /// A kernel library whose handlers (and descriptor layouts) the program uses
        #[arg(long = "ops", value_name = "LIB")]
        ops: Vec<PathBuf>,
        /// A `.npy` input: `FILE` for the next argument that is not an external, `N=FILE` for
        /// argument N
        #[arg(long = "input", value_name = "[N=]FILE")]
        inputs: Vec<String>,
        /// An external's value, packed by its descriptor's layout: `NAME=FILE.json` or
        /// `NAME=FILE.toml`
        #[arg(long = "external", value_name = "NAME=FILE")]
        externals: Vec<String>,
        /// Where the outputs go: `out.npz` (all of them), `out.npy` (one), or a folder
        /// (`result0.npy`, ...); printed when not given
        #[arg(long)]
        out: Option<PathBuf>,
        /// The plugin to run on: a known plugin's name, or `name==version` (`customop plugin
        /// list`); the default plugin when not given
        #[arg(long, value_name = "PLUGIN")]
        plugin: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum PluginAction {
    /// Every plugin customop knows: its PJRT version, the StableHLO it reads, its XLA FFI
    /// table, whether it is installed (the default marked `*`)
    List,
    /// Downloads a known plugin's wheel with pip, without its dependencies (or takes
    /// `--wheel`), checks its sha256 and the plugin's, and installs it where `Plugin::known`
    /// finds it
    Install {
        /// The plugin: a name or `name==version` from `customop plugin list`; the default
        /// when not given
        plugin: Option<String>,
        /// The wheel, already downloaded
        #[arg(long)]
        wheel: Option<PathBuf>,
        /// Install again even if a verified plugin is there
        #[arg(long)]
        force: bool,
    },
    /// Where a plugin is, or goes ($CUSTOMOP_CACHE, else $XDG_CACHE_HOME/customop, else
    /// ~/.cache/customop, then the plugin's folder)
    Path {
        /// The plugin (the default when not given)
        plugin: Option<String>,
    },
    /// Checks an installed plugin's sha256 against the pinned one
    Verify {
        /// The plugin (the default when not given)
        plugin: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum CacheAction {
    /// The compile cache's folder ($CUSTOMOP_COMPILE_CACHE, else `compiled/` in customop's
    /// cache)
    Path,
    /// Removes every compiled executable in it
    Clear,
}

/// Writes the outputs where `--out` says; the notes on types numpy has no dtype for.
fn write_outputs(out: &std::path::Path, arrays: Vec<npy::Array>) -> Result<Vec<String>, Failure> {
    let named: Vec<(String, npy::Array)> = arrays
        .into_iter()
        .enumerate()
        .map(|(i, a)| (format!("result{i}"), a))
        .collect();
    let ext = out.extension().and_then(|e| e.to_str());
    if ext == Some("npz") {
        return npy::write_npz(out, &named).map_err(Failure::Output);
    }
    let files: Vec<(PathBuf, &npy::Array)> = if ext == Some("npy") {
        match named.as_slice() {
            [(_, a)] => vec![(out.to_path_buf(), a)],
            _ => {
                return Err(Failure::Output(format!(
                    "{}: the program has {} outputs; give a .npz or a folder",
                    out.display(),
                    named.len()
                )));
            }
        }
    } else {
        std::fs::create_dir_all(out)
            .map_err(|e| Failure::Output(format!("{}: {e}", out.display())))?;
        named
            .iter()
            .map(|(n, a)| (out.join(format!("{n}.npy")), a))
            .collect()
    };
    let mut notes = Vec::new();
    for (path, a) in files {
        let (bytes, note) = npy::to_bytes(a);
        notes.extend(note.map(|n| format!("{}: {n}", path.display())));
        std::fs::write(&path, bytes)
            .map_err(|e| Failure::Output(format!("{}: {e}", path.display())))?;
    }
    Ok(notes)
}

/// Prints `text` to standard output; a reader that went away (`customop ops LIB | head -1`)
/// is no failure.
fn say(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::Output(format!("standard output: {e}")))
        }
        _ => Ok(()),
    }
}

fn main_(command: Command) -> Result<(), Failure> {
    match command {
        Command::Ops { library, json } => {
            let m = ops::manifest(&library)?;
            if json {
                let text = serde_json::to_string_pretty(&ops::summary(&m))
                    .map_err(|e| Failure::Output(e.to_string()))?;
                say(&format!("{text}\n"))?;
            } else {
                say(&ops::table(&m))?;
            }
        }
        Command::Plugin { action } => {
            let said = match action {
                PluginAction::List => plugin::list()?,
                PluginAction::Install {
                    plugin: p,
                    wheel,
                    force,
                } => plugin::install(plugin::choose(p.as_deref())?, wheel.as_deref(), force)?,
                PluginAction::Path { plugin: p } => plugin::path(plugin::choose(p.as_deref())?)?,
                PluginAction::Verify { plugin: p } => {
                    plugin::verify(plugin::choose(p.as_deref())?)?
                }
            };
            say(&format!("{said}\n"))?;
        }
        Command::Cache { action } => {
            let Some(dir) = customop::pjrt::compile_cache_dir() else {
                return Err(Failure::Input(format!(
                    "the compile cache is off ({}=off)",
                    customop::pjrt::CACHE_ENV
                )));
            };
            let said = match action {
                CacheAction::Path => dir.display().to_string(),
                CacheAction::Clear => {
                    let n = customop::pjrt::clear_compile_cache(&dir)
                        .map_err(|e| Failure::Output(format!("{}: {e}", dir.display())))?;
                    format!("{}: {n} compiled executables removed", dir.display())
                }
            };
            say(&format!("{said}\n"))?;
        }
        Command::Run {
            module,
            ops,
            inputs,
            externals,
            out,
            plugin,
        } => {
            let request = run::Request {
                module,
                ops,
                inputs,
                externals,
                out,
                plugin,
            };
            let arrays = run::run(&request)?;
            match &request.out {
                Some(out) => {
                    for note in write_outputs(out, arrays)? {
                        eprintln!("note: {note}");
                    }
                }
                None => {
                    for (i, a) in arrays.iter().enumerate() {
                        say(&format!("result[{i}]: {}\n", run::show(a, 1000)))?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match main_(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            // customop's message, last; the plugin's diagnostic behind it before, with `-v`.
            let (kind, message) = f.message();
            let (line, diagnostic) = message.split_once(DETAIL).unwrap_or((message, ""));
            let diagnostic = diagnostic.trim();
            if diagnostic.is_empty() {
                eprintln!("customop: {kind} error: {line}");
            } else if cli.verbose {
                eprintln!("{diagnostic}");
                eprintln!("customop: {kind} error: {line}");
            } else {
                let n = diagnostic.lines().count();
                eprintln!(
                    "customop: {kind} error: {line} (`-v` prints the plugin's diagnostic: {n} \
                     line{})",
                    if n == 1 { "" } else { "s" }
                );
            }
            ExitCode::from(f.code())
        }
    }
}
