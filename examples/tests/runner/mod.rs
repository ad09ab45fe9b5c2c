//! The PJRT runner (`customop::pjrt`) on its own: the plugin's facts, the seed program from
//! Rust, from a torch export and as bytecode, inputs refused before the plugin sees them,
//! handler refusals surfacing with their codes, state across executions. (Every job the other
//! tests run through jaxlib is also cross-checked against the runner by the harness.)
//!
//! These tests register the example kernel cdylib's handlers, as the cross-check does, never
//! the copies linked into this test binary: the plugin's registry is process-wide, and one
//! target cannot have two handlers. The demo binaries (`seed`, `seed_sharded`), which register
//! their linked ops, run in their own processes.

use super::{counter_module, example_kernels, k, seed_expected, t, torch_seed_json};
use customop::Descriptor;
use customop::lower::Module;
use customop::pjrt::{Client, Executable, HostTensor, PjrtCode, Plugin, Program, RunError};
use customop::{ElementType, Refusal};
use std::sync::OnceLock;

/// A one-device client with the example cdylib's handlers registered.
fn client() -> Client {
    static C: OnceLock<Client> = OnceLock::new();
    C.get_or_init(|| {
        let c = Client::cpu(1).expect("the CPU plugin (scripts/setup.sh installs it)");
        // SAFETY: the example kernel cdylib is a customop library.
        let targets = unsafe { c.register_library(&example_kernels()) }.unwrap();
        assert!(targets.contains(&"my_custom_library.custom_op_external".to_string()));
        c
    })
    .clone()
}

fn seed_blob() -> k::Blob {
    k::Blob {
        gain: 2.0,
        bias: -1,
        seed: 42,
        tag: *b"customop seed!!!",
    }
}

fn seed_x() -> Vec<f32> {
    (0..9).map(|i| i as f32 * 0.5).collect()
}

fn x33(x: &[f32]) -> HostTensor {
    HostTensor::from_slice(&[3, 3], x).unwrap()
}

/// Runs a seed-shaped program on `x` with the blob as external `name`; its first output.
fn run_seed(exe: &Executable, x: &[f32], name: &str, b: &k::Blob) -> Vec<i8> {
    exe.inputs()
        .arg(x33(x))
        .unwrap()
        .external(name, b)
        .unwrap()
        .run()
        .unwrap()[0]
        .to_vec::<i8>()
        .unwrap()
}

#[test]
fn the_seed_model_runs_with_its_blob_given_by_name() {
    let module = customop_examples::seed_model().unwrap();
    let exe = client()
        .compile(&Program::module(&module).unwrap())
        .unwrap();
    let sig = exe.signature().unwrap();
    let ext = sig.external("external").unwrap();
    assert_eq!(ext.index, 1);
    assert_eq!(ext.ty.to_string(), "tensor<56xui8>");
    let (x, b) = (seed_x(), seed_blob());
    let out = exe
        .inputs()
        .external("external", &b)
        .unwrap()
        .arg(x33(&x))
        .unwrap()
        .run()
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dims(), &[3]);
    assert_eq!(out[0].to_vec::<i8>().unwrap(), seed_expected(&x, 3, &b));
    assert_eq!(out[0].to_vec::<i8>().unwrap(), vec![3, 5, -2]);
    // Many executions of one executable.
    for i in 0..20 {
        let x: Vec<f32> = (0..9).map(|j| (i * 9 + j) as f32 * 0.1).collect();
        assert_eq!(
            run_seed(&exe, &x, "external", &b),
            seed_expected(&x, 3, &b),
            "{i}"
        );
    }
}

/// One executable shared by 8 threads (the runner's types are `Send + Sync`, as PJRT's
/// objects are thread-safe): every result right.
#[test]
fn one_executable_runs_from_many_threads_at_once() {
    let exe = client()
        .compile(&Program::module(&customop_examples::seed_model().unwrap()).unwrap())
        .unwrap();
    let b = seed_blob();
    let placed = client().upload_descriptor(&b).unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let (exe, b, placed) = (&exe, &b, &placed);
            s.spawn(move || {
                for i in 0..50 {
                    let x: Vec<f32> = (0..9)
                        .map(|j| (t * 100 + i * 9 + j) as f32 * 0.01)
                        .collect();
                    let out = exe
                        .inputs()
                        .arg(x33(&x))
                        .unwrap()
                        .external_placed("external", placed)
                        .unwrap()
                        .run()
                        .unwrap();
                    assert_eq!(out[0].to_vec::<i8>().unwrap(), seed_expected(&x, 3, b));
                }
            });
        }
    });
}

