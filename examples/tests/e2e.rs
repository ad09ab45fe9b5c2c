//! End to end: ops declared with `#[custom_op]` in the example kernel crate are lowered by
//! their generated `call`, the module goes through jaxlib (parse, verify, compile), and XLA CPU
//! runs it with the generated Rust handlers loaded from the kernel cdylib (built without MLIR).
//! Every expected number is computed here, independently of the code under test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)]

use customop::Descriptor;
use customop::lower::Module;
use customop::{ElementType, TensorType};
use customop_example_kernels as k;
use customop_xla::{Array, Ffi, Harness, Job, Probe, XlaError, example_kernels};

fn t(e: ElementType, shape: &[i64]) -> TensorType {
    TensorType::new(e, shape).unwrap()
}

fn ffi() -> Ffi {
    Ffi::customop_library(example_kernels())
}

/// Compiles once, runs each input set, returns each run's result.
fn run(text: &str, runs: Vec<Vec<Array>>) -> Vec<Result<Vec<Array>, XlaError>> {
    Harness::get().run_many(text, Some(&ffi()), &runs).unwrap()
}

fn blob() -> k::Blob {
    k::Blob {
        gain: 1.5,
        bias: -2,
        seed: 99,
        tag: *b"seed-model-blob!",
    }
}

/// The seed model (customop_examples::seed_model).
fn seed_module() -> Module {
    customop_examples::seed_model().unwrap()
}

/// The seed model's result for `x` of `cols` columns: `saturate(round(gain * row sum of
/// sin x) + bias) + 1` per row.
fn seed_expected(x: &[f32], cols: usize, b: &k::Blob) -> Vec<i8> {
    (0..x.len() / cols)
        .map(|i| {
            let s: f32 = (0..cols).map(|j| x[i * cols + j].sin()).sum();
            let v = ((b.gain * s).round() as i64 + b.bias as i64).clamp(-128, 127) as i8;
            v.wrapping_add(1)
        })
        .collect()
}

#[test]
fn the_seed_model_has_the_designed_shape() {
    let text = seed_module().to_text().unwrap();
    let fp = k::Blob::fingerprint();
    assert!(
        text.contains(&format!(
            "%arg1: tensor<56xui8> {{customop.external = {{descriptor = \"my_lib::Blob\", fingerprint = \"0x{fp:016x}\", mutable = false, name = \"external\", size = 56 : i64}}}}"
        )),
        "{text}"
    );
    assert!(text.contains("-> tensor<3xi8>"), "{text}");
    assert!(
        text.contains("\"stablehlo.custom_call\"(%arg1, %0)"),
        "{text}"
    );
    assert!(text.contains("api_version = 4 : i32"), "{text}");
    assert!(text.contains("backend_config = {}"), "{text}");
    assert!(
        text.contains("call_target_name = \"my_custom_library.custom_op_external\""),
        "{text}"
    );
    assert!(text.contains("has_side_effect = true"), "{text}");
    assert!(
        text.contains("(tensor<56xui8>, tensor<3x3xf32>) -> tensor<3xi8>"),
        "{text}"
    );
    Harness::get().verify(&text).unwrap();
}

#[test]
fn the_seed_model_runs_with_the_rust_handler() {
    let text = seed_module().to_text().unwrap();
    let x: Vec<f32> = (0..9).map(|i| i as f32 * 0.4 - 1.0).collect();
    let b = blob();
    let mut big = blob();
    big.gain = 100.0; // saturates
    let out = run(
        &text,
        vec![
            vec![Array::f32(&[3, 3], &x), Array::u8(&[56], &b.pack())],
            vec![Array::f32(&[3, 3], &x), Array::u8(&[56], &big.pack())],
        ],
    );
    assert_eq!(
        out[0].as_ref().unwrap()[0].to_i8(),
        seed_expected(&x, 3, &b)
    );
    assert_eq!(
        out[1].as_ref().unwrap()[0].to_i8(),
        seed_expected(&x, 3, &big)
    );
}

/// The seed program written in PyTorch (`examples/torch/seed.py`): run eagerly on CPU, and
/// exported by torch_xla, annotated by `customop.torch.export` and run on XLA CPU, with the
/// external as a registered buffer and as a forward input. All three equal what the Rust
/// builder's seed module gives on XLA for the same inputs, and the exported entry argument
/// carries the same annotation as the Rust builder's.
/// What `examples/torch/seed.py --json` (with `extra` arguments) prints.
fn torch_seed_json(extra: &[&str]) -> serde_json::Value {
    let script = customop_xla::workspace_root().join("examples/torch/seed.py");
    let out = std::process::Command::new(Harness::get().python())
        .arg(&script)
        .arg("--json")
        .args(extra)
        .arg(example_kernels())
        .env("PJRT_DEVICE", "CPU")
        .output()
        .expect("run examples/torch/seed.py");
    assert!(
        out.status.success(),
        "seed.py failed (torch and torch_xla come with scripts/setup.sh):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("seed.py --json prints JSON")
}

#[test]
fn the_torch_seed_program_matches_the_rust_builder() {
    let json = torch_seed_json(&[]);

    // The same inputs through the Rust builder's seed module.
    let b = k::Blob {
        gain: 2.0,
        bias: -1,
        seed: 42,
        tag: *b"customop seed!!!",
    };
    let x: Vec<f32> = (0..9).map(|i| i as f32 * 0.5).collect();
    let text = seed_module().to_text().unwrap();
    let rust = run(
        &text,
        vec![vec![Array::f32(&[3, 3], &x), Array::u8(&[56], &b.pack())]],
    );
    let rust: Vec<i64> = rust[0].as_ref().unwrap()[0]
        .to_i8()
        .into_iter()
        .map(i64::from)
        .collect();
    assert_eq!(rust.len(), 3);
    for key in ["eager", "buffer", "input"] {
        let got: Vec<i64> = json[key]
            .as_array()
            .unwrap_or_else(|| panic!("no `{key}` in {json}"))
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        assert_eq!(got, rust, "{key}");
    }

    // The exported entry argument is annotated as the Rust builder annotates its own.
    let torch_text = json["text"].as_str().unwrap();
    let ours = customop_xla::external_args(&text, "main");
    let theirs = customop_xla::external_args(torch_text, "main");
    assert_eq!(theirs.len(), 1, "{torch_text}");
    assert_eq!(
        (
            &theirs[0].descriptor,
            theirs[0].size,
            theirs[0].type_bytes,
            theirs[0].mutable
        ),
        (
            &ours[0].descriptor,
            ours[0].size,
            ours[0].type_bytes,
            ours[0].mutable
        )
    );
    let fp = format!("fingerprint = \"0x{:016x}\"", k::Blob::fingerprint());
    assert!(torch_text.contains(&fp), "{torch_text}");
    assert_eq!(
        json["externals"],
        serde_json::json!([[1, "external", "my_lib::Blob", 56]])
    );
    assert_eq!(
        json["externals_input"],
        serde_json::json!([[1, "input_arg 1", "my_lib::Blob", 56]])
    );
}

#[test]
fn attributes_reach_the_kernel_typed() {
    let cfg = k::NormCfg {
        scale: 2.0,
        shift: 0.5,
        mode: k::NormMode::ScaleShift,
    };
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[2, 4])]).unwrap();
    let x = f.arg(0).unwrap();
    let y = k::rms_norm::call(&mut f, &x, 1e-3, &cfg).unwrap();
    let z = k::affine::call(&mut f, &y, 0.5, "four", &[1, 2, -1], true, 3).unwrap();
    f.ret(&[&y, &z]).unwrap();
    let text = m.to_text().unwrap();
    assert!(text.contains("eps = 1.000000e-03 : f32"), "{text}");
    assert!(text.contains("offsets = array<i64: 1, 2, -1>"), "{text}");
    assert!(text.contains("small = 3 : ui8"), "{text}");
    let xs: Vec<f32> = vec![1.0, -2.0, 3.0, 0.5, 0.0, 4.0, -1.0, 2.0];
    let out = run(&text, vec![vec![Array::f32(&[2, 4], &xs)]]);
    let out = out[0].as_ref().unwrap();
    let mut want_y = vec![];
    for r in 0..2 {
        let row = &xs[r * 4..r * 4 + 4];
        let ms: f64 = row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / 4.0;
        for &v in row {
            want_y.push(v as f64 / (ms + 1e-3).sqrt() * 2.0 + 0.5);
        }
    }
    let got_y = out[0].to_f32();
    let got_z = out[1].to_f32();
    for i in 0..8 {
        assert!(
            (got_y[i] as f64 - want_y[i]).abs() < 1e-5,
            "rms_norm[{i}]: {} vs {}",
            got_y[i],
            want_y[i]
        );
        // affine: 0.5 * y + len("four") + (1 + 2 - 1) + 1 + 3
        let want_z = 0.5 * want_y[i] + 4.0 + 2.0 + 1.0 + 3.0;
        assert!(
            (got_z[i] as f64 - want_z).abs() < 1e-4,
            "affine[{i}]: {} vs {want_z}",
            got_z[i]
        );
    }
}

