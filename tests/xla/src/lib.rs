//! Rust side of customop's XLA conformance harness.
//!
//! [`Harness`] runs `tests/xla/harness.py` with the project's Python venv (jax + jaxlib pinned in
//! `tests/xla/requirements.txt`), sends it StableHLO text and inputs, and returns what jaxlib's
//! MLIR and XLA CPU client made of them. It is the independent judge of emitted modules: jaxlib
//! parses and verifies them with the real StableHLO dialect, XLA compiles and executes them.
//!
//! The harness is required, never optional: [`Harness::get`] panics with set-up instructions when
//! the venv or jaxlib is missing, so a test that needs XLA fails instead of skipping.

// A test harness: a broken harness or jaxlib install must fail the test loudly, so panics are
// the intended way out here.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod pjrt_check;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A host array: dtype (numpy name), shape and little-endian bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Array {
    /// The numpy dtype name: `float32`, `int8`, `uint8`, ...
    pub dtype: String,
    /// The shape.
    pub shape: Vec<i64>,
    /// The elements' little-endian bytes, row-major, as hex.
    hex: String,
    /// For a sharded run: the mesh axes each dimension is split along.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Vec<Vec<String>>>,
}

macro_rules! typed_array {
    ($($from:ident $to:ident $t:ty => $dtype:literal),* $(,)?) => {
        impl Array {
            $(
                #[doc = concat!("An array of `", stringify!($t), "` values with the given shape.")]
                pub fn $from(shape: &[i64], values: &[$t]) -> Array {
                    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                    Array::from_bytes($dtype, shape, &bytes)
                }

                #[doc = concat!("The elements as `", stringify!($t), "`; panics if the dtype is not `", $dtype, "`.")]
                pub fn $to(&self) -> Vec<$t> {
                    assert_eq!(self.dtype, $dtype, "array dtype");
                    const N: usize = core::mem::size_of::<$t>();
                    self.bytes()
                        .chunks_exact(N)
                        .map(|c| {
                            let mut b = [0u8; N];
                            b.copy_from_slice(c);
                            <$t>::from_le_bytes(b)
                        })
                        .collect()
                }
            )*
        }
    };
}

typed_array!(
    f32 to_f32 f32 => "float32",
    f64 to_f64 f64 => "float64",
    i8 to_i8 i8 => "int8",
    i32 to_i32 i32 => "int32",
    i64 to_i64 i64 => "int64",
    u8 to_u8 u8 => "uint8",
    u32 to_u32 u32 => "uint32",
);

impl Array {
    /// An array from raw little-endian bytes.
    pub fn from_bytes(dtype: &str, shape: &[i64], bytes: &[u8]) -> Array {
        let mut hex = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            hex.push_str(&format!("{b:02x}"));
        }
        Array {
            dtype: dtype.to_string(),
            shape: shape.to_vec(),
            hex,
            spec: None,
        }
    }

    /// The same array, placed on the mesh split along `spec` (per dimension, the mesh axes).
    pub fn sharded(mut self, spec: &[&[&str]]) -> Array {
        self.spec = Some(
            spec.iter()
                .map(|d| d.iter().map(|a| a.to_string()).collect())
                .collect(),
        );
        self
    }

    /// The raw little-endian bytes.
    pub fn bytes(&self) -> Vec<u8> {
        (0..self.hex.len() / 2)
            .map(|i| u8::from_str_radix(&self.hex[2 * i..2 * i + 2], 16).unwrap_or(0))
            .collect()
    }
}

/// A handler to register before compiling: the FFI target name and the cdylib's symbol.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// The custom call target name (`call_target_name`).
    pub name: String,
    /// The exported `extern "C"` symbol in the library.
    pub symbol: String,
}

/// A cdylib whose handlers XLA should call.
#[derive(Clone, Debug, Serialize)]
pub struct Ffi {
    /// Path of the shared library.
    pub library: PathBuf,
    /// Targets to register from it; `None` registers every op of a customop cdylib's
    /// manifest (through `python/customop/xla.py`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<Target>>,
}

impl Ffi {
    /// Every op of a customop kernel cdylib, from its manifest.
    pub fn customop_library(library: PathBuf) -> Ffi {
        Ffi {
            library,
            targets: None,
        }
    }
}

