//! The seed model: its designed shape, its run with the Rust handler, and the same program
//! written in PyTorch, run eagerly and exported to XLA.

use super::*;

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