/// `counter_step` on a `tensor<3xf32>` with the `Counter` external `counter`, returning `y`
/// and the updated counter.
fn counter_module() -> Module {
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[3])]).unwrap();
    let x = f.arg(0).unwrap();
    let state = f.external::<k::Counter>("counter").unwrap();
    let out = k::counter_step::call(&mut f, &state, &x).unwrap();
    f.ret(&[&out.y, out.state.value()]).unwrap();
    m
}

#[test]
fn mutable_state_is_updated_across_executions() {
    let text = counter_module().to_text().unwrap();
    assert!(text.contains("mutable = true"), "{text}");
    assert!(text.contains("output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [1], operand_index = 0, operand_tuple_indices = []>]"), "{text}");
    // `&mut` alone is no side effect: the new state is a result the program returns.
    assert!(!text.contains("has_side_effect"), "{text}");
    assert_eq!(
        k::counter_step::schema_string(),
        "example::counter_step(Tensor(a!) state, Tensor x) -> Tensor"
    );
    // Execution 1 starts from zero; execution 2 is fed the state execution 1 returned.
    let x1 = [1.0f32, 2.0, 3.0];
    let zero = k::Counter {
        calls: 0,
        total: 0.0,
    }
    .pack();
    let h = Harness::get();
    let first = h
        .run_many(
            &text,
            Some(&ffi()),
            &[vec![Array::f32(&[3], &x1), Array::u8(&[40], &zero)]],
        )
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(first[0].to_f32(), vec![2.0, 3.0, 4.0]);
    let s1 = k::Counter::unpack(&first[1].bytes()).unwrap();
    assert_eq!(
        s1,
        k::Counter {
            calls: 1,
            total: 6.0
        }
    );
    let x2 = [10.0f32, 0.0, -4.0];
    let second = h
        .run_many(
            &text,
            Some(&ffi()),
            &[vec![
                Array::f32(&[3], &x2),
                Array::u8(&[40], &first[1].bytes()),
            ]],
        )
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(second[0].to_f32(), vec![12.0, 2.0, -2.0]);
    assert_eq!(
        k::Counter::unpack(&second[1].bytes()).unwrap(),
        k::Counter {
            calls: 2,
            total: 12.0
        }
    );
}

#[test]
fn an_opaque_result_feeds_another_op() {
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[4])]).unwrap();
    let x = f.arg(0).unwrap();
    let stats = k::make_stats::call(&mut f, &x).unwrap(); // DescriptorValue<Stats>
    let y = k::apply_stats::call(&mut f, &stats, &x).unwrap();
    f.ret(&[&y, stats.value()]).unwrap();
    let text = m.to_text().unwrap();
    let xs = [1.0f32, 2.0, 3.0, 6.0];
    let out = run(&text, vec![vec![Array::f32(&[4], &xs)]]);
    let out = out[0].as_ref().unwrap();
    let mean = 3.0f32;
    let spread = 3.0f32;
    assert_eq!(
        out[0].to_f32(),
        xs.iter().map(|v| (v - mean) / spread).collect::<Vec<_>>()
    );
    assert_eq!(
        k::Stats::unpack(&out[1].bytes()).unwrap(),
        k::Stats { mean, spread }
    );
}

/// Each bad input gives an error naming the op and the problem, and the next good execution in
/// the same process still returns the right numbers.
#[test]
fn bad_inputs_fail_cleanly_and_the_process_goes_on() {
    let text = seed_module().to_text().unwrap();
    let x: Vec<f32> = (0..9).map(|i| i as f32 * 0.1).collect();
    let good = vec![Array::f32(&[3, 3], &x), Array::u8(&[56], &blob().pack())];
    let want = seed_expected(&x, 3, &blob());

    let mut bad_magic = blob().pack();
    bad_magic[0] = b'X';
    // Same size, another layout: the fingerprint differs.
    #[derive(customop::Descriptor)]
    #[descriptor(name = "my_lib::Blob")]
    struct BlobV2 {
        gain: f32,
        bias: i32,
        seed: u64,
        tag: [u8; 15],
        extra: u8,
    }
    let v2 = BlobV2 {
        gain: 1.0,
        bias: 0,
        seed: 0,
        tag: [0; 15],
        extra: 1,
    }
    .pack();
    assert_eq!(v2.len(), 56);
    let cases: Vec<(Vec<u8>, &str)> = vec![(bad_magic, "bad magic"), (v2, "fingerprint mismatch")];
    let mut runs = vec![];
    for (bytes, _) in &cases {
        runs.push(vec![Array::f32(&[3, 3], &x), Array::u8(&[56], bytes)]);
        runs.push(good.clone());
    }
    let out = run(&text, runs);
    for (i, (_, what)) in cases.iter().enumerate() {
        let err = out[2 * i].as_ref().unwrap_err();
        assert!(
            err.message
                .contains("my_custom_library::custom_op_external"),
            "{err}"
        );
        assert!(err.message.contains(what), "{err}");
        assert!(err.message.contains("INVALID_ARGUMENT"), "{err}");
        assert_eq!(
            out[2 * i + 1].as_ref().unwrap()[0].to_i8(),
            want,
            "good run after {what}"
        );
    }

    // Truncated bytes: a hand-written module that declares 50 bytes.
    let short = text.replace("tensor<56xui8>", "tensor<50xui8>");
    let out = run(
        &short,
        vec![vec![
            Array::f32(&[3, 3], &x),
            Array::u8(&[50], &blob().pack()[..50]),
        ]],
    );
    let err = out[0].as_ref().unwrap_err();
    assert!(
        err.message.contains("custom_op_external") && err.message.contains("payload"),
        "{err}"
    );

    // A wrong output shape: a hand-written module that asks for 4 results from 3 rows.
    let wrong = text.replace("tensor<3xi8>", "tensor<4xi8>").replace(
        "dense<\"0x010101\"> : tensor<4xi8>",
        "dense<1> : tensor<4xi8>",
    );
    assert!(wrong.contains("dense<1> : tensor<4xi8>"), "{wrong}");
    let out = run(&wrong, vec![good.clone(), good.clone()]);
    let err = out[0].as_ref().unwrap_err();
    assert!(
        err.message
            .contains("output `y`: expected shape [3], XLA passed [4]"),
        "{err}"
    );
}

#[test]
fn kernel_errors_and_panics_become_xla_errors() {
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[2])]).unwrap();
    let x = f.arg(0).unwrap();
    let a = k::checked_sqrt::call(&mut f, &x).unwrap();
    let b = k::unlucky::call(&mut f, &x).unwrap();
    f.ret(&[&a, &b]).unwrap();
    let text = m.to_text().unwrap();
    let out = run(
        &text,
        vec![
            vec![Array::f32(&[2], &[-1.0, 4.0])],
            vec![Array::f32(&[2], &[13.0, 4.0])],
            vec![Array::f32(&[2], &[9.0, 4.0])],
        ],
    );
    let e = out[0].as_ref().unwrap_err();
    assert!(
        e.message
            .contains("custom op `example::checked_sqrt` [kernel_error]: negative input -1"),
        "{e}"
    );
    let e = out[1].as_ref().unwrap_err();
    assert!(
        e.message.contains(
            "custom op `example::unlucky` [kernel_panic]: the kernel panicked: unlucky number 13"
        ),
        "{e}"
    );
    assert!(e.message.contains("INTERNAL"), "{e}");
    let ok = out[2].as_ref().unwrap();
    assert_eq!(ok[0].to_f32(), vec![3.0, 2.0]);
    assert_eq!(ok[1].to_f32(), vec![9.0, 4.0]);
}

