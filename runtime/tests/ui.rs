//! Compile-time behaviour of the macros: every `tests/ui/fail` case must fail with exactly the
//! checked-in `.stderr`, and every `tests/ui/pass` case must compile and run.
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p customop --test ui`
//! and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("../tests/ui/fail/*.rs");
    t.pass("../tests/ui/pass/*.rs");
}
