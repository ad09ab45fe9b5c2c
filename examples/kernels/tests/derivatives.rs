//! The Rust half of the differentiability contract: for every op of the example library, the
//! manifest's `derivatives` (what JAX and torch read) say exactly what the declared rules carry,
//! which the compile-time pairing check enforced: a backward returns a gradient of each input
//! listed and of no other, takes a cotangent only of outputs listed; a tangent op takes the
//! tangent of each input listed and returns one for each output listed. No MLIR in this binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use customop::ElementType;
use customop::schema::{JvpSource, ResidualSource};
use customop_example_kernels as _;
use std::collections::BTreeSet;

fn with(m: &std::collections::BTreeMap<String, Vec<ElementType>>) -> BTreeSet<String> {
    m.iter()
        .filter(|(_, types)| !types.is_empty())
        .map(|(name, _)| name.clone())
        .collect()
}

#[test]
fn the_manifest_says_what_the_declared_rules_carry() {
    let mut checked = 0;
    for op in customop::registry::ops() {
        let d = op.derivatives();
        let (inputs, outputs) = (with(&d.inputs), with(&d.outputs));
        if let Some(vjp) = &op.vjp {
            let grads: BTreeSet<String> = vjp.gradients.iter().map(|g| g.of.clone()).collect();
            assert_eq!(grads, inputs, "{}: gradients of {grads:?}", op.name);
            for i in &vjp.inputs {
                if i.source == ResidualSource::Cotangent {
                    assert!(
                        outputs.contains(&i.of),
                        "{}: cotangent of {}",
                        op.name,
                        i.of
                    );
                }
            }
            checked += 1;
        }
        if let Some(jvp) = &op.jvp {
            let tans: BTreeSet<String> = jvp.tangents.iter().map(|t| t.of.clone()).collect();
            assert_eq!(tans, outputs, "{}: tangents of {tans:?}", op.name);
            let taken: BTreeSet<String> = jvp
                .inputs
                .iter()
                .filter(|i| i.source == JvpSource::Tangent)
                .map(|i| i.of.clone())
                .collect();
            assert_eq!(
                taken, inputs,
                "{}: takes the tangents of {taken:?}",
                op.name
            );
            checked += 1;
        }
    }
    // Every op with a rule was seen (the example library has 16 rules today).
    assert!(checked >= 16, "{checked} rules");
}

#[test]
fn types_without_a_derivative_have_none_in_the_manifest() {
    let op = |name: &str| {
        customop::registry::ops()
            .find(|o| o.name == name)
            .unwrap()
            .derivatives()
    };
    let mulw = op("example::mulw");
    assert_eq!(mulw.inputs["x"], Vec::<ElementType>::new());
    assert_eq!(mulw.inputs["w"], vec![ElementType::F32]);
    assert_eq!(op("example::wnorm").inputs["x"], vec![]);
    let fp8 = op("example::fp8_affine");
    assert_eq!((&fp8.inputs["q"], &fp8.outputs["r"]), (&vec![], &vec![]));
    assert_eq!(fp8.outputs["y"], vec![ElementType::F32]);
    assert_eq!(op("example::scale_in_place").inputs["x"], vec![]);
    let json = customop::registry::manifest_json();
    assert!(
        json.contains(r#""derivatives":{"inputs":{"w":["f32"],"x":[]},"outputs":{"y":["f32"]}}"#)
    );
    for t in ElementType::ALL {
        let expected = matches!(
            t,
            ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64
        );
        assert_eq!(t.is_differentiable(), expected, "{t}");
    }
}