#[test]
fn the_manifest_lists_every_op_including_the_dependency_crates() {
    let h = Harness::get();
    let names = h
        .py_call(
            "tests.manifest_helpers",
            "manifest_op_names",
            serde_json::json!([example_kernels().to_string_lossy()]),
        )
        .unwrap();
    let names: Vec<String> = serde_json::from_value(names).unwrap();
    assert_eq!(
        names,
        vec![
            "example::add_offset",
            "example::apply_stats",
            "example::apply_taps",
            "example::apply_taps_bwd",
            "example::array_attr",
            "example::avg_pool",
            "example::cache_write",
            "example::checked_sqrt",
            "example::cmul",
            "example::concat_rows",
            "example::counter_step",
            "example::dequantize_fp8",
            "example::dequantize_mxfp4",
            "example::dictionary_attr",
            "example::doubled",
            "example::field_values",
            "example::fp8_affine",
            "example::fp8_affine_bwd",
            "example::fp8_affine_jvp",
            "example::gather_rows",
            "example::gather_rows_bwd",
            "example::histogram",
            "example::histogram_add",
            "example::layer_norm_par",
            "example::layer_norm_serial",
            "example::make_stats",
            "example::masked_split",
            "example::matmul_i4",
            "example::matmul_i4_bwd",
            "example::matmul_mxfp4",
            "example::matmul_u4_zp",
            "example::mean_pool",
            "example::mean_pool_bwd",
            "example::mulw",
            "example::mulw_bwd",
            "example::mulw_jvp",
            "example::pack_i4",
            "example::passthrough",
            "example::pool_probe",
            "example::quantize_fp8",
            "example::quantize_i4",
            "example::quantize_mxfp4",
            "example::rms_norm",
            "example::rms_norm_bwd",
            "example::rms_norm_fwd",
            "example::rms_norm_nd",
            "example::rms_norm_nd_bwd",
            "example::rms_norm_t",
            "example::rms_norm_t_bwd",
            "example::rms_norm_t_bwd_bwd",
            "example::rms_norm_t_bwd_jvp",
            "example::rms_norm_t_jvp",
            "example::round_f4",
            "example::round_f8",
            "example::row_scale",
            "example::scale_bf16",
            "example::scale_f16",
            "example::scale_in_place",
            "example::scale_rows",
            "example::scale_rows_bwd",
            "example::shift_by",
            "example::softplus",
            "example::softplus_bwd",
            "example::softplus_bwd_bwd",
            "example::softplus_bwd_jvp",
            "example::softplus_jvp",
            "example::sum_attrs",
            "example::sum_squares",
            "example::table_dot",
            "example::table_dot_copy",
            "example::tap_rows",
            "example::toggle",
            "example::top_k",
            "example::unlucky",
            "example::unpack_int",
            "example::widen_f4",
            "example::widen_f8",
            "example::windowed",
            "example::windowed_rebuild",
            "example::wnorm",
            "example::wnorm_bwd",
            "example::wnorm_jvp",
            "example_lib::affine",
            "my_custom_library::custom_op_external",
        ]
    );
    // Python packs a Blob from the manifest's layout, byte for byte as Rust does.
    let packed = h
        .py_call(
            "tests.manifest_helpers",
            "pack_with_library",
            serde_json::json!([example_kernels().to_string_lossy(), "my_lib::Blob",
                {"gain": 1.5, "bias": -2, "seed": 99, "tag": b"seed-model-blob!".to_vec()}]),
        )
        .unwrap();
    let hex: String = blob().pack().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(packed["hex"], hex);
    // The partition rule travels in the manifest.
    let rule = h
        .py_call(
            "tests.manifest_helpers",
            "manifest_partition",
            serde_json::json!([
                example_kernels().to_string_lossy(),
                "my_custom_library::custom_op_external"
            ]),
        )
        .unwrap();
    assert_eq!(
        rule,
        serde_json::json!({
            "factors": ["rows"],
            "operands": [{"name": "x", "index": 1, "dims": ["rows", null]}],
            "results": [{"name": "y", "index": 0, "dims": ["rows"]}],
        })
    );
    let none = h
        .py_call(
            "tests.manifest_helpers",
            "manifest_partition",
            serde_json::json!([example_kernels().to_string_lossy(), "example::counter_step"]),
        )
        .unwrap();
    assert_eq!(none, serde_json::Value::Null);
}

// --- What #[custom_op] generates, without XLA -------------------------------------------------

#[test]
fn the_kernel_stays_a_plain_function() {
    let b = k::Blob {
        gain: 2.0,
        bias: 1,
        seed: 0,
        tag: [0; 16],
    };
    let x = [1.0f32, 2.0, 3.0, 100.0, 0.0, 0.0];
    let mut y = [0i8; 2];
    k::custom_op_external(
        &b,
        customop::TensorRef::new(&x, &[2, 3]).unwrap(),
        customop::TensorMut::new(&mut y, &[2]).unwrap(),
    )
    .unwrap();
    assert_eq!(y, [13, 127]);
}

#[test]
fn schemas_are_data_and_pytorch_strings() {
    let s = k::custom_op_external::schema();
    assert_eq!(s.name, "my_custom_library::custom_op_external");
    assert_eq!(s.target, "my_custom_library.custom_op_external");
    assert!(s.side_effect);
    assert_eq!(s.api_version, 4);
    assert_eq!(
        k::custom_op_external::schema_string(),
        "my_custom_library::custom_op_external(Tensor blob, Tensor x) -> Tensor"
    );
    assert_eq!(
        k::rms_norm::schema_string(),
        "example::rms_norm(Tensor x, *, float eps, str cfg) -> Tensor"
    );
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["params"][0]["kind"], "external");
    assert_eq!(json["params"][0]["descriptor"]["name"], "my_lib::Blob");
    assert_eq!(json["params"][0]["descriptor"]["packed_size"], 56);
    assert_eq!(json["params"][1]["kind"], "tensor");
    assert_eq!(json["params"][1]["dtype"], "f32");
    assert_eq!(json["params"][1]["rank"], 2);
    assert_eq!(json["results"][0]["dtype"], "i8");
    assert_eq!(
        json["results"][0]["shape"],
        serde_json::json!([{"kind": "dim_of", "param": "x", "dim": 0}])
    );
    let names: Vec<String> = customop::registry::ops().map(|s| s.name.clone()).collect();
    assert!(
        names.contains(&"example_lib::affine".to_string()),
        "{names:?}"
    );
    assert_eq!(
        customop::registry::find("example::rms_norm").unwrap().name,
        "example::rms_norm"
    );
    assert!(customop::registry::find("example::no_such_op").is_none());
    let manifest: serde_json::Value =
        serde_json::from_str(&customop::registry::manifest_json()).expect("the manifest is JSON");
    let rms = manifest["ops"]
        .as_array()
        .and_then(|ops| ops.iter().find(|o| o["name"] == "example::rms_norm"))
        .expect("rms_norm is in the manifest");
    assert_eq!(rms["handler_symbol"], "customop_handler_example_rms_norm");
}

#[test]
fn lowering_checks_operands_against_the_signature() {
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [t(ElementType::F32, &[3]), t(ElementType::I32, &[3, 3])],
        )
        .unwrap();
    let (v, ints) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let ext = f.external::<k::Blob>("blob").unwrap();
    let e = k::custom_op_external::call(&mut f, &ext, &v)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "my_custom_library::custom_op_external: parameter `x` takes a rank-2 tensor, got tensor<3xf32>"
    );
    let e = k::custom_op_external::call(&mut f, &ext, &ints)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("parameter `x` takes a tensor of f32, got tensor<3x3xi32>"),
        "{e}"
    );
}

#[test]
fn the_target_and_crate_options_reach_xla() {
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F64, &[3])]).unwrap();
    let x = f.arg(0).unwrap();
    let y = k::doubled::call(&mut f, &x).unwrap();
    f.ret(&[&y]).unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("call_target_name = \"example_doubled_target\""),
        "{text}"
    );
    assert_eq!(
        k::doubled::HANDLER_SYMBOL,
        "customop_handler_example_doubled_target"
    );
    let out = run(&text, vec![vec![Array::f64(&[3], &[1.5, -2.0, 0.25])]]);
    assert_eq!(out[0].as_ref().unwrap()[0].to_f64(), vec![3.0, -4.0, 0.5]);
}

// --- Partitioned ops on a device mesh: each device runs the handler once, on its shard --------

use customop::lower::Sharding;
use customop::schema::{FactorDims, PartitionRule};

/// A mesh run's assembled outputs, each output's shard shapes and the kernel probes
/// (calls, rows over all calls, most and fewest rows in one call).
struct MeshRun {
    outputs: Vec<Array>,
    shard_shapes: Vec<Vec<Vec<i64>>>,
    calls: i64,
    rows: i64,
    max_rows: i64,
    min_rows: i64,
}

fn spec(s: &[&[&str]]) -> Vec<Vec<String>> {
    s.iter()
        .map(|d| d.iter().map(|a| a.to_string()).collect())
        .collect()
}

fn run_on_mesh(
    text: &str,
    mesh: &[(&str, i64)],
    inputs: Vec<Array>,
    output_specs: &[&[&[&str]]],
) -> MeshRun {
    let lib = example_kernels();
    let probe = |name: &str| Probe {
        library: lib.clone(),
        symbol: format!("example_probe_{name}"),
    };
    let outcome = Harness::get()
        .execute(&Job {
            text,
            ffi: Some(&ffi()),
            runs: vec![inputs],
            probes: vec![
                probe("calls"),
                probe("rows"),
                probe("max_rows"),
                probe("min_rows"),
            ],
            mesh: mesh.iter().map(|(a, n)| (a.to_string(), *n)).collect(),
            output_specs: output_specs.iter().map(|s| spec(s)).collect(),
            ..Job::default()
        })
        .unwrap();
    let outputs = outcome.runs.into_iter().next().unwrap().unwrap();
    MeshRun {
        outputs,
        shard_shapes: outcome.shard_shapes[0].clone(),
        calls: outcome.probes[0],
        rows: outcome.probes[1],
        max_rows: outcome.probes[2],
        min_rows: outcome.probes[3],
    }
}

