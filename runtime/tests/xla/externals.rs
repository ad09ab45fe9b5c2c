//! Externals lifted through helpers, one argument per name, side-effecting ops kept, and an MLP
//! block around a custom op, run through C handlers.

use super::*;

fn c_handlers() -> (Ffi, std::path::PathBuf) {
    let h = Harness::get();
    let src = customop_xla::workspace_root().join("tests/xla/c/scale.c");
    let lib = h.build_c_library(&src, "customop_test_handlers");
    let ffi = Ffi {
        library: lib.clone(),
        targets: Some(vec![
            Target {
                name: "customop_test.scale".into(),
                symbol: "customop_test_scale".into(),
            },
            Target {
                name: "customop_test.count".into(),
                symbol: "customop_test_count".into(),
            },
        ]),
    };
    (ffi, lib)
}

/// `scale(blob, x)` through the C test handler: `2 * x + blob.pack()[24]`.
fn scale(
    f: &mut customop::lower::FuncBuilder<'_>,
    blob: &customop::lower::Value,
    x: &customop::lower::Value,
) -> customop::lower::Value {
    let results = [x.ty().clone()];
    let operands = [blob, x];
    f.custom_call(CustomCall::new("customop_test.scale", &operands, &results))
        .unwrap()
        .pop()
        .unwrap()
}

#[test]
fn externals_are_lifted_through_two_levels_of_helpers() {
    let ty = t(ElementType::F32, &[4]);
    let mut m = Module::new();
    // inner declares the external; middle only calls inner; main calls middle.
    let mut inner = m.helper("inner", [ty.clone()]).unwrap();
    let blob = inner.external::<Blob>("blob").unwrap();
    let x = inner.arg(0).unwrap();
    let y = scale(&mut inner, blob.value(), &x);
    let inner = inner.ret(&[&y]).unwrap();
    let mut middle = m.helper("middle", [ty.clone()]).unwrap();
    let x = middle.arg(0).unwrap();
    let y = middle.call(&inner, &[&x]).unwrap().pop().unwrap();
    let z = middle.sine(&y).unwrap();
    let middle = middle.ret(&[&z]).unwrap();
    let mut main = m.entry("main", [ty.clone()]).unwrap();
    let x = main.arg(0).unwrap();
    let y = main.call(&middle, &[&x]).unwrap().pop().unwrap();
    main.ret(&[&y]).unwrap();

    assert_eq!(m.externals().len(), 1);
    assert_eq!(m.externals()[0].size, 56);
    let text = m.to_text().unwrap();
    // The entry has the annotated argument; each helper takes it as a trailing parameter and
    // every call site passes it along.
    assert!(text.contains(&format!(
        r#"func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<56xui8> {{customop.external = {{descriptor = "my_lib::Blob", fingerprint = "0x{:016x}", mutable = false, name = "blob", size = 56 : i64}}}}) -> tensor<4xf32>"#,
        <Blob as customop::Descriptor>::fingerprint()
    )), "{text}");
    assert!(
        text.contains("func.func private @middle(%arg0: tensor<4xf32>, %arg1: tensor<56xui8>)"),
        "{text}"
    );
    assert!(
        text.contains("func.func private @inner(%arg0: tensor<4xf32>, %arg1: tensor<56xui8>)"),
        "{text}"
    );
    assert!(text.contains("call @middle(%arg0, %arg1)"), "{text}");
    assert!(text.contains("call @inner(%arg0, %arg1)"), "{text}");

    let (ffi, _) = c_handlers();
    let blob = Blob {
        gain: 0.0,
        bias: 0,
        seed: 0,
        tag: [0; 16],
    };
    let mut packed = customop::Descriptor::pack(&blob);
    packed[24] = 3; // the first payload byte, which the C handler adds
    let xs = [0.0f32, 0.5, 1.0, -1.0];
    let out = Harness::get()
        .run_many(
            &text,
            Some(&ffi),
            &[vec![Array::f32(&[4], &xs), Array::u8(&[56], &packed)]],
        )
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
    let want: Vec<f64> = xs.iter().map(|&v| (2.0 * v as f64 + 3.0).sin()).collect();
    close(&out[0].to_f32(), &want, "sin(scale(x))");
}

#[test]
fn the_same_external_name_is_one_argument_and_a_clash_is_an_error() {
    #[derive(customop::Descriptor)]
    #[descriptor(name = "other::Cfg")]
    struct Other {
        x: u32,
    }
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[1])]).unwrap();
    let a = f.external::<Blob>("cfg").unwrap();
    let b = f.external::<Blob>("cfg").unwrap();
    assert_eq!(a.value(), b.value());
    let err = f.external::<Other>("cfg").unwrap_err().to_string();
    assert!(
        err.contains("my_lib::Blob") && err.contains("other::Cfg"),
        "{err}"
    );
    let _ = Other { x: 0 }.x;
}

