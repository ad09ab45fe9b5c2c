//! The ops' CUDA sides (feature `cuda`): host Rust that launches the kernels of `cuda/*.cu`,
//! compiled by the build script and embedded here.

use crate::any_rank::rows_cols;
use crate::seed::Blob;
use customop::cuda::{Args, Cuda, DeviceMut, DeviceRef, Image, Kernel, blocks};
use customop::{Element, ElementType, OpError};

/// The seed op's device code (`cuda/seed.cu`).
pub static SEED_IMAGE: Image =
    customop::cuda_image!("seed.fatbin", concat!(env!("OUT_DIR"), "/seed.fatbin"));

/// `customop_seed_rows(x, y, rows, cols, gain, bias)`: one thread a row.
pub static SEED_ROWS: Kernel = Kernel::new(&SEED_IMAGE, c"customop_seed_rows");

/// Threads a block.
const BLOCK: u32 = 128;

/// The seed op on the GPU: the checked `blob`'s gain and bias passed by value.
pub fn custom_op_external(
    cx: &Cuda<'_>,
    blob: &Blob,
    x: DeviceRef<'_, f32, 2>,
    y: DeviceMut<'_, i8>,
) -> Result<(), OpError> {
    let rows = x.dim(0);
    if rows == 0 {
        return Ok(());
    }
    let args = Args::new()
        .arg(x.ptr())
        .arg(y.ptr())
        .arg(rows as i64)
        .arg(x.dim(1) as i64)
        .arg(blob.gain)
        .arg(blob.bias);
    cx.launch(&SEED_ROWS, blocks(rows, BLOCK)?, BLOCK, 0, &args)
}

/// rms_norm and its backward (`cuda/rms_norm.cu`), one kernel pair an element type.
pub static RMS_NORM_IMAGE: Image = customop::cuda_image!(
    "rms_norm.fatbin",
    concat!(env!("OUT_DIR"), "/rms_norm.fatbin")
);

/// Threads a block of the rms_norm kernels (one block a row), as `rms_norm.cu` declares.
const RMS_BLOCK: u32 = 256;

macro_rules! rms_kernels {
    ($($fwd:ident, $bwd:ident = $f:literal, $b:literal;)*) => { $(
        static $fwd: Kernel = Kernel::new(&RMS_NORM_IMAGE, $f);
        static $bwd: Kernel = Kernel::new(&RMS_NORM_IMAGE, $b);
    )* };
}
rms_kernels! {
    RMS_F32, RMS_BWD_F32 = c"customop_rms_norm_f32", c"customop_rms_norm_bwd_f32";
    RMS_F64, RMS_BWD_F64 = c"customop_rms_norm_f64", c"customop_rms_norm_bwd_f64";
    RMS_BF16, RMS_BWD_BF16 = c"customop_rms_norm_bf16", c"customop_rms_norm_bwd_bf16";
    RMS_F16, RMS_BWD_F16 = c"customop_rms_norm_f16", c"customop_rms_norm_bwd_f16";
}

/// The (forward, backward) kernels for `T`: the op's `dtypes` list is exactly these four.
fn rms_pair<T: Element>() -> Result<(&'static Kernel, &'static Kernel), OpError> {
    match T::ELEMENT_TYPE {
        ElementType::F32 => Ok((&RMS_F32, &RMS_BWD_F32)),
        ElementType::F64 => Ok((&RMS_F64, &RMS_BWD_F64)),
        ElementType::BF16 => Ok((&RMS_BF16, &RMS_BWD_BF16)),
        ElementType::F16 => Ok((&RMS_F16, &RMS_BWD_F16)),
        other => Err(OpError::invalid_argument(format!(
            "rms_norm has no CUDA kernel for {other}"
        ))),
    }
}

/// `example::rms_norm_nd` on the GPU: a block a row.
pub fn rms_norm_nd<T: Element>(
    cx: &Cuda<'_>,
    x: DeviceRef<'_, T>,
    eps: f32,
    y: DeviceMut<'_, T>,
) -> Result<(), OpError> {
    let (rows, cols) = rows_cols(x.dims(), "rms_norm_nd")?;
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let args = Args::new()
        .arg(x.ptr())
        .arg(y.ptr())
        .arg(cols as i64)
        .arg(eps);
    cx.launch(rms_pair::<T>()?.0, blocks(rows, 1)?, RMS_BLOCK, 0, &args)
}

/// `example::rms_norm_nd_bwd` on the GPU: `d_x` from `x`, `d_y` and `eps`, a block a row.
pub fn rms_norm_nd_bwd<T: Element>(
    cx: &Cuda<'_>,
    x: DeviceRef<'_, T>,
    d_y: DeviceRef<'_, T>,
    eps: f32,
    d_x: DeviceMut<'_, T>,
) -> Result<(), OpError> {
    let (rows, cols) = crate::any_rank::rms_norm_nd_bwd_shapes(x.dims(), d_y.dims())?;
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let args = Args::new()
        .arg(x.ptr())
        .arg(d_y.ptr())
        .arg(d_x.ptr())
        .arg(cols as i64)
        .arg(eps);
    cx.launch(rms_pair::<T>()?.1, blocks(rows, 1)?, RMS_BLOCK, 0, &args)
}

/// `example::myadd_out` (`cuda/add_out.cu`): `out = a + b` into `out`, updated in place.
pub static ADD_OUT_IMAGE: Image = customop::cuda_image!(
    "add_out.fatbin",
    concat!(env!("OUT_DIR"), "/add_out.fatbin")
);

static MYADD_OUT: Kernel = Kernel::new(&ADD_OUT_IMAGE, c"customop_myadd_out");

/// `example::myadd_out` on the GPU: one thread an element.
pub fn myadd_out(
    cx: &Cuda<'_>,
    a: DeviceRef<'_, f32>,
    b: DeviceRef<'_, f32>,
    out: DeviceMut<'_, f32>,
) -> Result<(), OpError> {
    crate::in_place::myadd_out_shapes(a.dims(), b.dims(), out.dims())?;
    if a.is_empty() {
        return Ok(());
    }
    let args = Args::new()
        .arg(a.ptr())
        .arg(b.ptr())
        .arg(out.ptr())
        .arg(a.len() as i64);
    cx.launch(&MYADD_OUT, blocks(a.len(), BLOCK)?, BLOCK, 0, &args)
}
