//! With feature `cuda`, compiles each `cuda/*.cu` into a fatbin in `OUT_DIR` (machine code for
//! sm_80 and sm_90, no PTX: PTX from a newer toolkit than the driver does not load) with the
//! nvcc `CUSTOMOP_NVCC` names (the set-up script installs one from PyPI's CUDA wheels).
//! Without the feature nothing is compiled and no CUDA toolkit is needed.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CUSTOMOP_NVCC");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let Some(nvcc) = std::env::var_os("CUSTOMOP_NVCC") else {
        panic!(
            "feature `cuda` compiles CUDA C: set CUSTOMOP_NVCC to an nvcc (scripts/setup.sh \
             installs one; it is target/cuda/bin/nvcc)"
        );
    };
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        panic!("cargo sets OUT_DIR for a build script");
    };
    for name in ["seed", "rms_norm", "add_out"] {
        let src = format!("cuda/{name}.cu");
        println!("cargo::rerun-if-changed={src}");
        let fatbin = out.join(format!("{name}.fatbin"));
        let status = Command::new(&nvcc)
            .args(["-fatbin", "--no-compress", "-O3", "-Werror", "all-warnings"])
            .args(["-gencode", "arch=compute_80,code=sm_80"])
            .args(["-gencode", "arch=compute_90,code=sm_90"])
            .arg("-o")
            .arg(&fatbin)
            .arg(&src)
            .status()
            .unwrap_or_else(|e| panic!("{}: {e}", PathBuf::from(&nvcc).display()));
        assert!(status.success(), "nvcc failed on {src}");
    }
}
