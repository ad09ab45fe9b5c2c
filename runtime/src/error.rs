//! Errors a kernel or the handler layer returns: [`OpError`] with its XLA [`ErrorCode`], and
//! the [`Refusal`] that names which check of the handler layer refused a call. A leaf module:
//! it depends on nothing else in the crate but the descriptor error it converts from.

use core::fmt;

/// What a kernel returns when it fails: the message reaches XLA as the error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError {
    message: String,
    code: ErrorCode,
    refusal: Option<Refusal>,
}

/// XLA error codes a kernel can return (`XLA_FFI_Error_Code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `INVALID_ARGUMENT`.
    InvalidArgument,
    /// `FAILED_PRECONDITION`.
    FailedPrecondition,
    /// `OUT_OF_RANGE`.
    OutOfRange,
    /// `INTERNAL`.
    Internal,
    /// `UNIMPLEMENTED`.
    Unimplemented,
}

impl ErrorCode {
    /// The `XLA_FFI_Error_Code` value.
    pub fn xla_code(self) -> i32 {
        match self {
            ErrorCode::InvalidArgument => 3,
            ErrorCode::FailedPrecondition => 9,
            ErrorCode::OutOfRange => 11,
            ErrorCode::Unimplemented => 12,
            ErrorCode::Internal => 13,
        }
    }
}

impl OpError {
    /// An `INTERNAL` error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        OpError {
            message: message.into(),
            code: ErrorCode::Internal,
            refusal: None,
        }
    }

    /// An `INVALID_ARGUMENT` error with this message.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        OpError {
            message: message.into(),
            code: ErrorCode::InvalidArgument,
            refusal: None,
        }
    }

    /// The same error with another code.
    pub fn with_code(mut self, code: ErrorCode) -> Self {
        self.code = code;
        self
    }

    /// Which check of the handler layer made this error (`None` for an error a kernel made
    /// itself, until the handler wraps it as [`Refusal::KernelError`](crate::Refusal)).
    pub fn refusal(&self) -> Option<Refusal> {
        self.refusal
    }

    /// The same error, marked as made by `refusal`.
    pub(crate) fn with_refusal(mut self, refusal: Refusal) -> Self {
        self.refusal = Some(refusal);
        self
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {}

impl From<crate::descriptor::DescriptorError> for OpError {
    fn from(e: crate::descriptor::DescriptorError) -> Self {
        OpError::invalid_argument(e.to_string())
    }
}

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
    /// An output that overlaps an input buffer or another result.
    Overlap,
    /// A `bool` tensor holding a byte other than 0 or 1.
    BadBool,
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
    /// An attribute the schema does not name (a misspelt or extra one), as XLA's own binding
    /// refuses it.
    UnknownAttribute,
    /// The handler's binding and the op's schema disagree (a bug, not a bad call).
    BadBinding,
    /// The kernel returned an error.
    KernelError,
    /// The kernel panicked.
    KernelPanic,
    /// The op's `#[state]` could not be built (its constructor's error).
    BadState,
    /// A CUDA call where there is no CUDA: no driver library, no usable GPU, or no stream in
    /// the call.
    NoCuda,
    /// A CUDA driver call failed (a module load, a launch, a copy): the call and CUDA's error
    /// name follow.
    CudaFailed,
}

impl Refusal {
    /// The refusal a handler's error message names: the `[code]` after `custom op `...``, as
    /// the handler layer writes it (`custom op `ns::op` [bad_descriptor]: ...`), wherever the
    /// message travelled (an XLA or PJRT error, a Python exception).
    pub fn in_message(message: &str) -> Option<Refusal> {
        let start = message.find("custom op `")?;
        let rest = &message[start..];
        let open = rest.find("` [")? + 3;
        let close = rest[open..].find(']')? + open;
        let name = &rest[open..close];
        Refusal::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Every refusal, in declaration order.
    pub const ALL: [Refusal; 25] = [
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
        Refusal::BadBool,
        Refusal::TakenTwice,
        Refusal::TooManyResults,
        Refusal::BadDescriptor,
        Refusal::MissingAttribute,
        Refusal::WrongAttributeType,
        Refusal::BadAttribute,
        Refusal::UnknownAttribute,
        Refusal::BadBinding,
        Refusal::KernelError,
        Refusal::KernelPanic,
        Refusal::BadState,
        Refusal::NoCuda,
        Refusal::CudaFailed,
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
            Refusal::BadBool => "bad_bool",
            Refusal::TakenTwice => "taken_twice",
            Refusal::TooManyResults => "too_many_results",
            Refusal::BadDescriptor => "bad_descriptor",
            Refusal::MissingAttribute => "missing_attribute",
            Refusal::WrongAttributeType => "wrong_attribute_type",
            Refusal::BadAttribute => "bad_attribute",
            Refusal::UnknownAttribute => "unknown_attribute",
            Refusal::BadBinding => "bad_binding",
            Refusal::KernelError => "kernel_error",
            Refusal::KernelPanic => "kernel_panic",
            Refusal::BadState => "bad_state",
            Refusal::NoCuda => "no_cuda",
            Refusal::CudaFailed => "cuda_failed",
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

    /// The book's table of refusal codes (`book/src/reference/errors.md`, the table whose
    /// header starts `| code |`) lists exactly `Refusal::ALL`, in its order, each row's
    /// example naming its own code: a new refusal fails here until the book has its row.
    #[test]
    fn the_book_lists_every_refusal_and_nothing_else() {
        const BOOK: &str = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../book/src/reference/errors.md"
        ));
        let mut lines = BOOK.lines().skip_while(|l| !l.starts_with("| code |"));
        assert!(lines.next().is_some(), "the book has no `| code |` table");
        let rows: Vec<Vec<&str>> = lines
            .skip(1)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.trim()
                    .trim_matches('|')
                    .split('|')
                    .map(str::trim)
                    .collect()
            })
            .collect();
        let codes: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
        let all: Vec<&str> = Refusal::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(
            codes, all,
            "the book's refusal codes, in Refusal::ALL's order"
        );
        for (r, row) in Refusal::ALL.into_iter().zip(&rows) {
            assert_eq!(row.len(), 4, "{r}: code, when, example, XLA code");
            match r {
                Refusal::KernelError | Refusal::KernelPanic | Refusal::BadState => {}
                // No CUDA is the machine's state, not the call's; a driver failure is internal.
                Refusal::NoCuda => assert_eq!(row[3], "`FAILED_PRECONDITION`", "{r}"),
                Refusal::CudaFailed => assert_eq!(row[3], "`INTERNAL`", "{r}"),
                _ => assert_eq!(
                    row[3], "`INVALID_ARGUMENT`",
                    "{r}: the handler's own checks"
                ),
            }
            assert!(
                row[2].contains(&format!("[{r}]")),
                "{r}: its example message carries `[{r}]`: {:?}",
                row[2]
            );
        }
    }

    #[test]
    fn a_refusal_is_read_back_from_a_message_wherever_it_went() {
        for r in Refusal::ALL {
            let m = format!("INVALID_ARGUMENT: custom op `ns::op` [{r}]: something");
            assert_eq!(Refusal::in_message(&m), Some(r));
        }
        assert_eq!(Refusal::in_message("custom op `a` [no_such_code]: x"), None);
        assert_eq!(Refusal::in_message("custom op `a` without a code"), None);
        assert_eq!(
            Refusal::in_message("[bad_descriptor] outside a handler message"),
            None
        );
    }
}
