//! Builds the C library and generates its `struct params` with bindgen, adding
//! `#[derive(Descriptor)]` and `#[descriptor(name = ..., repr_c)]` through bindgen's callbacks, so
//! that the Rust type is the header's and is read in place.

use bindgen::callbacks::{AttributeInfo, DeriveInfo, ParseCallbacks};
use std::path::PathBuf;

#[derive(Debug)]
struct Descriptors;

impl ParseCallbacks for Descriptors {
    fn add_derives(&self, info: &DeriveInfo<'_>) -> Vec<String> {
        if info.name == "params" {
            vec!["customop::Descriptor".into()]
        } else {
            vec![]
        }
    }

    fn add_attributes(&self, info: &AttributeInfo<'_>) -> Vec<String> {
        if info.name == "params" {
            vec![r#"#[descriptor(name = "c_kernel::params", repr_c)]"#.into()]
        } else {
            vec![]
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=c/scale_rows.h");
    println!("cargo:rerun-if-changed=c/scale_rows.c");
    cc::Build::new()
        .file("c/scale_rows.c")
        .warnings(true)
        .compile("scale_rows");
    let bindings = bindgen::Builder::default()
        .header("c/scale_rows.h")
        .allowlist_type("params")
        .allowlist_function("scale_rows")
        .allowlist_var("SCALE_ROWS_.*")
        .derive_debug(true)
        .derive_copy(true)
        .derive_partialeq(true)
        .parse_callbacks(Box::new(Descriptors))
        .generate()
        .unwrap_or_else(|e| panic!("bindgen failed on c/scale_rows.h: {e}"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("bindings.rs");
    bindings
        .write_to_file(&out)
        .unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
