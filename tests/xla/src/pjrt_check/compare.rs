//! How the cross-check holds the runner's result against jaxlib's: outputs per element within
//! what two builds of XLA may differ by, failures at the same stage and of the same class.

use crate::{Array, XlaError};
use customop::Refusal;
use customop::pjrt::{PjrtCode, RunError};

/// How far two builds of XLA may differ, relative, per element (two builds may vectorise `sin`
/// differently, or sum a reduction in another order): `|a - b| <= rtol * max(|a|, |b|)`, the
/// numbers python/customop/crosscheck.py's `RTOL` has.
const RTOL_F32: f64 = 1e-5;
/// The same for `float64` and `complex128`.
const RTOL_F64: f64 = 1e-12;
/// The one looser rule, per element and for `float64` and `complex128` only: an element may
/// also differ by this many units in the last place (`f64::EPSILON`) of the largest finite
/// magnitude in either output. An element a sum cancelled to near zero (a gradient's entry of
/// a matmul over rows that nearly cancel) carries the rounding error of the sum's large
/// terms, which two builds round in another order; relative to itself that error is
/// unbounded. Measured in tests/xla/test_transforms.py (the training chain's f64 dW): an
/// element of -6.9e-6 differing by 3.3e-12 of itself, 0.45 ulp of its output's largest
/// magnitude (0.228). `float32`'s tolerance is 84 of its ulps per element and no check needs
/// more, so it gets no such allowance. python/customop/crosscheck.py has the same.
const CANCELLATION_ULPS: f64 = 4.0;

/// The magnitude of an element (complex ones as their two components).
fn norm(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |n, c| n.hypot(*c))
}

/// Whether two elements (complex ones as their two components) agree: finite ones within
/// `rtol` of the larger magnitude or within `floor` (absolute); others component by component
/// a NaN against a NaN or equal (an infinity only against the same infinity).
fn close(x: &[f64], y: &[f64], rtol: f64, floor: f64) -> bool {
    let finite = x.iter().chain(y).all(|v| v.is_finite());
    if !finite {
        return x
            .iter()
            .zip(y)
            .all(|(p, q)| (p.is_nan() && q.is_nan()) || p == q);
    }
    let diff: Vec<f64> = x.iter().zip(y).map(|(p, q)| p - q).collect();
    let diff = norm(&diff);
    // An overflowing difference is never close: it is larger than rtol times either.
    diff.is_finite() && (diff <= rtol * norm(x).max(norm(y)) || diff <= floor)
}