/// Builds the example kernel cdylib (`customop-example-kernels`) on its own, so that it is
/// compiled exactly as a kernel crate is, without MLIR, into `target/kernels`, and returns
/// its path. Built once per test process.
pub fn example_kernels() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| build_example_kernels(false)).clone()
}

/// [`example_kernels`] built with optimisations (`--release`), for benchmarks.
pub fn example_kernels_release() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| build_example_kernels(true)).clone()
}

/// The C-kernel example's cdylib (`customop-example-c-kernel`: a C library wrapped by a
/// custom op), built like [`example_kernels`], once per test process.
pub fn example_c_kernel() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| build_kernel_cdylib("customop-example-c-kernel", false))
        .clone()
}

fn build_example_kernels(release: bool) -> PathBuf {
    build_kernel_cdylib("customop-example-kernels", release)
}

fn build_kernel_cdylib(package: &str, release: bool) -> PathBuf {
    let root = workspace_root();
    let mut args = vec![
        "build",
        "--quiet",
        "-p",
        package,
        "--target-dir",
        "target/kernels",
    ];
    if release {
        args.push("--release");
    }
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args(&args)
        .status()
        .expect("run cargo build for the example kernels");
    assert!(status.success(), "building the {package} cdylib failed");
    let profile = if release { "release" } else { "debug" };
    let lib = root.join(format!(
        "target/kernels/{profile}/lib{}.so",
        package.replace('-', "_")
    ));
    assert!(lib.exists(), "{} is missing", lib.display());
    lib
}

/// What jaxlib rejected, and at which stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XlaError {
    /// `parse`, `verify`, `load`, `register`, `compile`, `execute` or `harness`.
    pub stage: String,
    /// jaxlib's message, with MLIR diagnostics where there are any.
    pub message: String,
}

impl fmt::Display for XlaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "jaxlib rejected the module at {}: {}",
            self.stage, self.message
        )
    }
}

impl std::error::Error for XlaError {}

/// An `int64_t symbol(void)` of a loaded library, called after the runs (a handler-side
/// counter, say).
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// Path of the shared library.
    pub library: PathBuf,
    /// The function's symbol.
    pub symbol: String,
}

/// What one compile-and-run job returned.
#[derive(Debug)]
pub struct Outcome {
    /// One result per run, in order.
    pub runs: Vec<Result<Vec<Array>, XlaError>>,
    /// The probes' values after the last run.
    pub probes: Vec<i64>,
    /// For SPMD runs: per run, per output, each device's shard shape.
    pub shard_shapes: Vec<Vec<Vec<Vec<i64>>>>,
    /// For SPMD runs: per run, the wall time of each of its `repeat` executions, in seconds.
    pub seconds: Vec<Vec<f64>>,
}

/// A module to compile once and run on several input sets, in one process.
#[derive(Debug, Default)]
pub struct Job<'a> {
    /// StableHLO text (or empty when `bytecode` is set).
    pub text: &'a str,
    /// MLIR bytecode instead of text.
    pub bytecode: Option<&'a [u8]>,
    /// Handlers to register first.
    pub ffi: Option<&'a Ffi>,
    /// Input sets, one execution each.
    pub runs: Vec<Vec<Array>>,
    /// Counters to read after the runs.
    pub probes: Vec<Probe>,
    /// For an SPMD run on virtual CPU devices: the mesh axes and sizes.
    pub mesh: Vec<(String, i64)>,
    /// For an SPMD run: how each output is split (to assemble it from its shards).
    pub output_specs: Vec<Vec<Vec<String>>>,
    /// For an SPMD run: how many times to execute each input set (0 or 1: once), timing each.
    pub repeat: usize,
    /// For an SPMD run: when not empty, each input set first runs once untimed, then these
    /// are called (to reset handler-side counters before the timed executions).
    pub warmup_probes: Vec<Probe>,
}

