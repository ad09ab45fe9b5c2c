//! Several externals of different sizes in one module.
//!
//! Each entry argument must have its own descriptor's packed size, wherever the external was
//! declared (entry or nested helper) and whether an op updates it; the modules then run.

use super::*;

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