fn rms_cfg() -> k::NormCfg {
    k::NormCfg {
        scale: 2.0,
        shift: 0.5,
        mode: k::NormMode::ScaleShift,
    }
}

/// rms_norm of each row of `x` (`cols` columns), in f64, with `rms_cfg()` and eps 1e-3.
fn rms_expected(x: &[f64], cols: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / cols as f64;
        out.extend(row.iter().map(|v| v / (ms + 1e-3).sqrt() * 2.0 + 0.5));
    }
    out
}

fn assert_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (*g as f64 - w).abs() < 1e-4 * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn the_seed_op_runs_once_per_device_on_its_rows() {
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[8, 4])]).unwrap();
    f.shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))
        .unwrap();
    let x = f.arg(0).unwrap();
    let blob_v = f.external::<k::Blob>("external").unwrap();
    let s = f.sine(&x).unwrap();
    let y = k::custom_op_external::call(&mut f, &blob_v, &s).unwrap();
    assert_eq!(
        f.sharding_of(&y),
        Some(&Sharding::new("mesh", &[&["x"]])),
        "the op's result is split like its rows"
    );
    let one = f.constant_splat(&t(ElementType::I8, &[8]), 1.0).unwrap();
    let z = f.add(&y, &one).unwrap();
    f.ret_sharded(&[&z], &[Some(Sharding::new("mesh", &[&["x"]]))])
        .unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("\"sdy.manual_computation\"(%arg1, %0)"),
        "{text}"
    );
    assert!(
        text.contains(r#"{in_shardings = #sdy.sharding_per_value<[<@mesh, [{}]>, <@mesh, [{"x"}, {}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>}"#),
        "{text}"
    );
    // Inside, the handler's call has the per-device types and keeps its side effect.
    assert!(
        text.contains("(tensor<56xui8>, tensor<2x4xf32>) -> tensor<2xi8>"),
        "{text}"
    );
    assert!(text.contains("has_side_effect = true"), "{text}");

    let xs: Vec<f32> = (0..32).map(|i| (i as f32 * 0.37).sin() * 2.0).collect();
    let b = blob();
    let run = run_on_mesh(
        &text,
        &[("x", 4)],
        vec![
            Array::f32(&[8, 4], &xs).sharded(&[&["x"], &[]]),
            Array::u8(&[56], &b.pack()).sharded(&[&[]]),
        ],
        &[&[&["x"]]],
    );
    assert_eq!(run.outputs[0].to_i8(), seed_expected(&xs, 4, &b));
    assert_eq!(run.shard_shapes[0], vec![vec![2]; 4]);
    // Four calls, one per device, each on 2 of the 8 rows: not gathered.
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );
}

/// `rms_norm` on an 8x8 input split as `arg_spec`, its result returned split as `ret_spec`.
fn rms_on_mesh(
    mesh: &[(&str, i64)],
    arg_spec: &[&[&str]],
    ret_spec: &[&[&str]],
) -> (String, MeshRun) {
    let mut m = Module::new();
    m.mesh("mesh", mesh).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[8, 8])]).unwrap();
    f.shard_arg(0, Sharding::new("mesh", arg_spec)).unwrap();
    let x = f.arg(0).unwrap();
    let y = k::rms_norm::call(&mut f, &x, 1e-3, &rms_cfg()).unwrap();
    f.ret_sharded(&[&y], &[Some(Sharding::new("mesh", ret_spec))])
        .unwrap();
    let text = m.to_text().unwrap();
    let xs: Vec<f32> = (0..64).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.5).collect();
    let run = run_on_mesh(
        &text,
        mesh,
        vec![Array::f32(&[8, 8], &xs).sharded(arg_spec)],
        &[ret_spec],
    );
    let want = rms_expected(&xs.iter().map(|&v| v as f64).collect::<Vec<_>>(), 8);
    assert_close(&run.outputs[0].to_f32(), &want, "rms_norm on a mesh");
    (text, run)
}

#[test]
fn rms_norm_splits_its_rows_over_one_or_two_mesh_axes() {
    // Rows over a 1-D mesh of 4: each device normalises 2 rows.
    let (text, run) = rms_on_mesh(&[("x", 4)], &[&["x"], &[]], &[&["x"], &[]]);
    assert!(
        text.contains("(tensor<2x8xf32>) -> tensor<2x8xf32>"),
        "{text}"
    );
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );
    assert_eq!(run.shard_shapes[0], vec![vec![2, 8]; 4]);

    // Rows over both axes of a 2x2 mesh: still 2 rows a device.
    let (text, run) = rms_on_mesh(
        &[("x", 2), ("y", 2)],
        &[&["x", "y"], &[]],
        &[&["x", "y"], &[]],
    );
    assert!(
        text.contains(r#"manual_axes = #sdy<manual_axes{"x", "y"}>"#),
        "{text}"
    );
    assert!(
        text.contains("(tensor<2x8xf32>) -> tensor<2x8xf32>"),
        "{text}"
    );
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );

    // Rows over x and columns over y on the way in: the kernel needs whole rows, so the
    // columns are gathered and each device takes 4 whole rows (its x block); the result goes
    // back out split on both.
    let (text, run) = rms_on_mesh(&[("x", 2), ("y", 2)], &[&["x"], &["y"]], &[&["x"], &["y"]]);
    assert!(
        text.contains(r#"in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>"#),
        "{text}"
    );
    assert!(
        text.contains("(tensor<4x8xf32>) -> tensor<4x8xf32>"),
        "{text}"
    );
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 16, 4, 4)
    );
    assert_eq!(run.shard_shapes[0], vec![vec![4, 4]; 4]);

    // Nothing split on the way in: every device normalises all 8 rows (what XLA does with
    // an op that declares no rule).
    let (_, run) = rms_on_mesh(&[("x", 4)], &[&[], &[]], &[&[], &[]]);
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 32, 8, 8)
    );
}

#[test]
fn a_partitioned_op_between_ops_split_on_columns() {
    let mesh = [("x", 4)];
    let cols = Sharding::new("mesh", &[&[], &["x"]]);
    let rows = Sharding::new("mesh", &[&["x"], &[]]);
    let mut m = Module::new();
    m.mesh("mesh", &mesh).unwrap();
    let ty = t(ElementType::F32, &[8, 8]);
    let mut f = m.entry("main", [ty.clone()]).unwrap();
    f.shard_arg(0, cols.clone()).unwrap();
    let x = f.arg(0).unwrap();
    let s = f.sine(&x).unwrap();
    assert_eq!(
        f.sharding_of(&s),
        Some(&cols),
        "elementwise ops keep the split"
    );
    let r = f.shard(&s, rows.clone()).unwrap();
    let y = k::rms_norm::call(&mut f, &r, 1e-3, &rms_cfg()).unwrap();
    assert_eq!(f.sharding_of(&y), Some(&rows));
    let c = f.shard(&y, cols.clone()).unwrap();
    let two = f.constant_splat(&ty, 2.0).unwrap();
    let z = f.mul(&c, &two).unwrap();
    f.ret_sharded(&[&z], &[Some(cols)]).unwrap();
    let text = m.to_text().unwrap();
    assert_eq!(text.matches("sdy.sharding_constraint").count(), 2, "{text}");
    assert!(
        text.contains("(tensor<2x8xf32>) -> tensor<2x8xf32>"),
        "{text}"
    );

    let xs: Vec<f32> = (0..64).map(|i| i as f32 * 0.05 - 1.5).collect();
    let run = run_on_mesh(
        &text,
        &mesh,
        vec![Array::f32(&[8, 8], &xs).sharded(&[&[], &["x"]])],
        &[&[&[], &["x"]]],
    );
    let sines: Vec<f64> = xs.iter().map(|&v| (v as f64).sin()).collect();
    let want: Vec<f64> = rms_expected(&sines, 8).iter().map(|v| v * 2.0).collect();
    assert_close(&run.outputs[0].to_f32(), &want, "sin -> rms_norm -> *2");
    assert_eq!(
        run.shard_shapes[0],
        vec![vec![8, 2]; 4],
        "columns on the way out"
    );
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );
}

