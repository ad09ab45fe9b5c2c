//! Descriptors shared by the descriptor tests and the fuzzer: every field kind.

#![allow(dead_code)]

use customop::prelude::*;

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "my_lib::Blob")]
pub struct Blob {
    pub gain: f32,
    pub bias: i32,
    pub seed: u64,
    pub tag: [u8; 16],
}

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[repr(u8)]
pub enum Mode {
    Fast = 0,
    Exact = 1,
}

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[repr(i32)]
pub enum Signed {
    Minus = -2,
    Plus = 7,
}

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
pub struct Inner {
    pub flag: bool,
    pub scale: f64,
}

/// Every fixed field kind, with padding between them.
#[derive(Descriptor, Clone, Debug, PartialEq)]
pub struct Everything {
    pub a: bool,
    pub b: i8,
    pub c: i16,
    pub d: i32,
    pub e: i64,
    pub f: u8,
    pub g: u16,
    pub h: u32,
    pub i: u64,
    pub j: f32,
    pub k: f64,
    pub mode: Mode,
    pub signed: Signed,
    pub inner: Inner,
    pub grid: [[i16; 3]; 2],
    pub inners: [Inner; 2],
}

/// Tails after the fixed part.
#[derive(Descriptor, Clone, Debug, PartialEq)]
pub struct Table {
    pub id: u16,
    pub offsets: Vec<u64>,
    pub label: String,
    pub modes: Vec<Mode>,
}

pub fn blob() -> Blob {
    Blob {
        gain: 1.5,
        bias: -3,
        seed: 0x0102_0304_0506_0708,
        tag: *b"customop-tag-16b",
    }
}

pub fn everything() -> Everything {
    Everything {
        a: true,
        b: -8,
        c: -1600,
        d: 32_000_000,
        e: -64_000_000_000,
        f: 200,
        g: 60_000,
        h: 4_000_000_000,
        i: u64::MAX - 1,
        j: -0.25,
        k: 1.0e300,
        mode: Mode::Exact,
        signed: Signed::Minus,
        inner: Inner {
            flag: true,
            scale: -2.5,
        },
        grid: [[1, -2, 3], [-4, 5, -6]],
        inners: [
            Inner {
                flag: false,
                scale: 0.5,
            },
            Inner {
                flag: true,
                scale: 8.0,
            },
        ],
    }
}

pub fn table() -> Table {
    Table {
        id: 7,
        offsets: vec![1, 2, 3],
        label: "héllo".into(),
        modes: vec![Mode::Fast, Mode::Exact],
    }
}
