// `#[cuda(...)]`: the CUDA side's signature is the op's, with device views; what it cannot take
// yet is refused at the parameter; the attribute names one function, once.
use customop::cuda::{Cuda, DeviceMut, DeviceRef};
use customop::prelude::*;

mod gpu {
    use super::*;

    // `x` is f64 here, f32 in the op.
    pub fn wrong_dtype(
        _: &Cuda<'_>,
        _x: DeviceRef<'_, f64, 1>,
        _y: DeviceMut<'_, f32, 1>,
    ) -> Result<(), OpError> {
        Ok(())
    }

    pub fn state(_: &Cuda<'_>, _x: DeviceRef<'_, f32>) -> Result<(), OpError> {
        Ok(())
    }
}

#[custom_op(name = "ui::wrong_dtype")]
#[cuda(gpu::wrong_dtype)]
pub fn wrong_dtype(
    x: TensorRef<'_, f32, 1>,
    #[out(shape = x)] y: TensorMut<'_, f32, 1>,
) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

pub struct Window;

impl customop::state::OpState for Window {
    fn build(_: &customop::state::StateAttrs<'_, '_>) -> Result<Self, OpError> {
        Ok(Window)
    }
}

#[custom_op(name = "ui::state")]
#[cuda(gpu::state)]
pub fn state(x: TensorRef<'_, f32>, #[state] w: &Window) -> Result<(), OpError> {
    let _ = (x, w);
    Ok(())
}

#[custom_op(name = "ui::not_a_path")]
#[cuda("gpu::state")]
pub fn not_a_path(x: TensorRef<'_, f32>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

fn main() {}
