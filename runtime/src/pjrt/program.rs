//! A program to compile, and what the runner reads of its entry function `@main` before
//! compiling: each argument's type, its `customop.external` annotation and its Shardy
//! sharding, each result's type and sharding, and the device mesh (read by `signature.rs`
//! over a real tokenizer). The runner checks inputs against this and, after compiling, against
//! the parameters of the executable the plugin built, and feeds externals by the name their
//! annotation carries.

use super::error::RunError;
use super::signature::{Param, Signature};

/// StableHLO to compile: text (its signature read from it) or bytecode (a portable artifact,
/// compiled as is; its inputs are then checked against the compiled executable's parameters).
#[derive(Clone, Debug)]
pub struct Program {
    pub(super) code: Vec<u8>,
    pub(super) signature: Option<Signature>,
}

impl Program {
    /// A program from StableHLO (or any MLIR the plugin reads) text; its `@main` signature
    /// is read now.
    pub fn text(text: &str) -> Result<Program, RunError> {
        let signature = Signature::parse(text)?;
        Ok(Program {
            code: text.as_bytes().to_vec(),
            signature: Some(signature),
        })
    }

    /// A program from MLIR bytecode (`Module::to_bytecode`, a StableHLO portable artifact).
    /// Its signature is not read (that takes MLIR and VHLO): its inputs are given in order
    /// ([`Executable::run`](super::Executable::run)) and checked against the parameters of the
    /// executable the plugin compiled (element type and dimensions); externals cannot be
    /// given by name.
    pub fn bytecode(bytes: &[u8]) -> Program {
        Program {
            code: bytes.to_vec(),
            signature: None,
        }
    }

    /// The module of a serialized `jax.export.Exported` (`exported.serialize()`, the file JAX
    /// writes to serve a model), compiled as [`Program::bytecode`]; `None` when `bytes` is not
    /// one. Read without JAX, every offset checked against the bytes (fuzzed).
    pub fn jax_export(bytes: &[u8]) -> Option<Program> {
        super::jax_export::jax_export_module(bytes).map(Program::bytecode)
    }

    /// A program from a file's bytes, whatever its form: MLIR bytecode (a portable artifact),
    /// a serialized `jax.export`, else StableHLO text (its signature read).
    pub fn load(bytes: &[u8]) -> Result<Program, RunError> {
        if bytes.starts_with(super::jax_export::BYTECODE) {
            return Ok(Program::bytecode(bytes));
        }
        if let Some(p) = Program::jax_export(bytes) {
            return Ok(p);
        }
        let text = std::str::from_utf8(bytes).map_err(|_| {
            RunError::Program(
                "neither MLIR text, MLIR bytecode nor a serialized `jax.export`".into(),
            )
        })?;
        Program::text(text)
    }

    /// A program from MLIR bytecode with the signature of its `@main` (read from the same
    /// program's text, say), so that externals are fed by name and programs over a mesh are
    /// split. The signature is checked for consistency (parameters numbered in order, a
    /// sharding per result, mesh axes of positive size), and inputs are still checked against
    /// the compiled executable's parameters where the plugin reports them.
    ///
    /// # Safety
    /// `signature` must be the program's own: the runner feeds externals, splits arguments and
    /// assembles results as it says, and where the plugin does not report the compiled
    /// parameters, nothing else stands between a wrong signature and XLA reading a buffer of
    /// another size or type.
    ///
    /// Safe code cannot call it:
    /// ```compile_fail,E0133
    /// # let text = "func.func @main() {}";
    /// let sig = customop::pjrt::Signature::parse(text).unwrap();
    /// let p = customop::pjrt::Program::bytecode_with_signature(b"", sig);
    /// ```
    pub unsafe fn bytecode_with_signature(
        bytes: &[u8],
        signature: Signature,
    ) -> Result<Program, RunError> {
        signature.check()?;
        Ok(Program {
            code: bytes.to_vec(),
            signature: Some(signature),
        })
    }

    /// A module built with customop's builder.
    #[cfg(feature = "mlir")]
    pub fn module(module: &crate::lower::Module) -> Result<Program, RunError> {
        let text = module
            .to_text()
            .map_err(|e| RunError::Program(e.to_string()))?;
        Program::text(&text)
    }

