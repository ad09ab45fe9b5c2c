//! The handlers XLA registers (cdylibs and their targets), the example kernel cdylibs built
//! once per test process, and the workspace root.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A handler to register before compiling: the FFI target name and the cdylib's symbol.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// The custom call target name (`call_target_name`).
    pub name: String,
    /// The exported `extern "C"` symbol in the library.
    pub symbol: String,
}

/// A cdylib whose handlers XLA should call.
#[derive(Clone, Debug, Serialize)]
pub struct Ffi {
    /// Path of the shared library.
    pub library: PathBuf,
    /// Targets to register from it; `None` registers every op of a customop cdylib's
    /// manifest (through `python/customop/xla.py`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<Target>>,
}

impl Ffi {
    /// Every op of a customop kernel cdylib, from its manifest.
    pub fn customop_library(library: PathBuf) -> Ffi {
        Ffi {
            library,
            targets: None,
        }
    }
}

/// Builds the example kernel cdylib (`customop-example-kernels`) on its own, so that it is
/// compiled exactly as a kernel crate is, without MLIR, into `target/kernels`, and returns
/// its path. Built once per test process.
pub fn example_kernels() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| build_example_kernels(false)).clone()
}

/// [`example_kernels`] built with optimisations (`--release`), for benchmarks.
pub fn example_kernels_release() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| build_example_kernels(true)).clone()
}

/// The C-kernel example's cdylib (`customop-example-c-kernel`: a C library wrapped by a
/// custom op), built like [`example_kernels`], once per test process.
pub fn example_c_kernel() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| build_kernel_cdylib("customop-example-c-kernel", false))
        .clone()
}

fn build_example_kernels(release: bool) -> PathBuf {
    build_kernel_cdylib("customop-example-kernels", release)
}

fn build_kernel_cdylib(package: &str, release: bool) -> PathBuf {
    let root = workspace_root();
    let mut args = vec![
        "build",
        "--quiet",
        "-p",
        package,
        "--target-dir",
        "target/kernels",
    ];
    if release {
        args.push("--release");
    }
    // With a CUDA compiler at hand (scripts/test.sh sets CUSTOMOP_NVCC), the example kernels
    // are built as the test script builds them, with their CUDA sides: built without, the same
    // file would replace the library the other suites load.
    if package == "customop-example-kernels" && std::env::var_os("CUSTOMOP_NVCC").is_some() {
        args.extend(["--features", "cuda"]);
    }
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args(&args)
        .status()
        .expect("run cargo build for the example kernels");
    assert!(status.success(), "building the {package} cdylib failed");
    let profile = if release { "release" } else { "debug" };
    let lib = root.join(format!(
        "target/kernels/{profile}/lib{}.so",
        package.replace('-', "_")
    ));
    assert!(lib.exists(), "{} is missing", lib.display());
    lib
}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}