#[test]
fn inputs_that_share_a_factor_split_alike() {
    // `x` comes split by rows, `w` replicated: the shared factor `rows` splits `w` the same
    // way, so each device scales its 2 rows by their own 2 weights.
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m
        .entry(
            "main",
            [t(ElementType::F32, &[8, 3]), t(ElementType::F32, &[8])],
        )
        .unwrap();
    f.shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))
        .unwrap();
    // Pinned replicated: left unannotated, XLA's propagation would choose its split.
    f.shard_arg(1, Sharding::replicated("mesh", 1)).unwrap();
    let (x, w) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let y = k::row_scale::call(&mut f, &x, &w).unwrap();
    f.ret_sharded(&[&y], &[Some(Sharding::new("mesh", &[&["x"], &[]]))])
        .unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("(tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>"),
        "{text}"
    );
    let xs: Vec<f32> = (0..24).map(|i| i as f32 - 7.0).collect();
    let ws: Vec<f32> = (0..8).map(|i| 0.5 + i as f32).collect();
    let run = run_on_mesh(
        &text,
        &[("x", 4)],
        vec![
            Array::f32(&[8, 3], &xs).sharded(&[&["x"], &[]]),
            Array::f32(&[8], &ws).sharded(&[&[]]),
        ],
        &[&[&["x"], &[]]],
    );
    let want: Vec<f64> = (0..24).map(|i| xs[i] as f64 * ws[i / 3] as f64).collect();
    assert_close(&run.outputs[0].to_f32(), &want, "row_scale");
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );
}

#[test]
fn mesh_mistakes_are_rust_errors_before_xla() {
    // A split that does not divide.
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[6, 4])]).unwrap();
    let x = f.arg(0).unwrap();
    let err = f
        .shard(&x, Sharding::new("mesh", &[&["x"], &[]]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dimension 0 of tensor<6x4xf32> (size 6) is not divisible by 4"),
        "{err}"
    );
    // A side-effecting op without a partition rule in a module with a mesh: XLA's partitioner
    // would refuse it ("Side-effect HLO must have sharding"); the builder says so first.
    // (A `&mut` external alone is no side effect: `counter_step` builds.)
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[4])]).unwrap();
    let x = f.arg(0).unwrap();
    let state = f.external::<k::Counter>("state").unwrap();
    let out = k::counter_step::call(&mut f, &state, &x).unwrap();
    let results = [t(ElementType::F32, &[4])];
    let operands = [&out.y];
    let mut call = customop::lower::CustomCall::new("ui.effect", &operands, &results);
    call.has_side_effect = true;
    let z = f.custom_call(call).unwrap();
    f.ret(&[&z[0], out.state.value()]).unwrap();
    let err = m.to_text().unwrap_err().to_string();
    assert!(
        err.contains("custom_call @ui.effect in function `main` has side effects, and the module has a device mesh"),
        "{err}"
    );
    assert!(!err.contains("counter_step"), "{err}");
}

#[test]
fn the_partition_rule_is_part_of_the_schema() {
    let rows = || Some("rows".to_string());
    assert_eq!(
        k::rms_norm::schema().partition,
        Some(PartitionRule {
            factors: vec!["rows".into()],
            operands: vec![FactorDims {
                name: "x".into(),
                index: 0,
                dims: vec![rows(), None],
            }],
            results: vec![FactorDims {
                name: "y".into(),
                index: 0,
                dims: vec![rows(), None],
            }],
        })
    );
    let seed = k::custom_op_external::schema().partition.as_ref().unwrap();
    assert_eq!(seed.notation(), "([rows, _])->([rows])");
    assert_eq!(seed.operands[0].index, 1, "x follows the external blob");
    assert_eq!(k::counter_step::schema().partition, None);
}

// --- Several externals of different sizes in one module ---------------------------------------
// Each entry argument must have its own descriptor's packed size, wherever the external was
// declared (entry or nested helper) and whether an op updates it; the modules then run.

use customop_xla::{ExternalArg, external_args};

/// The expected annotated arguments: `(descriptor, packed size, mutable)` in argument order,
/// starting after `params` tensor parameters.
fn want_externals(params: usize, want: &[(&str, i64, bool)]) -> Vec<ExternalArg> {
    want.iter()
        .enumerate()
        .map(|(i, &(descriptor, size, mutable))| ExternalArg {
            index: params + i,
            type_bytes: Some(size),
            descriptor: descriptor.to_string(),
            size,
            mutable,
        })
        .collect()
}

fn offset() -> k::Offset {
    k::Offset { add: 0.25 }
}

fn taps() -> k::Taps {
    let mut taps = [0.0f32; 16];
    for (i, t) in taps.iter_mut().enumerate() {
        *t = 0.5 + i as f32 * 0.125;
    }
    k::Taps { bias: -1.5, taps }
}

fn histogram0() -> k::Histogram {
    k::Histogram {
        lo: -1.0,
        width: 0.5,
        counts: [0; 12],
    }
}

/// `x * taps[i % 16] + bias`, computed here.
fn taps_expected(x: &[f64], t: &k::Taps) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, v)| v * f64::from(t.taps[i % 16]) + t.bias)
        .collect()
}

/// The histogram counts of `x`, computed here.
fn counts_expected(x: &[f64], h: &k::Histogram) -> [u32; 12] {
    let mut c = h.counts;
    for v in x {
        let b = ((v - f64::from(h.lo)) / f64::from(h.width)).floor();
        c[b.clamp(0.0, 11.0) as usize] += 1;
    }
    c
}

#[test]
fn the_example_descriptors_pack_to_distinct_sizes() {
    // 24-byte header + payload, payload rounded up to its largest alignment (wire format v1).
    assert_eq!(k::Offset::PACKED_SIZE, Some(24 + 4));
    assert_eq!(k::Stats::PACKED_SIZE, Some(24 + 8));
    assert_eq!(k::Counter::PACKED_SIZE, Some(24 + 16));
    assert_eq!(k::Blob::PACKED_SIZE, Some(24 + 32));
    assert_eq!(k::Histogram::PACKED_SIZE, Some(24 + 8 + 48));
    assert_eq!(k::Taps::PACKED_SIZE, Some(24 + 8 + 64));
    assert_eq!(offset().pack().len(), 28);
    assert_eq!(taps().pack().len(), 96);
    assert_eq!(histogram0().pack().len(), 80);
}

#[test]
fn two_externals_of_different_sizes_in_the_entry() {
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[2, 3])]).unwrap();
    let x = f.arg(0).unwrap();
    let off = f.external::<k::Offset>("offset").unwrap();
    let tp = f.external::<k::Taps>("taps").unwrap();
    let a = k::add_offset::call(&mut f, &off, &x).unwrap();
    let y = k::apply_taps::call(&mut f, &tp, &a).unwrap();
    f.ret(&[&y]).unwrap();
    let text = m.to_text().unwrap();
    assert_eq!(
        external_args(&text, "main"),
        want_externals(
            1,
            &[("example::Offset", 28, false), ("example::Taps", 96, false)]
        ),
        "{text}"
    );
    assert!(text.contains("(tensor<28xui8>, tensor<2x3xf32>) -> tensor<2x3xf32>"));
    assert!(text.contains("(tensor<96xui8>, tensor<2x3xf32>) -> tensor<2x3xf32>"));
    let xs = [1.0f32, -2.0, 0.5, 3.0, 0.0, -0.75];
    let out = run(
        &text,
        vec![vec![
            Array::f32(&[2, 3], &xs),
            Array::u8(&[28], &offset().pack()),
            Array::u8(&[96], &taps().pack()),
        ]],
    );
    let shifted: Vec<f64> = xs.iter().map(|&v| f64::from(v) + 0.25).collect();
    assert_close(
        &out[0].as_ref().unwrap()[0].to_f32(),
        &taps_expected(&shifted, &taps()),
        "taps(offset(x))",
    );
}

#[test]
fn three_externals_declared_in_the_entry_and_nested_helpers_one_updated() {
    let ty = t(ElementType::F32, &[2, 3]);
    let mut m = Module::new();
    // inner declares the Offset (28 bytes); middle calls inner and declares the Blob (56);
    // main declares the Counter (40, updated) and calls middle.
    let mut inner = m.helper("inner", [ty.clone()]).unwrap();
    let off = inner.external::<k::Offset>("offset").unwrap();
    let x = inner.arg(0).unwrap();
    let y = k::add_offset::call(&mut inner, &off, &x).unwrap();
    let inner = inner.ret(&[&y]).unwrap();
    let mut middle = m.helper("middle", [ty.clone()]).unwrap();
    let b = middle.external::<k::Blob>("blob").unwrap();
    let x = middle.arg(0).unwrap();
    let y = middle.call(&inner, &[&x]).unwrap().pop().unwrap();
    let r = k::custom_op_external::call(&mut middle, &b, &y).unwrap();
    let middle = middle.ret(&[&r]).unwrap();
    let mut main = m.entry("main", [ty.clone()]).unwrap();
    let x = main.arg(0).unwrap();
    let counter = main.external::<k::Counter>("counter").unwrap();
    let step = k::counter_step::call(&mut main, &counter, &x).unwrap();
    let r = main.call(&middle, &[&step.y]).unwrap().pop().unwrap();
    main.ret(&[&r, step.state.value()]).unwrap();
    let text = m.to_text().unwrap();
    assert_eq!(
        external_args(&text, "main"),
        want_externals(
            1,
            &[
                ("example::Offset", 28, false),
                ("my_lib::Blob", 56, false),
                ("example::Counter", 40, true),
            ]
        ),
        "{text}"
    );
    assert!(
        text.contains("@inner(%arg0: tensor<2x3xf32>, %arg1: tensor<28xui8>)"),
        "{text}"
    );
    assert!(
        text.contains(
            "@middle(%arg0: tensor<2x3xf32>, %arg1: tensor<28xui8>, %arg2: tensor<56xui8>)"
        ),
        "{text}"
    );

    let xs = [0.5f32, 1.0, -0.25, 2.0, -3.0, 0.75];
    let c0 = k::Counter {
        calls: 4,
        total: 1.0,
    };
    let out = run(
        &text,
        vec![vec![
            Array::f32(&[2, 3], &xs),
            Array::u8(&[28], &offset().pack()),
            Array::u8(&[56], &blob().pack()),
            Array::u8(&[40], &c0.pack()),
        ]],
    );
    let out = out[0].as_ref().unwrap();
    // counter_step: x + 5 (its fifth call); then + 0.25; then the seed op's row rule.
    let b = blob();
    let want: Vec<i8> = (0..2)
        .map(|i| {
            let s: f64 = (0..3).map(|j| f64::from(xs[i * 3 + j]) + 5.0 + 0.25).sum();
            ((f64::from(b.gain) * s).round() as i64 + i64::from(b.bias)).clamp(-128, 127) as i8
        })
        .collect();
    assert_eq!(out[0].to_i8(), want);
    let sum: f64 = xs.iter().map(|&v| f64::from(v)).sum();
    assert_eq!(
        k::Counter::unpack(&out[1].bytes()).unwrap(),
        k::Counter {
            calls: 5,
            total: 1.0 + sum
        }
    );
}

