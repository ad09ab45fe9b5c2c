//! Partitioned ops on a device mesh: each device runs the handler once, on its shard.

use super::*;

/// A mesh run's assembled outputs, each output's shard shapes and the kernel probes
/// (calls, rows over all calls, most and fewest rows in one call).
struct MeshRun {
    outputs: Vec<Array>,
    shard_shapes: Vec<Vec<Vec<i64>>>,
    calls: i64,
    rows: i64,
    max_rows: i64,
    min_rows: i64,
}

fn spec(s: &[&[&str]]) -> Vec<Vec<String>> {
    s.iter()
        .map(|d| d.iter().map(|a| a.to_string()).collect())
        .collect()
}

fn run_on_mesh(
    text: &str,
    mesh: &[(&str, i64)],
    inputs: Vec<Array>,
    output_specs: &[&[&[&str]]],
) -> MeshRun {
    let lib = example_kernels();
    let probe = |name: &str| Probe {
        library: lib.clone(),
        symbol: format!("example_probe_{name}"),
    };
    let outcome = Harness::get()
        .execute(&Job {
            text,
            ffi: Some(&ffi()),
            runs: vec![inputs],
            probes: vec![
                probe("calls"),
                probe("rows"),
                probe("max_rows"),
                probe("min_rows"),
            ],
            mesh: mesh.iter().map(|(a, n)| (a.to_string(), *n)).collect(),
            output_specs: output_specs.iter().map(|s| spec(s)).collect(),
            ..Job::default()
        })
        .unwrap();
    let outputs = outcome.runs.into_iter().next().unwrap().unwrap();
    MeshRun {
        outputs,
        shard_shapes: outcome.shard_shapes[0].clone(),
        calls: outcome.probes[0],
        rows: outcome.probes[1],
        max_rows: outcome.probes[2],
        min_rows: outcome.probes[3],
    }
}

fn rms_cfg() -> k::NormCfg {
    k::NormCfg {
        scale: 2.0,
        shift: 0.5,
        mode: k::NormMode::ScaleShift,
    }
}

/// rms_norm of each row of `x` (`cols` columns), in f64, with `rms_cfg()` and eps 1e-3.
fn rms_expected(x: &[f64], cols: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / cols as f64;
        out.extend(row.iter().map(|v| v / (ms + 1e-3).sqrt() * 2.0 + 0.5));
    }
    out
}

#[test]
fn the_seed_op_runs_once_per_device_on_its_rows() {
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[8, 4])]).unwrap();
    f.shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))
        .unwrap();
    let x = f.arg(0).unwrap();
    let blob_v = f.external::<k::Blob>("external").unwrap();
    let s = f.sine(&x).unwrap();
    let y = k::custom_op_external::call(&mut f, &blob_v, &s).unwrap();
    assert_eq!(
        f.sharding_of(&y),
        Some(&Sharding::new("mesh", &[&["x"]])),
        "the op's result is split like its rows"
    );
    let one = f.constant_splat(&t(ElementType::I8, &[8]), 1.0).unwrap();
    let z = f.add(&y, &one).unwrap();
    f.ret_sharded(&[&z], &[Some(Sharding::new("mesh", &[&["x"]]))])
        .unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("\"sdy.manual_computation\"(%arg1, %0)"),
        "{text}"
    );
    assert!(
        text.contains(r#"{in_shardings = #sdy.sharding_per_value<[<@mesh, [{}]>, <@mesh, [{"x"}, {}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>}"#),
        "{text}"
    );
    // Inside, the handler's call has the per-device types and keeps its side effect.
    assert!(
        text.contains("(tensor<56xui8>, tensor<2x4xf32>) -> tensor<2xi8>"),
        "{text}"
    );
    assert!(text.contains("has_side_effect = true"), "{text}");

    let xs: Vec<f32> = (0..32).map(|i| (i as f32 * 0.37).sin() * 2.0).collect();
    let b = blob();
    let run = run_on_mesh(
        &text,
        &[("x", 4)],
        vec![
            Array::f32(&[8, 4], &xs).sharded(&[&["x"], &[]]),
            Array::u8(&[56], &b.pack()).sharded(&[&[]]),
        ],
        &[&[&["x"]]],
    );
    assert_eq!(run.outputs[0].to_i8(), seed_expected(&xs, 4, &b));
    assert_eq!(run.shard_shapes[0], vec![vec![2]; 4]);
    // Four calls, one per device, each on 2 of the 8 rows: not gathered.
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );
}

