//! What `#[custom_op]` and `#[derive(Descriptor)]` must accept: every parameter kind and option,
//! generic element types, aliases, user names the companion module must not shadow, and code
//! without the prelude next to items named like the runtime's (hygiene). Each file is a module
//! of this test binary and its `run` a test here.
//!
//! They were trybuild `pass` cases; trybuild builds its cases' dependencies twice (two rustflags
//! sets), and with MLIR that took 3.9 GB of disk and minutes of CI. The `compile_fail` cases stay
//! in trybuild (`tests/ui.rs`), which then only type-checks.

use std::error::Error;

mod descriptor_every_kind;
mod descriptor_hygiene;
mod op_dtypes;
mod op_element_alias;
mod op_every_kind;
mod op_hygiene;
mod op_user_names;

#[test]
fn every_descriptor_field_kind_derives_packs_and_unpacks() {
    descriptor_every_kind::run();
}

#[test]
fn descriptor_code_compiles_without_the_prelude_next_to_shadowing_names() {
    descriptor_hygiene::run();
}

#[test]
fn one_op_for_several_element_types() -> Result<(), Box<dyn Error>> {
    op_dtypes::run()
}

#[test]
fn element_types_by_alias_and_path() -> Result<(), Box<dyn Error>> {
    op_element_alias::run()
}

#[test]
fn every_parameter_kind_and_option() -> Result<(), Box<dyn Error>> {
    op_every_kind::run()
}

#[test]
fn op_code_compiles_without_the_prelude_next_to_shadowing_names() {
    op_hygiene::run();
}

#[test]
fn companion_names_do_not_shadow_the_users() -> Result<(), Box<dyn Error>> {
    op_user_names::run()
}
