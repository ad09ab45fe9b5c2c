//! The book's element-type reference (`book/src/reference/element-types.md`) against
//! [`ElementType::ALL`]: every type has exactly one row, and each row's names, code, bits,
//! kind, derivative, Rust type, torch dtype, descriptor and attribute columns are the code's.
//! A new element type fails here until the book has its row.

use super::{ElementOf, ElementType};

const BOOK: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../book/src/reference/element-types.md"
));
/// The native torch kernels' dtype lookups, read as text (the module is behind a feature).
const TORCH_API: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/torch/api.rs"));

/// The cells of each row of the table whose header starts with `| element type |`.
fn rows() -> Vec<Vec<String>> {
    let mut lines = BOOK
        .lines()
        .skip_while(|l| !l.starts_with("| element type |"));
    let header = lines
        .next()
        .expect("the book has no `| element type |` table");
    let columns = header.matches('|').count() - 1;
    lines
        .skip(1) // |---|
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<String> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect();
            assert_eq!(cells.len(), columns, "row {l:?}");
            cells
        })
        .collect()
}

/// The first `` `...` `` of a cell.
fn code(cell: &str) -> &str {
    let start = cell
        .find('`')
        .unwrap_or_else(|| panic!("no `code` in {cell:?}"))
        + 1;
    let len = cell[start..].find('`').expect("unclosed `");
    &cell[start..start + len]
}

fn yes_no(cell: &str) -> bool {
    match cell {
        "yes" => true,
        "no" => false,
        other => panic!("expected yes or no, got {other:?}"),
    }
}

/// The Rust type each element type's row names, checked against `ElementOf`.
macro_rules! rust_types {
    ($($name:literal => $t:ty),* $(,)?) => {
        [$(($name, <$t as ElementOf>::ELEMENT_TYPE)),*]
    };
}

#[test]
fn every_element_type_has_its_row_in_the_book() {
    let rows = rows();
    let names: Vec<&str> = rows.iter().map(|r| code(&r[0])).collect();
    let all: Vec<&str> = ElementType::ALL.iter().map(|t| t.mlir_name()).collect();
    assert_eq!(
        names, all,
        "the book's element types, in ElementType::ALL's order"
    );
    for (t, r) in ElementType::ALL.into_iter().zip(&rows) {
        assert_eq!(
            code(&r[1]),
            format!("{t:?}"),
            "{t}: `ElementType::` variant"
        );
        assert_eq!(code(&r[3]), t.xla_name(), "{t}: XLA name");
        assert!(
            r[3].ends_with(&format!("({})", t.xla_code())),
            "{t}: XLA FFI code {} in {:?}",
            t.xla_code(),
            r[3]
        );
        assert_eq!(code(&r[4]), t.numpy_name(), "{t}: numpy name");
        assert_eq!(r[5], t.bits().to_string(), "{t}: bits");
        assert_eq!(r[6], t.kind_name(), "{t}: kind");
        assert_eq!(yes_no(&r[7]), t.is_differentiable(), "{t}: differentiable");
        // A field is a whole byte and not complex (descriptor/wire.rs implements `Wire` for
        // the others).
        assert_eq!(
            yes_no(&r[9]),
            !t.is_packed() && !t.is_complex(),
            "{t}: descriptor field"
        );
        // Attributes (ffi/attr): scalars of bool and the integers, f32, f64; arrays of the
        // signed integers, f32 and f64.
        use ElementType as E;
        let scalar = matches!(
            t,
            E::Bool
                | E::I8
                | E::I16
                | E::I32
                | E::I64
                | E::U8
                | E::U16
                | E::U32
                | E::U64
                | E::F32
                | E::F64
        );
        let array = matches!(t, E::I8 | E::I16 | E::I32 | E::I64 | E::F32 | E::F64);
        let want = match (scalar, array) {
            (true, true) => "scalar, array",
            (true, false) => "scalar",
            _ => "no",
        };
        assert_eq!(r[10], want, "{t}: attribute");
    }
}

#[test]
fn the_rust_types_of_the_book_are_the_element_types() {
    let named = rust_types! {
        "bool" => bool, "i8" => i8, "i16" => i16, "i32" => i32, "i64" => i64,
        "u8" => u8, "u16" => u16, "u32" => u32, "u64" => u64, "f32" => f32, "f64" => f64,
        "customop::f16" => crate::f16, "customop::bf16" => crate::bf16,
        "customop::Complex64" => crate::Complex64, "customop::Complex128" => crate::Complex128,
        "customop::F8E4M3FN" => crate::F8E4M3FN, "customop::F8E5M2" => crate::F8E5M2,
        "customop::F8E4M3" => crate::F8E4M3, "customop::F8E3M4" => crate::F8E3M4,
        "customop::F8E4M3FNUZ" => crate::F8E4M3FNUZ, "customop::F8E5M2FNUZ" => crate::F8E5M2FNUZ,
        "customop::F8E4M3B11FNUZ" => crate::F8E4M3B11FNUZ,
        "customop::F8E8M0FNU" => crate::F8E8M0FNU,
        "customop::I4" => crate::I4, "customop::U4" => crate::U4, "customop::I2" => crate::I2,
        "customop::U2" => crate::U2, "customop::F4E2M1FN" => crate::F4E2M1FN,
    };
    let rows = rows();
    for (t, r) in ElementType::ALL.into_iter().zip(&rows) {
        let (name, of) = named
            .iter()
            .find(|(name, _)| code(&r[2]) == *name)
            .unwrap_or_else(|| panic!("{t}: the book's Rust type {:?} is not in this test", r[2]));
        assert_eq!(
            *of, t,
            "{t}: the book names `{name}`, whose element type is {of}"
        );
    }
    assert_eq!(named.len(), ElementType::ALL.len());
}

#[test]
fn the_torch_column_is_what_the_native_kernels_look_up() {
    for (t, r) in ElementType::ALL.into_iter().zip(&rows()) {
        let torch = &r[8];
        if t.is_packed() {
            assert!(
                torch.contains("`torch.uint8`"),
                "{t}: torch holds packed types as bytes: {torch:?}"
            );
        } else if TORCH_API.contains(&format!("b\"aoti_torch_dtype_{}\\0\"", t.numpy_name())) {
            assert_eq!(code(torch), format!("torch.{}", t.numpy_name()), "{t}");
        } else {
            assert!(
                torch.starts_with("none"),
                "{t}: no torch dtype function is looked up for it: {torch:?}"
            );
        }
    }
    // f4E2M1FN's own torch dtype, where the shim has it.
    assert!(TORCH_API.contains("b\"aoti_torch_dtype_float4_e2m1fn_x2\\0\""));
}
