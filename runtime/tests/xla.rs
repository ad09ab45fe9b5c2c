//! End-to-end tests: modules built by `customop::lower` are parsed, verified, compiled and run by
//! jaxlib's XLA CPU client (through `customop-xla`), and the numbers are compared with values
//! computed here, independently of the code under test.
//!
//! One test binary for all of them: each binary that links MLIR is ~160 MB. It also holds what the
//! macros must accept (`macro_cases/`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)]

mod macro_cases;

use customop::lower::{External, Module};
use customop::{ElementType, TensorType};
use customop_xla::{Array, Harness};

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

// --- Every op of the builder, run on XLA and checked against Rust arithmetic -----------------

use customop::lower::{BinaryOp, Compare, CustomCall, DotDims, ReduceOp, UnaryOp};
use customop_xla::{Ffi, Job, Probe, Target};

fn t(e: ElementType, shape: &[i64]) -> TensorType {
    TensorType::new(e, shape).unwrap()
}

fn close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = 1e-5 * w.abs().max(1.0);
        assert!(
            ((*g as f64) - w).abs() <= tol,
            "{what}[{i}]: XLA {g}, Rust {w}"
        );
    }
}

#[test]
fn elementwise_ops_match_rust() {
    let x: Vec<f32> = vec![0.5, 1.0, 1.5, 2.0, 2.5, 3.0];
    let y: Vec<f32> = vec![2.0, 0.5, 1.0, 3.0, 0.25, 1.5];
    let ty = t(ElementType::F32, &[2, 3]);
    let mut m = Module::new();
    let mut f = m.entry("main", [ty.clone(), ty.clone()]).unwrap();
    let (a, b) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let unary = [
        UnaryOp::Negate,
        UnaryOp::Sine,
        UnaryOp::Cosine,
        UnaryOp::Exponential,
        UnaryOp::Log,
        UnaryOp::Tanh,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Abs,
    ];
    let binary = [
        BinaryOp::Add,
        BinaryOp::Subtract,
        BinaryOp::Multiply,
        BinaryOp::Divide,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Power,
    ];
    let mut outs = Vec::new();
    for op in unary {
        outs.push(f.unary(op, &a).unwrap());
    }
    for op in binary {
        outs.push(f.binary(op, &a, &b).unwrap());
    }
    f.ret(&outs.iter().collect::<Vec<_>>()).unwrap();
    let text = m.to_text().unwrap();
    let got = Harness::get()
        .run(&text, &[Array::f32(&[2, 3], &x), Array::f32(&[2, 3], &y)])
        .unwrap();
    let unary_rust: [fn(f64) -> f64; 9] = [
        |v| -v,
        f64::sin,
        f64::cos,
        f64::exp,
        f64::ln,
        f64::tanh,
        f64::sqrt,
        |v| 1.0 / v.sqrt(),
        f64::abs,
    ];
    let binary_rust: [fn(f64, f64) -> f64; 7] = [
        |a, b| a + b,
        |a, b| a - b,
        |a, b| a * b,
        |a, b| a / b,
        f64::max,
        f64::min,
        f64::powf,
    ];
    for (i, op) in unary.iter().enumerate() {
        let want: Vec<f64> = x.iter().map(|&v| unary_rust[i](v as f64)).collect();
        close(&got[i].to_f32(), &want, op.op_name());
    }
    for (i, op) in binary.iter().enumerate() {
        let want: Vec<f64> = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| binary_rust[i](a as f64, b as f64))
            .collect();
        close(&got[unary.len() + i].to_f32(), &want, op.op_name());
    }
}