#[test]
fn bytecode_runs_with_a_signature_by_name_and_without_one_in_order() {
    let module = customop_examples::seed_model().unwrap();
    let sig = Program::module(&module).unwrap().signature().cloned();
    let bytes = module.to_bytecode().unwrap();
    let (x, b) = (seed_x(), seed_blob());
    // SAFETY: the signature is read from the same module's text.
    let with_sig = unsafe { Program::bytecode_with_signature(&bytes, sig.unwrap()) };
    let with_sig = client().compile(&with_sig.unwrap()).unwrap();
    assert_eq!(run_seed(&with_sig, &x, "external", &b), vec![3, 5, -2]);
    let bare = client().compile(&Program::bytecode(&bytes)).unwrap();
    let e = bare
        .inputs()
        .external("external", &b)
        .unwrap_err()
        .to_string();
    assert!(e.contains("without a signature"), "{e}");
    let packed = HostTensor::from_slice(&[56], &b.pack()).unwrap();
    let out = bare.run(&[x33(&x), packed.clone()]).unwrap();
    assert_eq!(out[0].to_vec::<i8>().unwrap(), vec![3, 5, -2]);
    // Without a signature, the compiled parameters still refuse a buffer of the same size and
    // another element type.
    let ints = HostTensor::from_slice(&[3, 3], &[1i32; 9]).unwrap();
    let e = bare.run(&[ints, packed]).unwrap_err().to_string();
    assert!(
        e.contains("the compiled program takes tensor<3x3xf32> on each device"),
        "{e}"
    );
}

#[test]
fn bad_inputs_are_refused_before_the_plugin_sees_them() {
    let module = customop_examples::seed_model().unwrap();
    let exe = client()
        .compile(&Program::module(&module).unwrap())
        .unwrap();
    let x = x33(&seed_x());
    let b = seed_blob();
    let counter = k::Counter {
        calls: 0,
        total: 0.0,
    };
    let cases: Vec<(Result<Vec<HostTensor>, RunError>, &str)> = vec![
        (
            exe.inputs().arg(x.clone()).and_then(|i| i.run()),
            "external `external` (my_lib::Blob) was not given",
        ),
        (
            exe.inputs().external("external", &b).and_then(|i| i.run()),
            "argument 0 was not given",
        ),
        (
            exe.inputs().external("blob", &b).and_then(|i| i.run()),
            "no external `blob` (its externals: [\"external\"])",
        ),
        (
            exe.inputs()
                .external("external", &counter)
                .and_then(|i| i.run()),
            "external `external` is `my_lib::Blob`",
        ),
        (
            exe.inputs()
                .arg(HostTensor::from_slice(&[3, 3], &[0f64; 9]).unwrap())
                .and_then(|i| i.run()),
            "argument 0 is tensor<3x3xf32>, but tensor<3x3xf64> was given",
        ),
        (
            exe.inputs()
                .arg(HostTensor::from_slice(&[9], &seed_x()).unwrap())
                .and_then(|i| i.run()),
            "argument 0 is tensor<3x3xf32>, but tensor<9xf32> was given",
        ),
        (
            exe.inputs()
                .arg(x.clone())
                .and_then(|i| i.arg(x.clone()))
                .and_then(|i| i.run()),
            "takes 1 arguments besides its externals; one more was given",
        ),
        (
            exe.inputs()
                .external("external", &b)
                .and_then(|i| i.external("external", &b))
                .and_then(|i| i.run()),
            "external `external` was given twice",
        ),
        (
            exe.run(std::slice::from_ref(&x)),
            "takes 2 arguments, 1 were given",
        ),
        (
            exe.run(&[
                x.clone(),
                HostTensor::from_slice(&[50], &[0u8; 50]).unwrap(),
            ]),
            "argument 1 is tensor<56xui8>, but tensor<50xui8> was given",
        ),
    ];
    for (i, (r, want)) in cases.into_iter().enumerate() {
        match r {
            Err(RunError::Input(m)) => assert!(m.contains(want), "case {i}: {m}"),
            other => panic!("case {i}: expected an input error, got {other:?}"),
        }
    }
    // And the process goes on.
    let out = exe
        .inputs()
        .arg(x)
        .unwrap()
        .external("external", &b)
        .unwrap()
        .run()
        .unwrap();
    assert_eq!(out[0].to_vec::<i8>().unwrap(), vec![3, 5, -2]);
}

