//! Pack and unpack against the physical floor (a `memcpy` of the same bytes) and against
//! bincode (what a user would otherwise reach for), for a 32-byte and a 4 KiB payload.
//!
//! Run: `cargo bench -p customop --bench descriptor`. The figures are in the book's
//! Performance chapter.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use customop::Descriptor;
use serde::{Deserialize, Serialize};
use std::hint::black_box;

#[derive(Descriptor, Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "bench::Blob")]
pub struct Blob {
    pub gain: f32,
    pub bias: i32,
    pub seed: u64,
    pub tag: [u8; 16],
}

/// 4 KiB of fixed payload: a 16 x 32 table of offsets.
#[derive(Descriptor, Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "bench::Table4k")]
pub struct Table4k {
    pub rows: [[u64; 32]; 16],
}

/// 4 KiB as a variable-length tail.
#[derive(Descriptor, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[descriptor(name = "bench::Tail4k")]
pub struct Tail4k {
    pub offsets: Vec<u64>,
}

fn group<T>(c: &mut Criterion, name: &str, v: &T)
where
    T: Descriptor + Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let packed = v.pack();
    let bin = bincode::serialize(v).unwrap();
    assert_eq!(&T::unpack(&packed).unwrap(), v);
    assert_eq!(&bincode::deserialize::<T>(&bin).unwrap(), v);
    let mut g = c.benchmark_group(name);
    let mut out = vec![0u8; packed.len()];
    g.bench_function("memcpy (floor)", |b| {
        b.iter(|| {
            out.copy_from_slice(black_box(&packed));
            black_box(&out);
        })
    });
    g.bench_function("customop pack_into", |b| {
        b.iter(|| black_box(black_box(v).pack_into(&mut out).unwrap()))
    });
    g.bench_function("customop unpack", |b| {
        b.iter(|| black_box(T::unpack(black_box(&packed)).unwrap()))
    });
    g.bench_function("bincode serialize_into", |b| {
        let mut buf = Vec::with_capacity(bin.len());
        b.iter(|| {
            buf.clear();
            bincode::serialize_into(&mut buf, black_box(v)).unwrap();
            black_box(&buf);
        })
    });
    g.bench_function("bincode deserialize", |b| {
        b.iter(|| black_box(bincode::deserialize::<T>(black_box(&bin)).unwrap()))
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let blob = Blob {
        gain: 1.5,
        bias: -3,
        seed: 42,
        tag: *b"customop-tag-16b",
    };
    let mut rows = [[0u64; 32]; 16];
    for (i, r) in rows.iter_mut().enumerate() {
        for (j, x) in r.iter_mut().enumerate() {
            *x = (i * 32 + j) as u64 * 0x9e37_79b9;
        }
    }
    group(c, "blob-32B", &blob);
    group(c, "table-4KiB", &Table4k { rows });
    group(
        c,
        "tail-4KiB",
        &Tail4k {
            offsets: rows.iter().flatten().copied().collect(),
        },
    );
}

criterion_group!(descriptor, benches);
criterion_main!(descriptor);
