//! What the generated handlers do on XLA: typed attributes, state updated across executions,
//! opaque results, bad inputs and kernel errors or panics that become XLA errors.

use super::*;

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