#[test]
fn handler_refusals_surface_with_their_codes() {
    let c = client();
    // Corrupted descriptor bytes of the right size.
    let module = customop_examples::seed_model().unwrap();
    let exe = c.compile(&Program::module(&module).unwrap()).unwrap();
    let mut packed = seed_blob().pack();
    packed[0] ^= 0xff;
    let e = exe
        .run(&[
            x33(&seed_x()),
            HostTensor::from_slice(&[56], &packed).unwrap(),
        ])
        .unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::BadDescriptor), "{e}");
    assert_eq!(e.pjrt_code(), Some(PjrtCode::InvalidArgument), "{e}");
    assert!(
        e.to_string()
            .contains("custom op `my_custom_library::custom_op_external` [bad_descriptor]"),
        "{e}"
    );

    // A kernel's error and a kernel's panic.
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[2])]).unwrap();
    let x = f.arg(0).unwrap();
    let y = k::checked_sqrt::call(&mut f, &x).unwrap();
    let z = k::unlucky::call(&mut f, &y).unwrap();
    f.ret(&[&z]).unwrap();
    let exe = c.compile(&Program::module(&m).unwrap()).unwrap();
    let run = |v: [f32; 2]| exe.run(&[HostTensor::vector(&v)]);
    let e = run([-1.0, 4.0]).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::KernelError), "{e}");
    assert!(e.to_string().contains("negative input -1"), "{e}");
    let e = run([169.0, 4.0]).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::KernelPanic), "{e}");
    assert_eq!(e.pjrt_code(), Some(PjrtCode::Internal), "{e}");
    assert!(e.to_string().contains("unlucky number 13"), "{e}");
    // And the next execution runs.
    let ok = run([16.0, 4.0]).unwrap();
    assert_eq!(ok[0].to_vec::<f32>().unwrap(), vec![4.0, 2.0]);
}

/// Programs that call an op with what its handler refuses: XLA passes a custom call's operands
/// and attributes through unchecked, so each refusal code comes from the handler, through the
/// plugin, to the runner's error.
#[test]
fn every_refusal_a_program_can_provoke_surfaces_with_its_code() {
    let c = client();
    let call = |target: &str, operands: &str, types: &str, config: &str| {
        format!(
            r#"func.func @main({operands}) -> {ret} {{
  %0 = "stablehlo.custom_call"({names}) {{api_version = 4 : i32, call_target_name = "{target}", backend_config = {config}}} : {types}
  return %0 : {ret}
}}"#,
            ret = types.rsplit("-> ").next().unwrap(),
            names = operands
                .split(", ")
                .map(|o| o.split(':').next().unwrap())
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    let f32x2 = HostTensor::vector(&[4.0f32, 9.0]);
    let cases: Vec<(String, Vec<HostTensor>, Refusal)> = vec![
        (
            call(
                "example.checked_sqrt",
                "%a: tensor<2xf32>, %b: tensor<2xf32>",
                "(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
                "{}",
            ),
            vec![f32x2.clone(), f32x2.clone()],
            Refusal::WrongCount,
        ),
        (
            call(
                "example.checked_sqrt",
                "%a: tensor<2xf64>",
                "(tensor<2xf64>) -> tensor<2xf64>",
                "{}",
            ),
            vec![HostTensor::vector(&[4.0f64, 9.0])],
            Refusal::WrongDtype,
        ),
        (
            call(
                "example.checked_sqrt",
                "%a: tensor<2xf32>",
                "(tensor<2xf32>) -> tensor<3xf32>",
                "{}",
            ),
            vec![f32x2.clone()],
            Refusal::WrongShape,
        ),
        (
            call(
                "my_custom_library.custom_op_external",
                "%b: tensor<56xui8>, %a: tensor<3xf32>",
                "(tensor<56xui8>, tensor<3xf32>) -> tensor<3xi8>",
                "{}",
            ),
            vec![
                HostTensor::from_slice(&[56], &seed_blob().pack()).unwrap(),
                HostTensor::vector(&[1.0f32, 2.0, 3.0]),
            ],
            Refusal::WrongRank,
        ),
        (
            call(
                "example.rms_norm_t",
                "%a: tensor<1x2xf32>",
                "(tensor<1x2xf32>) -> tensor<1x2xf32>",
                "{}",
            ),
            vec![HostTensor::from_slice(&[1, 2], &[3.0f32, 4.0]).unwrap()],
            Refusal::MissingAttribute,
        ),
        (
            call(
                "example.rms_norm_t",
                "%a: tensor<1x2xf32>",
                "(tensor<1x2xf32>) -> tensor<1x2xf32>",
                "{eps = 1 : i32}",
            ),
            vec![HostTensor::from_slice(&[1, 2], &[3.0f32, 4.0]).unwrap()],
            Refusal::WrongAttributeType,
        ),
        (
            call(
                "example.rms_norm_t",
                "%a: tensor<1x2xi32>",
                "(tensor<1x2xi32>) -> tensor<1x2xi32>",
                "{eps = 1.0 : f32}",
            ),
            vec![HostTensor::from_slice(&[1, 2], &[3i32, 4]).unwrap()],
            Refusal::WrongDtype,
        ),
    ];
    for (i, (text, args, want)) in cases.into_iter().enumerate() {
        let exe = c
            .compile(&Program::text(&text).unwrap())
            .unwrap_or_else(|e| panic!("case {i}: {e}\n{text}"));
        let e = exe.run(&args).unwrap_err();
        assert_eq!(e.refusal(), Some(want), "case {i}: {e}\n{text}");
        assert!(matches!(e, RunError::Pjrt { .. }), "case {i}: {e}");
    }
}

