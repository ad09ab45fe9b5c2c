//! Ops split over devices by rows (`partition(...)`): `rms_norm` with a descriptor attribute, and
//! `row_scale` with two inputs split alike.

use crate::probe;
use customop::prelude::*;

/// How `rms_norm` scales.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[repr(u8)]
pub enum NormMode {
    /// `y = x / rms * scale`.
    Scale = 0,
    /// `y = x / rms * scale + shift`.
    ScaleShift = 1,
}

/// A compile-time descriptor attribute of `rms_norm`.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::NormCfg")]
pub struct NormCfg {
    /// Multiplies the normalised rows.
    pub scale: f32,
    /// Added in `ScaleShift` mode.
    pub shift: f32,
    /// The mode.
    pub mode: NormMode,
}

/// Row-wise RMS norm: `y[i, :] = x[i, :] / sqrt(mean(x[i, :]^2) + eps) * scale (+ shift)`.
/// Rows split across devices; each row needs all its columns.
#[custom_op(name = "example::rms_norm", partition(x = [rows, _]))]
pub fn rms_norm(
    x: TensorRef<'_, f32, 2>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
    #[attr] eps: f32,
    #[attr] cfg: &NormCfg,
) -> Result<(), OpError> {
    let _timed = probe::timed(x.dim(0));
    let cols = x.dim(1);
    if cols == 0 {
        return Ok(());
    }
    let out = y.as_mut_slice();
    for (i, row) in x.as_slice().chunks(cols).enumerate() {
        let ms = row.iter().map(|v| v * v).sum::<f32>() / cols as f32;
        let inv = 1.0 / (ms + eps).sqrt();
        for (j, v) in row.iter().enumerate() {
            let shift = if cfg.mode == NormMode::ScaleShift {
                cfg.shift
            } else {
                0.0
            };
            out[i * cols + j] = v * inv * cfg.scale + shift;
        }
    }
    Ok(())
}

/// `y[i, j] = x[i, j] * w[i]`: two inputs that share the factor `rows`, so on a device mesh
/// each device gets the same block of rows of both.
#[custom_op(name = "example::row_scale", partition(x = [rows, _], w = [rows]))]
pub fn row_scale(
    x: TensorRef<'_, f32, 2>,
    w: TensorRef<'_, f32, 1>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    probe::record(x.dim(0));
    if w.dim(0) != x.dim(0) {
        return Err(OpError::invalid_argument(format!(
            "row_scale: {} rows but {} weights",
            x.dim(0),
            w.dim(0)
        )));
    }
    let cols = x.dim(1);
    for ((out, row), &wi) in y
        .as_mut_slice()
        .chunks_mut(cols.max(1))
        .zip(x.as_slice().chunks(cols.max(1)))
        .zip(w.as_slice())
    {
        for (o, v) in out.iter_mut().zip(row) {
            *o = v * wi;
        }
    }
    Ok(())
}