#[derive(Serialize)]
struct Request<'a> {
    module: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    module_hex: Option<String>,
    action: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<&'a [Vec<Array>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ffi: Option<&'a Ffi>,
    #[serde(skip_serializing_if = "<[Probe]>::is_empty")]
    probes: &'a [Probe],
    #[serde(skip_serializing_if = "<[(String, i64)]>::is_empty")]
    mesh: &'a [(String, i64)],
    #[serde(skip_serializing_if = "<[Vec<Vec<String>>]>::is_empty")]
    output_specs: &'a [Vec<Vec<String>>],
    #[serde(skip_serializing_if = "is_zero")]
    repeat: usize,
    #[serde(skip_serializing_if = "<[Probe]>::is_empty")]
    warmup_probes: &'a [Probe],
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Deserialize)]
struct Answer {
    ok: bool,
    #[serde(default)]
    stage: String,
    #[serde(default)]
    error: String,
    #[serde(default)]
    outputs: Vec<Array>,
    #[serde(default)]
    runs: Vec<Answer>,
    #[serde(default)]
    probes: Vec<i64>,
    #[serde(default)]
    shard_shapes: Vec<Vec<Vec<i64>>>,
    #[serde(default)]
    seconds: Vec<f64>,
}

impl Answer {
    fn into_result(self) -> Result<Vec<Array>, XlaError> {
        if self.ok {
            Ok(self.outputs)
        } else {
            Err(XlaError {
                stage: self.stage,
                message: self.error,
            })
        }
    }
}

/// The Python side of the harness, found and checked once.
#[derive(Clone, Debug)]
pub struct Harness {
    python: PathBuf,
    script: PathBuf,
}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

