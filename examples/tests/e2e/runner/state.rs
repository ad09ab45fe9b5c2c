//! Values across executions: a mutable external updated, placed inputs reused, and op state
//! built once per call site and dropped with the executable.

use super::*;

#[test]
fn a_mutable_external_comes_back_updated() {
    let m = counter_module();
    let exe = client().compile(&Program::module(&m).unwrap()).unwrap();
    let spec = exe.signature().unwrap().external("counter").unwrap();
    assert!(spec.external.as_ref().unwrap().mutable);
    let mut counter = k::Counter {
        calls: 0,
        total: 0.0,
    };
    for (i, xs) in [[1.0f32, 2.0, 3.0], [10.0, 0.0, -4.0]].iter().enumerate() {
        let out = exe
            .inputs()
            .arg(HostTensor::vector(xs))
            .unwrap()
            .external("counter", &counter)
            .unwrap()
            .run()
            .unwrap();
        assert_eq!(
            out[0].to_vec::<f32>().unwrap(),
            xs.iter().map(|v| v + 1.0 + i as f32).collect::<Vec<_>>()
        );
        counter = out[1].unpack::<k::Counter>().unwrap();
    }
    assert_eq!(
        counter,
        k::Counter {
            calls: 2,
            total: 12.0
        }
    );
    let e = HostTensor::vector(&[1.0f32])
        .unpack::<k::Counter>()
        .unwrap_err();
    assert!(e.to_string().contains("tensor<Nxui8>"), "{e}");
}

#[test]
fn placed_inputs_serve_many_executions_and_go_only_where_they_can() {
    let c = client();
    let module = customop_examples::seed_model().unwrap();
    let exe = c.compile(&Program::module(&module).unwrap()).unwrap();
    let x = c.upload(&x33(&seed_x())).unwrap();
    let b = c.upload_descriptor(&seed_blob()).unwrap();
    for _ in 0..3 {
        let out = exe
            .inputs()
            .arg_placed(&x)
            .unwrap()
            .external_placed("external", &b)
            .unwrap()
            .run()
            .unwrap();
        assert_eq!(out[0].to_vec::<i8>().unwrap(), vec![3, 5, -2]);
    }
    // Mixed: the blob placed, x from the host.
    let out = exe
        .inputs()
        .external_placed("external", &b)
        .unwrap()
        .arg(x33(&seed_x()))
        .unwrap()
        .run()
        .unwrap();
    assert_eq!(out[0].to_vec::<i8>().unwrap(), vec![3, 5, -2]);
    let wrong = c
        .upload(&HostTensor::from_slice(&[3, 3], &[0f64; 9]).unwrap())
        .unwrap();
    let e = exe.inputs().arg_placed(&wrong).unwrap_err().to_string();
    assert!(e.contains("tensor<3x3xf64> was given"), "{e}");
    let counter = c
        .upload_descriptor(&k::Counter {
            calls: 0,
            total: 0.0,
        })
        .unwrap();
    let e = exe
        .inputs()
        .external_placed("external", &counter)
        .unwrap_err()
        .to_string();
    assert!(e.contains("is `my_lib::Blob`"), "{e}");
    // A tensor of another client, and a placed tensor for a program split over devices.
    let other = Client::cpu(4).unwrap();
    let theirs = other.upload(&x33(&seed_x())).unwrap();
    let e = exe
        .inputs()
        .arg_placed(&theirs)
        .unwrap()
        .external_placed("external", &b)
        .unwrap()
        .run()
        .unwrap_err()
        .to_string();
    assert!(e.contains("uploaded by another client"), "{e}");
    let split = other
        .compile(&Program::module(&customop_examples::seed_model_split(8, 4, 4).unwrap()).unwrap())
        .unwrap();
    let rows = other
        .upload(&HostTensor::from_slice(&[8, 4], &[0.5f32; 32]).unwrap())
        .unwrap();
    let e = split
        .inputs()
        .arg_placed(&rows)
        .unwrap()
        .external("external", &seed_blob())
        .unwrap()
        .run()
        .unwrap_err()
        .to_string();
    assert!(e.contains("the program runs on 4"), "{e}");
}

/// A count of `example::windowed`'s windows of `n` taps in this process (`what`: builds, drops
/// or calls). The counts are kept per `n`, and each test here uses `n`s of its own (17, 4 and 3;
/// 5 and 7), so that it reads only what its own executables did, whatever the tests running
/// beside it build or drop.
fn windows(what: &str, n: i64) -> i64 {
    let symbol = format!("example_state_{what}\0");
    // SAFETY: the example cdylib (loaded by `client()`), and its counters' signature as the
    // kernel crate declares it.
    unsafe {
        let lib = libloading::Library::new(example_kernels()).unwrap();
        let f: libloading::Symbol<'_, extern "C" fn(i64) -> i64> =
            lib.get(symbol.as_bytes()).unwrap();
        f(n)
    }
}

