//! Descriptors: wire format v1 byte for byte, round trips, and every validation error.
//!
//! One module per theme: the wire format and layouts (`wire`), validation errors
//! (`validation`), 8-bit float fields (`float8`), values of a layout known at run time against
//! the derive's bytes (`values`, `value_errors`) and properties (`props`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use customop::descriptor::{ErrorKind, HEADER_SIZE, TypeLayout, fingerprint_of};
use customop::prelude::*;

#[path = "../common/mod.rs"]
mod common;
use common::*;

mod float8;
mod props;
mod validation;
mod value_errors;
mod values;
mod wire;

/// Each field's name, offset (`None` for a tail) and size.
fn field_offsets(l: &customop::descriptor::Layout) -> Vec<(&str, Option<usize>, usize)> {
    l.fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.size))
        .collect()
}

// --- 8-bit floats -----------------------------------------------------------------------------

use customop::{
    F8E3M4, F8E4M3, F8E4M3B11FNUZ, F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0FNU,
};

/// The eight 8-bit float types as fields (one byte, alignment 1, their bits), in an array and
/// in a `Vec` tail, around an `f32` that they pad up to.
#[derive(Descriptor, Clone, Debug)]
#[descriptor(name = "test::Float8s")]
pub struct Float8s {
    pub a: F8E4M3FN,
    pub b: F8E5M2,
    pub gain: f32,
    pub c: F8E4M3,
    pub d: F8E3M4,
    pub e: F8E4M3FNUZ,
    pub f: F8E5M2FNUZ,
    pub g: F8E4M3B11FNUZ,
    pub scales: [F8E8M0FNU; 3],
    pub q: Vec<F8E4M3FN>,
}

/// Rounded values, an infinity, NaNs (by overflow and by name), a `-0` that the FNUZ type makes
/// `+0`, the scale type's tie (3 → 4), smallest and NaN.
fn float8s() -> Float8s {
    Float8s {
        a: F8E4M3FN::from_f64(1.0 / 3.0),
        b: F8E5M2::NEG_INFINITY,
        gain: 0.5,
        c: F8E4M3::from_f64(-240.0),
        d: F8E3M4::from_f64(1.0 / 3.0),
        e: F8E4M3FNUZ::NAN,
        f: F8E5M2FNUZ::from_f64(-0.0),
        g: F8E4M3B11FNUZ::from_f64(-1.0 / 3.0),
        scales: [
            F8E8M0FNU::from_f64(3.0),
            F8E8M0FNU::MIN_POSITIVE,
            F8E8M0FNU::NAN,
        ],
        q: vec![
            F8E4M3FN::from_f64(1000.0),
            F8E4M3FN::MAX,
            F8E4M3FN::from_f64(-0.3),
        ],
    }
}