impl Harness {
    /// The venv's Python that the harness runs.
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// Finds the venv's Python (`$CUSTOMOP_PYTHON`, else `target/xla-venv/bin/python`) and checks
    /// that it imports jax and jaxlib.
    pub fn locate() -> Result<Harness, String> {
        let python = match std::env::var_os("CUSTOMOP_PYTHON") {
            Some(p) => PathBuf::from(p),
            None => workspace_root().join("target/xla-venv/bin/python"),
        };
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness.py");
        let out = Command::new(&python)
            .args([
                "-c",
                "import jax, jaxlib; print(jax.__version__, jaxlib.__version__)",
            ])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} cannot import jax/jaxlib: {}",
                python.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Harness { python, script })
    }

    /// The harness, or a panic saying how to install it. XLA tests never skip: a missing jaxlib
    /// is a failure, on CI and locally alike.
    pub fn get() -> Harness {
        match Harness::locate() {
            Ok(h) => h,
            Err(e) => panic!(
                "the XLA harness is not installed ({e}).\n\
                 Run `bash scripts/setup.sh` (or the README's test command), which creates \
                 target/xla-venv with tests/xla/requirements.txt, or set CUSTOMOP_PYTHON to a \
                 Python that has jax and jaxlib 0.12.0.1."
            ),
        }
    }

    fn ask(&self, request: &Request<'_>) -> Answer {
        let body = serde_json::to_vec(request).expect("request serialises");
        let mut child = Command::new(&self.python)
            .arg(&self.script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the harness");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(&body)
            .expect("write the request");
        let out = child.wait_with_output().expect("wait for the harness");
        match serde_json::from_slice::<Answer>(&out.stdout) {
            Ok(a) => a,
            Err(e) => panic!(
                "the harness gave no answer ({e}; exit {:?}).\nstdout: {}\nstderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    /// Calls `function` of the Python helper's module `customop.<module>` (in `python/`) with
    /// JSON arguments; bytes travel as `{"hex": "..."}`. Returns the result, or the Python
    /// exception's message.
    pub fn py_call(
        &self,
        module: &str,
        function: &str,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        let request = serde_json::json!({"module": module, "function": function, "args": args});
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("pycall.py");
        let mut child = Command::new(&self.python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the Python helper");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(request.to_string().as_bytes())
            .expect("write the request");
        let out = child
            .wait_with_output()
            .expect("wait for the Python helper");
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "the Python helper gave no answer ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        if answer["ok"] == serde_json::Value::Bool(true) {
            Ok(answer["result"].clone())
        } else {
            Err(answer["error"].as_str().unwrap_or("?").to_string())
        }
    }

    /// A request that runs nothing: `verify` or `compile`.
    fn ask_stage(&self, module: &str, action: &str, ffi: Option<&Ffi>) -> Result<(), XlaError> {
        self.ask(&Request {
            module,
            module_hex: None,
            action,
            runs: None,
            ffi,
            probes: &[],
            mesh: &[],
            output_specs: &[],
            repeat: 0,
            warmup_probes: &[],
        })
        .into_result()
        .map(drop)
    }

    /// Parses and verifies `module` with jaxlib's MLIR (StableHLO registered).
    pub fn verify(&self, module: &str) -> Result<(), XlaError> {
        self.ask_stage(module, "verify", None)
    }

    /// Parses, verifies and compiles `module` with XLA CPU, registering `ffi` first.
    pub fn compile(&self, module: &str, ffi: Option<&Ffi>) -> Result<(), XlaError> {
        let result = self.ask_stage(module, "compile", ffi);
        pjrt_check::check_compile(module, ffi, &result);
        result
    }

    /// Parses, verifies, compiles and executes `module` once on `inputs`.
    pub fn run(&self, module: &str, inputs: &[Array]) -> Result<Vec<Array>, XlaError> {
        self.run_many(module, None, &[inputs.to_vec()])?
            .pop()
            .expect("one run asked, one answered")
    }

    /// Compiles `module` once (after registering `ffi`) and executes it on each input set in
    /// turn, in one process: one result per run. Compile-stage errors are the outer `Err`.
    pub fn run_many(
        &self,
        module: &str,
        ffi: Option<&Ffi>,
        runs: &[Vec<Array>],
    ) -> Result<Vec<Result<Vec<Array>, XlaError>>, XlaError> {
        self.execute(&Job {
            text: module,
            ffi,
            runs: runs.to_vec(),
            ..Job::default()
        })
        .map(|o| o.runs)
    }

    /// Runs a [`Job`]: parse, verify, register, compile once, execute each run, read probes.
    /// The same job then runs through customop's Rust runner (XLA's CPU PJRT plugin), which
    /// must agree (see `pjrt_check`).
    pub fn execute(&self, job: &Job<'_>) -> Result<Outcome, XlaError> {
        let outcome = self.execute_jax(job);
        pjrt_check::check(job, &outcome);
        outcome
    }

    fn execute_jax(&self, job: &Job<'_>) -> Result<Outcome, XlaError> {
        let answer = self.ask(&Request {
            module: job.text,
            module_hex: job
                .bytecode
                .map(|b| b.iter().map(|x| format!("{x:02x}")).collect()),
            action: "run",
            runs: Some(&job.runs),
            ffi: job.ffi,
            probes: &job.probes,
            mesh: &job.mesh,
            output_specs: &job.output_specs,
            repeat: job.repeat,
            warmup_probes: &job.warmup_probes,
        });
        if !answer.ok {
            return Err(answer.into_result().expect_err("not ok"));
        }
        Ok(Outcome {
            probes: answer.probes,
            shard_shapes: answer.runs.iter().map(|r| r.shard_shapes.clone()).collect(),
            seconds: answer.runs.iter().map(|r| r.seconds.clone()).collect(),
            runs: answer.runs.into_iter().map(Answer::into_result).collect(),
        })
    }

    /// The directory of jaxlib's XLA FFI headers (`jax.ffi.include_dir()`).
    pub fn ffi_include_dir(&self) -> PathBuf {
        let out = Command::new(&self.python)
            .args(["-c", "import jax; print(jax.ffi.include_dir())"])
            .output()
            .expect("ask jax for its FFI include dir");
        assert!(out.status.success(), "jax.ffi.include_dir() failed");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    }

    /// Compiles a C source file of handlers against jaxlib's XLA FFI header into a shared
    /// library under `target/xla-c/`, and returns its path.
    pub fn build_c_library(&self, source: &Path, name: &str) -> PathBuf {
        let include = self.ffi_include_dir();
        let dir = workspace_root().join("target/xla-c");
        std::fs::create_dir_all(&dir).expect("create target/xla-c");
        let lib = dir.join(format!("lib{name}.so"));
        let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-O2", "-shared", "-fPIC", "-I"])
            .arg(&include)
            .arg(source)
            .arg("-o")
            .arg(&lib)
            .status()
            .expect("run the C compiler");
        assert!(status.success(), "compiling {} failed", source.display());
        lib
    }
}

/// One argument of a printed function that carries a `customop.external` annotation: what its
/// type says and what the annotation says, so that tests can hold the two against each other
/// and against the descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalArg {
    /// The argument's position in the function's parameter list.
    pub index: usize,
    /// `N` of the argument's type `tensor<Nxui8>` (`None` when the type is anything else).
    pub type_bytes: Option<i64>,
    /// The annotation's `descriptor`.
    pub descriptor: String,
    /// The annotation's `size`.
    pub size: i64,
    /// The annotation's `mutable`.
    pub mutable: bool,
}

/// The arguments of function `@name` in the pretty-printed module `text`, each as written
/// (`%arg1: tensor<56xui8> {customop.external = {...}}`), split at top-level commas. `None`
/// when the module has no such function.
pub fn function_args(text: &str, name: &str) -> Option<Vec<String>> {
    let head = format!("@{name}(");
    let start = text
        .lines()
        .find(|l| l.trim_start().starts_with("func.func") && l.contains(&head))?;
    let open = start.find(&head)? + head.len();
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut cur = String::new();
    for c in start[open..].chars() {
        if in_str {
            cur.push(c);
            if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '<' | '[' | '(' => depth += 1,
            '}' | '>' | ']' => depth -= 1,
            ')' if depth == 0 => {
                if !cur.trim().is_empty() {
                    args.push(cur.trim().to_string());
                }
                return Some(args);
            }
            ')' => depth -= 1,
            ',' if depth == 0 => {
                args.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    None
}

/// Every argument of function `@name` in `text` that carries `customop.external`, in order.
/// Panics when the function is missing or an annotation lacks a field.
pub fn external_args(text: &str, name: &str) -> Vec<ExternalArg> {
    let args =
        function_args(text, name).unwrap_or_else(|| panic!("no function @{name} in\n{text}"));
    let field = |arg: &str, key: &str| -> String {
        let at = arg
            .find(&format!("{key} = "))
            .unwrap_or_else(|| panic!("no `{key}` in the annotation of `{arg}`"))
            + key.len()
            + 3;
        let rest = &arg[at..];
        let end = rest.find([',', '}', ' ']).unwrap_or(rest.len());
        rest[..end].trim_matches('"').to_string()
    };
    args.iter()
        .enumerate()
        .filter(|(_, a)| a.contains("customop.external = {"))
        .map(|(index, a)| {
            let ty = a.split_once(": ").map(|(_, t)| t).unwrap_or("");
            let type_bytes = ty
                .strip_prefix("tensor<")
                .and_then(|t| t.split_once("xui8>"))
                .and_then(|(n, _)| n.parse().ok());
            let ann = &a[a.find("customop.external").unwrap_or(0)..];
            ExternalArg {
                index,
                type_bytes,
                descriptor: field(ann, "descriptor"),
                size: field(ann, "size").parse().expect("size is a number"),
                mutable: field(ann, "mutable") == "true",
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_round_trip_their_bytes() {
        let a = Array::f32(&[2], &[1.5, -2.0]);
        assert_eq!(a.hex, "0000c03f000000c0");
        assert_eq!(a.to_f32(), vec![1.5, -2.0]);
        assert_eq!(Array::i8(&[3], &[-1, 0, 127]).to_i8(), vec![-1, 0, 127]);
    }

    #[test]
    fn external_args_are_read_from_a_printed_signature() {
        let text = r#"module {
  func.func private @h(%arg0: tensor<2xf32>, %arg1: tensor<28xui8>) -> tensor<2xf32> {
  }
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<28xui8> {customop.external = {descriptor = "a::B", fingerprint = "0x01", mutable = false, size = 28 : i64}}, %arg2: tensor<72xui8> {customop.external = {descriptor = "c::D", fingerprint = "0x02", mutable = true, size = 96 : i64}, sdy.sharding = #sdy.sharding<@mesh, [{}]>}) -> (tensor<2xf32>, tensor<3xi8>) {
"#;
        assert_eq!(function_args(text, "h").unwrap().len(), 2);
        assert_eq!(
            external_args(text, "main"),
            vec![
                ExternalArg {
                    index: 1,
                    type_bytes: Some(28),
                    descriptor: "a::B".into(),
                    size: 28,
                    mutable: false
                },
                ExternalArg {
                    index: 2,
                    type_bytes: Some(72),
                    descriptor: "c::D".into(),
                    size: 96,
                    mutable: true
                },
            ]
        );
        assert!(external_args(text, "h").is_empty());
        assert!(function_args(text, "nope").is_none());
    }
}
