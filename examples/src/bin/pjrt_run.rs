//! Runs one StableHLO text through the Rust runner (`customop::pjrt`) with a kernel cdylib's
//! handlers, for the Python side's cross-check (`CUSTOMOP_PJRT_CROSS_CHECK`: every program
//! `customop.torch`'s `Exported.run` runs on jaxlib is run here too, and the results compared).
//!
//! Reads `{"library": PATH, "text": MLIR, "inputs": [{"dtype": numpy name, "shape": [..],
//! "hex": bytes}]}` on stdin; prints `{"ok": true, "outputs": [...]}` or `{"ok": false,
//! "refusal": code or null, "message": ...}`. A request it cannot decode is no answer: it
//! says why on stderr and exits with status 1.
//!
//! When the runner refuses the inputs itself (before the plugin sees them), `refusal` is the
//! code a handler gives the same mismatch (`wrong_count`, `wrong_dtype`, `wrong_rank`,
//! `wrong_shape`, `bad_descriptor` for an external's bytes), so that the cross-check compares
//! codes exactly.

use customop::pjrt::{Client, HostTensor, Program, RunError};
use customop::{ElementType, TensorType};
use std::io::Read;
use std::process::ExitCode;

fn hex_bytes(h: &str) -> Result<Vec<u8>, String> {
    if h.len() % 2 != 0 {
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

/// A decoded request: the library, the program's text, the inputs.
struct Request {
    library: String,
    text: String,
    inputs: Vec<HostTensor>,
}

fn decode(request: &serde_json::Value) -> Result<Request, String> {
    let library = request["library"].as_str().ok_or("no library")?.to_string();
    let text = request["text"].as_str().ok_or("no text")?.to_string();
    let inputs = request["inputs"]
        .as_array()
        .ok_or("no inputs")?
        .iter()
        .map(input)
        .collect::<Result<_, _>>()?;
    Ok(Request {
        library,
        text,
        inputs,
    })
}

fn run(r: &Request, program: &Program) -> Result<Vec<HostTensor>, RunError> {
    let devices = program.signature().map_or(1, |s| s.mesh_devices() as usize);
    let client = Client::cpu(devices)?;
    // SAFETY: the caller (the Python cross-check) names a customop kernel cdylib.
    unsafe { client.register_library(r.library.as_ref())? };
    client.compile(program)?.run(&r.inputs)
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
    let program = Program::text(&request.text);
    let result = program
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|p| run(&request, p));
    let answer = match result {
        Ok(outs) => serde_json::json!({
            "ok": true,
            "outputs": outs.iter().map(|t| serde_json::json!({
                "dtype": t.element().numpy_name(),
                "shape": t.dims(),
                "hex": t.bytes().iter().map(|b| format!("{b:02x}")).collect::<String>(),
            })).collect::<Vec<_>>(),
        }),
        Err(e) => {
            let refusal = match (&e, &program) {
                (RunError::Input(_), Ok(p)) => {
                    p.signature().and_then(|s| s.refusal_for(&request.inputs))
                }
                _ => e.refusal(),
            };
            serde_json::json!({
                "ok": false,
                "input_error": matches!(e, RunError::Input(_)),
                "refusal": refusal.map(|r| r.name()),
                "message": e.to_string(),
            })
        }
    };
    println!("{answer}");
    ExitCode::SUCCESS
}
