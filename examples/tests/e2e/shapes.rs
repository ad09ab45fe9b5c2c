//! Output shapes computed from dimensions and attributes, and a shape expression without a size
//! refused at build time.

use super::*;

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
