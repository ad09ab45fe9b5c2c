//! A mutation fuzzer for the generated handlers over fabricated call frames, on the stable
//! toolchain (no XLA, no MLIR).
//!
//! Starts from a valid frame for each of seven example ops (the seed op, attributes of every
//! type, a `&mut` external, an opaque result, a kernel error, a kernel panic) and mutates it:
//! operand and result counts, element types (valid and invalid codes), ranks and dimensions
//! (negative, zero, overflowing), descriptor bytes, data pointers (null, misaligned),
//! argument kinds, attributes (missing, retyped, random bytes), frame size, stage and probe.
//! Every frame stays true to XLA's contract where a real XLA would be (a buffer holds what its
//! dtype and dimensions say), so that any crash is the handler's. Each call must return: success,
//! or an error whose message names the op and a refusal code.
//!
//! `cargo test` runs it for a few seconds. A longer run:
//! `CUSTOMOP_FUZZ_SECONDS=600 cargo test --release -p customop-example-kernels --test fuzz_frames`
//! (`CUSTOMOP_FUZZ_SEED=N` replays a run).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use customop::{Descriptor, Refusal};
use customop_example_kernel_lib as kl;
use customop_example_kernels as k;
use std::time::{Duration, Instant};
use support::*;

/// xorshift64*: deterministic for a given seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Bytes per element of an XLA dtype code (8 for codes customop does not know: more than
/// enough, and never read, since the dtype check refuses them first).
fn elem_size(dtype: i32) -> usize {
    match dtype {
        1 | 2 | 6 => 1,
        3 | 7 | 10 => 2,
        4 | 8 | 11 => 4,
        _ => 8,
    }
}

fn realloc(rng: &mut Rng, b: &mut Buf) {
    let n = if b.dims.iter().any(|&d| d < 0) {
        0
    } else {
        b.dims
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d as usize))
            .unwrap_or(0)
    };
    let data = rng.bytes(n * elem_size(b.dtype));
    b.bytes = Bytes::new(&data);
}

const DTYPES: [i32; 14] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 99];
const DIMS: [i64; 8] = [-1, 0, 1, 2, 3, 5, 8, 56];

fn mutate_buf(rng: &mut Rng, b: &mut Buf) {
    match rng.below(7) {
        0 => {
            b.dtype = DTYPES[rng.below(DTYPES.len())];
            realloc(rng, b);
        }
        1 => {
            let rank = rng.below(4);
            b.dims = (0..rank).map(|_| DIMS[rng.below(DIMS.len())]).collect();
            realloc(rng, b);
        }
        2 => {
            // A shape whose element count overflows: refused before any allocation is read.
            b.dims = vec![i64::MAX, 3];
            b.bytes = Bytes::zeroed(0);
        }
        3 => {
            let mut data = b.bytes.get().to_vec();
            if !data.is_empty() {
                for _ in 0..1 + rng.below(4) {
                    let i = rng.below(data.len());
                    data[i] = rng.next() as u8;
                }
            }
            b.bytes = Bytes::new(&data);
        }
        4 => {
            b.offset = if rng.below(2) == 0 {
                None
            } else {
                Some(1 + rng.below(3))
            }
        }
        5 => b.kind = [0, 1, 2][rng.below(3)],
        _ => {
            // A descriptor-sized byte buffer of another length.
            let n = rng.below(100);
            b.dtype = 6;
            b.dims = vec![n as i64];
            b.bytes = Bytes::new(&rng.bytes(n));
        }
    }
    // A misaligned pointer stays inside the allocation: `Bytes` keeps a spare word.
}

fn mutate(rng: &mut Rng, f: &mut Frame) {
    for _ in 0..1 + rng.below(3) {
        match rng.below(10) {
            0 if !f.args.is_empty() => {
                let i = rng.below(f.args.len());
                f.args.remove(i);
            }
            1 => f.rets.push(zeros(F32, &[3], 4)),
            2 if !f.rets.is_empty() => {
                let i = rng.below(f.rets.len());
                f.rets.remove(i);
            }
            3 | 4 if !f.args.is_empty() => {
                let i = rng.below(f.args.len());
                mutate_buf(rng, &mut f.args[i]);
            }
            5 if !f.rets.is_empty() => {
                let i = rng.below(f.rets.len());
                mutate_buf(rng, &mut f.rets[i]);
            }
            6 if !f.attrs.is_empty() => {
                let i = rng.below(f.attrs.len());
                match rng.below(4) {
                    0 => {
                        f.attrs.remove(i);
                    }
                    1 => {
                        f.attrs[i].1 =
                            AttrValue::Scalar(DTYPES[rng.below(DTYPES.len())], rng.bytes(8))
                    }
                    2 => {
                        let n = rng.below(6);
                        f.attrs[i].1 =
                            AttrValue::Array(DTYPES[rng.below(DTYPES.len())], n, rng.bytes(8 * n))
                    }
                    _ => {
                        let n = rng.below(40);
                        f.attrs[i].1 = AttrValue::Str(rng.bytes(n))
                    }
                }
            }
            7 => {
                let name = [
                    "eps", "cfg", "factor", "label", "offsets", "flag", "small", "x",
                ][rng.below(8)];
                // Kinds that say nothing about the payload (none, dictionary, an unknown code).
                f.attrs
                    .push((name.to_string(), AttrValue::Other([0, 2, 5][rng.below(3)])));
            }
            8 => match rng.below(4) {
                0 => {
                    f.frame_size =
                        rng.below(size_of::<customop::__private::ffi::abi::XLA_FFI_CallFrame>())
                }
                1 => f.stage = rng.below(5) as i32,
                2 => f.probe = true,
                _ => f.api_major = 1,
            },
            _ => {}
        }
    }
}