#[test]
fn a_missing_handler_is_a_compile_error_and_a_second_handler_is_refused() {
    let c = client();
    let text = r#"func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.custom_call"(%x) {api_version = 4 : i32, call_target_name = "nobody.home", backend_config = {}} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}"#;
    let e = c.compile(&Program::text(text).unwrap()).unwrap_err();
    assert_eq!(e.pjrt_code(), Some(PjrtCode::NotFound), "{e}");
    assert!(
        e.to_string()
            .contains("No FFI handler registered for nobody.home"),
        "{e}"
    );
    // SAFETY: the symbol is a generated handler of the cdylib.
    let e = unsafe {
        c.register_symbol(
            &example_kernels(),
            "my_custom_library.custom_op_external",
            "customop_handler_example_passthrough",
        )
    }
    .unwrap_err();
    assert!(e.to_string().contains("already has another handler"), "{e}");
    // Registering the same library again changes nothing.
    // SAFETY: as in `client()`.
    unsafe { c.register_library(&example_kernels()) }.unwrap();
    // SAFETY: nothing is there to load.
    let e = unsafe { c.register_library(std::path::Path::new("/nonexistent/lib.so")) }.unwrap_err();
    assert!(matches!(e, RunError::Library { .. }), "{e}");
}

#[test]
fn a_mutable_external_comes_back_updated() {
    let m = counter_module();
    let exe = client().compile(&Program::module(&m).unwrap()).unwrap();
    let spec = exe.signature().unwrap().external("counter").unwrap();
    assert!(spec.external.as_ref().unwrap().mutable);
    let mut counter = k::Counter {
        calls: 0,
        total: 0.0,
    };
    for (i, xs) in [[1.0f32, 2.0, 3.0], [10.0, 0.0, -4.0]].iter().enumerate() {
        let out = exe
            .inputs()
            .arg(HostTensor::vector(xs))
            .unwrap()
            .external("counter", &counter)
            .unwrap()
            .run()
            .unwrap();
        assert_eq!(
            out[0].to_vec::<f32>().unwrap(),
            xs.iter().map(|v| v + 1.0 + i as f32).collect::<Vec<_>>()
        );
        counter = out[1].unpack::<k::Counter>().unwrap();
    }
    assert_eq!(
        counter,
        k::Counter {
            calls: 2,
            total: 12.0
        }
    );
    let e = HostTensor::vector(&[1.0f32])
        .unpack::<k::Counter>()
        .unwrap_err();
    assert!(e.to_string().contains("tensor<Nxui8>"), "{e}");
}