/// `rms_norm` on an 8x8 input split as `arg_spec`, its result returned split as `ret_spec`.
fn rms_on_mesh(
    mesh: &[(&str, i64)],
    arg_spec: &[&[&str]],
    ret_spec: &[&[&str]],
) -> (String, MeshRun) {
    let mut m = Module::new();
    m.mesh("mesh", mesh).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[8, 8])]).unwrap();
    f.shard_arg(0, Sharding::new("mesh", arg_spec)).unwrap();
    let x = f.arg(0).unwrap();
    let y = k::rms_norm::call(&mut f, &x, 1e-3, &rms_cfg()).unwrap();
    f.ret_sharded(&[&y], &[Some(Sharding::new("mesh", ret_spec))])
        .unwrap();
    let text = m.to_text().unwrap();
    let xs: Vec<f32> = (0..64).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.5).collect();
    let run = run_on_mesh(
        &text,
        mesh,
        vec![Array::f32(&[8, 8], &xs).sharded(arg_spec)],
        &[ret_spec],
    );
    let want = rms_expected(&xs.iter().map(|&v| v as f64).collect::<Vec<_>>(), 8);
    assert_close(&run.outputs[0].to_f32(), &want, "rms_norm on a mesh");
    (text, run)
}

#[test]
fn rms_norm_splits_its_rows_over_one_or_two_mesh_axes() {
    // Rows over a 1-D mesh of 4: each device normalises 2 rows.
    let (text, run) = rms_on_mesh(&[("x", 4)], &[&["x"], &[]], &[&["x"], &[]]);
    assert!(
        text.contains("(tensor<2x8xf32>) -> tensor<2x8xf32>"),
        "{text}"
    );
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );
    assert_eq!(run.shard_shapes[0], vec![vec![2, 8]; 4]);

    // Rows over both axes of a 2x2 mesh: still 2 rows a device.
    let (text, run) = rms_on_mesh(
        &[("x", 2), ("y", 2)],
        &[&["x", "y"], &[]],
        &[&["x", "y"], &[]],
    );
    assert!(
        text.contains(r#"manual_axes = #sdy<manual_axes{"x", "y"}>"#),
        "{text}"
    );
    assert!(
        text.contains("(tensor<2x8xf32>) -> tensor<2x8xf32>"),
        "{text}"
    );
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );

    // Rows over x and columns over y on the way in: the kernel needs whole rows, so the
    // columns are gathered and each device takes 4 whole rows (its x block); the result goes
    // back out split on both.
    let (text, run) = rms_on_mesh(&[("x", 2), ("y", 2)], &[&["x"], &["y"]], &[&["x"], &["y"]]);
    assert!(
        text.contains(r#"in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>"#),
        "{text}"
    );
    assert!(
        text.contains("(tensor<4x8xf32>) -> tensor<4x8xf32>"),
        "{text}"
    );
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 16, 4, 4)
    );
    assert_eq!(run.shard_shapes[0], vec![vec![4, 4]; 4]);

    // Nothing split on the way in: every device normalises all 8 rows (what XLA does with
    // an op that declares no rule).
    let (_, run) = rms_on_mesh(&[("x", 4)], &[&[], &[]], &[&[], &[]]);
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 32, 8, 8)
    );
}

#[test]
fn a_partitioned_op_between_ops_split_on_columns() {
    let mesh = [("x", 4)];
    let cols = Sharding::new("mesh", &[&[], &["x"]]);
    let rows = Sharding::new("mesh", &[&["x"], &[]]);
    let mut m = Module::new();
    m.mesh("mesh", &mesh).unwrap();
    let ty = t(ElementType::F32, &[8, 8]);
    let mut f = m.entry("main", [ty.clone()]).unwrap();
    f.shard_arg(0, cols.clone()).unwrap();
    let x = f.arg(0).unwrap();
    let s = f.sine(&x).unwrap();
    assert_eq!(
        f.sharding_of(&s),
        Some(&cols),
        "elementwise ops keep the split"
    );
    let r = f.shard(&s, rows.clone()).unwrap();
    let y = k::rms_norm::call(&mut f, &r, 1e-3, &rms_cfg()).unwrap();
    assert_eq!(f.sharding_of(&y), Some(&rows));
    let c = f.shard(&y, cols.clone()).unwrap();
    let two = f.constant_splat(&ty, 2.0).unwrap();
    let z = f.mul(&c, &two).unwrap();
    f.ret_sharded(&[&z], &[Some(cols)]).unwrap();
    let text = m.to_text().unwrap();
    assert_eq!(text.matches("sdy.sharding_constraint").count(), 2, "{text}");
    assert!(
        text.contains("(tensor<2x8xf32>) -> tensor<2x8xf32>"),
        "{text}"
    );

    let xs: Vec<f32> = (0..64).map(|i| i as f32 * 0.05 - 1.5).collect();
    let run = run_on_mesh(
        &text,
        &mesh,
        vec![Array::f32(&[8, 8], &xs).sharded(&[&[], &["x"]])],
        &[&[&[], &["x"]]],
    );
    let sines: Vec<f64> = xs.iter().map(|&v| (v as f64).sin()).collect();
    let want: Vec<f64> = rms_expected(&sines, 8).iter().map(|v| v * 2.0).collect();
    assert_close(&run.outputs[0].to_f32(), &want, "sin -> rms_norm -> *2");
    assert_eq!(
        run.shard_shapes[0],
        vec![vec![8, 2]; 4],
        "columns on the way out"
    );
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );
}