#[test]
fn structural_ops_match_rust() {
    // x: 2x3 f32 = [[1,2,3],[4,5,6]]
    let x: Vec<f32> = vec![1.0, -2.0, 3.0, -4.0, 5.0, -6.0];
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[2, 3])]).unwrap();
    let a = f.arg(0).unwrap();
    let c = f
        .constant::<f32>(&[2, 3], &[0.0, 0.0, 10.0, 0.0, 0.0, 10.0])
        .unwrap();
    let lt = f.compare(Compare::Lt, &a, &c).unwrap(); // x < c
    let sel = f.select(&lt, &a, &c).unwrap(); // min(x, c) elementwise
    let conv = f.convert(&a, ElementType::I32).unwrap();
    let resh = f.reshape(&a, &[3, 2]).unwrap();
    let row = f.constant::<f32>(&[3], &[10.0, 20.0, 30.0]).unwrap();
    let bcast = f.broadcast_in_dim(&row, &[2, 3], &[1]).unwrap();
    let tr = f.transpose(&a, &[1, 0]).unwrap();
    let w = f
        .constant::<f32>(&[3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
        .unwrap();
    let mm = f.dot_general(&a, &w, &DotDims::matmul()).unwrap(); // 2x2
    let sum = f.reduce(ReduceOp::Add, &a, &[1]).unwrap(); // [2]
    let mx = f.reduce(ReduceOp::Max, &a, &[0]).unwrap(); // [3]
    let cat = f.concatenate(&[&a, &a], 0).unwrap(); // 4x3
    let sl = f.slice(&a, &[0, 1], &[2, 3], &[1, 2]).unwrap(); // 2x1: columns 1
    let ints = f.constant::<i32>(&[2], &[7, -9]).unwrap();
    let flags = f
        .constant::<bool>(&[2, 2], &[true, false, true, true])
        .unwrap();
    f.ret(&[
        &sel, &conv, &resh, &bcast, &tr, &mm, &sum, &mx, &cat, &sl, &ints, &flags,
    ])
    .unwrap();
    let text = m.to_text().unwrap();
    let got = Harness::get()
        .run(&text, &[Array::f32(&[2, 3], &x)])
        .unwrap();
    let xs = |i: usize, j: usize| x[i * 3 + j];
    let cv = [0.0f32, 0.0, 10.0, 0.0, 0.0, 10.0];
    let want_sel: Vec<f32> = x
        .iter()
        .zip(&cv)
        .map(|(&a, &c)| if a < c { a } else { c })
        .collect();
    assert_eq!(got[0].to_f32(), want_sel, "compare + select");
    assert_eq!(got[1].to_i32(), vec![1, -2, 3, -4, 5, -6], "convert");
    assert_eq!(got[2].shape, vec![3, 2]);
    assert_eq!(got[2].to_f32(), x, "reshape keeps row-major order");
    assert_eq!(
        got[3].to_f32(),
        vec![10.0, 20.0, 30.0, 10.0, 20.0, 30.0],
        "broadcast"
    );
    let want_tr: Vec<f32> = (0..3)
        .flat_map(|j| (0..2).map(move |i| (i, j)))
        .map(|(i, j)| xs(i, j))
        .collect();
    assert_eq!(got[4].to_f32(), want_tr, "transpose");
    let wv = [[1.0f32, 0.0], [0.0, 1.0], [1.0, 1.0]];
    let mut want_mm = vec![];
    for i in 0..2 {
        for k in 0..2 {
            want_mm.push((0..3).map(|j| xs(i, j) * wv[j][k]).sum::<f32>());
        }
    }
    assert_eq!(got[5].to_f32(), want_mm, "dot_general");
    assert_eq!(got[6].to_f32(), vec![2.0, -5.0], "reduce add over rows");
    assert_eq!(
        got[7].to_f32(),
        vec![1.0, 5.0, 3.0],
        "reduce max over columns"
    );
    assert_eq!(got[8].shape, vec![4, 3]);
    assert_eq!(
        got[8].to_f32(),
        [x.clone(), x.clone()].concat(),
        "concatenate"
    );
    assert_eq!(got[9].shape, vec![2, 1]);
    assert_eq!(got[9].to_f32(), vec![xs(0, 1), xs(1, 1)], "slice");
    assert_eq!(got[10].to_i32(), vec![7, -9], "integer constant");
    assert_eq!(got[11].dtype, "bool");
    assert_eq!(got[11].bytes(), vec![1, 0, 1, 1], "bool constant");
}

#[test]
fn batched_dot_general() {
    // [2, 2, 3] x [2, 3, 1] with batch dim 0: per-batch matrix-vector products.
    let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let b: Vec<f32> = vec![1.0, 2.0, 3.0, -1.0, 0.0, 1.0];
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [
                t(ElementType::F32, &[2, 2, 3]),
                t(ElementType::F32, &[2, 3, 1]),
            ],
        )
        .unwrap();
    let (l, r) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let dims = DotDims {
        lhs_batch: vec![0],
        rhs_batch: vec![0],
        lhs_contracting: vec![2],
        rhs_contracting: vec![1],
    };
    let y = f.dot_general(&l, &r, &dims).unwrap();
    assert_eq!(y.shape(), &[2, 2, 1]);
    f.ret(&[&y]).unwrap();
    let got = Harness::get()
        .run(
            &m.to_text().unwrap(),
            &[Array::f32(&[2, 2, 3], &a), Array::f32(&[2, 3, 1], &b)],
        )
        .unwrap();
    let mut want = vec![];
    for batch in 0..2 {
        for i in 0..2 {
            want.push(
                (0..3)
                    .map(|k| a[batch * 6 + i * 3 + k] * b[batch * 3 + k])
                    .sum::<f32>(),
            );
        }
    }
    assert_eq!(got[0].to_f32(), want);
}

#[test]
fn misuse_is_refused_before_mlir() {
    let mut m = Module::new();
    let h = m.helper("h", [t(ElementType::F32, &[2])]).unwrap();
    let foreign = h.arg(0).unwrap();
    h.ret(&[&foreign]).unwrap();
    let mut f = m
        .entry(
            "main",
            [t(ElementType::F32, &[2, 3]), t(ElementType::I32, &[2, 3])],
        )
        .unwrap();
    let (x, i) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let msg =
        |r: Result<customop::lower::Value, customop::lower::BuildError>| r.unwrap_err().to_string();
    assert!(msg(f.add(&x, &i)).contains("two operands of one type"));
    assert!(msg(f.sine(&i)).contains("floating-point"));
    assert!(msg(f.reshape(&x, &[4, 2])).contains("cannot reshape"));
    assert!(msg(f.transpose(&x, &[0, 0])).contains("appears twice"));
    assert!(msg(f.broadcast_in_dim(&x, &[2, 4], &[0, 1])).contains("cannot broadcast"));
    assert!(msg(f.dot_general(&x, &x, &DotDims::matmul())).contains("has size 3"));
    assert!(msg(f.reduce(ReduceOp::Add, &x, &[2])).contains("dimensions"));
    assert!(msg(f.slice(&x, &[0, 0], &[3, 1], &[1, 1])).contains("do not fit"));
    assert!(msg(f.concatenate(&[&x, &i], 0)).contains("differ"));
    assert!(msg(f.constant::<f32>(&[2], &[1.0])).contains("2 elements, got 1"));
    assert!(msg(f.select(&x, &x, &x)).contains("predicate must be i1"));
    assert!(msg(f.sine(&foreign)).contains("comes from function `h`"));
    let other = {
        let mut m2 = Module::new();
        let g = m2.entry("main", [t(ElementType::F32, &[2])]).unwrap();
        g.arg(0).unwrap()
    };
    assert!(msg(f.sine(&other)).contains("another module"));
}

/// A 56-byte descriptor, as the seed's external.
#[derive(customop::Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "my_lib::Blob")]
pub struct Blob {
    pub gain: f32,
    pub bias: i32,
    pub seed: u64,
    pub tag: [u8; 16],
}

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

// --- Meshes and shardings: XLA's SPMD partitioner splits the program over virtual devices -----

use customop::lower::Sharding;

