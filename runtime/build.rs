//! With the `mlir` feature, compiles `src/lower/print.cpp` (a buffered printer over MLIR's C++
//! API) against the same MLIR headers that mlir-sys links (`MLIR_SYS_220_PREFIX`).

fn main() {
    println!("cargo:rerun-if-changed=src/lower/print.cpp");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    if std::env::var_os("CARGO_FEATURE_MLIR").is_none() {
        return;
    }
    let prefix = std::env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    cc::Build::new()
        .cpp(true)
        .file("src/lower/print.cpp")
        .include(format!("{prefix}/include"))
        .flag("-std=c++17")
        .flag("-fno-exceptions")
        .flag("-fno-rtti")
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .warnings(false)
        .compile("customop_print");
}