#[test]
fn five_externals_of_five_sizes_across_two_helper_levels_two_updated() {
    let ty = t(ElementType::F32, &[8]);
    let mut m = Module::new();
    // deep: Offset (28) and Histogram (80, updated); mid: calls deep, Stats (32);
    // main: calls mid, Counter (40, updated) and Taps (96).
    let mut deep = m.helper("deep", [ty.clone()]).unwrap();
    let off = deep.external::<k::Offset>("offset").unwrap();
    let hist = deep.external::<k::Histogram>("hist").unwrap();
    let x = deep.arg(0).unwrap();
    let a = k::add_offset::call(&mut deep, &off, &x).unwrap();
    let h = k::histogram::call(&mut deep, &hist, &a).unwrap();
    let deep = deep.ret(&[&h.y, h.hist.value()]).unwrap();
    let mut mid = m.helper("mid", [ty.clone()]).unwrap();
    let stats = mid.external::<k::Stats>("stats").unwrap();
    let x = mid.arg(0).unwrap();
    let r = mid.call(&deep, &[&x]).unwrap();
    let c = k::apply_stats::call(&mut mid, &stats, &r[0]).unwrap();
    let mid = mid.ret(&[&c, &r[1]]).unwrap();
    let mut main = m.entry("main", [ty.clone()]).unwrap();
    let x = main.arg(0).unwrap();
    let counter = main.external::<k::Counter>("counter").unwrap();
    let tp = main.external::<k::Taps>("taps").unwrap();
    let r = main.call(&mid, &[&x]).unwrap();
    let d = k::counter_step::call(&mut main, &counter, &r[0]).unwrap();
    let e = k::apply_taps::call(&mut main, &tp, &d.y).unwrap();
    main.ret(&[&e, d.state.value(), &r[1]]).unwrap();
    let text = m.to_text().unwrap();
    assert_eq!(
        external_args(&text, "main"),
        want_externals(
            1,
            &[
                ("example::Offset", 28, false),
                ("example::Histogram", 80, true),
                ("example::Stats", 32, false),
                ("example::Counter", 40, true),
                ("example::Taps", 96, false),
            ]
        ),
        "{text}"
    );
    assert!(
        text.contains("@deep(%arg0: tensor<8xf32>, %arg1: tensor<28xui8>, %arg2: tensor<80xui8>)"),
        "{text}"
    );
    assert!(
        text.contains("@mid(%arg0: tensor<8xf32>, %arg1: tensor<28xui8>, %arg2: tensor<80xui8>, %arg3: tensor<32xui8>)"),
        "{text}"
    );

    let xs = [-1.5f32, -0.5, 0.0, 0.3, 1.2, 2.0, 4.5, -0.9];
    let stats = k::Stats {
        mean: 0.5,
        spread: 2.0,
    };
    let c0 = k::Counter {
        calls: 0,
        total: 0.0,
    };
    let mut h0 = histogram0();
    h0.counts[3] = 7; // carried over from an earlier execution
    let inputs = vec![
        Array::f32(&[8], &xs),
        Array::u8(&[28], &offset().pack()),
        Array::u8(&[80], &h0.pack()),
        Array::u8(&[32], &stats.pack()),
        Array::u8(&[40], &c0.pack()),
        Array::u8(&[96], &taps().pack()),
    ];
    let out = run(&text, vec![inputs]);
    let out = out[0].as_ref().unwrap();
    let a: Vec<f64> = xs.iter().map(|&v| f64::from(v) + 0.25).collect();
    let c: Vec<f64> = a.iter().map(|v| (v - 0.5) / 2.0).collect();
    let d: Vec<f64> = c.iter().map(|v| v + 1.0).collect();
    assert_close(&out[0].to_f32(), &taps_expected(&d, &taps()), "main");
    let state = k::Counter::unpack(&out[1].bytes()).unwrap();
    assert_eq!(state.calls, 1);
    assert!(
        (state.total - c.iter().sum::<f64>()).abs() < 1e-5,
        "{state:?}"
    );
    let h1 = k::Histogram::unpack(&out[2].bytes()).unwrap();
    assert_eq!(h1.counts, counts_expected(&a, &h0));
    assert_eq!(h1.counts.iter().sum::<u32>(), 7 + 8);
}

/// The C kernel (`examples/c-kernel`): a module built with its generated lowering takes the
/// `struct params` as an external, and XLA runs the cdylib's handler, which passes the C
/// function a pointer into XLA's buffer. Results against arithmetic done here; the C
/// function's error code comes back as an XLA error.
#[test]
fn the_c_kernel_runs_on_xla_with_the_c_function_doing_the_work() {
    use customop_example_c_kernel::{Params, c, scale_rows};
    let x_ty = TensorType::new(ElementType::F32, [3, 5]).unwrap();
    let mut m = Module::new();
    let mut f = m.entry("main", [x_ty]).unwrap();
    let x = f.arg(0).unwrap();
    let p = f.external::<Params>("params").unwrap();
    let y = scale_rows::call(&mut f, &p, &x).unwrap();
    f.ret(&[&y]).unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("tensor<80xui8> {customop.external = {descriptor = \"c_kernel::params\""),
        "{text}"
    );
    let params = |version: u16| Params {
        flags: c::SCALE_ROWS_SKIP_ODD as u8,
        scale: 0.5,
        version,
        taps: [1.0, 2.0, 3.0, 4.0, 5.0],
        name: [b'r' as i8, b'o' as i8, b'w' as i8, b's' as i8, 0, 0, 0, 0],
        offset: -1,
    };
    let xs: Vec<f32> = (0..15).map(|i| i as f32).collect();
    let ffi = Ffi::customop_library(customop_xla::example_c_kernel());
    let out = Harness::get()
        .run_many(
            &text,
            Some(&ffi),
            &[
                vec![
                    Array::f32(&[3, 5], &xs),
                    Array::u8(&[80], &params(3).pack()),
                ],
                vec![
                    Array::f32(&[3, 5], &xs),
                    Array::u8(&[80], &params(2).pack()),
                ],
            ],
        )
        .unwrap();
    let got = out[0].as_ref().unwrap()[0].to_f32();
    let want: Vec<f32> = (0..15)
        .map(|k| {
            let (i, j) = (k / 5, k % 5);
            let v = xs[k];
            if i % 2 == 1 {
                v
            } else {
                (f64::from(v) * 0.5 * f64::from([1.0f32, 2.0, 3.0, 4.0, 5.0][j])) as f32 - 1.0
            }
        })
        .collect();
    assert_eq!(got, want);
    let err = out[1].as_ref().unwrap_err();
    assert!(
        err.message
            .contains("[kernel_error]: scale_rows: params.version is 2, the library is version 3"),
        "{err}"
    );
}

/// Average pooling with zero padding counted, written out for the test (independent of the
/// kernel): row by row, windows of `k` every `stride` over the padded row.
fn avg_pool_reference(
    x: &[f32],
    rows: usize,
    n: usize,
    k: usize,
    stride: usize,
    pad: usize,
) -> Vec<f32> {
    let mut out = Vec::new();
    for r in 0..rows {
        let mut padded = vec![0.0f32; pad];
        padded.extend_from_slice(&x[r * n..(r + 1) * n]);
        padded.extend(std::iter::repeat_n(0.0, pad));
        let mut start = 0;
        while start + k <= padded.len() {
            out.push(padded[start..start + k].iter().sum::<f32>() / k as f32);
            start += stride;
        }
    }
    out
}