fn sharded_sin_plus_one(mesh: &[(&str, i64)], spec: &[&[&str]]) -> String {
    let ty = t(ElementType::F32, &[8, 4]);
    let mut m = Module::new();
    m.mesh("mesh", mesh).unwrap();
    let mut f = m.entry("main", [ty.clone()]).unwrap();
    f.shard_arg(0, Sharding::new("mesh", spec)).unwrap();
    let x = f.arg(0).unwrap();
    f.external::<Blob>("blob").unwrap();
    let s = f.sine(&x).unwrap();
    let one = f.constant_splat(&ty, 1.0).unwrap();
    let y = f.add(&s, &one).unwrap();
    f.ret_sharded(&[&y], &[Some(Sharding::new("mesh", spec))])
        .unwrap();
    m.to_text().unwrap()
}

fn run_on_mesh(
    text: &str,
    mesh: &[(&str, i64)],
    spec: &[&[&str]],
    xs: &[f32],
) -> (Vec<f32>, Vec<Vec<i64>>) {
    let blob = customop::Descriptor::pack(&Blob {
        gain: 0.0,
        bias: 0,
        seed: 0,
        tag: [0; 16],
    });
    let spec_owned: Vec<Vec<String>> = spec
        .iter()
        .map(|d| d.iter().map(|a| a.to_string()).collect())
        .collect();
    let outcome = Harness::get()
        .execute(&Job {
            text,
            runs: vec![vec![
                Array::f32(&[8, 4], xs).sharded(spec),
                Array::u8(&[56], &blob).sharded(&[&[]]),
            ]],
            mesh: mesh.iter().map(|(a, n)| (a.to_string(), *n)).collect(),
            output_specs: vec![spec_owned],
            ..Job::default()
        })
        .unwrap();
    let out = outcome.runs.into_iter().next().unwrap().unwrap();
    (out[0].to_f32(), outcome.shard_shapes[0][0].clone())
}

#[test]
fn sharded_programs_run_split_over_devices() {
    let xs: Vec<f32> = (0..32).map(|i| i as f32 * 0.1 - 1.0).collect();
    let want: Vec<f64> = xs.iter().map(|&v| (v as f64).sin() + 1.0).collect();
    for (mesh, spec, local) in [
        (&[("x", 4)][..], &[&["x"][..], &[][..]][..], vec![2i64, 4]),
        (
            &[("x", 2), ("y", 2)][..],
            &[&["x"][..], &["y"][..]][..],
            vec![4, 2],
        ),
    ] {
        let text = sharded_sin_plus_one(mesh, spec);
        assert!(text.contains("\"sdy.mesh\"()"), "{text}");
        // Externals are replicated on every device.
        assert!(
            text.contains("size = 56 : i64}, sdy.sharding = #sdy.sharding<@mesh, [{}]>}"),
            "{text}"
        );
        let (got, shapes) = run_on_mesh(&text, mesh, spec, &xs);
        close(&got, &want, "sharded sin + 1");
        assert_eq!(shapes.len(), 4, "one shard per device");
        assert!(shapes.iter().all(|s| *s == local), "{shapes:?}");
    }
}

