// The code #[custom_op] generates names everything by absolute paths: it compiles without the
// prelude, next to user items named like the runtime's (`Result`, `Vec`, `Option`, `Value`).
#![no_implicit_prelude]

extern crate customop;
extern crate std;

use customop::{Descriptor, OpError, TensorMut, TensorRef, custom_op};

#[allow(dead_code)]
struct Result;
#[allow(dead_code)]
struct Vec;
#[allow(dead_code)]
struct Option;
#[allow(dead_code)]
struct Value;

#[derive(Descriptor, Clone, Copy)]
#[descriptor(name = "ui::Gain")]
pub struct Gain {
    pub k: f32,
}

#[custom_op(name = "ui::hygienic")]
pub fn hygienic(
    #[external] gain: &Gain,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
    #[attr] label: &str,
) -> std::result::Result<(), OpError> {
    let _ = label;
    for (o, v) in std::iter::Iterator::zip(y.as_mut_slice().iter_mut(), x.as_slice()) {
        *o = gain.k * v;
    }
    std::result::Result::Ok(())
}

pub fn run() {
    std::assert_eq!(hygienic::NAME, "ui::hygienic");
    std::assert_eq!(
        hygienic::schema_string(),
        "ui::hygienic(Tensor gain, Tensor x, *, str label) -> Tensor"
    );
}
