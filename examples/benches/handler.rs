//! The generated handler's per-call cost (stage check, count/dtype/rank/shape checks, unpacking
//! and validating the 56-byte external, building the views), measured by calling it with a
//! synthetic XLA call frame, against calling the kernel function directly with ready views and
//! an already-unpacked descriptor.
//!
//! Run: `cargo bench -p customop-examples --bench handler`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use customop::__private::ffi::abi::*;
use customop::Descriptor;
use customop::{TensorMut, TensorRef};
use customop_example_kernels as k;
use std::hint::black_box;
use std::ptr::{null, null_mut};

fn buffer(dtype: u32, data: *mut u8, dims: &mut [i64]) -> XLA_FFI_Buffer {
    XLA_FFI_Buffer {
        struct_size: size_of::<XLA_FFI_Buffer>(),
        extension_start: null_mut(),
        dtype: dtype as i32,
        data: data.cast(),
        rank: dims.len() as i64,
        dims: dims.as_mut_ptr(),
    }
}

fn bench(c: &mut Criterion) {
    let blob = k::Blob {
        gain: 1.5,
        bias: -2,
        seed: 7,
        tag: [1; 16],
    };
    let mut packed = blob.pack();
    let mut x: Vec<f32> = (0..9).map(|i| i as f32 * 0.25).collect();
    let mut y = [0i8; 3];
    let (mut d_blob, mut d_x, mut d_y) = ([56i64], [3i64, 3], [3i64]);
    let mut b_blob = buffer(6, packed.as_mut_ptr(), &mut d_blob);
    let mut b_x = buffer(11, x.as_mut_ptr().cast(), &mut d_x);
    let mut b_y = buffer(2, y.as_mut_ptr().cast(), &mut d_y);
    let mut arg_types = [XLA_FFI_ARG_TYPE_BUFFER; 2];
    let mut args: [*mut core::ffi::c_void; 2] = [(&raw mut b_blob).cast(), (&raw mut b_x).cast()];
    let mut ret_types = [XLA_FFI_RET_TYPE_BUFFER; 1];
    let mut rets: [*mut core::ffi::c_void; 1] = [(&raw mut b_y).cast()];
    let mut frame = XLA_FFI_CallFrame {
        struct_size: XLA_FFI_CallFrame_STRUCT_SIZE,
        extension_start: null_mut(),
        api: null(),
        ctx: null_mut(),
        stage: XLA_FFI_EXECUTION_STAGE_EXECUTE,
        args: XLA_FFI_Args {
            struct_size: size_of::<XLA_FFI_Args>(),
            extension_start: null_mut(),
            size: 2,
            types: arg_types.as_mut_ptr(),
            args: args.as_mut_ptr(),
        },
        rets: XLA_FFI_Rets {
            struct_size: size_of::<XLA_FFI_Rets>(),
            extension_start: null_mut(),
            size: 1,
            types: ret_types.as_mut_ptr(),
            rets: rets.as_mut_ptr(),
        },
        attrs: XLA_FFI_Attrs {
            struct_size: size_of::<XLA_FFI_Attrs>(),
            extension_start: null_mut(),
            size: 0,
            types: null_mut(),
            names: null_mut(),
            attrs: null_mut(),
        },
        future: null_mut(),
    };
    // The handler writes through the frame's pointers: check once that it worked.
    // SAFETY: `frame` is a complete typed-FFI call frame whose pointers stay valid while the
    // handler runs (every buffer and array above outlives the benchmark).
    let err = unsafe {
        k::custom_op_external::customop_handler_my_custom_library_custom_op_external(&mut frame)
    };
    assert!(err.is_null());
    let mut direct = [0i8; 3];
    k::custom_op_external(
        &blob,
        TensorRef::new(&x, &[3, 3]).unwrap(),
        TensorMut::new(&mut direct, &[3]).unwrap(),
    )
    .unwrap();
    // SAFETY: `y` is only read here, after the handler call returned.
    assert_eq!(unsafe { core::ptr::read_volatile(&raw const y) }, direct);

    let mut g = c.benchmark_group("seed-op-call");
    g.bench_function("generated handler (synthetic frame)", |b| {
        b.iter(|| {
            // SAFETY: as above: the frame and everything it points at outlive the call.
            black_box(unsafe {
                k::custom_op_external::customop_handler_my_custom_library_custom_op_external(
                    black_box(&mut frame),
                )
            })
        })
    });
    let dims_x = [3i64, 3];
    let dims_y = [3i64];
    g.bench_function("kernel called directly", |b| {
        b.iter(|| {
            let xv = TensorRef::<f32, 2>::new(black_box(&x), &dims_x).unwrap();
            let yv = TensorMut::new(&mut direct, &dims_y).unwrap();
            black_box(k::custom_op_external(black_box(&blob), xv, yv)).unwrap();
        })
    });
    g.finish();
}

/// A 4 KiB external read in place (`#[external(borrow)]`, `table_dot`) against unpacked into a
/// copy (`#[external]`, `table_dot_copy`): the same kernel, the same frame, called through
/// `customop_call` (which builds the frame the same way for both).
fn bench_table(c: &mut Criterion) {
    let mut table = k::Table4k {
        scale: 0.5,
        len: 1022,
        values: [0.0; 1022],
    };
    for (i, v) in table.values.iter_mut().enumerate() {
        *v = i as f32 * 0.001;
    }
    let mut packed = table.pack();
    assert_eq!(packed.len(), 24 + 4096);
    let mut x: Vec<f32> = (0..2 * 16).map(|i| i as f32).collect();
    let mut y = [0f32; 2];
    let (dims_t, dims_x, dims_y) = ([packed.len() as i64], [2i64, 16], [2i64]);
    let args = [
        customop::c_abi::CallTensor {
            dtype: 6,
            data: packed.as_mut_ptr().cast(),
            rank: 1,
            dims: dims_t.as_ptr(),
        },
        customop::c_abi::CallTensor {
            dtype: 11,
            data: x.as_mut_ptr().cast(),
            rank: 2,
            dims: dims_x.as_ptr(),
        },
    ];
    let rets = [customop::c_abi::CallTensor {
        dtype: 11,
        data: y.as_mut_ptr().cast(),
        rank: 1,
        dims: dims_y.as_ptr(),
    }];
    type Handler = unsafe extern "C" fn(*mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error;
    let call = |h: Handler| {
        // SAFETY: the tensors point at live buffers of their stated types and shapes (the
        // packed table, x, y), which outlive the benchmark; no attributes, no message buffer.
        unsafe {
            customop::c_abi::customop_call(
                Some(h),
                args.as_ptr(),
                2,
                rets.as_ptr(),
                1,
                null(),
                0,
                null_mut(),
                0,
            )
        }
    };
    let borrow: Handler = k::table_dot::customop_handler_example_table_dot;
    let copy: Handler = k::table_dot_copy::customop_handler_example_table_dot_copy;
    assert_eq!(call(borrow), 0);
    // SAFETY: read after the call returned.
    let by_borrow = unsafe { core::ptr::read_volatile(&raw const y) };
    assert_eq!(call(copy), 0);
    // SAFETY: as above.
    assert_eq!(unsafe { core::ptr::read_volatile(&raw const y) }, by_borrow);
    let mut g = c.benchmark_group("4KiB-external");
    g.bench_function("borrowed in place (#[external(borrow)])", |b| {
        b.iter(|| black_box(call(black_box(borrow))))
    });
    g.bench_function("unpacked copy (#[external])", |b| {
        b.iter(|| black_box(call(black_box(copy))))
    });
    g.finish();
}

criterion_group!(handler, bench, bench_table);
criterion_main!(handler);