#[test]
fn a_dimension_that_does_not_divide_is_a_rust_error() {
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[6, 4])]).unwrap();
    let err = f
        .shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dimension 0 of tensor<6x4xf32> (size 6) is not divisible by 4"),
        "{err}"
    );
    let err = f
        .shard_arg(0, Sharding::new("mesh", &[&["z"], &[]]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no axis `z`"), "{err}");
    let err = f
        .shard_arg(0, Sharding::new("other", &[&[], &[]]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not declare"), "{err}");
}

// --- How the builder splits a custom call that has a partition rule ----------------------------

use customop::lower::FuncBuilder;
use customop::schema::{FactorDims, PartitionRule};

fn dims(d: &[Option<&str>]) -> Vec<Option<String>> {
    d.iter().map(|f| f.map(str::to_string)).collect()
}

/// `a = [i, _]`, `b = [j]`, result `[i, j]`.
fn outer_rule() -> PartitionRule {
    PartitionRule {
        factors: vec!["i".into(), "j".into()],
        operands: vec![
            FactorDims {
                name: "a".into(),
                index: 0,
                dims: dims(&[Some("i"), None]),
            },
            FactorDims {
                name: "b".into(),
                index: 1,
                dims: dims(&[Some("j")]),
            },
        ],
        results: vec![FactorDims {
            name: "y".into(),
            index: 0,
            dims: dims(&[Some("i"), Some("j")]),
        }],
    }
}

/// A module `main(a: 4x2, b: 4)` calling target `outer` under `outer_rule()`, after `setup`.
fn outer_module(mesh: Option<&[(&str, i64)]>, setup: impl FnOnce(&mut FuncBuilder<'_>)) -> String {
    let rule = outer_rule();
    let mut m = Module::new();
    if let Some(mesh) = mesh {
        m.mesh("mesh", mesh).unwrap();
    }
    let mut f = m
        .entry(
            "main",
            [t(ElementType::F32, &[4, 2]), t(ElementType::F32, &[4])],
        )
        .unwrap();
    setup(&mut f);
    let (a, b) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let results = [t(ElementType::F32, &[4, 4])];
    let operands = [&a, &b];
    let call = CustomCall {
        partition: Some(&rule),
        ..CustomCall::new("outer", &operands, &results)
    };
    let y = f.custom_call(call).unwrap();
    f.ret(&[&y[0]]).unwrap();
    let text = m.to_text().unwrap();
    Harness::get().verify(&text).unwrap();
    text
}

#[test]
fn partitioned_calls_follow_the_known_splits() {
    // Without a mesh the rule changes nothing.
    let text = outer_module(None, |_| {});
    assert!(!text.contains("manual_computation"), "{text}");
    assert!(
        text.contains("(tensor<4x2xf32>, tensor<4xf32>) -> tensor<4x4xf32>"),
        "{text}"
    );

    // A mesh, but no known split: one whole call per device.
    let text = outer_module(Some(&[("x", 2), ("y", 2)]), |_| {});
    assert!(
        text.contains(r#"in_shardings = #sdy.sharding_per_value<[<@mesh, [{}, {}]>, <@mesh, [{}]>]>, manual_axes = #sdy<manual_axes{"x", "y"}>"#),
        "{text}"
    );
    assert!(
        text.contains("(tensor<4x2xf32>, tensor<4xf32>) -> tensor<4x4xf32>"),
        "{text}"
    );

    // `a` split by rows over x and `b` over y: i takes x, j takes y.
    let text = outer_module(Some(&[("x", 2), ("y", 2)]), |f| {
        f.shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))
            .unwrap();
        f.shard_arg(1, Sharding::new("mesh", &[&["y"]])).unwrap();
    });
    assert!(
        text.contains(r#"out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>"#),
        "{text}"
    );
    assert!(
        text.contains("(tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>"),
        "{text}"
    );

    // Both over x: x serves i (the first operand's), and j stays whole.
    let text = outer_module(Some(&[("x", 2), ("y", 2)]), |f| {
        f.shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))
            .unwrap();
        f.shard_arg(1, Sharding::new("mesh", &[&["x"]])).unwrap();
    });
    assert!(
        text.contains(
            r#"in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, <@mesh, [{}]>]>"#
        ),
        "{text}"
    );
    assert!(
        text.contains("(tensor<2x2xf32>, tensor<4xf32>) -> tensor<2x4xf32>"),
        "{text}"
    );
}

// --- Externals of distinct sizes: each entry argument has its own type ------------------------
// A regression suite for a bug where the emitter's type cache, keyed by the address of a
// temporary, gave a later external the type of an earlier one.

use customop_xla::{ExternalArg, external_args};

/// Where a test declares an external: in the entry, or in one of two nested helpers
/// (`outer` calls `inner`; the entry calls `outer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Entry,
    Outer,
    Inner,
}

/// One external of a test module: where it is declared, its size, whether it is mutable.
#[derive(Clone, Copy, Debug)]
struct Ext {
    place: Place,
    size: usize,
    mutable: bool,
}

fn ext_spec(i: usize, e: &Ext) -> External {
    External {
        name: format!("e{i}"),
        descriptor: format!("sizes::D{i}"),
        fingerprint: 0x1000 + i as u64,
        size: e.size,
        mutable: e.mutable,
    }
}

/// `main(x: tensor<2xf32>)` returning `x` and every external's bytes, the externals declared
/// (in `exts` order) where each says; helpers return their own externals too, so every value
/// crosses at least one call.
fn returning_externals(exts: &[Ext]) -> Module {
    let ty = t(ElementType::F32, &[2]);
    let mut m = Module::new();
    fn declare(
        f: &mut FuncBuilder<'_>,
        exts: &[Ext],
        place: Place,
    ) -> Vec<(usize, customop::lower::Value)> {
        exts.iter()
            .enumerate()
            .filter(|(_, e)| e.place == place)
            .map(|(i, e)| (i, f.external_raw(ext_spec(i, e)).unwrap()))
            .collect()
    }
    let mut inner = m.helper("inner", [ty.clone()]).unwrap();
    let own = declare(&mut inner, exts, Place::Inner);
    let x = inner.arg(0).unwrap();
    let mut rets = vec![&x];
    rets.extend(own.iter().map(|(_, v)| v));
    let inner_order: Vec<usize> = own.iter().map(|(i, _)| *i).collect();
    let inner = inner.ret(&rets).unwrap();

    let mut outer = m.helper("outer", [ty.clone()]).unwrap();
    let own = declare(&mut outer, exts, Place::Outer);
    let x = outer.arg(0).unwrap();
    let from_inner = outer.call(&inner, &[&x]).unwrap();
    let mut rets: Vec<&customop::lower::Value> = from_inner.iter().collect();
    rets.extend(own.iter().map(|(_, v)| v));
    let mut outer_order = inner_order;
    outer_order.extend(own.iter().map(|(i, _)| *i));
    let outer = outer.ret(&rets).unwrap();

    let mut main = m.entry("main", [ty.clone()]).unwrap();
    let own = declare(&mut main, exts, Place::Entry);
    let x = main.arg(0).unwrap();
    let from_outer = main.call(&outer, &[&x]).unwrap();
    // Return the externals in declaration order, whichever function made them.
    let mut by_index: Vec<Option<customop::lower::Value>> = vec![None; exts.len()];
    for (i, v) in outer_order.iter().zip(&from_outer[1..]) {
        by_index[*i] = Some(v.clone());
    }
    for (i, v) in own {
        by_index[i] = Some(v);
    }
    let by_index: Vec<customop::lower::Value> = by_index.into_iter().map(Option::unwrap).collect();
    let mut rets = vec![&from_outer[0]];
    rets.extend(by_index.iter());
    main.ret(&rets).unwrap();
    m
}

/// What the entry's annotated arguments must be: after `x`, in the order the module lists its
/// externals (the order of first declaration: inner's, outer's, then the entry's).
fn expected_args(m: &Module, exts: &[Ext]) -> Vec<ExternalArg> {
    let order: Vec<usize> = m
        .externals()
        .iter()
        .map(|e| e.name[1..].parse().unwrap())
        .collect();
    order
        .iter()
        .enumerate()
        .map(|(pos, &i)| ExternalArg {
            index: 1 + pos,
            type_bytes: Some(exts[i].size as i64),
            descriptor: format!("sizes::D{i}"),
            size: exts[i].size as i64,
            mutable: exts[i].mutable,
        })
        .collect()
}

fn ext(place: Place, size: usize, mutable: bool) -> Ext {
    Ext {
        place,
        size,
        mutable,
    }
}

#[test]
fn externals_of_distinct_sizes_get_their_own_types_and_run() {
    use Place::*;
    let cases: Vec<Vec<Ext>> = vec![
        // The reported case: two in the entry, 72 and 96 bytes.
        vec![ext(Entry, 72, false), ext(Entry, 96, false)],
        // One in a helper, one in the entry.
        vec![ext(Inner, 72, false), ext(Entry, 96, true)],
        vec![
            ext(Outer, 40, true),
            ext(Entry, 28, false),
            ext(Inner, 56, false),
        ],
        vec![
            ext(Entry, 24, false),
            ext(Inner, 200, true),
            ext(Outer, 33, false),
            ext(Entry, 57, true),
            ext(Inner, 1000, false),
        ],
    ];
    let h = Harness::get();
    for exts in &cases {
        let m = returning_externals(exts);
        let text = m.to_text().unwrap();
        assert_eq!(
            external_args(&text, "main"),
            expected_args(&m, exts),
            "{exts:?}\n{text}"
        );
        // XLA runs it only if every argument has the size it is fed, and each output is the
        // bytes fed to its own argument.
        let x = [0.5f32, -1.0];
        let mut inputs = vec![Array::f32(&[2], &x)];
        let bytes: Vec<Vec<u8>> = m
            .externals()
            .iter()
            .enumerate()
            .map(|(k, e)| (0..e.size).map(|j| (j * 7 + k * 31) as u8).collect())
            .collect();
        for b in &bytes {
            inputs.push(Array::u8(&[b.len() as i64], b));
        }
        let out = h.run(&text, &inputs).unwrap();
        assert_eq!(out[0].to_f32(), x.to_vec());
        for (pos, e) in m.externals().iter().enumerate() {
            let i: usize = e.name[1..].parse().unwrap();
            assert_eq!(out[1 + i].bytes(), bytes[pos], "{exts:?}: external e{i}");
        }
    }
}

#[test]
fn reductions_over_two_element_types_keep_their_body_types() {
    // Each reduce body has scalar block arguments of its own element type; a type cache
    // keyed by a temporary's address could give the second body the first one's.
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [t(ElementType::F32, &[2, 3]), t(ElementType::I32, &[2, 3])],
        )
        .unwrap();
    let (a, b) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let sa = f.reduce(ReduceOp::Add, &a, &[1]).unwrap();
    let sb = f.reduce(ReduceOp::Max, &b, &[1]).unwrap();
    let sc = f.reduce(ReduceOp::Add, &b, &[0]).unwrap();
    f.ret(&[&sa, &sb, &sc]).unwrap();
    let text = m.to_text().unwrap();
    let bodies: Vec<&str> = text.lines().filter(|l| l.contains("^bb0(")).collect();
    assert_eq!(bodies.len(), 3, "{text}");
    assert_eq!(bodies[0].matches(": tensor<f32>").count(), 2, "{text}");
    assert_eq!(bodies[1].matches(": tensor<i32>").count(), 2, "{text}");
    assert_eq!(bodies[2].matches(": tensor<i32>").count(), 2, "{text}");
    let xs = [1.0f32, 2.0, 3.5, -1.0, 0.0, 4.0];
    let is = [3i32, -7, 5, 0, 9, -2];
    let out = Harness::get()
        .run(&text, &[Array::f32(&[2, 3], &xs), Array::i32(&[2, 3], &is)])
        .unwrap();
    assert_eq!(out[0].to_f32(), vec![6.5, 3.0]);
    assert_eq!(out[1].to_i32(), vec![5, 9]);
    assert_eq!(out[2].to_i32(), vec![3, 2, 3]);
}