#[test]
fn state_is_built_once_per_call_site_through_the_runner_and_dropped_with_the_executable() {
    // The runner registers customop handlers for XLA's instantiate stage too (through the
    // plugin's own XLA FFI table), so each call site of each executable builds its state once.
    let program = customop_examples::windowed_twice;
    let builds = |n| windows("builds", n);
    let drops = |n| windows("drops", n);
    let hann = |n: i64| -> Vec<f32> {
        (0..6)
            .map(|i| {
                let last = (n - 1) as f64;
                (0.5 - 0.5 * (2.0 * std::f64::consts::PI * (i % n) as f64 / last).cos()) as f32
            })
            .collect()
    };
    let c = client();
    let x = HostTensor::vector(&[1.0f32; 6]);
    let built0 = [builds(17), builds(4), builds(3)];
    let dropped0 = [drops(17), drops(4), drops(3)];
    let calls0 = windows("calls", 17);
    let built = || {
        [
            builds(17) - built0[0],
            builds(4) - built0[1],
            builds(3) - built0[2],
        ]
    };
    let dropped = || {
        [
            drops(17) - dropped0[0],
            drops(4) - dropped0[1],
            drops(3) - dropped0[2],
        ]
    };
    let exe = c
        .compile(&Program::text(&program(17, 17)).unwrap())
        .unwrap();
    assert_eq!(built(), [2, 0, 0], "one state per call site, at compile");
    let mut out = Vec::new();
    for _ in 0..1000 {
        out = exe.run(std::slice::from_ref(&x)).unwrap();
    }
    assert_eq!(built(), [2, 0, 0], "no state built by 1,000 runs");
    assert_eq!(
        windows("calls", 17) - calls0,
        2000,
        "each run applies both sites' states"
    );
    let y = out[0].to_vec::<f32>().unwrap();
    let z = out[1].to_vec::<f32>().unwrap();
    let h = hann(17);
    for i in 0..6 {
        assert!((y[i] - h[i]).abs() < 1e-6, "{y:?} vs {h:?}");
        assert!((z[i] - h[i] * h[i]).abs() < 1e-6, "{z:?} vs {h:?}^2");
    }
    // A second executable of the same program builds its own; sites with other attributes
    // get their own state; dropping an executable drops its states.
    let other = c.compile(&Program::text(&program(4, 3)).unwrap()).unwrap();
    assert_eq!(built(), [2, 1, 1]);
    let out = other.run(std::slice::from_ref(&x)).unwrap();
    let (h4, h3) = (hann(4), hann(3));
    let z = out[1].to_vec::<f32>().unwrap();
    for i in 0..6 {
        assert!((z[i] - h4[i] * h3[i]).abs() < 1e-6, "{z:?}");
    }
    assert_eq!(dropped(), [0, 0, 0]);
    drop(other);
    assert_eq!(
        dropped(),
        [0, 1, 1],
        "the executable's two states dropped with it"
    );
    drop(exe);
    assert_eq!(dropped(), [2, 1, 1]);
    // A state that cannot be built fails the compilation, named.
    let e = c
        .compile(&Program::text(&program(0, 3)).unwrap())
        .unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::BadState), "{e}");
}

#[test]
fn state_on_two_devices_is_built_once_per_call_site() {
    // Two call sites in a program split over 2 devices: XLA keeps one state per custom call
    // of the executable, shared by the devices that run it; each device applies it.
    let text = r#"module @m attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %0 = stablehlo.custom_call @example.windowed(%x) {api_version = 4 : i32, backend_config = {n = 5 : i64}} : (tensor<8xf32>) -> tensor<8xf32>
    %1 = stablehlo.custom_call @example.windowed(%0) {api_version = 4 : i32, backend_config = {n = 7 : i64}} : (tensor<8xf32>) -> tensor<8xf32>
    return %1 : tensor<8xf32>
  }
}"#;
    let _registered = client();
    let two = Client::cpu(2).unwrap();
    let built0 = [windows("builds", 5), windows("builds", 7)];
    let calls0 = [windows("calls", 5), windows("calls", 7)];
    let exe = two.compile(&Program::text(text).unwrap()).unwrap();
    assert_eq!(exe.partitions(), 2);
    let x: Vec<f32> = (0..8).map(|i| 1.0 + i as f32).collect();
    let mut out = Vec::new();
    for _ in 0..100 {
        out = exe.run(&[HostTensor::vector(&x)]).unwrap();
    }
    let built = [
        windows("builds", 5) - built0[0],
        windows("builds", 7) - built0[1],
    ];
    let calls = [
        windows("calls", 5) - calls0[0],
        windows("calls", 7) - calls0[1],
    ];
    let y = out[0].to_vec::<f32>().unwrap();
    let hann = |n: usize, i: usize| {
        let last = (n - 1) as f64;
        (0.5 - 0.5 * (2.0 * std::f64::consts::PI * (i % n) as f64 / last).cos()) as f32
    };
    for i in 0..8 {
        let want = x[i] * hann(5, i) * hann(7, i);
        assert!((y[i] - want).abs() < 1e-5, "{y:?}");
    }
    assert_eq!(
        built,
        [1, 1],
        "one state per call site, shared by the devices"
    );
    // Both devices ran both call sites on each of the 100 runs: one device alone would be 100.
    assert_eq!(
        calls,
        [200, 200],
        "calls per site over 100 runs on 2 devices"
    );
}
