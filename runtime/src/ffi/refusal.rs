//! Why a handler refused a call: one named code per check, in every message the handler
//! returns to XLA (`custom op `ns::op` [wrong_dtype]: ...`) and on the [`OpError`].

use core::fmt;

/// One check of the handler layer that a call can fail. [`Refusal::name`] is the stable code
/// that the message carries in brackets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// The frame is not one this runtime can read: a struct smaller than the ABI's, or an API
    /// table of another major version.
    BadFrame,
    /// Fewer or more operands or results than the schema says.
    WrongCount,
    /// An argument or result index beyond what XLA passed.
    NoSuchBuffer,
    /// An argument or result that is not a buffer.
    NotABuffer,
    /// A buffer of another element type than the schema's.
    WrongDtype,
    /// A buffer of another rank than the schema's.
    WrongRank,
    /// A negative dimension, or a shape whose element count overflows.
    BadShape,
    /// An output whose shape is not what its shape rule gives.
    WrongShape,
    /// A buffer with elements but a null data pointer.
    NullData,
    /// A buffer not aligned for its element type.
    Misaligned,
    /// An output that overlaps an input buffer.
    Overlap,
    /// A result handed out twice.
    TakenTwice,
    /// More than 64 results.
    TooManyResults,
    /// Descriptor bytes that do not unpack (the descriptor error's kind follows in the message).
    BadDescriptor,
    /// An attribute the schema names that the call does not carry.
    MissingAttribute,
    /// An attribute of another type than the schema's.
    WrongAttributeType,
    /// An attribute whose value is malformed (not UTF-8, a misaligned array).
    BadAttribute,
    /// The handler's binding and the op's schema disagree (a bug, not a bad call).
    BadBinding,
    /// The kernel returned an error.
    KernelError,
    /// The kernel panicked.
    KernelPanic,
}

impl Refusal {
    /// Every refusal, in declaration order.
    pub const ALL: [Refusal; 20] = [
        Refusal::BadFrame,
        Refusal::WrongCount,
        Refusal::NoSuchBuffer,
        Refusal::NotABuffer,
        Refusal::WrongDtype,
        Refusal::WrongRank,
        Refusal::BadShape,
        Refusal::WrongShape,
        Refusal::NullData,
        Refusal::Misaligned,
        Refusal::Overlap,
        Refusal::TakenTwice,
        Refusal::TooManyResults,
        Refusal::BadDescriptor,
        Refusal::MissingAttribute,
        Refusal::WrongAttributeType,
        Refusal::BadAttribute,
        Refusal::BadBinding,
        Refusal::KernelError,
        Refusal::KernelPanic,
    ];

    /// The stable snake_case code, as in the messages.
    pub const fn name(self) -> &'static str {
        match self {
            Refusal::BadFrame => "bad_frame",
            Refusal::WrongCount => "wrong_count",
            Refusal::NoSuchBuffer => "no_such_buffer",
            Refusal::NotABuffer => "not_a_buffer",
            Refusal::WrongDtype => "wrong_dtype",
            Refusal::WrongRank => "wrong_rank",
            Refusal::BadShape => "bad_shape",
            Refusal::WrongShape => "wrong_shape",
            Refusal::NullData => "null_data",
            Refusal::Misaligned => "misaligned",
            Refusal::Overlap => "overlap",
            Refusal::TakenTwice => "taken_twice",
            Refusal::TooManyResults => "too_many_results",
            Refusal::BadDescriptor => "bad_descriptor",
            Refusal::MissingAttribute => "missing_attribute",
            Refusal::WrongAttributeType => "wrong_attribute_type",
            Refusal::BadAttribute => "bad_attribute",
            Refusal::BadBinding => "bad_binding",
            Refusal::KernelError => "kernel_error",
            Refusal::KernelPanic => "kernel_panic",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for r in Refusal::ALL {
            assert!(seen.insert(r.name()), "{r:?}");
            assert!(r.name().chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
    }
}
