//! The seed: `sin(x) + 1` with an external runs on XLA, and the harness refuses broken modules.

use super::*;

fn f32_3x3() -> TensorType {
    TensorType::new(ElementType::F32, [3, 3]).unwrap()
}

/// `sin(x) + 1` on `tensor<3x3xf32>`, with one 56-byte external argument.
fn sin_plus_one() -> Module {
    let mut m = Module::new();
    let mut f = m.entry("main", [f32_3x3()]).unwrap();
    let x = f.arg(0).unwrap();
    f.external_raw(External {
        name: "blob".into(),
        descriptor: "my_lib::Blob".into(),
        fingerprint: 0x0123_4567_89ab_cdef,
        size: 56,
        mutable: false,
    })
    .unwrap();
    let s = f.sine(&x).unwrap();
    let one = f.constant_splat(&f32_3x3(), 1.0).unwrap();
    let y = f.add(&s, &one).unwrap();
    f.ret(&[&y]).unwrap();
    m
}

fn inputs() -> (Vec<f32>, Vec<Array>) {
    let x: Vec<f32> = (0..9).map(|i| i as f32 * 0.37 - 1.2).collect();
    let blob: Vec<u8> = (0..56).collect();
    (
        x.clone(),
        vec![Array::f32(&[3, 3], &x), Array::u8(&[56], &blob)],
    )
}

#[test]
fn sin_plus_one_with_an_external_runs_on_xla() {
    let text = sin_plus_one().to_text().unwrap();
    assert!(
        text.contains(r#"%arg1: tensor<56xui8> {customop.external = {descriptor = "my_lib::Blob", fingerprint = "0x0123456789abcdef", mutable = false, name = "blob", size = 56 : i64}}"#),
        "{text}"
    );
    let (x, inputs) = inputs();
    let out = Harness::get().run(&text, &inputs).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].shape, vec![3, 3]);
    let got = out[0].to_f32();
    for (g, x) in got.iter().zip(&x) {
        let want = (*x as f64).sin() + 1.0;
        assert!(
            (*g as f64 - want).abs() < 1e-6,
            "sin({x}) + 1 = {want}, XLA gave {g}"
        );
    }
}

#[test]
fn the_harness_rejects_broken_modules() {
    // Each edit breaks a StableHLO rule that MLIR's own verifier does not know: jaxlib must
    // refuse every one, so the passing run above means something.
    let text = sin_plus_one().to_text().unwrap();
    let harness = Harness::get();
    for (from, to) in [
        ("\"stablehlo.sine\"", "\"stablehlo.sinus\""),
        (
            "dense<1.000000e+00> : tensor<3x3xf32>",
            "dense<1.000000e+00> : tensor<3x3xf64>",
        ),
    ] {
        let broken = text.replacen(from, to, 1);
        assert_ne!(broken, text, "the edit {from} -> {to} must apply");
        let err = harness.run(&broken, &inputs().1).unwrap_err();
        assert!(
            matches!(err.stage.as_str(), "parse" | "verify"),
            "{from} -> {to}: {err}"
        );
    }
}
