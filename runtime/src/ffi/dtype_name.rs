//! Element types in messages by name: customop's own (`f32`), and XLA FFI's others (`s1`, a
//! token) with their code, never a bare number where a name exists.

use crate::types::ElementType;

/// The name of the XLA FFI data type `code`, for messages.
pub(super) fn element_name(code: i32) -> String {
    if let Some(e) = u32::try_from(code)
        .ok()
        .and_then(ElementType::from_xla_code)
    {
        return e.to_string();
    }
    match OTHER_XLA_TYPES.iter().find(|(c, _)| *c == code) {
        Some((_, name)) => format!("{name} (XLA dtype {code}, which customop does not take)"),
        None => format!("XLA dtype {code}"),
    }
}

/// The names of XLA FFI's element types customop takes no tensor of (the other codes of its C
/// API's `XLA_FFI_DataType`), for messages: a wrong dtype says `s4`, not only a number.
const OTHER_XLA_TYPES: [(i32, &str); 4] = [(0, "invalid"), (17, "token"), (30, "s1"), (31, "u1")];

#[cfg(test)]
mod element_name_tests {
    use super::*;

    #[test]
    fn every_code_has_a_name() {
        assert_eq!(element_name(11), "f32");
        assert_eq!(
            element_name(30),
            "s1 (XLA dtype 30, which customop does not take)"
        );
        assert_eq!(element_name(99), "XLA dtype 99");
        // Every code of XLA_FFI_DataType (0 to 33 but 13 and 14, which are XLA's tuple and
        // opaque types, not FFI data types): customop's types and the table cover each once.
        for code in (0..=33).filter(|c| ![13, 14].contains(c)) {
            let ours = u32::try_from(code)
                .ok()
                .and_then(ElementType::from_xla_code)
                .is_some();
            let other = OTHER_XLA_TYPES.iter().filter(|(c, _)| *c == code).count();
            assert_eq!(usize::from(ours) + other, 1, "code {code}");
        }
    }
}