#[test]
fn output_shapes_computed_from_dims_and_attributes_run_on_xla() {
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [
                t(ElementType::F32, &[2, 7]),
                t(ElementType::F32, &[3, 7]),
                t(ElementType::F32, &[6]),
            ],
        )
        .unwrap();
    let (x, b, v) = (f.arg(0).unwrap(), f.arg(1).unwrap(), f.arg(2).unwrap());
    // (7 + 2 * 1 - 3) / 2 + 1 = 4 columns; 2 + 3 rows; k = 4 values and indices.
    let pooled = k::avg_pool::call(&mut f, &x, 3, 2, 1).unwrap();
    let cat = k::concat_rows::call(&mut f, &x, &b).unwrap();
    let top = k::top_k::call(&mut f, &v, 4).unwrap();
    assert_eq!(pooled.ty().to_string(), "tensor<2x4xf32>");
    assert_eq!(cat.ty().to_string(), "tensor<5x7xf32>");
    assert_eq!(top.values.ty().to_string(), "tensor<4xf32>");
    assert_eq!(top.indices.ty().to_string(), "tensor<4xi32>");
    f.ret(&[&pooled, &cat, &top.values, &top.indices]).unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("k = 3 : i64, pad = 1 : i64, stride = 2 : i64"),
        "{text}"
    );
    let xs: Vec<f32> = (0..14).map(|i| (i * i % 11) as f32 - 3.0).collect();
    let bs: Vec<f32> = (0..21).map(|i| i as f32 * 0.5).collect();
    let vs = [0.5f32, 3.0, -1.0, 3.0, 7.5, 2.0];
    let out = run(
        &text,
        vec![vec![
            Array::f32(&[2, 7], &xs),
            Array::f32(&[3, 7], &bs),
            Array::f32(&[6], &vs),
        ]],
    );
    let out = out[0].as_ref().unwrap();
    let want = avg_pool_reference(&xs, 2, 7, 3, 2, 1);
    assert_eq!(want.len(), 8);
    for (g, w) in out[0].to_f32().iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6, "{g} vs {w}");
    }
    assert_eq!(out[1].to_f32(), [xs.clone(), bs.clone()].concat());
    // Largest first; the two 3.0s in index order.
    assert_eq!(out[2].to_f32(), vec![7.5, 3.0, 3.0, 2.0]);
    assert_eq!(out[3].to_i32(), vec![4, 1, 3, 5]);
}

#[test]
fn a_shape_expression_without_a_size_is_a_build_error_naming_the_values() {
    let cases: [(i64, i64, i64, &str); 3] = [
        (
            10,
            1,
            0,
            "example::avg_pool: output `y`: dimension 1, `(x.dim(1) + 2 * pad - k) / stride + 1`: \
             `-3 / 1` divides a negative number (a size expression divides only sizes); the operands are x: tensor<2x7xf32>; the attributes k = 10, \
             stride = 1, pad = 0",
        ),
        (
            3,
            0,
            0,
            "example::avg_pool: output `y`: dimension 1, `(x.dim(1) + 2 * pad - k) / stride + 1`: \
             `4 / 0` divides by zero; the operands are x: tensor<2x7xf32>; the attributes k = 3, \
             stride = 0, pad = 0",
        ),
        (
            i64::MIN,
            1,
            1,
            "example::avg_pool: output `y`: dimension 1, `(x.dim(1) + 2 * pad - k) / stride + 1`: \
             `9 - -9223372036854775808` overflows a 64-bit integer",
        ),
    ];
    for (kk, stride, pad, want) in cases {
        let mut m = Module::new();
        let mut f = m.entry("main", [t(ElementType::F32, &[2, 7])]).unwrap();
        let x = f.arg(0).unwrap();
        let e = k::avg_pool::call(&mut f, &x, kk, stride, pad)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(want), "{e}");
    }
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[6])]).unwrap();
    let v = f.arg(0).unwrap();
    let e = k::top_k::call(&mut f, &v, 0).unwrap_err().to_string();
    assert!(
        e.starts_with("example::top_k: output `values`: dimension 0, `k`, is 0, not a size"),
        "{e}"
    );
}

#[test]
fn one_generic_op_runs_for_each_of_its_dtypes() {
    let xs: Vec<f64> = vec![1.0, -2.0, 3.0, 0.5, 0.0, 4.0, -1.0, 2.5];
    let reference = |v: &[f64]| -> Vec<f64> {
        v.chunks(4)
            .flat_map(|row| {
                let ms = row.iter().map(|a| a * a).sum::<f64>() / 4.0;
                row.iter().map(move |a| a / (ms + 1e-3f32 as f64).sqrt())
            })
            .collect()
    };
    let want = reference(&xs);
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [t(ElementType::F32, &[2, 4]), t(ElementType::F64, &[2, 4])],
        )
        .unwrap();
    let (a, b) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let ya = k::rms_norm_t::call(&mut f, &a, 1e-3).unwrap();
    let yb = k::rms_norm_t::call(&mut f, &b, 1e-3).unwrap();
    // The output's type follows the input's: one op, one target, two types.
    assert_eq!(ya.ty().to_string(), "tensor<2x4xf32>");
    assert_eq!(yb.ty().to_string(), "tensor<2x4xf64>");
    f.ret(&[&ya, &yb]).unwrap();
    let text = m.to_text().unwrap();
    assert_eq!(text.matches(r#""example.rms_norm_t""#).count(), 2, "{text}");
    let x32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
    let out = run(
        &text,
        vec![vec![Array::f32(&[2, 4], &x32), Array::f64(&[2, 4], &xs)]],
    );
    let out = out[0].as_ref().unwrap();
    for (g, w) in out[0].to_f32().iter().zip(&want) {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-6 * w.abs().max(1.0),
            "{g} vs {w}"
        );
    }
    for (g, w) in out[1].to_f64().iter().zip(&want) {
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{g} vs {w}");
    }
    // A type outside the list is a build error that lists the allowed ones.
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::I32, &[2, 4])]).unwrap();
    let x = f.arg(0).unwrap();
    let e = k::rms_norm_t::call(&mut f, &x, 1e-3)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "example::rms_norm_t: parameter `x` takes a tensor of T (f32, f64, bf16 or f16), got \
         tensor<2x4xi32>"
    );
    // The schema has one dtype variable, in the manifest as `{"var": "T", "allowed": [...]}`.
    let json = k::rms_norm_t::schema().to_json();
    assert!(
        json.contains(r#""dtype":{"allowed":["f32","f64","bf16","f16"],"var":"T"}"#),
        "{json}"
    );
    assert_eq!(
        k::rms_norm_t::schema_string(),
        "example::rms_norm_t(Tensor x, *, float eps) -> Tensor"
    );
}

// --- Element types beyond Rust's primitives -----------------------------------------------

use customop::{Complex64, F8E4M3FN, bf16, f16};

fn bytes_of<T: Copy>(values: &[T], to_le: impl Fn(T) -> Vec<u8>) -> Vec<u8> {
    values.iter().flat_map(|&v| to_le(v)).collect()
}

fn values_of<T>(bytes: &[u8], n: usize, from_le: impl Fn(&[u8]) -> T) -> Vec<T> {
    bytes.chunks_exact(n).map(from_le).collect()
}

fn c64_le(z: Complex64) -> Vec<u8> {
    [z.re.to_le_bytes(), z.im.to_le_bytes()].concat()
}

fn c64_from(b: &[u8]) -> Complex64 {
    let f = |i: usize| f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    Complex64::new(f(0), f(4))
}

