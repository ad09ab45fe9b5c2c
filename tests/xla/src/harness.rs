//! The Python side of the harness: requests to jaxlib (verify, compile, run jobs), its answers
//! and refusals, Python helper calls and C handler libraries.

use crate::{Array, Ffi, pjrt_check, workspace_root};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
