//! The runner against the installed CPU plugin, with hand-written StableHLO (no custom calls:
//! the examples' tests run those): the signature read from the text and the compiled
//! executable's parameters both stand between a caller and XLA.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use crate::types::{ElementType, TensorType};
use std::sync::OnceLock;

fn client() -> Client {
    static C: OnceLock<Client> = OnceLock::new();
    C.get_or_init(|| Client::cpu(1).expect("the CPU plugin (scripts/setup.sh installs it)"))
        .clone()
}

fn f32s(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.01 - 3.0).collect()
}

fn input_error(r: Result<Vec<HostTensor>, RunError>) -> String {
    match r {
        Err(RunError::Input(m)) => m,
        other => panic!("expected an input error, got {other:?}"),
    }
}

/// Each decoy module runs by its real signature (1024 f32 in, their sines out), and the
/// inputs the decoy declares are refused before the plugin sees them: the wrong size, and
/// the same byte size of another element type.
#[test]
fn decoy_modules_run_on_the_right_input_and_refuse_the_decoys() {
    let x = f32s(1024);
    // The first four: the last two carry attributes of a dialect the plugin does not know.
    for (what, text) in super::program::tests::decoy_modules().into_iter().take(4) {
        let exe = client().compile(&Program::text(&text).unwrap()).unwrap();
        let out = exe.run(&[HostTensor::vector(&x)]).unwrap();
        let y = out[0].to_vec::<f32>().unwrap();
        for (a, b) in x.iter().zip(&y) {
            assert!((a.sin() - b).abs() <= 1e-6, "{what}: sin({a}) = {b}");
        }
        let e = input_error(exe.run(&[HostTensor::vector(&[0.5f32])]));
        assert!(
            e.contains("argument 0 is tensor<1024xf32>, but tensor<1xf32> was given"),
            "{what}: {e}"
        );
        let e = input_error(exe.run(&[HostTensor::vector(&[7i32; 1024])]));
        assert!(e.contains("tensor<1024xi32> was given"), "{what}: {e}");
    }
}

fn real_text() -> String {
    super::program::tests::decoy_modules()[0].1.clone()
}

/// A signature that is not the program's, given with its code: the compiled executable's
/// parameters refuse it at compile time.
#[test]
fn a_caller_built_wrong_signature_is_refused_by_the_compiled_parameters() {
    let wrong =
        Signature::parse("func.func @main(%arg0: tensor<1xf32>) -> tensor<1xf32> {}").unwrap();
    // SAFETY: the test shows the promise broken is caught: the program is compiled, never run.
    let program = unsafe { Program::bytecode_with_signature(real_text().as_bytes(), wrong) };
    let e = client().compile(&program.unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "program: the program's text says argument 0 is tensor<1xf32>, but the compiled \
         program takes tensor<1024xf32>"
    );
}

/// A program given as bytecode (here MLIR text passed as is, which the plugin reads alike)
/// has no signature: its inputs are checked against the compiled parameters alone.
#[test]
fn a_program_without_a_signature_is_checked_against_the_compiled_parameters() {
    let exe = client()
        .compile(&Program::bytecode(real_text().as_bytes()))
        .unwrap();
    assert!(exe.signature().is_err());
    let want = TensorType::new(ElementType::F32, [1024]).unwrap();
    assert_eq!(exe.compiled_parameters().unwrap(), &[want]);
    let x = f32s(1024);
    let out = exe.run(&[HostTensor::vector(&x)]).unwrap();
    assert_eq!(out[0].dims(), &[1024]);
    for (bad, got) in [
        (HostTensor::vector(&[0.5f32]), "tensor<1xf32>"),
        (HostTensor::vector(&[7i32; 1024]), "tensor<1024xi32>"),
        (HostTensor::vector(&[7u8; 4096]), "tensor<4096xui8>"),
    ] {
        let e = input_error(exe.run(&[bad]));
        assert_eq!(
            e,
            format!(
                "argument 0: the compiled program takes tensor<1024xf32> on each device, but \
                 {got} was given"
            )
        );
    }
    let e = input_error(exe.run(&[]));
    assert!(
        e.contains("the compiled program takes 1 arguments, 0 were given"),
        "{e}"
    );
    let e = exe.inputs().arg(HostTensor::vector(&x)).unwrap_err();
    assert!(e.to_string().contains("without a signature"), "{e}");
}