mod external_sizes_property {
    use super::*;
    use proptest::prelude::*;

    fn place() -> impl Strategy<Value = Place> {
        prop_oneof![Just(Place::Entry), Just(Place::Outer), Just(Place::Inner)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any set of 1 to 8 externals, of any sizes (equal ones too), declared anywhere:
        /// the printed entry arguments have exactly the declared sizes, types and annotations.
        #[test]
        fn printed_entry_types_match_the_declared_sizes(
            exts in prop::collection::vec((place(), 1usize..4096, any::<bool>()), 1..8)
        ) {
            let exts: Vec<Ext> = exts
                .into_iter()
                .map(|(place, size, mutable)| Ext { place, size, mutable })
                .collect();
            let m = returning_externals(&exts);
            let text = m.to_text().unwrap();
            prop_assert_eq!(external_args(&text, "main"), expected_args(&m, &exts));
        }
    }
}

/// Every `BuildError` the builder can return through its public API, one row each: what is
/// done wrong, and what the message must say. (Paths that only an internal invariant reaches,
/// such as "op made no result", MLIR's own parse and verifier messages and invalid UTF-8 from
/// MLIR's printer, are not reachable from the API and not listed.)
#[test]
fn every_build_error_names_its_cause() {
    use customop::lower::{
        ApiVersion, Attr, BackendConfig, BuildError, FuncBuilder, Sharding, Value,
    };
    type Case = (&'static str, &'static str, fn() -> Result<(), BuildError>);

    fn f32s(shape: &[i64]) -> TensorType {
        t(ElementType::F32, shape)
    }
    /// An entry taking f32[2,3] and i32[2,3]; `f` does the wrong thing.
    fn with(
        f: impl FnOnce(&mut FuncBuilder<'_>, Value, Value) -> Result<(), BuildError>,
    ) -> Result<(), BuildError> {
        let mut m = Module::new();
        let mut b = m.entry("main", [f32s(&[2, 3]), t(ElementType::I32, &[2, 3])])?;
        let (x, i) = (b.arg(0)?, b.arg(1)?);
        f(&mut b, x, i)
    }
    fn cc<'a>(target: &'a str, ops: &'a [&'a Value], res: &'a [TensorType]) -> CustomCall<'a> {
        CustomCall::new(target, ops, res)
    }

    let cases: Vec<Case> = vec![
        // Tensor types and constants.
        ("negative dimension", "negative", || {
            TensorType::new(ElementType::F32, [-1])?;
            Ok(())
        }),
        ("constant of the wrong length", "2 elements, got 1", || {
            with(|f, _, _| f.constant::<f32>(&[2], &[1.0]).map(drop))
        }),
        (
            "splat constant out of range",
            "is not a value of i8",
            || with(|f, _, _| f.constant_splat(&t(ElementType::I8, &[2]), 300.0).map(drop)),
        ),
        ("splat constant not a boolean", "is not a boolean", || {
            with(|f, _, _| f.constant_splat(&t(ElementType::Bool, &[2]), 2.0).map(drop))
        }),
        // Elementwise ops and reductions.
        (
            "unary op on integers",
            "floating-point or complex tensor",
            || with(|f, _, i| f.sine(&i).map(drop)),
        ),
        ("binary op on two types", "two operands of one type", || {
            with(|f, x, i| f.add(&x, &i).map(drop))
        }),
        ("binary op on booleans", "does not take", || {
            with(|f, x, _| {
                let p = f.compare(Compare::Lt, &x, &x)?;
                f.add(&p, &p).map(drop)
            })
        }),
        (
            "reduce over a missing dimension",
            "must be distinct and in 0..2",
            || with(|f, x, _| f.reduce(ReduceOp::Add, &x, &[2]).map(drop)),
        ),
        (
            "reduce over a repeated dimension",
            "must be distinct",
            || with(|f, x, _| f.reduce(ReduceOp::Add, &x, &[0, 0]).map(drop)),
        ),
        (
            "reduce of booleans",
            "stablehlo.reduce does not take",
            || {
                with(|f, x, _| {
                    let p = f.compare(Compare::Lt, &x, &x)?;
                    f.reduce(ReduceOp::Add, &p, &[0]).map(drop)
                })
            },
        ),
        // Shape ops.
        ("compare of two types", "stablehlo.compare", || {
            with(|f, x, i| f.compare(Compare::Lt, &x, &i).map(drop))
        }),
        (
            "select without an i1 predicate",
            "the predicate must be i1",
            || with(|f, x, _| f.select(&x, &x, &x).map(drop)),
        ),
        ("select of two branch types", "stablehlo.select", || {
            with(|f, x, i| {
                let p = f.compare(Compare::Lt, &x, &x)?;
                f.select(&p, &x, &i).map(drop)
            })
        }),
        ("reshape to another element count", "cannot reshape", || {
            with(|f, x, _| f.reshape(&x, &[4, 2]).map(drop))
        }),
        ("broadcast to a smaller shape", "cannot broadcast", || {
            with(|f, x, _| f.broadcast_in_dim(&x, &[2, 4], &[0, 1]).map(drop))
        }),
        (
            "broadcast with a bad dimension map",
            "stablehlo.broadcast_in_dim",
            || with(|f, x, _| f.broadcast_in_dim(&x, &[2, 3, 4], &[0]).map(drop)),
        ),
        ("transpose with a repeated axis", "appears twice", || {
            with(|f, x, _| f.transpose(&x, &[0, 0]).map(drop))
        }),
        (
            "transpose with a missing axis",
            "is not a dimension of a rank-2 tensor",
            || with(|f, x, _| f.transpose(&x, &[0, 2]).map(drop)),
        ),
        ("dot of mismatched contracting sizes", "has size 3", || {
            with(|f, x, _| f.dot_general(&x, &x, &DotDims::matmul()).map(drop))
        }),
        ("dot of two element types", "stablehlo.dot_general", || {
            with(|f, x, i| f.dot_general(&x, &i, &DotDims::default()).map(drop))
        }),
        (
            "dot with unequal dimension lists",
            "as many batch and contracting dimensions",
            || {
                with(|f, x, _| {
                    let d = DotDims {
                        lhs_contracting: vec![1],
                        ..DotDims::default()
                    };
                    f.dot_general(&x, &x, &d).map(drop)
                })
            },
        ),
        (
            "dot with a dimension both batch and contracting",
            "is both batch and contracting",
            || {
                with(|f, x, _| {
                    let d = DotDims {
                        lhs_batch: vec![0],
                        rhs_batch: vec![0],
                        lhs_contracting: vec![0],
                        rhs_contracting: vec![0],
                    };
                    f.dot_general(&x, &x, &d).map(drop)
                })
            },
        ),
        (
            "concatenate of nothing",
            "needs at least one operand",
            || with(|f, _, _| f.concatenate(&[], 0).map(drop)),
        ),
        ("concatenate of two types", "differ", || {
            with(|f, x, i| f.concatenate(&[&x, &i], 0).map(drop))
        }),
        (
            "concatenate along a missing dimension",
            "stablehlo.concatenate",
            || with(|f, x, _| f.concatenate(&[&x, &x], 5).map(drop)),
        ),
        ("slice out of bounds", "do not fit", || {
            with(|f, x, _| f.slice(&x, &[0, 0], &[3, 1], &[1, 1]).map(drop))
        }),
        ("slice with the wrong rank", "stablehlo.slice", || {
            with(|f, x, _| f.slice(&x, &[0], &[1], &[1]).map(drop))
        }),
        // Functions, values and calls.
        (
            "a function without a name",
            "a function needs a name",
            || Module::new().entry("", [f32s(&[1])]).map(drop),
        ),
        (
            "two functions of one name",
            "already has a function named `h`",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[1])])?;
                let a = h.arg(0)?;
                h.ret(&[&a])?;
                m.helper("h", [f32s(&[1])]).map(drop)
            },
        ),
        (
            "two entry functions",
            "already has an entry function, `main`",
            || {
                let mut m = Module::new();
                let f = m.entry("main", [f32s(&[1])])?;
                let a = f.arg(0)?;
                f.ret(&[&a])?;
                m.entry("other", [f32s(&[1])]).map(drop)
            },
        ),
        (
            "a parameter that is not there",
            "has 2 parameters; there is no parameter 5",
            || with(|f, _, _| f.arg(5).map(drop)),
        ),
        (
            "a value of another function",
            "comes from function `h`",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[2])])?;
                let foreign = h.arg(0)?;
                h.ret(&[&foreign])?;
                let mut f = m.entry("main", [f32s(&[2])])?;
                f.sine(&foreign).map(drop)
            },
        ),
        ("a value of another module", "another module", || {
            let mut m2 = Module::new();
            let g = m2.entry("main", [f32s(&[2])])?;
            let other = g.arg(0)?;
            with(|f, _, _| f.sine(&other).map(drop))
        }),
        (
            "a call with the wrong argument count",
            "takes 1 arguments, got 2",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[2, 3])])?;
                let a = h.arg(0)?;
                let h = h.ret(&[&a])?;
                let mut f = m.entry("main", [f32s(&[2, 3])])?;
                let x = f.arg(0)?;
                f.call(&h, &[&x, &x]).map(drop)
            },
        ),
        (
            "a call with a wrong argument type",
            "argument 0 must be tensor<2x3xf32>",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[2, 3])])?;
                let a = h.arg(0)?;
                let h = h.ret(&[&a])?;
                let mut f = m.entry("main", [t(ElementType::I32, &[2, 3])])?;
                let x = f.arg(0)?;
                f.call(&h, &[&x]).map(drop)
            },
        ),
        (
            "a call of another module's function",
            "belongs to another module",
            || {
                let mut m2 = Module::new();
                let h = m2.helper("h", [f32s(&[1])])?;
                let a = h.arg(0)?;
                let h = h.ret(&[&a])?;
                let mut m = Module::new();
                let mut f = m.entry("main", [f32s(&[1])])?;
                let x = f.arg(0)?;
                f.call(&h, &[&x]).map(drop)
            },
        ),
        (
            "a module without an entry",
            "the module has no entry function",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[1])])?;
                let a = h.arg(0)?;
                h.ret(&[&a])?;
                m.to_text().map(drop)
            },
        ),
        // Externals.
        (
            "an external without a name",
            "an external needs a name",
            || with(|f, _, _| f.external::<Blob>("").map(drop)),
        ),
        (
            "one name for two descriptors",
            "is declared as descriptor",
            || {
                with(|f, _, _| {
                    f.external::<Blob>("cfg")?;
                    f.external_raw(External {
                        name: "cfg".into(),
                        descriptor: "other::Cfg".into(),
                        fingerprint: 1,
                        size: 40,
                        mutable: false,
                    })
                    .map(drop)
                })
            },
        ),
        // Custom calls.
        (
            "a custom call without a target",
            "needs a target name",
            || with(|f, x, _| f.custom_call(cc("", &[&x], &[f32s(&[2, 3])])).map(drop)),
        ),
        (
            "API 4 with a string config",
            "API version 4 takes a dictionary",
            || {
                with(|f, x, _| {
                    let (ops, res) = ([&x], [f32s(&[2, 3])]);
                    let mut c = cc("t", &ops, &res);
                    c.backend_config = BackendConfig::Bytes(b"x".to_vec());
                    f.custom_call(c).map(drop)
                })
            },
        ),
        (
            "API 1 with a dictionary config",
            "API versions 1-3 take a string",
            || {
                with(|f, x, _| {
                    let (ops, res) = ([&x], [f32s(&[2, 3])]);
                    let mut c = cc("t", &ops, &res);
                    c.api_version = ApiVersion::Original;
                    c.backend_config = BackendConfig::Dict(vec![("a".into(), Attr::Bool(true))]);
                    f.custom_call(c).map(drop)
                })
            },
        ),
        (
            "an alias out of range",
            "alias of output 0 to operand 3 is out of range",
            || {
                with(|f, x, _| {
                    let (ops, res) = ([&x], [f32s(&[2, 3])]);
                    let mut c = cc("t", &ops, &res);
                    c.output_operand_aliases = &[(0, 3)];
                    f.custom_call(c).map(drop)
                })
            },
        ),
        ("an alias of two types", "cannot alias operand 0", || {
            with(|f, x, _| {
                let (ops, res) = ([&x], [f32s(&[6])]);
                let mut c = cc("t", &ops, &res);
                c.output_operand_aliases = &[(0, 0)];
                f.custom_call(c).map(drop)
            })
        }),
        // Meshes and shardings.
        ("two meshes of one name", "already has a mesh `m`", || {
            let mut m = Module::new();
            m.mesh("m", &[("x", 2)])?;
            m.mesh("m", &[("x", 2)])
        }),
        ("a mesh axis of size 0", "axis `x` has size 0", || {
            Module::new().mesh("m", &[("x", 0)])
        }),
        (
            "a sharding on an undeclared mesh",
            "which the module does not declare",
            || with(|f, _, _| f.shard_arg(0, Sharding::new("nope", &[&["x"], &[]]))),
        ),
        (
            "a sharding of the wrong rank",
            "needs 2 dimensions, got 1",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let mut f = m.entry("main", [f32s(&[2, 4])])?;
                f.shard_arg(0, Sharding::new("m", &[&["x"]]))
            },
        ),
        ("an axis the mesh lacks", "mesh `m` has no axis `y`", || {
            let mut m = Module::new();
            m.mesh("m", &[("x", 2)])?;
            let mut f = m.entry("main", [f32s(&[2, 4])])?;
            f.shard_arg(0, Sharding::new("m", &[&["y"], &[]]))
        }),
        (
            "one axis on two dimensions",
            "axis `x` shards two dimensions",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let mut f = m.entry("main", [f32s(&[2, 4])])?;
                f.shard_arg(0, Sharding::new("m", &[&["x"], &["x"]]))
            },
        ),
        (
            "a split that does not divide",
            "is not divisible by 4",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 4)])?;
                let mut f = m.entry("main", [f32s(&[6, 4])])?;
                f.shard_arg(0, Sharding::new("m", &[&["x"], &[]]))
            },
        ),
        (
            "a sharded helper parameter",
            "only the entry function's parameters",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let mut h = m.helper("h", [f32s(&[2, 4])])?;
                h.shard_arg(0, Sharding::new("m", &[&["x"], &[]]))
            },
        ),
        (
            "shardings that do not match the results",
            "one sharding (or None) per returned value",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let f = m.entry("main", [f32s(&[2, 4])])?;
                let x = f.arg(0)?;
                f.ret_sharded(&[&x], &[]).map(drop)
            },
        ),
        (
            "a side-effecting call in a mesh without a rule",
            "cannot replicate a side-effecting op",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let mut f = m.entry("main", [f32s(&[2, 4])])?;
                let x = f.arg(0)?;
                let (ops, res) = ([&x], [f32s(&[2, 4])]);
                let mut c = cc("t", &ops, &res);
                c.has_side_effect = true;
                let y = f.custom_call(c)?;
                f.ret(&[&y[0]])?;
                m.to_text().map(drop)
            },
        ),
    ];
    let mut wrong = Vec::new();
    for (what, needle, case) in &cases {
        match case() {
            Ok(()) => wrong.push(format!("{what}: no error")),
            Err(e) if !e.message().contains(needle) => {
                wrong.push(format!("{what}: {:?} lacks {needle:?}", e.message()))
            }
            Err(_) => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    println!(
        "{} build-time error paths, each with its message",
        cases.len()
    );
}

/// The builder's elementwise ops, reductions and constants on complex64, bf16, f16 and
/// f8E4M3FN: result types (`abs` of a complex is real), identities of `reduce` (max over
/// f8E4M3FN starts at its lowest value, -448: it has no infinities), refusals where a type has
/// no order; jaxlib verifies and XLA runs the module, compared with values computed here.
#[test]
fn builder_ops_take_complex_half_and_fp8_tensors() {
    use customop::{Complex64, F8E4M3FN, bf16, f16};
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [
                t(ElementType::C64, &[3]),
                t(ElementType::BF16, &[4]),
                t(ElementType::F16, &[4]),
                t(ElementType::F8E4M3FN, &[4]),
            ],
        )
        .unwrap();
    let [c, b, h, q] = [0, 1, 2, 3].map(|i| f.arg(i).unwrap());
    let abs = f.unary(UnaryOp::Abs, &c).unwrap();
    assert_eq!(abs.ty().to_string(), "tensor<3xf32>");
    let csum = f.reduce(ReduceOp::Add, &c, &[0]).unwrap();
    let bmax = f.reduce(ReduceOp::Max, &b, &[0]).unwrap();
    let qmax = f.reduce(ReduceOp::Max, &q, &[0]).unwrap();
    let two = f
        .constant_splat(&TensorType::new(ElementType::F16, [4]).unwrap(), 2.0)
        .unwrap();
    let h2 = f.mul(&h, &two).unwrap();
    let same = f.compare(Compare::Eq, &c, &c).unwrap();
    assert_eq!(same.ty().to_string(), "tensor<3xi1>");
    let e = f.compare(Compare::Lt, &c, &c).unwrap_err().to_string();
    assert!(e.contains("complex numbers have no order"), "{e}");
    let e = f.reduce(ReduceOp::Max, &c, &[0]).unwrap_err().to_string();
    assert!(e.contains("complex numbers have no order"), "{e}");
    let e = f.unary(UnaryOp::Sine, &same).unwrap_err().to_string();
    assert!(e.contains("floating-point or complex"), "{e}");
    f.ret(&[&abs, &csum, &bmax, &qmax, &h2, &same]).unwrap();
    let text = m.to_text().unwrap();
    // The identities (as MLIR prints them back): -inf in bf16, -448 in f8E4M3FN, (0, 0) in
    // complex<f32>; and the f16 splat.
    for want in [
        "dense<0xFF80> : tensor<bf16>",
        "dense<-4.480000e+02> : tensor<f8E4M3FN>",
        "dense<(0.000000e+00,0.000000e+00)> : tensor<complex<f32>>",
        "dense<2.000000e+00> : tensor<4xf16>",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }

    let cs = [
        Complex64::new(3.0, 4.0),
        Complex64::new(-1.0, 0.5),
        Complex64::new(0.0, -2.0),
    ];
    let bs = [1.5f32, -3.0, 7.25, 0.0].map(bf16::from_f32);
    let hs = [0.5f32, -1.25, 100.0, 3.0e-3].map(f16::from_f32);
    let qs = [-448.0f32, -3.0, -0.5, -100.0].map(F8E4M3FN::from_f32);
    let c_bytes: Vec<u8> = cs
        .iter()
        .flat_map(|z| [z.re.to_le_bytes(), z.im.to_le_bytes()].concat())
        .collect();
    let out = Harness::get()
        .run(
            &text,
            &[
                Array::from_bytes("complex64", &[3], &c_bytes),
                Array::from_bytes(
                    "bfloat16",
                    &[4],
                    &bs.map(|v| v.to_bits().to_le_bytes()).concat(),
                ),
                Array::from_bytes(
                    "float16",
                    &[4],
                    &hs.map(|v| v.to_bits().to_le_bytes()).concat(),
                ),
                Array::from_bytes("float8_e4m3fn", &[4], &qs.map(|v| v.to_bits())),
            ],
        )
        .unwrap();
    let abs_got = out[0].to_f32();
    for (g, z) in abs_got.iter().zip(&cs) {
        let w = (z.re * z.re + z.im * z.im).sqrt();
        assert!((g - w).abs() <= 1e-6 * w.max(1.0), "|{z}|: {g} vs {w}");
    }
    let sum = out[1].bytes();
    assert_eq!(sum[..4], 2.0f32.to_le_bytes(), "sum re");
    assert_eq!(sum[4..], 2.5f32.to_le_bytes(), "sum im");
    assert_eq!(out[2].dtype, "bfloat16");
    assert_eq!(out[2].bytes(), bf16::from_f32(7.25).to_bits().to_le_bytes());
    assert_eq!(out[3].bytes(), [F8E4M3FN::from_f32(-0.5).to_bits()]);
    let h2_got: Vec<f16> = out[4]
        .bytes()
        .chunks_exact(2)
        .map(|c| f16::from_le_bytes([c[0], c[1]]))
        .collect();
    let want: Vec<f16> = hs.iter().map(|v| f16::from_f32(v.to_f32() * 2.0)).collect();
    assert_eq!(h2_got, want);
    assert_eq!(out[5].bytes(), [1, 1, 1]);
}