#[test]
fn placed_inputs_serve_many_executions_and_go_only_where_they_can() {
    let c = client();
    let module = customop_examples::seed_model().unwrap();
    let exe = c.compile(&Program::module(&module).unwrap()).unwrap();
    let x = c.upload(&x33(&seed_x())).unwrap();
    let b = c.upload_descriptor(&seed_blob()).unwrap();
    for _ in 0..3 {
        let out = exe
            .inputs()
            .arg_placed(&x)
            .unwrap()
            .external_placed("external", &b)
            .unwrap()
            .run()
            .unwrap();
        assert_eq!(out[0].to_vec::<i8>().unwrap(), vec![3, 5, -2]);
    }
    // Mixed: the blob placed, x from the host.
    let out = exe
        .inputs()
        .external_placed("external", &b)
        .unwrap()
        .arg(x33(&seed_x()))
        .unwrap()
        .run()
        .unwrap();
    assert_eq!(out[0].to_vec::<i8>().unwrap(), vec![3, 5, -2]);
    let wrong = c
        .upload(&HostTensor::from_slice(&[3, 3], &[0f64; 9]).unwrap())
        .unwrap();
    let e = exe.inputs().arg_placed(&wrong).unwrap_err().to_string();
    assert!(e.contains("tensor<3x3xf64> was given"), "{e}");
    let counter = c
        .upload_descriptor(&k::Counter {
            calls: 0,
            total: 0.0,
        })
        .unwrap();
    let e = exe
        .inputs()
        .external_placed("external", &counter)
        .unwrap_err()
        .to_string();
    assert!(e.contains("is `my_lib::Blob`"), "{e}");
    // A tensor of another client, and a placed tensor for a program split over devices.
    let other = Client::cpu(4).unwrap();
    let theirs = other.upload(&x33(&seed_x())).unwrap();
    let e = exe
        .inputs()
        .arg_placed(&theirs)
        .unwrap()
        .external_placed("external", &b)
        .unwrap()
        .run()
        .unwrap_err()
        .to_string();
    assert!(e.contains("uploaded by another client"), "{e}");
    let split = other
        .compile(&Program::module(&customop_examples::seed_model_split(8, 4, 4).unwrap()).unwrap())
        .unwrap();
    let rows = other
        .upload(&HostTensor::from_slice(&[8, 4], &[0.5f32; 32]).unwrap())
        .unwrap();
    let e = split
        .inputs()
        .arg_placed(&rows)
        .unwrap()
        .external("external", &seed_blob())
        .unwrap()
        .run()
        .unwrap_err()
        .to_string();
    assert!(e.contains("the program runs on 4"), "{e}");
}

/// The seed's whole path: torch program → `customop.torch.export` (annotated StableHLO,
/// written to a file) → this runner, the Blob fed by the name the annotation carries.
#[test]
fn a_torch_exported_seed_runs_from_rust_with_the_blob_by_name() {
    // The portable artifact is serialised for the version the plugin reads (1.13.3; jaxlib's
    // own is newer, and the plugin refuses newer artifacts).
    let version = Plugin::installed()
        .unwrap()
        .stablehlo_current_version()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(".");
    let json = torch_seed_json(&[&format!("--bytecode-version={version}")]);
    let dir = customop_xla::workspace_root().join("target/runner");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("seed_torch.mlir");
    std::fs::write(&path, json["text"].as_str().unwrap()).unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    let program = Program::text(&text).unwrap();
    let exe = client().compile(&program).unwrap();
    let (x, b) = (seed_x(), seed_blob());
    let eager: Vec<i8> = json["eager"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap() as i8)
        .collect();
    assert_eq!(run_seed(&exe, &x, "external", &b), eager);
    assert_eq!(eager, vec![3, 5, -2]);

    // The external as a forward input: named as torch_xla names it.
    let with_input = Program::text(json["text_input"].as_str().unwrap()).unwrap();
    let exe = client().compile(&with_input).unwrap();
    assert_eq!(run_seed(&exe, &x, "input_arg 1", &b), eager);

    // The portable artifact (bytecode), with the signature read from the text.
    let hex = json["bytecode"].as_str().unwrap();
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    // SAFETY: the signature is read from the same program's text.
    let artifact =
        unsafe { Program::bytecode_with_signature(&bytes, program.signature().cloned().unwrap()) };
    let exe = client().compile(&artifact.unwrap()).unwrap();
    assert_eq!(run_seed(&exe, &x, "external", &b), eager);
}

