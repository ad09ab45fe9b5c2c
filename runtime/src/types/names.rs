//! Each element type's names and codes: MLIR's, numpy's (ml_dtypes'), XLA's, and the table the
//! manifest carries for the front ends.

use super::ElementType;

impl ElementType {
    /// The MLIR type spelling: `f32`, `i8`, `ui8`, `i1`, `bf16`, `complex<f32>`, `f8E4M3FN`, ...
    pub const fn mlir_name(self) -> &'static str {
        match self {
            ElementType::Bool => "i1",
            ElementType::I8 => "i8",
            ElementType::I16 => "i16",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::U8 => "ui8",
            ElementType::U16 => "ui16",
            ElementType::U32 => "ui32",
            ElementType::U64 => "ui64",
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
            ElementType::F16 => "f16",
            ElementType::BF16 => "bf16",
            ElementType::C64 => "complex<f32>",
            ElementType::C128 => "complex<f64>",
            ElementType::F8E4M3FN => "f8E4M3FN",
            ElementType::F8E5M2 => "f8E5M2",
            ElementType::F8E4M3 => "f8E4M3",
            ElementType::F8E3M4 => "f8E3M4",
            ElementType::F8E4M3FNUZ => "f8E4M3FNUZ",
            ElementType::F8E5M2FNUZ => "f8E5M2FNUZ",
            ElementType::F8E4M3B11FNUZ => "f8E4M3B11FNUZ",
            ElementType::F8E8M0FNU => "f8E8M0FNU",
            ElementType::S4 => "i4",
            ElementType::U4 => "ui4",
            ElementType::S2 => "i2",
            ElementType::U2 => "ui2",
            ElementType::F4E2M1FN => "f4E2M1FN",
        }
    }

    /// The numpy dtype name (`float32`, `int8`, `bool`, ...): the manifest's element-type
    /// table carries it, so Python front ends need no table of their own. `bfloat16` and the
    /// `float8_*` names are `ml_dtypes`' names (numpy knows them once
    /// `ml_dtypes` is imported); torch spells every one of them alike (`torch.bfloat16`).
    pub const fn numpy_name(self) -> &'static str {
        match self {
            ElementType::Bool => "bool",
            ElementType::I8 => "int8",
            ElementType::I16 => "int16",
            ElementType::I32 => "int32",
            ElementType::I64 => "int64",
            ElementType::U8 => "uint8",
            ElementType::U16 => "uint16",
            ElementType::U32 => "uint32",
            ElementType::U64 => "uint64",
            ElementType::F32 => "float32",
            ElementType::F64 => "float64",
            ElementType::F16 => "float16",
            ElementType::BF16 => "bfloat16",
            ElementType::C64 => "complex64",
            ElementType::C128 => "complex128",
            ElementType::F8E4M3FN => "float8_e4m3fn",
            ElementType::F8E5M2 => "float8_e5m2",
            ElementType::F8E4M3 => "float8_e4m3",
            ElementType::F8E3M4 => "float8_e3m4",
            ElementType::F8E4M3FNUZ => "float8_e4m3fnuz",
            ElementType::F8E5M2FNUZ => "float8_e5m2fnuz",
            ElementType::F8E4M3B11FNUZ => "float8_e4m3b11fnuz",
            ElementType::F8E8M0FNU => "float8_e8m0fnu",
            ElementType::S4 => "int4",
            ElementType::U4 => "uint4",
            ElementType::S2 => "int2",
            ElementType::U2 => "uint2",
            ElementType::F4E2M1FN => "float4_e2m1fn",
        }
    }

    /// XLA's name of this type (`PrimitiveType`: `PRED`, `S8`, ..., `F8E4M3FN`), as the XLA
    /// FFI header (`XLA_FFI_DataType_<name>`) and the PJRT header (`PJRT_Buffer_Type_<name>`)
    /// spell their constants.
    pub const fn xla_name(self) -> &'static str {
        match self {
            ElementType::Bool => "PRED",
            ElementType::I8 => "S8",
            ElementType::I16 => "S16",
            ElementType::I32 => "S32",
            ElementType::I64 => "S64",
            ElementType::U8 => "U8",
            ElementType::U16 => "U16",
            ElementType::U32 => "U32",
            ElementType::U64 => "U64",
            ElementType::F32 => "F32",
            ElementType::F64 => "F64",
            ElementType::F16 => "F16",
            ElementType::BF16 => "BF16",
            ElementType::C64 => "C64",
            ElementType::C128 => "C128",
            ElementType::F8E4M3FN => "F8E4M3FN",
            ElementType::F8E5M2 => "F8E5M2",
            ElementType::F8E4M3 => "F8E4M3",
            ElementType::F8E3M4 => "F8E3M4",
            ElementType::F8E4M3FNUZ => "F8E4M3FNUZ",
            ElementType::F8E5M2FNUZ => "F8E5M2FNUZ",
            ElementType::F8E4M3B11FNUZ => "F8E4M3B11FNUZ",
            ElementType::F8E8M0FNU => "F8E8M0FNU",
            ElementType::S4 => "S4",
            ElementType::U4 => "U4",
            ElementType::S2 => "S2",
            ElementType::U2 => "U2",
            ElementType::F4E2M1FN => "F4E2M1FN",
        }
    }

    /// The `XLA_FFI_DataType` code of this type (from `xla/ffi/api/c_api.h`).
    pub const fn xla_code(self) -> u32 {
        match self {
            ElementType::Bool => 1,
            ElementType::I8 => 2,
            ElementType::I16 => 3,
            ElementType::I32 => 4,
            ElementType::I64 => 5,
            ElementType::U8 => 6,
            ElementType::U16 => 7,
            ElementType::U32 => 8,
            ElementType::U64 => 9,
            ElementType::F32 => 11,
            ElementType::F64 => 12,
            ElementType::F16 => 10,
            ElementType::BF16 => 16,
            ElementType::C64 => 15,
            ElementType::C128 => 18,
            ElementType::F8E4M3FN => 20,
            ElementType::F8E5M2 => 19,
            ElementType::F8E4M3 => 28,
            ElementType::F8E3M4 => 29,
            ElementType::F8E4M3FNUZ => 25,
            ElementType::F8E5M2FNUZ => 24,
            ElementType::F8E4M3B11FNUZ => 23,
            ElementType::F8E8M0FNU => 33,
            ElementType::S4 => 21,
            ElementType::U4 => 22,
            ElementType::S2 => 26,
            ElementType::U2 => 27,
            ElementType::F4E2M1FN => 32,
        }
    }

    /// The element type with the given `XLA_FFI_DataType` code, if customop supports it.
    pub fn from_xla_code(code: u32) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|t| t.xla_code() == code)
    }

    /// The kind of number: `"bool"`, `"signed"`, `"unsigned"`, `"float"` or `"complex"`.
    pub const fn kind_name(self) -> &'static str {
        if self.is_float() {
            "float"
        } else if self.is_complex() {
            "complex"
        } else if matches!(self, ElementType::Bool) {
            "bool"
        } else if self.is_unsigned() {
            "unsigned"
        } else {
            "signed"
        }
    }

    /// The manifest's element-type table: one entry per element type, with its MLIR name, XLA
    /// FFI code, numpy name, byte size and kind, for front ends in other languages.
    pub fn table_json() -> serde_json::Value {
        ElementType::ALL
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.mlir_name(),
                    "xla_code": t.xla_code(),
                    "numpy": t.numpy_name(),
                    "byte_size": t.byte_size(),
                    "bits": t.bits(),
                    "kind": t.kind_name(),
                    "differentiable": t.is_differentiable(),
                })
            })
            .collect()
    }
}