    /// The signature read from the program, if any.
    pub fn signature(&self) -> Option<&Signature> {
        self.signature.as_ref()
    }

    /// The StableHLO version a portable artifact was written for (the producer its bytecode
    /// names, `StableHLO_v1.18.0`), or none for text and other bytecode.
    pub fn stablehlo_version(&self) -> Option<[i64; 3]> {
        bytecode_stablehlo_version(&self.code)
    }
}

/// The version in the producer of MLIR bytecode `code` (magic `ML\xefR`, the bytecode
/// version as a prefix varint, then the producer, NUL-terminated), if it is
/// `StableHLO_v<a>.<b>.<c>`.
pub(super) fn bytecode_stablehlo_version(code: &[u8]) -> Option<[i64; 3]> {
    let rest = code.strip_prefix(b"ML\xefR")?;
    // A prefix varint: the first byte's trailing zeros say how many more bytes follow.
    let first = *rest.first()?;
    let len = if first == 0 {
        9
    } else {
        first.trailing_zeros() as usize + 1
    };
    let rest = rest.get(len..)?;
    let end = rest.iter().take(64).position(|&b| b == 0)?;
    let producer = std::str::from_utf8(&rest[..end]).ok()?;
    let v = producer.strip_prefix("StableHLO_v")?;
    let parts: Vec<i64> = v
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    parts.try_into().ok()
}

impl Signature {
    /// The argument fed by external `name`.
    pub fn external(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| {
            p.external
                .as_ref()
                .is_some_and(|e| e.name.as_deref() == Some(name))
        })
    }

    /// For inputs that do not match this signature, the refusal a generated handler gives the
    /// same mismatch when a runtime passes it on unchecked (as jaxlib does): `WrongCount`,
    /// then for the first argument that differs `WrongDtype`, `WrongRank`, or `WrongShape`
    /// (`BadDescriptor` for an external whose bytes are not the size its annotation says). `None`
    /// when they match.
    pub fn refusal_for(&self, inputs: &[super::HostTensor]) -> Option<crate::Refusal> {
        use crate::Refusal;
        if self.params.len() != inputs.len() {
            return Some(Refusal::WrongCount);
        }
        self.params.iter().zip(inputs).find_map(|(p, a)| {
            if p.ty.element() != a.element() {
                Some(Refusal::WrongDtype)
            } else if p.ty.rank() != a.dims().len() {
                Some(Refusal::WrongRank)
            } else if p.ty.shape() != a.dims() {
                Some(if p.external.is_some() {
                    Refusal::BadDescriptor
                } else {
                    Refusal::WrongShape
                })
            } else if p
                .external
                .as_ref()
                .is_some_and(|e| e.size != a.bytes().len())
            {
                // The program's argument type and its annotation disagree on the size.
                Some(Refusal::BadDescriptor)
            } else {
                None
            }
        })
    }

    /// The number of devices the mesh has (1 without a mesh). A mesh of more than
    /// [`MAX_MESH_DEVICES`](super::MAX_MESH_DEVICES) devices (refused by [`Signature::parse`]; possible only in a
    /// signature built by hand) counts as `i64::MAX`, more than any client has.
    pub fn mesh_devices(&self) -> i64 {
        self.checked_mesh_devices().unwrap_or(i64::MAX).max(1)
    }
}

#[cfg(test)]
#[path = "signature_tests.rs"]
pub(super) mod tests;

#[cfg(test)]
mod version_tests {
    use super::bytecode_stablehlo_version as v;

    #[test]
    fn a_portable_artifacts_version_is_read_from_its_producer() {
        // The first bytes of a jax 0.12 `jax.export` module.
        assert_eq!(
            v(b"ML\xefR\rStableHLO_v1.18.0\x00\x01\x19\x05"),
            Some([1, 18, 0])
        );
        // A two-byte bytecode version (a prefix varint whose first byte ends in 10).
        assert_eq!(v(b"ML\xefR\x02\x01StableHLO_v1.13.3\x00"), Some([1, 13, 3]));
        for other in [
            &b"module {}"[..],
            b"ML\xefR\rMLIR22.0.0\x00",
            b"ML\xefR\rStableHLO_v1.18\x00",
            b"ML\xefR\rStableHLO_v1.18.0",
            b"ML\xefR",
        ] {
            assert_eq!(v(other), None, "{other:?}");
        }
    }
}