/// The demo binaries, each in its own process: they register the ops linked into them.
#[test]
fn the_demo_binaries_run_through_pjrt() {
    let run = |bin: &str, env: &[(&str, &str)]| {
        let out = std::process::Command::new(bin)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stdout, stderr) = run(env!("CARGO_BIN_EXE_seed"), &[]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("result = [3, 5, -2]"), "{stdout}");
    let (ok, stdout, stderr) = run(env!("CARGO_BIN_EXE_seed_sharded"), &[]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("4 device(s): [5, 7, -4, -8, 2, 8, 0, -8]\nequal"),
        "{stdout}"
    );
    // Without the installed plugin: a clear error naming where it looked.
    let (ok, _, stderr) = run(
        env!("CARGO_BIN_EXE_seed"),
        &[("CUSTOMOP_CACHE", "/nonexistent/cache")],
    );
    assert!(!ok);
    assert!(
        stderr.contains(
            "no PJRT plugin found; looked at /nonexistent/cache/pjrt-cpu-0.0.1/xla_cpu_pjrt.so"
        ),
        "{stderr}"
    );
    // A plugin path in the environment is never ignored: `Client::cpu` names it and refuses.
    let (ok, _, stderr) = run(
        env!("CARGO_BIN_EXE_seed"),
        &[("CUSTOMOP_PJRT_PLUGIN", "/nonexistent/plugin.so")],
    );
    assert!(!ok);
    assert!(
        stderr.contains("CUSTOMOP_PJRT_PLUGIN names /nonexistent/plugin.so: `Client::cpu` loads"),
        "{stderr}"
    );
}

