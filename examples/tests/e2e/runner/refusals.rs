//! Refusals: bad inputs before the plugin sees them, handler refusals and every refusal a program
//! can provoke with their codes, a missing or a second handler.

use super::*;

#[test]
fn bad_inputs_are_refused_before_the_plugin_sees_them() {
    let module = customop_examples::seed_model().unwrap();
    let exe = client()
        .compile(&Program::module(&module).unwrap())
        .unwrap();
    let x = x33(&seed_x());
    let b = seed_blob();
    let counter = k::Counter {
        calls: 0,
        total: 0.0,
    };
    let cases: Vec<(Result<Vec<HostTensor>, RunError>, &str)> = vec![
        (
            exe.inputs().arg(x.clone()).and_then(|i| i.run()),
            "external `external` (my_lib::Blob) was not given",
        ),
        (
            exe.inputs().external("external", &b).and_then(|i| i.run()),
            "argument 0 was not given",
        ),
        (
            exe.inputs().external("blob", &b).and_then(|i| i.run()),
            "no external `blob` (its externals: [\"external\"])",
        ),
        (
            exe.inputs()
                .external("external", &counter)
                .and_then(|i| i.run()),
            "external `external` is `my_lib::Blob`",
        ),
        (
            exe.inputs()
                .arg(HostTensor::from_slice(&[3, 3], &[0f64; 9]).unwrap())
                .and_then(|i| i.run()),
            "argument 0 is tensor<3x3xf32>, but tensor<3x3xf64> was given",
        ),
        (
            exe.inputs()
                .arg(HostTensor::from_slice(&[9], &seed_x()).unwrap())
                .and_then(|i| i.run()),
            "argument 0 is tensor<3x3xf32>, but tensor<9xf32> was given",
        ),
        (
            exe.inputs()
                .arg(x.clone())
                .and_then(|i| i.arg(x.clone()))
                .and_then(|i| i.run()),
            "takes 1 arguments besides its externals; one more was given",
        ),
        (
            exe.inputs()
                .external("external", &b)
                .and_then(|i| i.external("external", &b))
                .and_then(|i| i.run()),
            "external `external` was given twice",
        ),
        (
            exe.run(std::slice::from_ref(&x)),
            "takes 2 arguments, 1 were given",
        ),
        (
            exe.run(&[
                x.clone(),
                HostTensor::from_slice(&[50], &[0u8; 50]).unwrap(),
            ]),
            "argument 1 is tensor<56xui8>, but tensor<50xui8> was given",
        ),
    ];
    for (i, (r, want)) in cases.into_iter().enumerate() {
        match r {
            Err(RunError::Input(m)) => assert!(m.contains(want), "case {i}: {m}"),
            other => panic!("case {i}: expected an input error, got {other:?}"),
        }
    }
    // And the process goes on.
    let out = exe
        .inputs()
        .arg(x)
        .unwrap()
        .external("external", &b)
        .unwrap()
        .run()
        .unwrap();
    assert_eq!(out[0].to_vec::<i8>().unwrap(), vec![3, 5, -2]);
}

#[test]
fn handler_refusals_surface_with_their_codes() {
    let c = client();
    // Corrupted descriptor bytes of the right size.
    let module = customop_examples::seed_model().unwrap();
    let exe = c.compile(&Program::module(&module).unwrap()).unwrap();
    let mut packed = seed_blob().pack();
    packed[0] ^= 0xff;
    let e = exe
        .run(&[
            x33(&seed_x()),
            HostTensor::from_slice(&[56], &packed).unwrap(),
        ])
        .unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::BadDescriptor), "{e}");
    assert_eq!(e.pjrt_code(), Some(PjrtCode::InvalidArgument), "{e}");
    assert!(
        e.to_string()
            .contains("custom op `my_custom_library::custom_op_external` [bad_descriptor]"),
        "{e}"
    );

    // A kernel's error and a kernel's panic.
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[2])]).unwrap();
    let x = f.arg(0).unwrap();
    let y = k::checked_sqrt::call(&mut f, &x).unwrap();
    let z = k::unlucky::call(&mut f, &y).unwrap();
    f.ret(&[&z]).unwrap();
    let exe = c.compile(&Program::module(&m).unwrap()).unwrap();
    let run = |v: [f32; 2]| exe.run(&[HostTensor::vector(&v)]);
    let e = run([-1.0, 4.0]).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::KernelError), "{e}");
    assert!(e.to_string().contains("negative input -1"), "{e}");
    let e = run([169.0, 4.0]).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::KernelPanic), "{e}");
    assert_eq!(e.pjrt_code(), Some(PjrtCode::Internal), "{e}");
    assert!(e.to_string().contains("unlucky number 13"), "{e}");
    // And the next execution runs.
    let ok = run([16.0, 4.0]).unwrap();
    assert_eq!(ok[0].to_vec::<f32>().unwrap(), vec![4.0, 2.0]);
}

