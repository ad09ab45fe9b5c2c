//! The C kernel example on XLA: its `struct params` as an external, the C function doing the
//! work, its error code an XLA error.

use super::*;

/// The C kernel (`examples/c-kernel`): a module built with its generated lowering takes the
/// `struct params` as an external, and XLA runs the cdylib's handler, which passes the C
/// function a pointer into XLA's buffer. Results against arithmetic done here; the C
/// function's error code comes back as an XLA error.
#[test]
fn the_c_kernel_runs_on_xla_with_the_c_function_doing_the_work() {
    use customop_example_c_kernel::{Params, c, scale_rows};
    let x_ty = TensorType::new(ElementType::F32, [3, 5]).unwrap();
    let mut m = Module::new();
    let mut f = m.entry("main", [x_ty]).unwrap();
    let x = f.arg(0).unwrap();
    let p = f.external::<Params>("params").unwrap();
    let y = scale_rows::call(&mut f, &p, &x).unwrap();
    f.ret(&[&y]).unwrap();
    let text = m.to_text().unwrap();
    assert!(
        text.contains("tensor<80xui8> {customop.external = {descriptor = \"c_kernel::params\""),
        "{text}"
    );
    let params = |version: u16| Params {
        flags: c::SCALE_ROWS_SKIP_ODD as u8,
        scale: 0.5,
        version,
        taps: [1.0, 2.0, 3.0, 4.0, 5.0],
        name: [b'r' as i8, b'o' as i8, b'w' as i8, b's' as i8, 0, 0, 0, 0],
        offset: -1,
    };
    let xs: Vec<f32> = (0..15).map(|i| i as f32).collect();
    let ffi = Ffi::customop_library(customop_xla::example_c_kernel());
    let out = Harness::get()
        .run_many(
            &text,
            Some(&ffi),
            &[
                vec![
                    Array::f32(&[3, 5], &xs),
                    Array::u8(&[80], &params(3).pack()),
                ],
                vec![
                    Array::f32(&[3, 5], &xs),
                    Array::u8(&[80], &params(2).pack()),
                ],
            ],
        )
        .unwrap();
    let got = out[0].as_ref().unwrap()[0].to_f32();
    let want: Vec<f32> = (0..15)
        .map(|k| {
            let (i, j) = (k / 5, k % 5);
            let v = xs[k];
            if i % 2 == 1 {
                v
            } else {
                (f64::from(v) * 0.5 * f64::from([1.0f32, 2.0, 3.0, 4.0, 5.0][j])) as f32 - 1.0
            }
        })
        .collect();
    assert_eq!(got, want);
    let err = out[1].as_ref().unwrap_err();
    assert!(
        err.message
            .contains("[kernel_error]: scale_rows: params.version is 2, the library is version 3"),
        "{err}"
    );
}
