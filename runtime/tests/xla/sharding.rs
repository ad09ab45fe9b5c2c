//! Meshes and shardings: SPMD runs over virtual devices, and how the builder splits a custom
//! call that has a partition rule.

use super::*;

// --- Meshes and shardings: XLA's SPMD partitioner splits the program over virtual devices -----

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
