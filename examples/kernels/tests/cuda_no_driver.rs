//! A CUDA call on a machine with no usable driver is refused by name (`[no_cuda]`), never a
//! crash: one child process a case (the driver is loaded once a process), each calling the
//! seed op's CUDA handler with a fabricated frame.
//! - no library at all: `CUSTOMOP_CUDA_DRIVER` names a file that does not exist;
//! - a driver whose `cuInit` finds no GPU: the stand-in with `cuInit` failing (100).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::Command;
use support::*;

const CASE: &str = "CUSTOMOP_TEST_NO_DRIVER_CASE";

fn child() {
    let mut f = Frame::new(
        vec![buf(U8, &[56], &seed_blob()), f32s(&[3, 4], &[1.0; 12])],
        vec![zeros(S8, &[3], 1)],
    );
    f.stream = Some(0x5000);
    let handler: Handler = customop_example_kernels::custom_op_external::customop_cuda_handler_my_custom_library_custom_op_external;
    let e = f.call(handler).unwrap_err();
    // Twice: the refusal is remembered, not a crash the second time either.
    let again = f.call(handler).unwrap_err();
    assert_eq!(e, again);
    println!("code={} message={}", e.code, e.message);
}

fn run(case: &str, driver: &std::path::Path, fail: Option<&str>) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(CASE, case)
        .env(customop::cuda::DRIVER_VAR, driver)
        .env_remove("CUDA_STANDIN_FAIL");
    if let Some(f) = fail {
        cmd.env("CUDA_STANDIN_FAIL", f);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{case}: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn main() {
    if std::env::var_os(CASE).is_some() {
        return child();
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let missing = tmp.join("no-such-dir/libcuda.so.1");
    let out = run("missing", &missing, None);
    assert!(out.contains("code=9 "), "{out}");
    assert!(out.contains("[no_cuda]"), "{out}");
    assert!(out.contains("could not be loaded"), "{out}");
    println!("no driver library: {}", out.trim());

    let so = tmp.join("libcuda_standin_nodev.so");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = Command::new("cc")
        .args(["-std=c11", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(root.join("tests/cuda-standin/cuda_standin.c"))
        .arg("-lpthread")
        .status()
        .unwrap();
    assert!(status.success());
    let out = run("no-device", &so, Some("cuInit:100"));
    assert!(out.contains("[no_cuda]"), "{out}");
    assert!(
        out.contains("has no usable GPU: CUDA_ERROR_NO_DEVICE (100)"),
        "{out}"
    );
    println!("cuInit finds no GPU: {}", out.trim());
    println!("test result: ok. 2 passed; 0 failed; 0 ignored");
}
