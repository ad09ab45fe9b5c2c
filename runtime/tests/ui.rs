//! Compile-time behaviour of the macros: every `tests/ui/fail` case must fail with exactly the
//! checked-in `.stderr`. Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test -p customop --test ui` and read the diff.
//!
//! Only failing cases here, so trybuild type-checks and never links MLIR: what the macros must
//! accept compiles and runs as modules of the `xla` test binary (`tests/macro_cases/`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("../tests/ui/fail/*.rs");
}
