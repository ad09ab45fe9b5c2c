//! Runs one StableHLO text through the Rust runner (`customop::pjrt`) with a kernel cdylib's
//! handlers, for the Python side's cross-check (`CUSTOMOP_PJRT_CROSS_CHECK`: every program
//! `customop.torch`'s `Exported.run` runs on jaxlib is run here too, and the results compared).
//!
//! Reads `{"library": PATH, "text": MLIR, "inputs": [{"dtype": numpy name, "shape": [..],
//! "hex": bytes}]}` on stdin (or `"program_hex"` for `"text"`: a program file's bytes in any
//! form [`Program::load`] reads, such as a serialized `jax.export`); prints `{"ok": true, "outputs": [...]}` or `{"ok": false,
//! "stage": ..., "error": ..., "status": ..., "refusal": ..., "message": ...}`. A request it
//! cannot decode is no answer: it says why on stderr and exits with status 1.
//!
//! A failure says where the runner stopped (`stage`): `parse` (reading the entry function's
//! signature from the text), `setup` (creating the client, registering the library's
//! handlers), `compile` or `execute`; which kind of [`RunError`] it was (`error`: `pjrt`,
//! `program`, `input`, `output`, `library`, `plugin`); its status class (`status`: the PJRT
//! status name, `INVALID_ARGUMENT`, ..., or null, see [`status`]); and the customop refusal
//! code it carries (`refusal`, or null). The cross-check (python/customop/crosscheck.py)
//! compares stage, refusal and status with jaxlib's.
//!
//! When the runner refuses the inputs itself (before the plugin sees them), `refusal` is the
//! code a handler gives the same mismatch (`wrong_count`, `wrong_dtype`, `wrong_rank`,
//! `wrong_shape`, `bad_descriptor` for an external's bytes), so that the cross-check compares
//! codes exactly.

use customop::pjrt::{Client, HostTensor, PjrtCode, Program, RunError};
use customop::{ElementType, Refusal, TensorType};
use std::io::Read;
use std::process::ExitCode;

fn hex_bytes(h: &str) -> Result<Vec<u8>, String> {
    if !h.len().is_multiple_of(2) {
        return Err("odd hex length".into());
    }
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

fn input(v: &serde_json::Value) -> Result<HostTensor, String> {
    let dtype = v["dtype"].as_str().ok_or("no dtype")?;
    let element = ElementType::ALL
        .into_iter()
        .find(|t| t.numpy_name() == dtype)
        .ok_or_else(|| format!("no element type for {dtype}"))?;
    let shape: Vec<i64> = v["shape"]
        .as_array()
        .ok_or("no shape")?
        .iter()
        .map(|d| d.as_i64().ok_or("a dimension is not an integer"))
        .collect::<Result<_, _>>()?;
    let ty = TensorType::new(element, shape).map_err(|e| e.message)?;
    HostTensor::from_bytes(ty, hex_bytes(v["hex"].as_str().ok_or("no hex")?)?)
        .map_err(|e| e.to_string())
}

/// A decoded request: the library, the program's bytes (text or another form), the inputs.
struct Request {
    library: String,
    program: Vec<u8>,
    inputs: Vec<HostTensor>,
}

fn decode(request: &serde_json::Value) -> Result<Request, String> {
    let library = request["library"].as_str().ok_or("no library")?.to_string();
    let program = match (request["text"].as_str(), request["program_hex"].as_str()) {
        (Some(text), None) => text.as_bytes().to_vec(),
        (None, Some(hex)) => hex_bytes(hex)?,
        _ => return Err("give one of text and program_hex".into()),
    };
    let inputs = request["inputs"]
        .as_array()
        .ok_or("no inputs")?
        .iter()
        .map(input)
        .collect::<Result<_, _>>()?;
    Ok(Request {
        library,
        program,
        inputs,
    })
}

/// Where and why the runner stopped.
struct Failure {
    /// `parse`, `setup`, `compile` or `execute`.
    stage: &'static str,
    error: RunError,
    refusal: Option<Refusal>,
}

fn at(stage: &'static str) -> impl Fn(RunError) -> Failure {
    move |error| Failure {
        stage,
        refusal: error.refusal(),
        error,
    }
}

fn run(r: &Request) -> Result<Vec<HostTensor>, Failure> {
    let program = Program::load(&r.program).map_err(at("parse"))?;
    let devices = program.signature().map_or(1, |s| s.mesh_devices() as usize);
    let client = Client::cpu(devices).map_err(at("setup"))?;
    // SAFETY: the caller (the Python cross-check) names a customop kernel cdylib.
    unsafe { client.register_library(r.library.as_ref()) }.map_err(at("setup"))?;
    let exe = client.compile(&program).map_err(at("compile"))?;
    exe.run(&r.inputs).map_err(|error| Failure {
        stage: "execute",
        refusal: match &error {
            RunError::Input(_) => program.signature().and_then(|s| s.refusal_for(&r.inputs)),
            e => e.refusal(),
        },
        error,
    })
}

/// Which kind of [`RunError`] `e` is.
fn kind(e: &RunError) -> &'static str {
    match e {
        RunError::Pjrt { .. } => "pjrt",
        RunError::Program(_) => "program",
        RunError::Input(_) => "input",
        RunError::Output(_) => "output",
        RunError::Library { .. } => "library",
        RunError::PluginNotFound { .. } | RunError::Plugin { .. } | RunError::PluginEnv { .. } => {
            "plugin"
        }
        _ => "other",
    }
}

