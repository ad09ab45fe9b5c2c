//! A coverage-free mutation fuzzer for `Descriptor::unpack`, on the stable toolchain.
//!
//! Starts from the checked-in seed corpus (`runtime/fuzz/corpus/descriptor/`, valid packings
//! of the fixtures plus edge cases) and applies random byte flips, insertions, deletions,
//! splices and header-field edits. For every input, `unpack` of each fixture descriptor must
//! return without panicking, and any `Ok` value must pack back to exactly the input.
//!
//! `cargo test` runs it for a few seconds. A longer run:
//! `CUSTOMOP_FUZZ_SECONDS=600 cargo test --release -p customop --test fuzz_descriptor`.
//! A failing input is written to `target/fuzz-artifacts/` and the run fails.
//! `CUSTOMOP_FUZZ_WRITE_SEEDS=1` rewrites the seed corpus from the fixtures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use customop::Descriptor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

/// xorshift64*: deterministic for a given seed, so a failing run can be replayed.
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
}

fn check_one<T: Descriptor>(input: &[u8]) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(|| T::unpack(input))) {
        Err(_) => Err(format!("{} panicked", T::NAME)),
        Ok(Ok(v)) if v.pack() != input => {
            Err(format!("{} accepted bytes that do not pack back", T::NAME))
        }
        Ok(_) => Ok(()),
    }
}

fn check(input: &[u8]) -> Result<(), String> {
    check_one::<Blob>(input)?;
    check_one::<Everything>(input)?;
    check_one::<Table>(input)
}

fn mutate(rng: &mut Rng, corpus: &[Vec<u8>], input: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        match rng.below(7) {
            0 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] ^= 1 << rng.below(8);
            }
            1 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(input.len() + 1);
                input.insert(i, rng.next() as u8);
            }
            3 if !input.is_empty() => {
                let i = rng.below(input.len());
                let n = 1 + rng.below(8).min(input.len() - i - 1);
                input.drain(i..i + n.min(input.len() - i));
            }
            4 => {
                // Splice in a piece of another corpus entry.
                let other = &corpus[rng.below(corpus.len())];
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let to = from + rng.below(other.len() - from + 1);
                    let at = rng.below(input.len() + 1);
                    input.splice(at..at, other[from..to].iter().copied());
                }
            }
            5 if input.len() >= 12 => {
                // Keep the header's payload length consistent, so the fields are reached.
                let len = (input.len().saturating_sub(24)) as u32;
                input[8..12].copy_from_slice(&len.to_le_bytes());
            }
            _ if input.len() >= 8 => {
                // An interesting 32-bit value somewhere (lengths, counts).
                let vals = [0u32, 1, 2, 0x7f, 0x80, 0xff, 0xffff, 0x7fff_ffff, u32::MAX];
                let v = vals[rng.below(vals.len())];
                let i = rng.below(input.len() - 3);
                input[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            _ => {}
        }
    }
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut t = table();
    t.offsets.clear();
    vec![
        ("blob".into(), blob().pack()),
        ("everything".into(), everything().pack()),
        ("table".into(), table().pack()),
        ("table-empty-offsets".into(), t.pack()),
        ("header-only".into(), blob().pack()[..24].to_vec()),
    ]
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/descriptor");
    if std::env::var_os("CUSTOMOP_FUZZ_WRITE_SEEDS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in seeds() {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let mut corpus: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the seed corpus {} is missing: {e}", dir.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(
        corpus.len() >= 5,
        "the seed corpus has {} entries",
        corpus.len()
    );
    for c in &corpus {
        check(c).unwrap();
    }
    let seconds: u64 = std::env::var("CUSTOMOP_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let seed: u64 = std::env::var("CUSTOMOP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_cafe_f00d_1234);
    let mut rng = Rng(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut runs, mut accepted) = (0u64, 0u64);
    // Silence the default panic message: a panic is reported below, with its input.
    std::panic::set_hook(Box::new(|_| {}));
    while Instant::now() < deadline {
        for _ in 0..256 {
            let mut input = corpus[rng.below(corpus.len())].clone();
            mutate(&mut rng, &corpus, &mut input);
            runs += 1;
            if let Err(what) = check(&input) {
                let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-artifacts");
                std::fs::create_dir_all(&out).unwrap();
                let path = out.join(format!("crash-{runs}"));
                std::fs::write(&path, &input).unwrap();
                eprintln!(
                    "fuzz: {what} on {} (saved to {})",
                    hex(&input),
                    path.display()
                );
                std::process::exit(1);
            }
            if Table::unpack(&input).is_ok() || Everything::unpack(&input).is_ok() {
                accepted += 1;
                if corpus.len() < 256 {
                    corpus.push(input);
                }
            }
        }
    }
    println!(
        "fuzz: {runs} inputs in {seconds} s (seed {seed}), {accepted} accepted and exact, no panic"
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