/// XLA's handler registry has no lock of its own: registering while another thread compiles
/// (which looks handlers up) would be a data race. The runner's process-wide lock makes
/// registration exclusive and compilation shared. Here one thread registers 4,000 new targets
/// (the example library's `checked_sqrt` handler under new names; the registry grows and
/// rehashes many times) while two others compile and run programs calling ops, until the
/// registering thread is done; every result must be right.
#[test]
fn registering_handlers_while_other_threads_compile_is_serialised() {
    let c = client();
    let manifest: serde_json::Value =
        serde_json::from_str(&customop::registry::manifest_json()).expect("the manifest is JSON");
    let symbol = manifest["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["name"] == "example::checked_sqrt")
        .and_then(|op| op["handler_symbol"].as_str())
        .unwrap()
        .to_string();
    let done = std::sync::atomic::AtomicBool::new(false);
    let compiled = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..4000 {
                // SAFETY: the symbol is the library's generated XLA FFI handler of
                // `checked_sqrt`; its new target names are never called.
                unsafe { c.register_symbol(&example_kernels(), &format!("stress.t{i}"), &symbol) }
                    .unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        for _ in 0..2 {
            s.spawn(|| {
                let module = customop_examples::seed_model().unwrap();
                let (x, b) = (seed_x(), seed_blob());
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    let exe = c.compile(&Program::module(&module).unwrap()).unwrap();
                    assert_eq!(run_seed(&exe, &x, "external", &b), vec![3, 5, -2]);
                    compiled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert!(compiled.load(std::sync::atomic::Ordering::SeqCst) > 0);
    // The new targets are registered for good: a second handler for one is refused.
    let other = manifest["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["name"] == "example::unlucky")
        .and_then(|op| op["handler_symbol"].as_str())
        .unwrap();
    {
        // SAFETY: a generated handler of the same library; the call is refused.
        let e = unsafe { c.register_symbol(&example_kernels(), "stress.t7", other) };
        match e {
            Err(e) => assert!(e.to_string().contains("already has another handler"), "{e}"),
            Ok(()) => panic!("a second handler ({other}) for stress.t7 was accepted"),
        }
    }
}

#[test]
fn kernels_run_on_the_plugins_thread_pool() {
    // `customop::parallel` under the runner: the plugin's intra-op pool, more than one of its
    // threads running a kernel's ranges; a panic in a range is the call's kernel_panic.
    let probe = |panic_at: i64| {
        format!(
            r#"func.func @main(%x: tensor<64xf32>) -> tensor<1xi64> {{
  %0 = "stablehlo.custom_call"(%x) {{api_version = 4 : i32, call_target_name = "example.pool_probe", backend_config = {{panic_at = {panic_at} : i64}}}} : (tensor<64xf32>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}}"#
        )
    };
    // A client of its own (the handlers are registered process-wide by `client()`): its pool
    // is not busy with the executions other tests run on the shared client meanwhile.
    let _registered = client();
    let c = Client::cpu(1).unwrap();
    let x = HostTensor::vector(&[0.0f32; 64]);
    let exe = c.compile(&Program::text(&probe(-1)).unwrap()).unwrap();
    let threads = exe.run(std::slice::from_ref(&x)).unwrap()[0]
        .to_vec::<i64>()
        .unwrap()[0];
    // The most threads a call on 64 elements saw: counted per length of x, and no other test
    // of this binary probes 64 elements.
    // SAFETY: the example cdylib (already loaded by `client()`), and its probe function's
    // signature as the kernel crate declares it.
    let seen = unsafe {
        let lib = libloading::Library::new(example_kernels()).unwrap();
        let f: libloading::Symbol<'_, extern "C" fn(i64) -> i64> =
            lib.get(b"example_pool_probe_threads_seen\0").unwrap();
        f(64)
    };
    println!("parallel: the runner's pool has {threads} threads; {seen} ran the ranges");
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        assert!(threads >= 2, "the plugin's pool, not inline: {threads}");
        assert!(seen >= 2, "{seen}");
    } else {
        // One core: XLA sizes its pool by the cores it may use; that one thread ran them all.
        assert_eq!(
            (threads, seen),
            (1, 1),
            "a one-core machine's pool and its threads"
        );
    }
    let exe = c.compile(&Program::text(&probe(40)).unwrap()).unwrap();
    let e = exe.run(std::slice::from_ref(&x)).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::KernelPanic), "{e}");
    assert!(e.to_string().contains("holds index 40"), "{e}");
}

/// A count of `example::windowed`'s windows of `n` taps in this process (`what`: builds, drops
/// or calls). The counts are kept per `n`, and each test here uses `n`s of its own (17, 4 and 3;
/// 5 and 7), so that it reads only what its own executables did, whatever the tests running
/// beside it build or drop.
fn windows(what: &str, n: i64) -> i64 {
    let symbol = format!("example_state_{what}\0");
    // SAFETY: the example cdylib (loaded by `client()`), and its counters' signature as the
    // kernel crate declares it.
    unsafe {
        let lib = libloading::Library::new(example_kernels()).unwrap();
        let f: libloading::Symbol<'_, extern "C" fn(i64) -> i64> =
            lib.get(symbol.as_bytes()).unwrap();
        f(n)
    }
}

#[test]
fn state_is_built_once_per_call_site_through_the_runner_and_dropped_with_the_executable() {
    // The runner registers customop handlers for XLA's instantiate stage too (through the
    // plugin's own XLA FFI table), so each call site of each executable builds its state once.
    let program = |n: i64, m: i64| {
        format!(
            r#"func.func @main(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {{
  %0 = "stablehlo.custom_call"(%x) {{api_version = 4 : i32, call_target_name = "example.windowed", backend_config = {{n = {n} : i64}}}} : (tensor<6xf32>) -> tensor<6xf32>
  %1 = "stablehlo.custom_call"(%0) {{api_version = 4 : i32, call_target_name = "example.windowed", backend_config = {{n = {m} : i64}}}} : (tensor<6xf32>) -> tensor<6xf32>
  return %0, %1 : tensor<6xf32>, tensor<6xf32>
}}"#
        )
    };
    let builds = |n| windows("builds", n);
    let drops = |n| windows("drops", n);
    let hann = |n: i64| -> Vec<f32> {
        (0..6)
            .map(|i| {
                let last = (n - 1) as f64;
                (0.5 - 0.5 * (2.0 * std::f64::consts::PI * (i % n) as f64 / last).cos()) as f32
            })
            .collect()
    };
    let c = client();
    let x = HostTensor::vector(&[1.0f32; 6]);
    let built0 = [builds(17), builds(4), builds(3)];
    let dropped0 = [drops(17), drops(4), drops(3)];
    let calls0 = windows("calls", 17);
    let built = || {
        [
            builds(17) - built0[0],
            builds(4) - built0[1],
            builds(3) - built0[2],
        ]
    };
    let dropped = || {
        [
            drops(17) - dropped0[0],
            drops(4) - dropped0[1],
            drops(3) - dropped0[2],
        ]
    };
    let exe = c
        .compile(&Program::text(&program(17, 17)).unwrap())
        .unwrap();
    assert_eq!(built(), [2, 0, 0], "one state per call site, at compile");
    let mut out = Vec::new();
    for _ in 0..1000 {
        out = exe.run(std::slice::from_ref(&x)).unwrap();
    }
    assert_eq!(built(), [2, 0, 0], "no state built by 1,000 runs");
    assert_eq!(
        windows("calls", 17) - calls0,
        2000,
        "each run applies both sites' states"
    );
    let y = out[0].to_vec::<f32>().unwrap();
    let z = out[1].to_vec::<f32>().unwrap();
    let h = hann(17);
    for i in 0..6 {
        assert!((y[i] - h[i]).abs() < 1e-6, "{y:?} vs {h:?}");
        assert!((z[i] - h[i] * h[i]).abs() < 1e-6, "{z:?} vs {h:?}^2");
    }
    // A second executable of the same program builds its own; sites with other attributes
    // get their own state; dropping an executable drops its states.
    let other = c.compile(&Program::text(&program(4, 3)).unwrap()).unwrap();
    assert_eq!(built(), [2, 1, 1]);
    let out = other.run(std::slice::from_ref(&x)).unwrap();
    let (h4, h3) = (hann(4), hann(3));
    let z = out[1].to_vec::<f32>().unwrap();
    for i in 0..6 {
        assert!((z[i] - h4[i] * h3[i]).abs() < 1e-6, "{z:?}");
    }
    assert_eq!(dropped(), [0, 0, 0]);
    drop(other);
    assert_eq!(
        dropped(),
        [0, 1, 1],
        "the executable's two states dropped with it"
    );
    drop(exe);
    assert_eq!(dropped(), [2, 1, 1]);
    // A state that cannot be built fails the compilation, named.
    let e = c
        .compile(&Program::text(&program(0, 3)).unwrap())
        .unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::BadState), "{e}");
}