/// Whether two runs' outputs agree: the same dtype and shape, and element by element equal:
/// floats and complex numbers of `float32`/`complex64` and `float64`/`complex128` within
/// [`RTOL_F32`] or [`RTOL_F64`] of the larger magnitude of the two, or for the latter within
/// [`CANCELLATION_ULPS`] of the outputs' largest (`close`); every other type to the bit.
pub(super) fn agree(jax: &Array, ours: &Array) -> Result<(), String> {
    if jax.dtype != ours.dtype || jax.shape != ours.shape {
        return Err(format!(
            "jaxlib gave {} {:?}, the runner {} {:?}",
            jax.dtype, jax.shape, ours.dtype, ours.shape
        ));
    }
    let (a, b) = (jax.bytes(), ours.bytes());
    if a.len() != b.len() {
        return Err(format!(
            "{} {:?}: {} bytes from jaxlib, {} from the runner",
            jax.dtype,
            jax.shape,
            a.len(),
            b.len()
        ));
    }
    if a == b {
        return Ok(());
    }
    // (bytes per component, components per element, tolerance, ulps of the largest)
    let (width, parts, rtol, ulps) = match jax.dtype.as_str() {
        "float32" => (4, 1, RTOL_F32, 0.0),
        "complex64" => (4, 2, RTOL_F32, 0.0),
        "float64" => (8, 1, RTOL_F64, CANCELLATION_ULPS),
        "complex128" => (8, 2, RTOL_F64, CANCELLATION_ULPS),
        _ => {
            let k = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(0);
            return Err(format!(
                "{} {:?} must agree to the bit: byte {k} differs; jaxlib gave bytes {}, the \
                 runner {}",
                jax.dtype,
                jax.shape,
                hex(&a),
                hex(&b)
            ));
        }
    };
    if a.len() % (width * parts) != 0 {
        return Err(format!(
            "{} {:?}: {} bytes, not whole elements",
            jax.dtype,
            jax.shape,
            a.len()
        ));
    }
    let component = |c: &[u8]| -> f64 {
        let mut b8 = [0u8; 8];
        b8[..c.len()].copy_from_slice(c);
        if width == 4 {
            f64::from(f32::from_le_bytes([b8[0], b8[1], b8[2], b8[3]]))
        } else {
            f64::from_le_bytes(b8)
        }
    };
    let element = |e: &[u8]| -> Vec<f64> { e.chunks_exact(width).map(component).collect() };
    let xs: Vec<Vec<f64>> = a.chunks_exact(width * parts).map(element).collect();
    let ys: Vec<Vec<f64>> = b.chunks_exact(width * parts).map(element).collect();
    let largest = xs
        .iter()
        .chain(&ys)
        .map(|e| norm(e))
        .filter(|m| m.is_finite())
        .fold(0.0f64, f64::max);
    let floor = ulps * f64::EPSILON * largest;
    let bad: Vec<(usize, &Vec<f64>, &Vec<f64>)> = xs
        .iter()
        .zip(&ys)
        .enumerate()
        .filter(|(_, (x, y))| !close(x, y, rtol, floor))
        .map(|(i, (x, y))| (i, x, y))
        .collect();
    match bad.first() {
        None => Ok(()),
        Some((i, x, y)) => Err(format!(
            "{} {:?}: {} of {} elements differ by more than {rtol:e} of the larger (and more \
             than {floor:e}, the cancellation floor); the first, element {i} (row-major): \
             jaxlib {x:?}, the runner {y:?}",
            jax.dtype,
            jax.shape,
            bad.len(),
            a.len() / (width * parts),
        )),
    }
}

fn hex(b: &[u8]) -> String {
    let s: String = b.iter().take(64).map(|x| format!("{x:02x}")).collect();
    if b.len() > 64 { format!("{s}...") } else { s }
}

/// Where a side failed: `Compile` includes parsing and verifying the text (jaxlib's harness
/// stages `parse`, `verify`, `compile`; the runner's reading of the signature and its
/// compile); `Other` (jaxlib's `load`, `register`, `harness`) has no counterpart in the runner,
/// whose registration failing fails the check at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    Compile,
    Execute,
    Other(String),
}

/// The class of a failure, compared when both sides fail: the customop refusal code its
/// message carries; else its status class: jaxlib's message begins with it (`INVALID_ARGUMENT:
/// ...`), the runner's PJRT error has it, and what either refuses before XLA sees it has the
/// status XLA gives the same fault: `UNKNOWN` for a text jaxlib's MLIR does not parse or
/// verify, `INVALID_ARGUMENT` for a program whose entry function the runner cannot read (XLA:
/// "MLIR module must have a main function") or inputs it refuses (XLA: "expected parameter 0
/// of size 8 ... but got ... size 12"). Else unknown, which agrees with nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Class {
    Refusal(Refusal),
    Status(PjrtCode),
    Unknown,
}

/// One side's failure.
#[derive(Clone, Debug)]
pub(super) struct Failure {
    stage: Stage,
    class: Class,
    message: String,
}

/// The status name an XLA error's message begins with (`INVALID_ARGUMENT: ...`).
fn status_in(message: &str) -> Option<PjrtCode> {
    let (name, _) = message.split_once(": ")?;
    (1..=16).map(PjrtCode::from_raw).find(|c| c.name() == name)
}

