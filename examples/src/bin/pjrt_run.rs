//! Runs one StableHLO text through the Rust runner (`customop::pjrt`) with a kernel cdylib's
//! handlers, for the Python side's cross-check (`CUSTOMOP_PJRT_CROSS_CHECK`: every program
//! `customop.torch`'s `Exported.run` runs on jaxlib is run here too, and the results compared).
//!
//! Reads `{"library": PATH, "text": MLIR, "inputs": [{"dtype": numpy name, "shape": [..],
//! "hex": bytes}]}` on stdin; prints `{"ok": true, "outputs": [...]}` or `{"ok": false,
//! "refusal": code or null, "message": ...}`.

use customop::ElementType;
use customop::TensorType;
use customop::pjrt::{Client, HostTensor, Program, RunError};
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

fn run(request: &serde_json::Value) -> Result<Vec<HostTensor>, RunError> {
    let bad = |m: String| RunError::Input(m);
    let library = request["library"]
        .as_str()
        .ok_or_else(|| bad("no library".into()))?;
    let text = request["text"]
        .as_str()
        .ok_or_else(|| bad("no text".into()))?;
    let inputs: Vec<HostTensor> = request["inputs"]
        .as_array()
        .ok_or_else(|| bad("no inputs".into()))?
        .iter()
        .map(input)
        .collect::<Result<_, _>>()
        .map_err(bad)?;
    let program = Program::text(text)?;
    let devices = program.signature().map_or(1, |s| s.mesh_devices() as usize);
    let client = Client::cpu(devices)?;
    // SAFETY: the caller (the Python cross-check) names a customop kernel cdylib.
    unsafe { client.register_library(library.as_ref())? };
    client.compile(&program)?.run(&inputs)
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
    let answer = match run(&request) {
        Ok(outs) => serde_json::json!({
            "ok": true,
            "outputs": outs.iter().map(|t| serde_json::json!({
                "dtype": t.element().numpy_name(),
                "shape": t.dims(),
                "hex": t.bytes().iter().map(|b| format!("{b:02x}")).collect::<String>(),
            })).collect::<Vec<_>>(),
        }),
        Err(e) => serde_json::json!({
            "ok": false,
            "input_error": matches!(e, RunError::Input(_)),
            "refusal": e.refusal().map(|r| r.name()),
            "message": e.to_string(),
        }),
    };
    println!("{answer}");
    ExitCode::SUCCESS
}