/// complex64, f8E4M3FN, bf16 and f16 tensors through the builder and XLA: the kernels, a
/// constant of each builder-side type, and XLA's own `convert` of fp8, against plain loops.
/// Tolerances: complex64 and f32 results relative 1e-6 (the same f32 operations in another
/// order at most); bf16 and f16 results exact (the kernel and the reference round the same
/// f32 product once), additions by XLA within one ulp (bf16 2^-8, f16 2^-11 relative); fp8
/// bits exact.
#[test]
fn complex_fp8_and_half_tensors_run_on_xla() {
    let scale = k::Fp8Scale { scale: 0.5 };
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [
                t(ElementType::C64, &[2, 3]),
                t(ElementType::C64, &[2, 3]),
                t(ElementType::F32, &[8]),
                t(ElementType::BF16, &[6]),
                t(ElementType::F16, &[6]),
            ],
        )
        .unwrap();
    let [a, b, x, hb, hh] = [0, 1, 2, 3, 4].map(|i| f.arg(i).unwrap());
    let s = f.external::<k::Fp8Scale>("scale").unwrap();
    let z = k::cmul::call(&mut f, &a, &b).unwrap();
    let one_i = f.constant(&[2, 3], &[Complex64::new(0.0, 1.0); 6]).unwrap();
    let zc = f.add(&z, &one_i).unwrap();
    let q = k::quantize_fp8::call(&mut f, &s, &x).unwrap();
    let y = k::dequantize_fp8::call(&mut f, &s, &q).unwrap();
    let qf = f.convert(&q, ElementType::F32).unwrap();
    let sb = k::scale_bf16::call(&mut f, &hb, 1.5).unwrap();
    let bias = f.constant(&[6], &[bf16::from_f32(0.25); 6]).unwrap();
    let sbc = f.add(&sb, &bias).unwrap();
    let sh = k::scale_f16::call(&mut f, &hh, -0.3).unwrap();
    for (v, want) in [
        (&z, "tensor<2x3xcomplex<f32>>"),
        (&q, "tensor<8xf8E4M3FN>"),
        (&y, "tensor<8xf32>"),
        (&sb, "tensor<6xbf16>"),
        (&sh, "tensor<6xf16>"),
    ] {
        assert_eq!(v.ty().to_string(), want);
    }
    f.ret(&[&z, &zc, &q, &y, &qf, &sbc, &sh]).unwrap();
    let text = m.to_text().unwrap();

    let av: Vec<Complex64> = (0..6)
        .map(|i| Complex64::new(i as f32 * 0.5 - 1.0, 2.0 - i as f32))
        .collect();
    let bv: Vec<Complex64> = (0..6)
        .map(|i| Complex64::new(0.25 * i as f32, -0.75 + i as f32 * 0.125))
        .collect();
    // 0.5 / 0.5 = 1 (0x38), 500 saturates to 448 (0x7E), 0.1 rounds, tiny underflows to a
    // subnormal, -3.3 negative.
    let xv = [0.5f32, 250.0, -1000.0, 0.05, 0.0, 0.001, -1.65, 7.0];
    let hbv: Vec<bf16> = [1.0f32, -2.5, 0.1, 300.0, 1e-3, -7.75]
        .map(bf16::from_f32)
        .to_vec();
    let hhv: Vec<f16> = [1.0f32, -2.5, 0.1, 300.0, 1e-3, -7.75]
        .map(f16::from_f32)
        .to_vec();
    let out = run(
        &text,
        vec![vec![
            Array::from_bytes("complex64", &[2, 3], &bytes_of(&av, c64_le)),
            Array::from_bytes("complex64", &[2, 3], &bytes_of(&bv, c64_le)),
            Array::f32(&[8], &xv),
            Array::from_bytes(
                "bfloat16",
                &[6],
                &bytes_of(&hbv, |v| v.to_le_bytes().to_vec()),
            ),
            Array::from_bytes(
                "float16",
                &[6],
                &bytes_of(&hhv, |v| v.to_le_bytes().to_vec()),
            ),
            Array::u8(&[28], &scale.pack()),
        ]],
    );
    let out = out[0].as_ref().unwrap();
    let dtypes: Vec<&str> = out.iter().map(|a| a.dtype.as_str()).collect();
    assert_eq!(
        dtypes,
        [
            "complex64",
            "complex64",
            "float8_e4m3fn",
            "float32",
            "float32",
            "bfloat16",
            "float16"
        ]
    );
    let close = |g: f32, w: f32, rel: f32, what: &str| {
        assert!(
            (g - w).abs() <= rel * w.abs().max(1.0),
            "{what}: {g} vs {w}"
        );
    };
    // complex64: (ar br - ai bi) + (ar bi + ai br) i, and + i from the constant.
    let z_got = values_of(&out[0].bytes(), 8, c64_from);
    let zc_got = values_of(&out[1].bytes(), 8, c64_from);
    for i in 0..6 {
        let (p, q) = (av[i], bv[i]);
        let (re, im) = (p.re * q.re - p.im * q.im, p.re * q.im + p.im * q.re);
        close(z_got[i].re, re, 1e-6, "cmul re");
        close(z_got[i].im, im, 1e-6, "cmul im");
        close(zc_got[i].re, re, 1e-6, "cmul + i re");
        close(zc_got[i].im, im + 1.0, 1e-6, "cmul + i im");
    }
    // fp8: the bits, spelled out for the format (sign.eeee.mmm, bias 7).
    let q_bits = out[2].bytes();
    assert_eq!(
        q_bits,
        // 1.0, 448 (saturated), -448, 0.1 -> 0.1015625, 0, 0.002 -> 2^-9 (subnormal 1),
        // -3.3 -> -3.25, 14
        [0x38, 0x7E, 0xFE, 0x1D, 0x00, 0x01, 0xC5, 0x56]
    );
    for (bits, &v) in q_bits.iter().zip(&xv) {
        let want = F8E4M3FN::from_f32((v / scale.scale).clamp(-448.0, 448.0));
        assert_eq!(*bits, want.to_bits(), "quantize {v}");
    }
    // XLA's own convert reads the fp8 values as dequantize does (scale aside): exactly.
    let y_got = out[3].to_f32();
    let qf_got = out[4].to_f32();
    for i in 0..8 {
        assert_eq!(y_got[i], qf_got[i] * scale.scale, "dequantize {}", xv[i]);
        assert_eq!(qf_got[i], F8E4M3FN::from_bits(q_bits[i]).to_f32());
    }
    // bf16 * 1.5 + 0.25 and f16 * -0.3.
    let sbc_got = values_of(&out[5].bytes(), 2, |c| bf16::from_le_bytes([c[0], c[1]]));
    let sh_got = values_of(&out[6].bytes(), 2, |c| f16::from_le_bytes([c[0], c[1]]));
    for i in 0..6 {
        let scaled = bf16::from_f32(hbv[i].to_f32() * 1.5);
        close(
            sbc_got[i].to_f32(),
            scaled.to_f32() + 0.25,
            2f32.powi(-8),
            "bf16 scale + bias",
        );
        assert_eq!(
            sh_got[i],
            f16::from_f32(hhv[i].to_f32() * -0.3f32),
            "f16 scale"
        );
    }
}

/// The generic rms_norm in its half-precision instantiations, from the builder through XLA:
/// the reference computes in f64 from the same half-precision inputs; results within half an
/// ulp of the format (bf16 2^-8, f16 2^-11 relative), the kernel rounding once.
#[test]
fn the_generic_rms_norm_runs_in_bf16_and_f16_on_xla() {
    let xs = [1.0f32, -2.0, 3.0, 0.5, 0.0, 4.0, -1.0, 2.5];
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [t(ElementType::BF16, &[2, 4]), t(ElementType::F16, &[2, 4])],
        )
        .unwrap();
    let (a, b) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let ya = k::rms_norm_t::call(&mut f, &a, 1e-3).unwrap();
    let yb = k::rms_norm_t::call(&mut f, &b, 1e-3).unwrap();
    assert_eq!(ya.ty().to_string(), "tensor<2x4xbf16>");
    assert_eq!(yb.ty().to_string(), "tensor<2x4xf16>");
    f.ret(&[&ya, &yb]).unwrap();
    let text = m.to_text().unwrap();
    let xb: Vec<bf16> = xs.iter().map(|&v| bf16::from_f32(v)).collect();
    let xh: Vec<f16> = xs.iter().map(|&v| f16::from_f32(v)).collect();
    let out = run(
        &text,
        vec![vec![
            Array::from_bytes(
                "bfloat16",
                &[2, 4],
                &bytes_of(&xb, |v| v.to_le_bytes().to_vec()),
            ),
            Array::from_bytes(
                "float16",
                &[2, 4],
                &bytes_of(&xh, |v| v.to_le_bytes().to_vec()),
            ),
        ]],
    );
    let out = out[0].as_ref().unwrap();
    let reference = |x: Vec<f64>| -> Vec<f64> {
        x.chunks(4)
            .flat_map(|row| {
                let ms = row.iter().map(|a| a * a).sum::<f64>() / 4.0;
                let inv = 1.0 / (ms + f64::from(1e-3f32)).sqrt();
                row.iter().map(move |a| a * inv).collect::<Vec<_>>()
            })
            .collect()
    };
    let got_b = values_of(&out[0].bytes(), 2, |c| bf16::from_le_bytes([c[0], c[1]]));
    let want_b = reference(xb.iter().map(|v| v.to_f64()).collect());
    for (g, w) in got_b.iter().zip(&want_b) {
        assert!(
            (g.to_f64() - w).abs() <= w.abs() * 2f64.powi(-8),
            "bf16 {g} vs {w}"
        );
    }
    let got_h = values_of(&out[1].bytes(), 2, |c| f16::from_le_bytes([c[0], c[1]]));
    let want_h = reference(xh.iter().map(|v| v.to_f64()).collect());
    for (g, w) in got_h.iter().zip(&want_h) {
        assert!(
            (g.to_f64() - w).abs() <= w.abs() * 2f64.powi(-11),
            "f16 {g} vs {w}"
        );
    }
}

mod runner;
