//! The cross-check: every job the harness runs through jaxlib also runs, in this process,
//! through customop's Rust runner (`customop::pjrt`, XLA's CPU PJRT plugin from PyPI: another
//! build of XLA), and the two must agree: the same outputs, or both refusing with the same
//! customop refusal code. A disagreement panics, failing the test that ran the job.

mod compare;

use crate::{Array, Ffi, Job, Outcome, XlaError};
use compare::{Stage, agree, failures_disagree, jaxlib_failure, runner_failure};
use customop::ElementType;
use customop::pjrt::{Client, HostTensor, Plugin, Program, RunError};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A client with `devices` devices, one per count for the process.
fn client(devices: usize) -> Client {
    static CLIENTS: OnceLock<Mutex<HashMap<usize, Client>>> = OnceLock::new();
    let mut map = CLIENTS
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry(devices)
        .or_insert_with(|| {
            let plugin = Plugin::installed().unwrap_or_else(|e| {
                panic!(
                    "the PJRT cross-check needs the CPU plugin: {e}\n\
                     (`bash scripts/setup.sh` installs it)"
                )
            });
            Client::new(plugin, devices)
                .unwrap_or_else(|e| panic!("creating a PJRT client with {devices} devices: {e}"))
        })
        .clone()
}

fn register(client: &Client, ffi: &Ffi) -> Result<(), RunError> {
    match &ffi.targets {
        // SAFETY: the job names a customop kernel cdylib, as it does to jaxlib.
        None => unsafe { client.register_library(&ffi.library) }.map(drop),
        Some(targets) => {
            for t in targets {
                // SAFETY: the job names these symbols as XLA FFI handlers of the library, as it
                // does to jaxlib.
                unsafe { client.register_symbol(&ffi.library, &t.name, &t.symbol)? };
            }
            Ok(())
        }
    }
}

fn to_host(a: &Array) -> HostTensor {
    let element = ElementType::ALL
        .into_iter()
        .find(|t| t.numpy_name() == a.dtype)
        .unwrap_or_else(|| panic!("no element type for numpy dtype {}", a.dtype));
    let ty = customop::TensorType::new(element, a.shape.clone()).expect("a valid shape");
    HostTensor::from_bytes(ty, a.bytes()).expect("the array's bytes fit its type")
}

fn to_array(t: &HostTensor) -> Array {
    Array::from_bytes(t.element().numpy_name(), t.dims(), t.bytes())
}

/// Runs `job` through the runner and holds the result against jaxlib's `outcome`.
pub(crate) fn check(job: &Job<'_>, outcome: &Result<Outcome, XlaError>) {
    if job.repeat > 1 {
        // Timing runs (benchmarks) are not cross-checked: they run what other jobs checked.
        return;
    }
    let what = |m: String| -> ! {
        panic!(
            "PJRT cross-check: {m}\n--- module ---\n{}",
            if job.text.is_empty() {
                "(bytecode)"
            } else {
                job.text
            }
        )
    };
    let program = match job.bytecode {
        Some(b) => match Program::text(job.text)
            .ok()
            .and_then(|p| p.signature().cloned())
        {
            // SAFETY: the job's text is the same program as its bytecode (the harness writes
            // both from one module), and the compiled parameters are checked against it.
            Some(sig) => unsafe { Program::bytecode_with_signature(b, sig) },
            None => Ok(Program::bytecode(b)),
        },
        None => Program::text(job.text),
    };
    let devices = match &program {
        Ok(p) => p.signature().map_or(1, |s| s.mesh_devices() as usize),
        Err(_) => 1,
    }
    .max(job.mesh.iter().map(|(_, n)| *n as usize).product::<usize>());
    let client = client(devices);
    if let Some(ffi) = job.ffi
        && let Err(e) = register(&client, ffi)
    {
        what(format!("registering the handlers: {e}"));
    }
    let signature = program.as_ref().ok().and_then(|p| p.signature().cloned());
    let exe = program.and_then(|p| client.compile(&p));
    let outcome = match (outcome, exe) {
        (Err(jax), Ok(_)) => what(format!(
            "jaxlib failed at {} ({}), the runner compiled the module",
            jax.stage, jax.message
        )),
        (Err(jax), Err(e)) => {
            // Both failed before running anything: at the same stage, of the same class.
            let ours = runner_failure(Stage::Compile, &e, e.refusal());
            match failures_disagree(&jaxlib_failure(jax), &ours) {
                Some(m) => what(m),
                None => {
                    count();
                    return;
                }
            }
        }
        (Ok(_), Err(e)) => what(format!(
            "jaxlib compiled the module, the runner did not: {e}"
        )),
        (Ok(o), Ok(exe)) => (o, exe),
    };
    let (jax, exe) = outcome;
    if jax.runs.len() != job.runs.len() {
        what(format!(
            "the job has {} runs, jaxlib ran {}",
            job.runs.len(),
            jax.runs.len()
        ));
    }
    for (i, (inputs, jax_run)) in job.runs.iter().zip(&jax.runs).enumerate() {
        let args: Vec<HostTensor> = inputs.iter().map(to_host).collect();
        let ours = exe.run(&args);
        match (jax_run, ours) {
            (Ok(j), Ok(o)) => {
                if j.len() != o.len() {
                    what(format!(
                        "run {i}: jaxlib gave {} outputs, the runner {}",
                        j.len(),
                        o.len()
                    ));
                }
                for (k, (ja, oa)) in j.iter().zip(&o).enumerate() {
                    if let Err(m) = agree(ja, &to_array(oa)) {
                        what(format!("run {i}, output {k}: {m}"));
                    }
                }
            }
            (Err(j), Err(o)) => {
                // The runner checks inputs against the signature before calling the plugin
                // (which passes a wrong-sized buffer on to the handler, as jaxlib does): its
                // refusal comes first, and stands for the code the handler gives.
                let refusal = match &o {
                    RunError::Input(_) => signature.as_ref().and_then(|s| s.refusal_for(&args)),
                    _ => o.refusal(),
                };
                let ours = runner_failure(Stage::Execute, &o, refusal);
                if let Some(m) = failures_disagree(&jaxlib_failure(j), &ours) {
                    what(format!("run {i}: {m}"));
                }
            }
            (Ok(_), Err(o)) => what(format!("run {i}: jaxlib ran it, the runner refused: {o}")),
            (Err(j), Ok(_)) => what(format!(
                "run {i}: jaxlib refused ({}), the runner ran it",
                j.message
            )),
        }
    }
    count();
}

/// Counts one agreeing job in `CUSTOMOP_PJRT_CROSS_CHECK_LOG` (suite `rust`), when set: the
/// test script requires a minimum per suite.
fn count() {
    use std::io::Write;
    if let Some(log) = std::env::var_os("CUSTOMOP_PJRT_CROSS_CHECK_LOG") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log);
        // One write of one line: appends from several test threads do not interleave.
        let ok = file.and_then(|mut f| f.write_all(b"ok rust\n"));
        if let Err(e) = ok {
            panic!("PJRT cross-check: cannot count in the log: {e}");
        }
    }
}

/// Holds a compile-only job's result against the runner's.
pub(crate) fn check_compile(module: &str, ffi: Option<&Ffi>, jax: &Result<(), XlaError>) {
    let job = Job {
        text: module,
        ffi,
        ..Job::default()
    };
    let outcome = jax.clone().map(|()| Outcome {
        runs: Vec::new(),
        probes: Vec::new(),
        shard_shapes: Vec::new(),
        seconds: Vec::new(),
    });
    check(&job, &outcome);
}
