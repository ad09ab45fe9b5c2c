//! The seed program through the runner: its blob by name, as bytecode, from a torch export, and
//! the demo binaries in their own processes.

use super::*;

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

/// The seed's whole path: torch program → `customop.torch.export` (annotated StableHLO,
/// written to a file) → this runner, the Blob fed by the name the annotation carries.
#[test]
fn a_torch_exported_seed_runs_from_rust_with_the_blob_by_name() {
    // The portable artifact is serialised for the version the plugin reads (its
    // `stablehlo_current_version`; the runner refuses newer artifacts by name).
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
            "no PJRT plugin found; looked at \
             /nonexistent/cache/pjrt-lammps-jax-pjrt-cpu-0.11.2/pjrt_c_api_cpu_plugin.so"
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
