//! Every op of the builder, run on XLA and checked against Rust arithmetic, on f32, i32 and on
//! complex, half and 8-bit float tensors; misuse refused before MLIR.

use super::*;

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