/// The status class of `e`, for comparing with jaxlib's: a PJRT error's own status (as
/// [`RunError::pjrt_code`] gives it); for what
/// the runner refuses before the plugin sees it, `INVALID_ARGUMENT`, the status XLA gives the
/// same fault (a program without `@main`: "MLIR module must have a main function"; an input
/// of another size: "expected parameter 0 of size 8 ... but got ... size 12"); for the rest (a
/// library or plugin that cannot be loaded, an output that cannot be read) none, which agrees
/// with nothing. (A text XLA cannot parse is `UNKNOWN` to XLA, "Failed to parse"; the runner
/// reads only the entry function's signature, so such a text reaches the plugin unless the
/// signature itself is what does not parse.)
fn status(e: &RunError) -> Option<&'static str> {
    match e {
        RunError::Program(_) | RunError::Input(_) => Some(PjrtCode::InvalidArgument.name()),
        // The plugin's own status, also where customop says the cause in its own words (a
        // missing handler, a StableHLO version).
        e => e.pjrt_code().map(PjrtCode::name),
    }
}

fn main() -> ExitCode {
    let mut body = String::new();
    if std::io::stdin().read_to_string(&mut body).is_err() {
        return ExitCode::FAILURE;
    }
    let request: serde_json::Value = match serde_json::from_str(&body) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("the request is not JSON: {e}");
            return ExitCode::FAILURE;
        }
    };
    let request = match decode(&request) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("the request cannot be decoded: {e}");
            return ExitCode::FAILURE;
        }
    };
    let answer = match run(&request) {
        Ok(outs) => serde_json::json!({
            "ok": true,
            "outputs": outs.iter().map(|t| serde_json::json!({
                "dtype": t.element().numpy_name(),
                "shape": t.dims(),
                "hex": t.bytes().iter().map(|b| format!("{b:02x}")).collect::<String>(),
            })).collect::<Vec<_>>(),
        }),
        Err(f) => serde_json::json!({
            "ok": false,
            "stage": f.stage,
            "error": kind(&f.error),
            "status": status(&f.error),
            "refusal": f.refusal.map(|r| r.name()),
            "message": f.error.to_string(),
        }),
    };
    println!("{answer}");
    ExitCode::SUCCESS
}
