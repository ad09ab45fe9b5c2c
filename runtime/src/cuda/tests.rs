//! What the CUDA layer decides without a driver: image kinds, the parameter buffer's layout,
//! grid sizes. (The driver calls are tested against the stand-in driver:
//! examples/kernels/tests/cuda.rs.)

use super::*;

static PTX: Image = Image::new("k.ptx", b"//\n.version 8.0\n.target sm_90\n\0");
static NO_NUL: Image = Image::new("k.ptx", b".version 8.0\n");
static GARBAGE: Image = Image::new("k.bin", b"not device code");
static CUBIN: Image = Image::new("k.cubin", b"\x7fELF\x02\x01\x01");

fn fatbin(declared: u64, body: usize) -> Vec<u8> {
    let mut b = 0xBA55_ED50u32.to_le_bytes().to_vec();
    b.extend(1u16.to_le_bytes());
    b.extend(16u16.to_le_bytes());
    b.extend(declared.to_le_bytes());
    b.extend(vec![0u8; body]);
    b
}

#[test]
fn an_image_is_loaded_only_when_the_driver_would_read_it_whole() {
    assert_eq!(PTX.kind(), Ok("ptx"));
    assert_eq!(CUBIN.kind(), Ok("cubin"));
    let whole: &'static [u8] = Box::leak(fatbin(8, 8).into_boxed_slice());
    assert_eq!(Image::new("k", whole).kind(), Ok("fatbin"));
    // A fatbin whose header claims more than the bytes hold, or a size that overflows.
    for (declared, body) in [(9, 8), (u64::MAX, 8), (u64::MAX - 15, 0)] {
        let short: &'static [u8] = Box::leak(fatbin(declared, body).into_boxed_slice());
        let e = Image::new("short.fatbin", short).kind().unwrap_err();
        assert!(e.contains("`short.fatbin` is a truncated fatbin"), "{e}");
    }
    // PTX without its NUL would be read past the end.
    assert!(NO_NUL.kind().unwrap_err().contains("NUL-terminated PTX"));
    assert!(GARBAGE.kind().unwrap_err().contains("not a fatbin"));
}

#[test]
fn parameters_sit_at_their_c_offsets() {
    let a = Args::new()
        .arg(1u8)
        .arg(2u64)
        .arg(3i16)
        .arg(4.0f32)
        .arg(half::f16::ONE)
        .arg(5.0f64);
    let mut want = vec![1u8, 0, 0, 0, 0, 0, 0, 0];
    want.extend(2u64.to_le_bytes());
    want.extend(3i16.to_le_bytes());
    want.extend([0, 0]);
    want.extend(4.0f32.to_le_bytes());
    want.extend(half::f16::ONE.to_bits().to_le_bytes());
    want.extend([0; 6]);
    want.extend(5.0f64.to_le_bytes());
    assert_eq!(a.bytes(), want);
    assert_eq!(Args::new().bytes(), &[] as &[u8]);
}

#[test]
fn blocks_cover_every_item_and_refuse_a_grid_too_large() {
    assert_eq!(blocks(0, 128).unwrap(), 1);
    assert_eq!(blocks(1, 128).unwrap(), 1);
    assert_eq!(blocks(128, 128).unwrap(), 1);
    assert_eq!(blocks(129, 128).unwrap(), 2);
    assert_eq!(blocks(5, 0).unwrap(), 5);
    assert_eq!(blocks(i32::MAX as usize, 1).unwrap(), i32::MAX as u32);
    let e = blocks(i32::MAX as usize + 1, 1).unwrap_err();
    assert!(
        e.message().contains("more than a grid holds"),
        "{}",
        e.message()
    );
    assert_eq!(Dim3::from(4), Dim3([4, 1, 1]));
    assert_eq!(Dim3::from((4, 2)), Dim3([4, 2, 1]));
    assert_eq!(Dim3::from((4, 2, 3)), Dim3([4, 2, 3]));
}