/// The compiled parameters read from the plugin's optimized program carry every element
/// type customop feeds (XLA's numbering, as XLA FFI's), and each round-trips a value.
#[test]
fn compiled_parameters_name_every_element_type() {
    let types: Vec<TensorType> = ElementType::ALL
        .into_iter()
        .map(|e| TensorType::new(e, [2]).unwrap())
        .collect();
    let args: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("%a{i}: {t}"))
        .collect();
    let names: Vec<String> = (0..types.len()).map(|i| format!("%a{i}")).collect();
    let tys: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    let text = format!(
        "func.func public @main({}) -> ({}) {{\n  return {} : {}\n}}\n",
        args.join(", "),
        tys.join(", "),
        names.join(", "),
        tys.join(", ")
    );
    let exe = client().compile(&Program::text(&text).unwrap()).unwrap();
    assert_eq!(exe.compiled_parameters().unwrap(), &types[..]);
    let inputs: Vec<HostTensor> = types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = t.element().byte_size() * 2;
            let bytes: Vec<u8> = (0..n)
                .map(|b| match t.element() {
                    ElementType::Bool => (b % 2) as u8,
                    // One element a byte, in its low bits.
                    e if e.is_packed() => (b * 7 + i) as u8 & ((1 << e.bits()) - 1),
                    _ => (b * 7 + i) as u8 & 0x3f,
                })
                .collect();
            HostTensor::from_bytes(t.clone(), bytes).unwrap()
        })
        .collect();
    assert_eq!(exe.run(&inputs).unwrap(), inputs);
    let i4 = TensorType::new(ElementType::S4, [2]).unwrap();
    let e = HostTensor::from_bytes(i4, vec![0x07, 0x1F]).unwrap_err();
    assert!(
        e.to_string().contains("holds more than the type's 4 bits"),
        "{e}"
    );
}

/// Outputs read in place and through `PJRT_Buffer_ToHostBuffer` are the same (f32, i8, and a
/// rank-0 result).
#[test]
fn outputs_read_in_place_equal_those_read_through_the_plugin() {
    let text = "func.func public @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, \
                tensor<2x3xi8>, tensor<f32>) {
  %0 = stablehlo.sine %x : tensor<2x3xf32>
  %1 = stablehlo.convert %x : (tensor<2x3xf32>) -> tensor<2x3xi8>
  %2 = stablehlo.constant dense<2.5> : tensor<f32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xi8>, tensor<f32>
}";
    let exe = client().compile(&Program::text(text).unwrap()).unwrap();
    let args = [HostTensor::from_slice(&[2, 3], &[0.5f32, 1.0, 1.5, 2.0, 2.5, 3.0]).unwrap()];
    let a = exe.run(&args).unwrap();
    let b = exe.run_reading_through_the_plugin(&args).unwrap();
    assert_eq!(a, b);
    assert_eq!(a[1].to_vec::<i8>().unwrap(), vec![0, 1, 1, 2, 2, 3]);
    assert_eq!(a[2].dims(), &[] as &[i64]);
    assert_eq!(a[2].to_vec::<f32>().unwrap(), vec![2.5]);
}

/// A program calling a target no handler is registered for: the compile names the target and
/// the fix (not the plugin's words alone), and, where `register_linked_ops()` found no op in
/// the binary, says why that happens.
#[test]
fn a_target_without_a_handler_is_named_with_the_fix() {
    let text = "func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n  \
                %0 = stablehlo.custom_call @customop_test.nobody_has_me(%arg0) \
                {api_version = 4 : i32} : (tensor<4xf32>) -> tensor<4xf32>\n  \
                return %0 : tensor<4xf32>\n}\n";
    let c = Client::cpu(1).unwrap().with_compile_cache(None);
    let found = c.register_linked_ops().unwrap();
    let e = c.compile(&Program::text(text).unwrap()).unwrap_err();
    let RunError::MissingHandlers {
        targets,
        linked_none,
        detail,
    } = &e
    else {
        panic!("{e:?}");
    };
    assert_eq!(targets, &["customop_test.nobody_has_me"]);
    assert_eq!(*linked_none, found.is_empty());
    assert!(detail.contains("No FFI handler registered for"), "{detail}");
    let said = e.to_string();
    assert!(
        said.starts_with(
            "no handler is registered for `customop_test.nobody_has_me`, which the program calls"
        ),
        "{said}"
    );
    assert!(said.contains("Client::register_library(LIB)"), "{said}");
    // As a binary that links no kernel crate finds it.
    c.inner
        .linked_none
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let said = c
        .compile(&Program::text(text).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        said.ends_with(
            "`register_linked_ops()` found no op in this binary: a binary that names nothing of \
             its kernel crate does not link it, so name it (`use my_ops as _;`)"
        ),
        "{said}"
    );
}
