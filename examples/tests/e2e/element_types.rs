//! Element types: one generic op for each of its dtypes, and complex64, f8E4M3FN, bf16 and f16
//! tensors beyond Rust's primitives.

use super::*;

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