#[test]
fn state_on_two_devices_is_built_once_per_call_site() {
    // Two call sites in a program split over 2 devices: XLA keeps one state per custom call
    // of the executable, shared by the devices that run it; each device applies it.
    let text = r#"module @m attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %0 = stablehlo.custom_call @example.windowed(%x) {api_version = 4 : i32, backend_config = {n = 5 : i64}} : (tensor<8xf32>) -> tensor<8xf32>
    %1 = stablehlo.custom_call @example.windowed(%0) {api_version = 4 : i32, backend_config = {n = 7 : i64}} : (tensor<8xf32>) -> tensor<8xf32>
    return %1 : tensor<8xf32>
  }
}"#;
    let _registered = client();
    let two = Client::cpu(2).unwrap();
    let built0 = [windows("builds", 5), windows("builds", 7)];
    let calls0 = [windows("calls", 5), windows("calls", 7)];
    let exe = two.compile(&Program::text(text).unwrap()).unwrap();
    assert_eq!(exe.partitions(), 2);
    let x: Vec<f32> = (0..8).map(|i| 1.0 + i as f32).collect();
    let mut out = Vec::new();
    for _ in 0..100 {
        out = exe.run(&[HostTensor::vector(&x)]).unwrap();
    }
    let built = [
        windows("builds", 5) - built0[0],
        windows("builds", 7) - built0[1],
    ];
    let calls = [
        windows("calls", 5) - calls0[0],
        windows("calls", 7) - calls0[1],
    ];
    let y = out[0].to_vec::<f32>().unwrap();
    let hann = |n: usize, i: usize| {
        let last = (n - 1) as f64;
        (0.5 - 0.5 * (2.0 * std::f64::consts::PI * (i % n) as f64 / last).cos()) as f32
    };
    for i in 0..8 {
        let want = x[i] * hann(5, i) * hann(7, i);
        assert!((y[i] - want).abs() < 1e-5, "{y:?}");
    }
    assert_eq!(
        built,
        [1, 1],
        "one state per call site, shared by the devices"
    );
    // Both devices ran both call sites on each of the 100 runs: one device alone would be 100.
    assert_eq!(
        calls,
        [200, 200],
        "calls per site over 100 runs on 2 devices"
    );
}
