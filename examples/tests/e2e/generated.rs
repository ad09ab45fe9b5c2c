//! What `#[custom_op]` generates: the manifest of every op, and, without XLA, the plain kernel
//! function, schemas, lowering checks and the target and crate options.

use super::*;

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
            "example::aliasing",
            "example::apply_stats",
            "example::apply_taps",
            "example::apply_taps_bwd",
            "example::array_attr",
            "example::avg_pool",
            "example::cache_write",
            "example::checked_sqrt",
            "example::cmul",
            "example::concat_rows",
            "example::counter",
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
            "example::myadd_out",
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
