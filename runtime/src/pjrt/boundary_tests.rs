//! The runner against crafted modules and the installed CPU plugin: a program whose compiled
//! buffers are not row-major is refused by name (text and bytecode), never run on transposed
//! bytes; text nested past the tokenizer's bound and a mesh of more devices than fit are
//! errors, never a crash.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

fn client() -> Client {
    Client::cpu(1).expect("the CPU plugin (scripts/setup.sh installs it)")
}

/// `x + x` on a 2x3 f32, with `param` and `result` as the argument's and the result's
/// attributes (empty: none), in pretty form.
fn add_text(param: &str, result: &str) -> String {
    let result_type = if result.is_empty() {
        "tensor<2x3xf32>".to_string()
    } else {
        format!("(tensor<2x3xf32> {result})")
    };
    format!(
        "func.func public @main(%arg0: tensor<2x3xf32> {param}) -> {result_type} {{\n  \
         %0 = \"stablehlo.add\"(%arg0, %arg0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> \
         tensor<2x3xf32>\n  return %0 : tensor<2x3xf32>\n}}\n"
    )
}

const COLUMN_MAJOR: &str = "{mhlo.layout_mode = \"{0,1}\"}";
const ROW_MAJOR: &str = "{mhlo.layout_mode = \"{1,0}\"}";

fn zero_to_five() -> HostTensor {
    let t = TensorType::new(crate::ElementType::F32, [2, 3]).unwrap();
    let bytes: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    HostTensor::from_bytes(t, bytes).unwrap()
}

use crate::types::TensorType;

/// Each program, given as text and as bytecode.
fn both_forms(text: &str) -> Vec<(&'static str, Program)> {
    let bytecode = crate::lower::text_to_bytecode(text).expect("MLIR parses the test's text");
    vec![
        ("text", Program::text(text).unwrap()),
        ("bytecode", Program::bytecode(&bytecode)),
    ]
}

#[test]
fn a_column_major_parameter_or_result_is_refused_by_name() {
    for (param, result, what) in [
        (COLUMN_MAJOR, "", "compiled parameter 0"),
        ("", COLUMN_MAJOR, "the compiled result"),
    ] {
        for (form, program) in both_forms(&add_text(param, result)) {
            match client().compile(&program) {
                Err(RunError::Layout(m)) => {
                    assert!(m.starts_with(what), "{form}: {m}");
                    assert!(m.contains("minor_to_major {0,1}"), "{form}: {m}");
                }
                Err(e) => panic!("{form}, {what}: not a layout error: {e}"),
                Ok(exe) => {
                    let out = exe.run(&[zero_to_five()]);
                    panic!("{form}, {what}: compiled, and ran to {out:?}")
                }
            }
        }
    }
}

#[test]
fn a_row_major_layout_mode_runs_to_the_right_answer() {
    for (param, result) in [(ROW_MAJOR, ""), ("", ROW_MAJOR), (ROW_MAJOR, ROW_MAJOR)] {
        for (form, program) in both_forms(&add_text(param, result)) {
            let exe = client().compile(&program).unwrap();
            let out = exe.run(&[zero_to_five()]).unwrap();
            assert_eq!(
                out[0].to_vec::<f32>().unwrap(),
                [0.0, 2.0, 4.0, 6.0, 8.0, 10.0],
                "{form}, {param} {result}"
            );
            assert_eq!(out[0].dims(), [2, 3]);
        }
    }
}

/// `func.func @main(%a: tensor<f32>) -> tensor<f32> { (((...))) }`: nesting past the bound is
/// an error naming it, on a thread with a small stack, at any depth.
#[test]
fn deep_nesting_is_an_error_on_a_small_stack() {
    let bound = super::mlir_text::MAX_DEPTH;
    let nested = |n: usize| {
        format!(
            "func.func @main(%a: tensor<f32>) -> tensor<f32> {{ {}{} }}",
            "(".repeat(n),
            ")".repeat(n)
        )
    };
    let outcome = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            // The function's body is one level: `bound - 1` parentheses inside it fit.
            assert!(Program::text(&nested(bound - 1)).is_ok());
            for n in [bound, 50_000, 1_000_000] {
                match Program::text(&nested(n)) {
                    Err(RunError::Program(m)) => {
                        assert!(m.contains(&format!("deeper than {bound}")), "{n}: {m}")
                    }
                    other => panic!("{n} levels: {other:?}"),
                }
            }
            // Deep nesting that does not close is refused the same way.
            let open = format!("func.func @main() {{ {}", "[".repeat(1_000_000));
            assert!(Program::text(&open).is_err());
        })
        .unwrap()
        .join();
    assert!(outcome.is_ok(), "the reader panicked or overflowed");
}

#[test]
fn a_mesh_of_more_devices_than_fit_is_refused() {
    let text = |x: u64, y: u64| {
        format!(
            "module {{\n  sdy.mesh @m = <[\"x\"={x}, \"y\"={y}]>\n  func.func @main(%a: \
             tensor<8xf32> {{sdy.sharding = #sdy.sharding<@m, [{{\"x\"}}]>}}) -> tensor<8xf32> \
             {{\n    return %a : tensor<8xf32>\n  }}\n}}\n"
        )
    };
    for (x, y) in [(1 << 32, 1 << 32), (1 << 62, 4), (65_537, 1), (256, 257)] {
        match Program::text(&text(x, y)) {
            Err(RunError::Program(m)) => assert!(m.contains("more than 65536 devices"), "{m}"),
            other => panic!("{x} x {y}: {other:?}"),
        }
    }
    let p = Program::text(&text(2, 2)).unwrap();
    assert_eq!(p.signature().unwrap().mesh_devices(), 4);
    // A signature built by hand with such a mesh counts more devices than any client has.
    let mut s = p.signature().unwrap().clone();
    s.mesh = vec![("x".into(), 1 << 32), ("y".into(), 1 << 32)];
    assert_eq!(s.mesh_devices(), i64::MAX);
    // SAFETY: the signature is refused before any code is compiled.
    let e = unsafe { Program::bytecode_with_signature(b"", s) }.unwrap_err();
    assert!(e.to_string().contains("more than 65536 devices"), "{e}");
}