/// jaxlib's error as a [`Failure`].
pub(super) fn jaxlib_failure(e: &XlaError) -> Failure {
    let stage = match e.stage.as_str() {
        "parse" | "verify" | "compile" => Stage::Compile,
        "execute" => Stage::Execute,
        other => Stage::Other(other.to_string()),
    };
    let class = match Refusal::in_message(&e.message) {
        Some(r) => Class::Refusal(r),
        // The harness parses and verifies with jaxlib's MLIR before XLA sees the text; XLA
        // says UNKNOWN of a text it cannot parse or verify (jaxlib's compile and the plugin's,
        // "Failed to parse using StableHLO"), and so does the runner's compile.
        None if matches!(e.stage.as_str(), "parse" | "verify") => Class::Status(PjrtCode::Unknown),
        None => status_in(&e.message).map_or(Class::Unknown, Class::Status),
    };
    Failure {
        stage,
        class,
        message: e.message.clone(),
    }
}

/// The runner's error at `stage` as a [`Failure`], with the refusal code it stands for
/// (`refusal`: for inputs the runner refused itself, the code a handler gives them).
pub(super) fn runner_failure(stage: Stage, e: &RunError, refusal: Option<Refusal>) -> Failure {
    let class = match (refusal, e) {
        (Some(r), _) => Class::Refusal(r),
        (None, RunError::Pjrt { code, .. }) => Class::Status(*code),
        (None, RunError::Program(_) | RunError::Input(_)) => {
            Class::Status(PjrtCode::InvalidArgument)
        }
        _ => Class::Unknown,
    };
    Failure {
        stage,
        class,
        message: e.to_string(),
    }
}

