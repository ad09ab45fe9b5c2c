//! What can go wrong when running through PJRT, as one typed error.

use crate::error::Refusal;
use std::fmt;
use std::path::PathBuf;

/// A PJRT status code (`PJRT_Error_Code`, absl's status codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PjrtCode {
    /// `CANCELLED`.
    Cancelled,
    /// `UNKNOWN`.
    Unknown,
    /// `INVALID_ARGUMENT`.
    InvalidArgument,
    /// `DEADLINE_EXCEEDED`.
    DeadlineExceeded,
    /// `NOT_FOUND`.
    NotFound,
    /// `ALREADY_EXISTS`.
    AlreadyExists,
    /// `PERMISSION_DENIED`.
    PermissionDenied,
    /// `RESOURCE_EXHAUSTED`.
    ResourceExhausted,
    /// `FAILED_PRECONDITION`.
    FailedPrecondition,
    /// `ABORTED`.
    Aborted,
    /// `OUT_OF_RANGE`.
    OutOfRange,
    /// `UNIMPLEMENTED`.
    Unimplemented,
    /// `INTERNAL`.
    Internal,
    /// `UNAVAILABLE`.
    Unavailable,
    /// `DATA_LOSS`.
    DataLoss,
    /// `UNAUTHENTICATED`.
    Unauthenticated,
    /// A code this runner does not know.
    Other(i32),
}

impl PjrtCode {
    /// The code of PJRT's number.
    pub fn from_raw(code: i32) -> PjrtCode {
        use PjrtCode::*;
        match code {
            1 => Cancelled,
            2 => Unknown,
            3 => InvalidArgument,
            4 => DeadlineExceeded,
            5 => NotFound,
            6 => AlreadyExists,
            7 => PermissionDenied,
            8 => ResourceExhausted,
            9 => FailedPrecondition,
            10 => Aborted,
            11 => OutOfRange,
            12 => Unimplemented,
            13 => Internal,
            14 => Unavailable,
            15 => DataLoss,
            16 => Unauthenticated,
            n => Other(n),
        }
    }

    /// The name PJRT's header gives it (`INVALID_ARGUMENT`, ...).
    pub fn name(self) -> &'static str {
        use PjrtCode::*;
        match self {
            Cancelled => "CANCELLED",
            Unknown => "UNKNOWN",
            InvalidArgument => "INVALID_ARGUMENT",
            DeadlineExceeded => "DEADLINE_EXCEEDED",
            NotFound => "NOT_FOUND",
            AlreadyExists => "ALREADY_EXISTS",
            PermissionDenied => "PERMISSION_DENIED",
            ResourceExhausted => "RESOURCE_EXHAUSTED",
            FailedPrecondition => "FAILED_PRECONDITION",
            Aborted => "ABORTED",
            OutOfRange => "OUT_OF_RANGE",
            Unimplemented => "UNIMPLEMENTED",
            Internal => "INTERNAL",
            Unavailable => "UNAVAILABLE",
            DataLoss => "DATA_LOSS",
            Unauthenticated => "UNAUTHENTICATED",
            Other(_) => "OTHER",
        }
    }
}

impl fmt::Display for PjrtCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PjrtCode::Other(n) => write!(f, "code {n}"),
            c => f.write_str(c.name()),
        }
    }
}