/// Programs that call an op with what its handler refuses: XLA passes a custom call's operands
/// and attributes through unchecked, so each refusal code comes from the handler, through the
/// plugin, to the runner's error.
#[test]
fn every_refusal_a_program_can_provoke_surfaces_with_its_code() {
    let c = client();
    let call = |target: &str, operands: &str, types: &str, config: &str| {
        format!(
            r#"func.func @main({operands}) -> {ret} {{
  %0 = "stablehlo.custom_call"({names}) {{api_version = 4 : i32, call_target_name = "{target}", backend_config = {config}}} : {types}
  return %0 : {ret}
}}"#,
            ret = types.rsplit("-> ").next().unwrap(),
            names = operands
                .split(", ")
                .map(|o| o.split(':').next().unwrap())
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    let f32x2 = HostTensor::vector(&[4.0f32, 9.0]);
    let cases: Vec<(String, Vec<HostTensor>, Refusal)> = vec![
        (
            call(
                "example.checked_sqrt",
                "%a: tensor<2xf32>, %b: tensor<2xf32>",
                "(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
                "{}",
            ),
            vec![f32x2.clone(), f32x2.clone()],
            Refusal::WrongCount,
        ),
        (
            call(
                "example.checked_sqrt",
                "%a: tensor<2xf64>",
                "(tensor<2xf64>) -> tensor<2xf64>",
                "{}",
            ),
            vec![HostTensor::vector(&[4.0f64, 9.0])],
            Refusal::WrongDtype,
        ),
        (
            call(
                "example.checked_sqrt",
                "%a: tensor<2xf32>",
                "(tensor<2xf32>) -> tensor<3xf32>",
                "{}",
            ),
            vec![f32x2.clone()],
            Refusal::WrongShape,
        ),
        (
            call(
                "my_custom_library.custom_op_external",
                "%b: tensor<56xui8>, %a: tensor<3xf32>",
                "(tensor<56xui8>, tensor<3xf32>) -> tensor<3xi8>",
                "{}",
            ),
            vec![
                HostTensor::from_slice(&[56], &seed_blob().pack()).unwrap(),
                HostTensor::vector(&[1.0f32, 2.0, 3.0]),
            ],
            Refusal::WrongRank,
        ),
        (
            call(
                "example.rms_norm_t",
                "%a: tensor<1x2xf32>",
                "(tensor<1x2xf32>) -> tensor<1x2xf32>",
                "{}",
            ),
            vec![HostTensor::from_slice(&[1, 2], &[3.0f32, 4.0]).unwrap()],
            Refusal::MissingAttribute,
        ),
        (
            call(
                "example.rms_norm_t",
                "%a: tensor<1x2xf32>",
                "(tensor<1x2xf32>) -> tensor<1x2xf32>",
                "{eps = 1 : i32}",
            ),
            vec![HostTensor::from_slice(&[1, 2], &[3.0f32, 4.0]).unwrap()],
            Refusal::WrongAttributeType,
        ),
        (
            call(
                "example.rms_norm_t",
                "%a: tensor<1x2xi32>",
                "(tensor<1x2xi32>) -> tensor<1x2xi32>",
                "{eps = 1.0 : f32}",
            ),
            vec![HostTensor::from_slice(&[1, 2], &[3i32, 4]).unwrap()],
            Refusal::WrongDtype,
        ),
    ];
    for (i, (text, args, want)) in cases.into_iter().enumerate() {
        let exe = c
            .compile(&Program::text(&text).unwrap())
            .unwrap_or_else(|e| panic!("case {i}: {e}\n{text}"));
        let e = exe.run(&args).unwrap_err();
        assert_eq!(e.refusal(), Some(want), "case {i}: {e}\n{text}");
        assert!(matches!(e, RunError::Pjrt { .. }), "case {i}: {e}");
    }
}

#[test]
fn a_missing_handler_is_a_compile_error_and_a_second_handler_is_refused() {
    let c = client();
    let text = r#"func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.custom_call"(%x) {api_version = 4 : i32, call_target_name = "nobody.home", backend_config = {}} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}"#;
    let e = c.compile(&Program::text(text).unwrap()).unwrap_err();
    // The plugin's NOT_FOUND, in customop's words first, its own kept as the detail.
    assert!(
        matches!(&e, RunError::MissingHandlers { targets, .. } if targets == &["nobody.home"]),
        "{e:?}"
    );
    assert_eq!(e.pjrt_code(), Some(PjrtCode::NotFound), "{e}");
    assert!(
        e.to_string()
            .starts_with("no handler is registered for `nobody.home`, which the program calls"),
        "{e}"
    );
    assert!(
        e.detail()
            .is_some_and(|d| d.contains("No FFI handler registered for nobody.home")),
        "{e:?}"
    );
    // SAFETY: the symbol is a generated handler of the cdylib.
    let e = unsafe {
        c.register_symbol(
            &example_kernels(),
            "my_custom_library.custom_op_external",
            "customop_handler_example_passthrough",
        )
    }
    .unwrap_err();
    assert!(e.to_string().contains("already has another handler"), "{e}");
    // Registering the same library again changes nothing.
    // SAFETY: as in `client()`.
    unsafe { c.register_library(&example_kernels()) }.unwrap();
    // SAFETY: nothing is there to load.
    let e = unsafe { c.register_library(std::path::Path::new("/nonexistent/lib.so")) }.unwrap_err();
    assert!(matches!(e, RunError::Library { .. }), "{e}");
}
