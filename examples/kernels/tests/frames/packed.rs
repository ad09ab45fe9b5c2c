//! Packed sub-byte tensors through the handler, with fabricated XLA call frames: XLA's packing
//! read and written as it is, an output's spare bits zero, and the handler's refusals (another
//! element type, an output over an input) before the kernel runs.

use super::support::*;
use customop::Refusal;
use customop_example_kernels::low_bit as lb;

const S4: i32 = 21;

fn ints(b: &Buf) -> Vec<i32> {
    b.bytes
        .get()
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn xlas_packing_is_read_as_it_is() {
    let h: Handler = lb::unpack_int::customop_handler_example_unpack_int;
    // int4 [1, 2, 3, -1, -8] as jaxlib packs it.
    let mut f = Frame::new(
        vec![buf(S4, &[5], &[0x21, 0xf3, 0x08])],
        vec![zeros(S32, &[5], 4)],
    );
    f.call(h).unwrap();
    assert_eq!(ints(&f.rets[0]), vec![1, 2, 3, -1, -8]);
}

#[test]
fn outputs_are_packed_with_spare_bits_zero() {
    let h: Handler = lb::pack_i4::customop_handler_example_pack_i4;
    let x: Vec<u8> = [7i32, -8, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut f = Frame::new(vec![buf(S32, &[3], &x)], vec![buf(S4, &[3], &[0xFF, 0xFF])]);
    f.call(h).unwrap();
    // 7, -8 (0x8), 9 wraps to -7 (0x9); the last byte's high bits zero.
    assert_eq!(f.rets[0].bytes.get(), &[0x87, 0x09]);
}

#[test]
fn another_type_or_an_overlap_is_refused() {
    let h: Handler = lb::unpack_int::customop_handler_example_unpack_int;
    let f = Frame::new(vec![buf(S8, &[2], &[1, 2])], vec![zeros(S32, &[2], 4)]);
    refused(f, h, Refusal::WrongDtype, "got i8");
    let p: Handler = lb::pack_i4::customop_handler_example_pack_i4;
    let mut f = Frame::new(vec![buf(S32, &[4], &[0; 16])], vec![zeros(S4, &[4], 1)]);
    f.aliased.push((0, 0, 0));
    refused(f, p, Refusal::Overlap, "overlaps input buffer");
}

#[test]
fn a_shape_that_spans_more_bytes_than_memory_is_refused() {
    // 2^62 f32 elements are 2^64 bytes: the byte count would wrap; refused before any view.
    let h: Handler = customop_example_kernels::checked_sqrt::customop_handler_example_checked_sqrt;
    let f = Frame::new(
        vec![buf(F32, &[1 << 62], &[0; 8])],
        vec![zeros(F32, &[1], 4)],
    );
    refused(f, h, Refusal::BadShape, "spans more bytes than memory");
}