#[test]
fn inputs_that_share_a_factor_split_alike() {
    // `x` comes split by rows, `w` replicated: the shared factor `rows` splits `w` the same
    // way, so each device scales its 2 rows by their own 2 weights.
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m
        .entry(
            "main",
            [t(ElementType::F32, &[8, 3]), t(ElementType::F32, &[8])],
        )
        .unwrap();
    f.shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))
        .unwrap();
    // Pinned replicated: left unannotated, XLA's propagation would choose its split.
    f.shard_arg(1, Sharding::replicated("mesh", 1)).unwrap();
    let (x, w) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let y = k::row_scale::call(&mut f, &x, &w).unwrap();
    f.ret_sharded(&[&y], &[Some(Sharding::new("mesh", &[&["x"], &[]]))])
        .unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("(tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>"),
        "{text}"
    );
    let xs: Vec<f32> = (0..24).map(|i| i as f32 - 7.0).collect();
    let ws: Vec<f32> = (0..8).map(|i| 0.5 + i as f32).collect();
    let run = run_on_mesh(
        &text,
        &[("x", 4)],
        vec![
            Array::f32(&[8, 3], &xs).sharded(&[&["x"], &[]]),
            Array::f32(&[8], &ws).sharded(&[&[]]),
        ],
        &[&[&["x"], &[]]],
    );
    let want: Vec<f64> = (0..24).map(|i| xs[i] as f64 * ws[i / 3] as f64).collect();
    assert_close(&run.outputs[0].to_f32(), &want, "row_scale");
    assert_eq!(
        (run.calls, run.rows, run.max_rows, run.min_rows),
        (4, 8, 2, 2)
    );
}

#[test]
fn mesh_mistakes_are_rust_errors_before_xla() {
    // A split that does not divide.
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[6, 4])]).unwrap();
    let x = f.arg(0).unwrap();
    let err = f
        .shard(&x, Sharding::new("mesh", &[&["x"], &[]]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dimension 0 of tensor<6x4xf32> (size 6) is not divisible by 4"),
        "{err}"
    );
    // A side-effecting op without a partition rule in a module with a mesh: XLA's partitioner
    // would refuse it ("Side-effect HLO must have sharding"); the builder says so first.
    // (A `&mut` external alone is no side effect: `counter_step` builds.)
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 4)]).unwrap();
    let mut f = m.entry("main", [t(ElementType::F32, &[4])]).unwrap();
    let x = f.arg(0).unwrap();
    let state = f.external::<k::Counter>("state").unwrap();
    let out = k::counter_step::call(&mut f, &state, &x).unwrap();
    let results = [t(ElementType::F32, &[4])];
    let operands = [&out.y];
    let mut call = customop::lower::CustomCall::new("ui.effect", &operands, &results);
    call.has_side_effect = true;
    let z = f.custom_call(call).unwrap();
    f.ret(&[&z[0], out.state.value()]).unwrap();
    let err = m.to_text().unwrap_err().to_string();
    assert!(
        err.contains("custom_call @ui.effect in function `main` has side effects, and the module has a device mesh"),
        "{err}"
    );
    assert!(!err.contains("counter_step"), "{err}");
}

#[test]
fn the_partition_rule_is_part_of_the_schema() {
    let rows = || Some("rows".to_string());
    assert_eq!(
        k::rms_norm::schema().partition,
        Some(PartitionRule {
            factors: vec!["rows".into()],
            operands: vec![FactorDims {
                name: "x".into(),
                index: 0,
                dims: vec![rows(), None],
            }],
            results: vec![FactorDims {
                name: "y".into(),
                index: 0,
                dims: vec![rows(), None],
            }],
        })
    );
    let seed = k::custom_op_external::schema().partition.as_ref().unwrap();
    assert_eq!(seed.notation(), "([rows, _])->([rows])");
    assert_eq!(seed.operands[0].index, 1, "x follows the external blob");
    assert_eq!(k::counter_step::schema().partition, None);
}