/// Why two failures disagree (another stage, or another or an unknown class), or `None`.
pub(super) fn failures_disagree(jax: &Failure, ours: &Failure) -> Option<String> {
    let both = format!(
        "both failed, jaxlib ({}) and the runner ({}),",
        jax.message, ours.message
    );
    if jax.stage != ours.stage || matches!(jax.stage, Stage::Other(_)) {
        return Some(format!(
            "{both} at other stages: jaxlib {:?}, the runner {:?}",
            jax.stage, ours.stage
        ));
    }
    if jax.class != ours.class || jax.class == Class::Unknown {
        return Some(format!(
            "{both} of other (or unknown) classes: jaxlib {:?}, the runner {:?}",
            jax.class, ours.class
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(values: &[f32]) -> Array {
        Array::f32(&[values.len() as i64], values)
    }

    fn complex64(values: &[(f32, f32)]) -> Array {
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|(re, im)| re.to_le_bytes().into_iter().chain(im.to_le_bytes()))
            .collect();
        Array::from_bytes("complex64", &[values.len() as i64], &bytes)
    }

    fn failure(stage: Stage, class: Class) -> Failure {
        Failure {
            stage,
            class,
            message: "m".into(),
        }
    }

    #[test]
    fn equal_and_close_outputs_agree() {
        assert_eq!(agree(&f32s(&[1.0, -2.5]), &f32s(&[1.0, -2.5])), Ok(()));
        // Within 1e-5 of the larger element, per element.
        assert_eq!(
            agree(&f32s(&[1.0, 1e-20]), &f32s(&[1.000_001, 1.000_001e-20])),
            Ok(())
        );
        assert_eq!(
            agree(&Array::f64(&[1], &[3.0]), &Array::f64(&[1], &[3.0 + 1e-13])),
            Ok(())
        );
        assert_eq!(agree(&f32s(&[0.0]), &f32s(&[-0.0])), Ok(()));
        assert_eq!(
            agree(
                &f32s(&[f32::NAN, f32::INFINITY]),
                &f32s(&[-f32::NAN, f32::INFINITY])
            ),
            Ok(())
        );
        assert_eq!(
            agree(&complex64(&[(1.0, 2.0)]), &complex64(&[(1.0, 2.000_01)])),
            Ok(())
        );
    }

    #[test]
    fn a_differing_element_disagrees() {
        let e = agree(&f32s(&[1.0, 2.0]), &f32s(&[1.0, 2.001]));
        assert!(e.as_ref().is_err_and(|m| m.contains("element 1")), "{e:?}");
        // Per element, not relative to the output's largest magnitude: a small element that
        // differs by 10% disagrees beside a large one.
        assert!(agree(&f32s(&[1000.0, 1e-3]), &f32s(&[1000.0, 1.1e-3])).is_err());
        // An element near zero against exactly zero.
        assert!(agree(&f32s(&[0.0]), &f32s(&[1e-30])).is_err());
        // float64's tolerance is 1e-12, not float32's.
        assert!(agree(&Array::f64(&[1], &[1.0]), &Array::f64(&[1], &[1.0 + 1e-9])).is_err());
        // A complex element by its modulus: the imaginary parts differ.
        assert!(agree(&complex64(&[(1.0, 2.0)]), &complex64(&[(1.0, 2.1)])).is_err());
        // Every other type to the bit.
        let e = agree(&Array::i32(&[2], &[1, 2]), &Array::i32(&[2], &[1, 3]));
        assert!(e.as_ref().is_err_and(|m| m.contains("byte 4")), "{e:?}");
        let bf16 = |b: &[u8]| Array::from_bytes("bfloat16", &[1], b);
        assert!(agree(&bf16(&[0x80, 0x3f]), &bf16(&[0x81, 0x3f])).is_err());
    }

    #[test]
    fn a_cancelled_float64_element_may_differ_by_ulps_of_the_largest() {
        let f64s = |v: &[f64]| Array::f64(&[v.len() as i64], v);
        // The training chain's dW element (tests/xla/test_transforms.py): 3.3e-12 of itself,
        // 0.45 ulp of the output's largest magnitude.
        assert_eq!(
            agree(
                &f64s(&[0.228, -6.865_590_256_616_15e-6]),
                &f64s(&[0.228, -6.865_590_256_593_381_5e-6])
            ),
            Ok(())
        );
        // Four ulps of the largest (8.9e-16 here), not more: 1e-14 is 45 ulps.
        let e = agree(&f64s(&[1.0, 1e-6]), &f64s(&[1.0, 1e-6 + 1e-14]));
        assert!(
            e.as_ref().is_err_and(|m| m.contains("cancellation floor")),
            "{e:?}"
        );
        // float32 has no such allowance: 1e-4 is less than four of its ulps of 1000.
        assert!(agree(&f32s(&[1000.0, 1e-3]), &f32s(&[1000.0, 1.1e-3])).is_err());
        // The floor is of the finite elements only (an infinity would make it infinite).
        let e = agree(
            &f64s(&[f64::INFINITY, f64::NAN, 1e-6]),
            &f64s(&[f64::INFINITY, f64::NAN, 2e-6]),
        );
        assert!(e.is_err());
    }

    #[test]
    fn nan_and_infinities_agree_only_with_themselves() {
        assert!(agree(&f32s(&[f32::NAN]), &f32s(&[1.0])).is_err());
        assert!(agree(&f32s(&[0.0]), &f32s(&[f32::NAN])).is_err());
        assert!(agree(&f32s(&[f32::INFINITY]), &f32s(&[f32::NEG_INFINITY])).is_err());
        assert!(agree(&f32s(&[f32::INFINITY]), &f32s(&[f32::MAX])).is_err());
        assert!(
            agree(
                &complex64(&[(f32::NAN, 1.0)]),
                &complex64(&[(f32::NAN, 2.0)])
            )
            .is_err()
        );
        // The largest float64s of opposite signs: the difference overflows.
        assert!(
            agree(
                &Array::f64(&[1], &[f64::MAX]),
                &Array::f64(&[1], &[-f64::MAX])
            )
            .is_err()
        );
    }

    #[test]
    fn another_shape_or_dtype_disagrees() {
        let e = agree(
            &Array::f32(&[2, 1], &[1.0, 2.0]),
            &Array::f32(&[1, 2], &[1.0, 2.0]),
        );
        assert!(e.as_ref().is_err_and(|m| m.contains("[2, 1]")), "{e:?}");
        let e = agree(&Array::i32(&[1], &[0]), &Array::u32(&[1], &[0]));
        assert!(e.as_ref().is_err_and(|m| m.contains("uint32")), "{e:?}");
        let short = Array::from_bytes("float32", &[2], &[0; 4]);
        assert!(agree(&f32s(&[0.0, 0.0]), &short).is_err());
    }

    #[test]
    fn failures_agree_at_one_stage_with_one_class() {
        let refused = Class::Refusal(Refusal::BadDescriptor);
        let same = |stage: Stage, class: Class| {
            failures_disagree(
                &failure(stage.clone(), class.clone()),
                &failure(stage, class),
            )
        };
        assert_eq!(same(Stage::Execute, refused.clone()), None);
        assert_eq!(same(Stage::Compile, refused.clone()), None);
        assert_eq!(
            same(Stage::Compile, Class::Status(PjrtCode::Internal)),
            None
        );
        // Unknown classes, and stages the runner has no counterpart of, agree with nothing.
        assert!(same(Stage::Execute, Class::Unknown).is_some());
        assert!(same(Stage::Other("register".into()), refused).is_some());
    }

    #[test]
    fn another_stage_or_class_disagrees() {
        let refusal = |r| Class::Refusal(r);
        let e = failures_disagree(
            &failure(Stage::Compile, refusal(Refusal::BadDescriptor)),
            &failure(Stage::Execute, refusal(Refusal::BadDescriptor)),
        );
        assert!(e.as_ref().is_some_and(|m| m.contains("stages")), "{e:?}");
        let e = failures_disagree(
            &failure(Stage::Execute, refusal(Refusal::BadDescriptor)),
            &failure(Stage::Execute, refusal(Refusal::WrongShape)),
        );
        assert!(e.as_ref().is_some_and(|m| m.contains("classes")), "{e:?}");
        let e = failures_disagree(
            &failure(Stage::Execute, refusal(Refusal::BadDescriptor)),
            &failure(Stage::Execute, Class::Status(PjrtCode::InvalidArgument)),
        );
        assert!(e.is_some());
        let e = failures_disagree(
            &failure(Stage::Compile, Class::Status(PjrtCode::InvalidArgument)),
            &failure(Stage::Compile, Class::Status(PjrtCode::Internal)),
        );
        assert!(e.is_some());
    }

    #[test]
    fn each_side_s_failure_is_classed() {
        let jax = |stage: &str, message: &str| {
            jaxlib_failure(&XlaError {
                stage: stage.into(),
                message: message.into(),
            })
        };
        let f = jax("verify", "'stablehlo.add' op requires the same type");
        assert_eq!(f.stage, Stage::Compile);
        assert_eq!(f.class, Class::Status(PjrtCode::Unknown));
        let f = jax("compile", "INTERNAL: no such target");
        assert_eq!(
            (f.stage, f.class),
            (Stage::Compile, Class::Status(PjrtCode::Internal))
        );
        let f = jax(
            "execute",
            "INTERNAL: custom op `ex::op` [bad_descriptor]: 3 bytes",
        );
        assert_eq!(
            (f.stage, f.class),
            (Stage::Execute, Class::Refusal(Refusal::BadDescriptor))
        );
        assert_eq!(jax("execute", "something else").class, Class::Unknown);
        assert_eq!(jax("register", "x").stage, Stage::Other("register".into()));

        let program = RunError::Program("no @main".into());
        let f = runner_failure(Stage::Compile, &program, None);
        assert_eq!(f.class, Class::Status(PjrtCode::InvalidArgument));
        let input = RunError::Input("3 bytes".into());
        let f = runner_failure(Stage::Execute, &input, Some(Refusal::BadDescriptor));
        assert_eq!(f.class, Class::Refusal(Refusal::BadDescriptor));
        let output = RunError::Output("no such type".into());
        assert_eq!(
            runner_failure(Stage::Execute, &output, None).class,
            Class::Unknown
        );
    }
}