/// Why a runner call failed. Every error of the plugin arrives as [`RunError::Pjrt`] with its
/// code and message; everything the runner refuses before calling the plugin (the plugin
/// aborts the process on some bad input) has its own variant.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunError {
    /// No plugin at any of the places looked at.
    PluginNotFound {
        /// Where the runner looked, in order.
        tried: Vec<PathBuf>,
    },
    /// The plugin library could not be loaded, or is not a PJRT plugin this runner can drive.
    Plugin {
        /// The library.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// `CUSTOMOP_PJRT_PLUGIN` names a file that does not exist or is not a PJRT plugin this
    /// runner can drive (never a fall-back to the installed plugin).
    PluginEnv {
        /// The path the variable names.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A kernel library could not be loaded or its handlers found.
    Library {
        /// The library.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A PJRT call returned an error.
    Pjrt {
        /// The entry point (`PJRT_Client_Compile`, ...).
        call: &'static str,
        /// Its status code.
        code: PjrtCode,
        /// Its message (with a handler's message, for an error a custom op returned).
        message: String,
    },
    /// The program calls custom-call targets that have no handler registered with the plugin
    /// (XLA's "No FFI handler registered for ..."): the kernel library that has them was not
    /// registered before compiling.
    MissingHandlers {
        /// The targets, as the plugin named them.
        targets: Vec<String>,
        /// Whether [`Client::register_linked_ops`](super::Client::register_linked_ops) was
        /// called on this client and found no op in the binary.
        linked_none: bool,
        /// What the plugin said ([`RunError::detail`]).
        detail: String,
    },
    /// A portable artifact of a newer StableHLO than the plugin reads, which the plugin could
    /// not read.
    StableHloVersion {
        /// The program's StableHLO version (`1.18.0`).
        program: String,
        /// The plugin (`xla-cpu-pjrt==0.0.1`).
        plugin: String,
        /// The versions it reads, oldest and newest (`0.9.0`, `1.13.3`).
        reads: Box<(String, String)>,
        /// The plugin's status code.
        code: PjrtCode,
        /// What the plugin said ([`RunError::detail`]).
        detail: String,
    },
    /// The program's entry function could not be read (its signature, its annotations).
    Program(String),
    /// The inputs do not match the entry function: count, element type, shape, size, an
    /// external's descriptor.
    Input(String),
    /// An output could not be read as asked (another element type, say).
    Output(String),
    /// The compiled program takes or returns a buffer laid out in a way the runner does not
    /// feed or read (column-major, tiled, padded: asked for with `mhlo.layout_mode`, say).
    /// Refused by [`Client::compile`](super::Client::compile), never run on transposed bytes.
    Layout(String),
    /// The compiled program takes or returns a buffer with a dynamic dimension; the runner
    /// feeds and reads static shapes only. Refused by [`Client::compile`](super::Client::compile).
    DynamicShape(String),
}

impl RunError {
    /// For an error a custom op's handler returned, which check refused the call
    /// (`bad_descriptor`, `kernel_error`, ...), read from the `[code]` the handler's message
    /// carries: during execution, or at compile for a handler's instantiate stage
    /// (`bad_state`, from a `#[state]` constructor).
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            RunError::Pjrt { message, .. } => Refusal::in_message(message),
            _ => None,
        }
    }

    /// What the plugin said, where the error's message says it in customop's words instead (a
    /// missing handler, a StableHLO version): its full diagnostic, for a verbose report.
    pub fn detail(&self) -> Option<&str> {
        match self {
            RunError::MissingHandlers { detail, .. }
            | RunError::StableHloVersion { detail, .. } => Some(detail),
            _ => None,
        }
    }

    /// The PJRT status code, for [`RunError::Pjrt`], and for the plugin's errors customop says
    /// in its own words ([`RunError::MissingHandlers`] is the plugin's `NOT_FOUND`,
    /// [`RunError::StableHloVersion`] its code as it said it).
    pub fn pjrt_code(&self) -> Option<PjrtCode> {
        match self {
            RunError::Pjrt { code, .. } | RunError::StableHloVersion { code, .. } => Some(*code),
            RunError::MissingHandlers { .. } => Some(PjrtCode::NotFound),
            _ => None,
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::PluginNotFound { tried } => {
                write!(f, "no PJRT plugin found; looked at")?;
                for (i, p) in tried.iter().enumerate() {
                    write!(f, "{} {}", if i == 0 { "" } else { "," }, p.display())?;
                }
                write!(
                    f,
                    " (`customop plugin install [NAME]` installs a known plugin, the default \
                     without a name; in customop's checkout `bash scripts/setup.sh --pjrt` \
                     installs the default)"
                )
            }
            RunError::Plugin { path, message } => {
                write!(f, "PJRT plugin {}: {message}", path.display())
            }
            RunError::PluginEnv { path, message } => write!(
                f,
                "CUSTOMOP_PJRT_PLUGIN names {}: {message}",
                path.display()
            ),
            RunError::Library { path, message } => {
                write!(f, "kernel library {}: {message}", path.display())
            }
            RunError::Pjrt {
                call,
                code,
                message,
            } => write!(f, "{call} failed ({code}): {message}"),
            RunError::MissingHandlers {
                targets,
                linked_none,
                ..
            } => {
                let named: Vec<String> = targets.iter().map(|t| format!("`{t}`")).collect();
                write!(
                    f,
                    "no handler is registered for {}, which the program calls: register the \
                     kernel library that has {} before compiling (`customop run --ops LIB`; \
                     from Rust `Client::register_library(LIB)`, or `register_linked_ops()` with \
                     the kernel crate linked into the binary)",
                    named.join(", "),
                    if targets.len() == 1 { "it" } else { "them" }
                )?;
                if *linked_none {
                    write!(
                        f,
                        "; `register_linked_ops()` found no op in this binary: a binary that \
                         names nothing of its kernel crate does not link it, so name it \
                         (`use my_ops as _;`)"
                    )?;
                }
                Ok(())
            }
            RunError::StableHloVersion {
                program,
                plugin,
                reads,
                ..
            } => write!(
                f,
                "the program is StableHLO {program} (a portable artifact), but the plugin \
                 {plugin} reads StableHLO {} to {}: run it on a plugin that reads it (`customop \
                 plugin list`), or export it for StableHLO {} \
                 (`customop.xla.export(..., stablehlo_version=...)`)",
                reads.0, reads.1, reads.1
            ),
            RunError::Program(m) => write!(f, "program: {m}"),
            RunError::Input(m) => write!(f, "input: {m}"),
            RunError::Output(m) => write!(f, "output: {m}"),
            RunError::Layout(m) => write!(f, "layout: {m}"),
            RunError::DynamicShape(m) => write!(f, "dynamic shape: {m}"),
        }
    }
}

impl std::error::Error for RunError {}