fn seeds() -> Vec<(Handler, Frame)> {
    let blob = seed_blob();
    let cfg = k::NormCfg {
        scale: 1.0,
        shift: 0.5,
        mode: k::NormMode::ScaleShift,
    }
    .pack();
    let counter = k::Counter {
        calls: 3,
        total: 1.0,
    }
    .pack();
    let stats = k::Stats {
        mean: 1.0,
        spread: 2.0,
    }
    .pack();
    vec![
        (
            k::custom_op_external::customop_handler_my_custom_library_custom_op_external,
            Frame::new(
                vec![buf(U8, &[56], &blob), f32s(&[3, 3], &[0.5; 9])],
                vec![zeros(S8, &[3], 1)],
            ),
        ),
        (
            k::rms_norm::customop_handler_example_rms_norm,
            Frame::new(
                vec![f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0])],
                vec![zeros(F32, &[2, 2], 4)],
            )
            .attr(
                "eps",
                AttrValue::Scalar(F32, 1e-5f32.to_le_bytes().to_vec()),
            )
            .attr("cfg", AttrValue::Str(cfg)),
        ),
        (
            kl::affine::customop_handler_example_lib_affine,
            Frame::new(vec![f32s(&[2], &[1.0, 2.0])], vec![zeros(F32, &[2], 4)])
                .attr(
                    "factor",
                    AttrValue::Scalar(F64, 1.5f64.to_le_bytes().to_vec()),
                )
                .attr("label", AttrValue::Str(b"ok".to_vec()))
                .attr(
                    "offsets",
                    AttrValue::Array(
                        S64,
                        2,
                        [1i64, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ),
                )
                .attr("flag", AttrValue::Scalar(PRED, vec![1]))
                .attr("small", AttrValue::Scalar(U8, vec![3])),
        ),
        (
            k::counter_step::customop_handler_example_counter_step,
            Frame::new(
                vec![
                    buf(U8, &[counter.len() as i64], &counter),
                    f32s(&[2], &[1.0, 2.0]),
                ],
                vec![zeros(F32, &[2], 4), zeros(U8, &[counter.len() as i64], 1)],
            ),
        ),
        (
            k::apply_stats::customop_handler_example_apply_stats,
            Frame::new(
                vec![
                    buf(U8, &[stats.len() as i64], &stats),
                    f32s(&[3], &[1.0, 2.0, 3.0]),
                ],
                vec![zeros(F32, &[3], 4)],
            ),
        ),
        (
            k::make_stats::customop_handler_example_make_stats,
            Frame::new(
                vec![f32s(&[3], &[1.0, 2.0, 3.0])],
                vec![zeros(U8, &[stats.len() as i64], 1)],
            ),
        ),
        (
            k::unlucky::customop_handler_example_unlucky,
            Frame::new(vec![f32s(&[2], &[13.0, 1.0])], vec![zeros(F32, &[2], 4)]),
        ),
    ]
}

fn clone_frame(f: &Frame) -> Frame {
    let copy = |b: &Buf| Buf {
        dtype: b.dtype,
        dims: b.dims.clone(),
        bytes: Bytes::new(b.bytes.get()),
        offset: b.offset,
        kind: b.kind,
    };
    let mut g = Frame::new(
        f.args.iter().map(copy).collect(),
        f.rets.iter().map(copy).collect(),
    );
    for (n, v) in &f.attrs {
        let v = match v {
            AttrValue::Scalar(d, b) => AttrValue::Scalar(*d, b.clone()),
            AttrValue::Array(d, n, b) => AttrValue::Array(*d, *n, b.clone()),
            AttrValue::Str(b) => AttrValue::Str(b.clone()),
            AttrValue::Other(c) => AttrValue::Other(*c),
        };
        g.attrs.push((n.clone(), v));
    }
    g
}

fn main() {
    let seconds: u64 = std::env::var("CUSTOMOP_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let seed: u64 = std::env::var("CUSTOMOP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xf4a3_e5ca_11ed_0001);
    let mut rng = Rng(seed);
    let seeds = seeds();
    // Kernel panics are expected (the unlucky op); their message reaches the error, not stderr.
    std::panic::set_hook(Box::new(|_| {}));
    // Each seed frame runs as it is first: the valid ones succeed, the unlucky one panics.
    for (i, (h, f)) in seeds.iter().enumerate() {
        let r = clone_frame(f).call(*h);
        assert_eq!(r.is_ok(), i != seeds.len() - 1, "seed frame {i}: {r:?}");
    }
    let names: Vec<String> = Refusal::ALL
        .iter()
        .map(|r| format!("[{}]", r.name()))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut runs, mut ok) = (0u64, 0u64);
    let mut seen = std::collections::BTreeMap::<String, u64>::new();
    while Instant::now() < deadline {
        for _ in 0..256 {
            let (h, base) = &seeds[rng.below(seeds.len())];
            let mut f = clone_frame(base);
            mutate(&mut rng, &mut f);
            runs += 1;
            match f.call(*h) {
                Ok(_) => ok += 1,
                Err(e) => {
                    let named = names.iter().find(|n| e.message.contains(n.as_str()));
                    if !e.message.starts_with("custom op `") || named.is_none() || e.code == 0 {
                        eprintln!(
                            "fuzz: run {runs} (seed {seed}): an error without a refusal code: {e:?}"
                        );
                        std::process::exit(1);
                    }
                    if let Some(n) = named {
                        *seen.entry(n.clone()).or_default() += 1;
                    }
                }
            }
        }
    }
    println!(
        "fuzz_frames: {runs} calls in {seconds} s (seed {seed}), {ok} succeeded, the rest refused, \
         no crash; refusals seen: {seen:?}"
    );
}