#[test]
fn unused_side_effecting_ops_survive_and_run() {
    let ty = t(ElementType::F32, &[3]);
    let mut m = Module::new();
    let mut f = m.entry("main", [ty.clone()]).unwrap();
    let x = f.arg(0).unwrap();
    let operands = [&x];
    let results = [t(ElementType::F32, &[3])];
    for _ in 0..2 {
        let mut call = CustomCall::new("customop_test.count", &operands, &results);
        call.has_side_effect = true;
        f.custom_call(call).unwrap(); // results unused
    }
    let y = f.sine(&x).unwrap();
    f.ret(&[&y]).unwrap();
    let text = m.to_text().unwrap();
    assert_eq!(text.matches("stablehlo.custom_call").count(), 2, "{text}");
    assert_eq!(text.matches("has_side_effect = true").count(), 2, "{text}");
    let (ffi, lib) = c_handlers();
    let outcome = Harness::get()
        .execute(&Job {
            text: &text,
            ffi: Some(&ffi),
            runs: vec![vec![Array::f32(&[3], &[0.0, 1.0, 2.0])]; 3],
            probes: vec![Probe {
                library: lib,
                symbol: "customop_test_count_calls".into(),
            }],
            ..Job::default()
        })
        .unwrap();
    assert!(outcome.runs.iter().all(|r| r.is_ok()));
    // Two calls per execution, three executions: XLA kept both unused ops.
    assert_eq!(outcome.probes, vec![6]);
}

/// An MLP block with a custom op in the middle: dense -> relu -> scale(blob, .) -> dense.
fn mlp() -> (Module, Vec<f32>, Vec<f32>, Vec<f32>) {
    let w1: Vec<f32> = (0..12).map(|i| (i as f32 - 5.0) * 0.1).collect(); // 4x3
    let w2: Vec<f32> = (0..6).map(|i| (i as f32) * 0.2 - 0.5).collect(); // 3x2
    let b1 = vec![0.1f32, -0.2, 0.3];
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[2, 4])]).unwrap();
    let x = f.arg(0).unwrap();
    let blob = f.external::<Blob>("blob").unwrap();
    let w1v = f.constant::<f32>(&[4, 3], &w1).unwrap();
    let h = f.dot_general(&x, &w1v, &DotDims::matmul()).unwrap();
    let b1v = f.constant::<f32>(&[3], &b1).unwrap();
    let b1b = f.broadcast_in_dim(&b1v, &[2, 3], &[1]).unwrap();
    let h = f.add(&h, &b1b).unwrap();
    let zero = f.constant_splat(h.ty(), 0.0).unwrap();
    let h = f.max(&h, &zero).unwrap();
    let h = scale(&mut f, blob.value(), &h);
    let w2v = f.constant::<f32>(&[3, 2], &w2).unwrap();
    let y = f.dot_general(&h, &w2v, &DotDims::matmul()).unwrap();
    f.ret(&[&y]).unwrap();
    (m, w1, b1, w2)
}

#[test]
fn an_mlp_block_around_a_custom_op_runs() {
    let (m, w1, b1, w2) = mlp();
    let xs: Vec<f32> = vec![1.0, -1.0, 0.5, 2.0, 0.0, 1.5, -0.5, 1.0];
    let mut packed = customop::Descriptor::pack(&Blob {
        gain: 1.0,
        bias: 0,
        seed: 0,
        tag: [0; 16],
    });
    packed[24] = 1;
    let inputs = vec![Array::f32(&[2, 4], &xs), Array::u8(&[56], &packed)];
    let (ffi, _) = c_handlers();
    let h = Harness::get();
    // Text and bytecode both verify, compile and give the same numbers.
    let text = m.to_text().unwrap();
    let bytecode = m.to_bytecode().unwrap();
    let mut outs = vec![];
    for job in [
        Job {
            text: &text,
            ..Job::default()
        },
        Job {
            bytecode: Some(&bytecode),
            ..Job::default()
        },
    ] {
        let job = Job {
            ffi: Some(&ffi),
            runs: vec![inputs.clone()],
            ..job
        };
        outs.push(h.execute(&job).unwrap().runs.pop().unwrap().unwrap());
    }
    // Independently: the same arithmetic in f64.
    let mut want = vec![];
    for r in 0..2 {
        let hid: Vec<f64> = (0..3)
            .map(|j| {
                let s: f64 = (0..4)
                    .map(|k| xs[r * 4 + k] as f64 * w1[k * 3 + j] as f64)
                    .sum();
                2.0 * (s + b1[j] as f64).max(0.0) + 1.0
            })
            .collect();
        for k in 0..2 {
            want.push((0..3).map(|j| hid[j] * w2[j * 2 + k] as f64).sum::<f64>());
        }
    }
    close(&outs[0][0].to_f32(), &want, "mlp (text)");
    close(&outs[1][0].to_f32(), &want, "mlp (bytecode)");
}
