//! `#[custom_op]`: schemas, lowerings, registration (MLIR-side, verified by jaxlib in xla.rs).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use customop::lower::Module;
use customop::prelude::*;

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "my_lib::Blob")]
pub struct Blob {
    pub gain: f32,
    pub bias: i32,
    pub seed: u64,
    pub tag: [u8; 16],
}

/// y[i] = saturate_i8(round(gain * sum_j x[i, j]) + bias)
#[custom_op(name = "my_custom_library::custom_op_external", side_effect)]
pub fn custom_op_external(
    #[external] blob: &Blob,
    x: TensorRef<'_, f32, 2>,
    #[out(shape = [x.dim(0)])] mut y: TensorMut<'_, i8>,
) -> Result<(), OpError> {
    let cols = x.dim(1);
    for (i, out) in y.as_mut_slice().iter_mut().enumerate() {
        let s: f32 = x.as_slice()[i * cols..(i + 1) * cols].iter().sum();
        let v = (blob.gain * s).round() as i64 + blob.bias as i64;
        *out = v.clamp(i8::MIN as i64, i8::MAX as i64) as i8;
    }
    Ok(())
}

#[test]
fn the_kernel_is_a_plain_function() {
    let blob = Blob {
        gain: 2.0,
        bias: 1,
        seed: 0,
        tag: [0; 16],
    };
    let x = [1.0f32, 2.0, 3.0, 100.0, 0.0, 0.0];
    let mut y = [0i8; 2];
    custom_op_external(
        &blob,
        TensorRef::new(&x, &[2, 3]).unwrap(),
        TensorMut::new(&mut y, &[2]).unwrap(),
    )
    .unwrap();
    assert_eq!(y, [13, 127]);
}

#[test]
fn the_schema_describes_the_op() {
    let s = custom_op_external::schema();
    assert_eq!(s.name, "my_custom_library::custom_op_external");
    assert_eq!(s.target, "my_custom_library.custom_op_external");
    assert!(s.side_effect);
    assert_eq!(
        custom_op_external::schema_string(),
        "my_custom_library::custom_op_external(Tensor blob, Tensor x) -> Tensor"
    );
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["params"][0]["kind"], "external");
    assert_eq!(json["params"][0]["descriptor"]["name"], "my_lib::Blob");
    assert_eq!(json["params"][1]["kind"], "tensor");
    assert_eq!(json["params"][1]["rank"], 2);
    assert_eq!(json["results"][0]["shape"][0]["kind"], "dim_of");
}

#[test]
fn the_lowering_emits_the_custom_call() {
    let mut m = Module::new();
    let mut f = m
        .entry("main", [TensorType::new(ElementType::F32, [3, 3]).unwrap()])
        .unwrap();
    let x = f.arg(0).unwrap();
    let blob = f.external::<Blob>("external").unwrap();
    let s = f.sine(&x).unwrap();
    let y = custom_op_external::call(&mut f, &blob, &s).unwrap();
    assert_eq!(y.ty().to_string(), "tensor<3xi8>");
    f.ret(&[&y]).unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("call_target_name = \"my_custom_library.custom_op_external\""),
        "{text}"
    );
    assert!(text.contains("has_side_effect = true"), "{text}");
}

#[test]
fn the_op_is_registered() {
    let e = customop::schema::registry::find("my_custom_library::custom_op_external").unwrap();
    assert_eq!(
        e.handler_symbol,
        "customop_handler_my_custom_library_custom_op_external"
    );
}
