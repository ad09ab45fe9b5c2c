//! Tensors updated in place (`#[inout]`), driven with fabricated XLA call frames: the result
//! aliased to its operand (XLA's `output_operand_aliases`) is updated without a copy; a
//! separate result buffer gets the input's values first; a result that overlaps another input
//! or only part of its own, or has another shape, is refused before the kernel runs.

use super::support::*;
use customop::Refusal;
use customop_example_kernels::in_place as ip;

fn scale() -> Handler {
    ip::scale_in_place::customop_handler_example_scale_in_place
}

fn floats(b: &Buf) -> Vec<f32> {
    b.bytes
        .get()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn frame(result: Buf) -> Frame {
    Frame::new(vec![f32s(&[4], &[1.0, 2.0, 3.0, 4.0])], vec![result]).attr(
        "factor",
        AttrValue::Scalar(F32, 2f32.to_le_bytes().to_vec()),
    )
}

#[test]
fn the_aliased_buffer_is_updated_in_place() {
    let mut f = frame(zeros(F32, &[4], 4));
    f.aliased.push((0, 0, 0));
    f.call(scale()).unwrap();
    assert_eq!(floats(&f.args[0]), vec![2.0, 4.0, 6.0, 8.0]);
    // The result buffer the test made is not the one written: XLA's aliasing was followed.
    assert_eq!(floats(&f.rets[0]), vec![0.0; 4]);
}

#[test]
fn a_separate_result_gets_the_input_first_and_the_input_is_left_alone() {
    let mut f = frame(f32s(&[4], &[9.0; 4]));
    f.call(scale()).unwrap();
    assert_eq!(floats(&f.rets[0]), vec![2.0, 4.0, 6.0, 8.0]);
    assert_eq!(floats(&f.args[0]), vec![1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn part_of_its_own_input_is_refused() {
    let mut f = Frame::new(
        vec![f32s(&[4], &[1.0, 2.0, 3.0, 4.0])],
        vec![zeros(F32, &[2], 4)],
    )
    .attr(
        "factor",
        AttrValue::Scalar(F32, 2f32.to_le_bytes().to_vec()),
    );
    f.aliased.push((0, 0, 4));
    refused(
        f,
        scale(),
        Refusal::WrongShape,
        "must have the input's shape [4]",
    );
    let mut f = frame(zeros(F32, &[4], 4));
    f.aliased.push((0, 0, 4));
    refused(
        f,
        scale(),
        Refusal::Overlap,
        "`x`, updated in place, overlaps input buffer 0",
    );
}

#[test]
fn another_inputs_buffer_is_refused() {
    // cache_write(cache, row): the cache's result aliased to the row.
    let h: Handler = ip::cache_write::customop_handler_example_cache_write;
    let mut f = Frame::new(
        vec![f32s(&[2, 2], &[0.0; 4]), f32s(&[2], &[1.0, 2.0])],
        vec![zeros(F32, &[2, 2], 4)],
    )
    .attr("at", AttrValue::Scalar(S64, 0i64.to_le_bytes().to_vec()));
    f.aliased.push((0, 1, 0));
    refused(f, h, Refusal::Overlap, "overlaps input buffer 1");
}

#[test]
fn an_array_and_a_scalar_in_place() {
    let h: Handler = ip::histogram_add::customop_handler_example_histogram_add;
    let counts = buf(
        S64,
        &[2],
        &[5i64, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    );
    let total = buf(F64, &[], &1.5f64.to_le_bytes());
    let mut f = Frame::new(
        vec![f32s(&[3], &[0.25, 0.75, 3.0]), counts, total],
        vec![zeros(S64, &[2], 8), zeros(F64, &[], 8)],
    )
    .attr("lo", AttrValue::Scalar(F32, 0f32.to_le_bytes().to_vec()))
    .attr("hi", AttrValue::Scalar(F32, 1f32.to_le_bytes().to_vec()));
    f.aliased.push((0, 1, 0));
    f.aliased.push((1, 2, 0));
    f.call(h).unwrap();
    let c: Vec<i64> = f.args[1]
        .bytes
        .get()
        .chunks(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(c, vec![6, 1]);
    assert_eq!(
        f64::from_le_bytes(f.args[2].bytes.get().try_into().unwrap()),
        2.5
    );
}

#[test]
fn a_bool_updated_in_place_is_checked_before_the_kernel_reads_it() {
    let h: Handler = ip::toggle::customop_handler_example_toggle;
    // Aliased (XLA's in-place buffer) and separate: a byte other than 0 or 1 is refused, and
    // the input is left as it was.
    for aliased in [true, false] {
        let mut f = Frame::new(
            vec![buf(PRED, &[3], &[1, 2, 0])],
            vec![zeros(PRED, &[3], 1)],
        );
        if aliased {
            f.aliased.push((0, 0, 0));
        }
        let m = refused(
            f,
            h,
            Refusal::BadBool,
            "parameter `mask`: element 1 is the byte 2, a bool is 0 or 1",
        );
        assert!(m.contains("example::toggle"), "{m}");
    }
    let mut f = Frame::new(
        vec![buf(PRED, &[3], &[1, 0, 0])],
        vec![zeros(PRED, &[3], 1)],
    );
    f.aliased.push((0, 0, 0));
    f.call(h).unwrap();
    assert_eq!(f.args[0].bytes.get(), &[0, 1, 1]);
}

#[test]
fn a_result_updated_in_place_that_overlaps_another_result_is_refused() {
    // histogram_add(x, counts, total): `total`'s result inside `counts`' result buffer.
    let h: Handler = ip::histogram_add::customop_handler_example_histogram_add;
    let counts = buf(S64, &[2], &[0u8; 16]);
    let total = buf(F64, &[], &0f64.to_le_bytes());
    let mut f = Frame::new(
        vec![f32s(&[1], &[0.5]), counts, total],
        vec![zeros(S64, &[2], 8), zeros(F64, &[], 8)],
    )
    .attr("lo", AttrValue::Scalar(F32, 0f32.to_le_bytes().to_vec()))
    .attr("hi", AttrValue::Scalar(F32, 1f32.to_le_bytes().to_vec()));
    f.aliased_results.push((1, 0, 8));
    refused(
        f,
        h,
        Refusal::Overlap,
        "`counts`, updated in place, overlaps result 1",
    );
}
