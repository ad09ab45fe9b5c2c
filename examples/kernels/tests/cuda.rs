//! The CUDA handlers on the host, without a GPU: fabricated call frames of CUDA calls (a
//! stream from the API table) against the stand-in driver (`tests/cuda-standin`), which
//! records module loads, launches (grid, block, the argument bytes) and copies. Device
//! pointers are host addresses there, so the external's bytes are really copied and checked.
//! What a kernel computes on a GPU is `scripts/gpu-check.sh`'s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use customop_example_kernels as k;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use support::*;

/// The stand-in driver, built once and named in `CUSTOMOP_CUDA_DRIVER` before any CUDA call;
/// its log functions. Each test holds the guard: the log is the process's.
struct Standin {
    log: unsafe extern "C" fn() -> *const core::ffi::c_char,
    reset: unsafe extern "C" fn(),
}

fn standin() -> (MutexGuard<'static, ()>, &'static Standin) {
    static LOCK: Mutex<()> = Mutex::new(());
    static LIB: OnceLock<Standin> = OnceLock::new();
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let s = LIB.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let so = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libcuda_standin.so");
        let status = std::process::Command::new("cc")
            .args([
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o",
            ])
            .arg(&so)
            .arg(root.join("tests/cuda-standin/cuda_standin.c"))
            .arg("-lpthread")
            .status()
            .expect("cc runs");
        assert!(status.success(), "the stand-in driver compiles");
        // SAFETY: set while every other test waits on LOCK, before any CUDA call reads it.
        unsafe { std::env::set_var(customop::cuda::DRIVER_VAR, &so) };
        // SAFETY: the stand-in has no initialisers; the same library the runtime loads.
        let lib = Box::leak(Box::new(unsafe { libloading::Library::new(&so) }.unwrap()));
        // SAFETY: the stand-in's two test functions, with these signatures.
        unsafe {
            Standin {
                log: *lib.get(b"cuda_standin_log\0").unwrap(),
                reset: *lib.get(b"cuda_standin_reset\0").unwrap(),
            }
        }
    });
    // SAFETY: clears the stand-in's log (no arguments).
    unsafe { (s.reset)() };
    // SAFETY: the failures a previous test injected are cleared under LOCK.
    unsafe { std::env::remove_var("CUDA_STANDIN_FAIL") };
    (guard, s)
}

impl Standin {
    fn lines(&self) -> Vec<String> {
        // SAFETY: a NUL-terminated string owned by the stand-in, read before its next call.
        let log = unsafe { std::ffi::CStr::from_ptr((self.log)()) };
        log.to_string_lossy().lines().map(String::from).collect()
    }
}

fn cuda_seed() -> Handler {
    k::custom_op_external::customop_cuda_handler_my_custom_library_custom_op_external
}

/// A CUDA call of the seed op on `stream`: the packed blob (gain 2, bias -1) and x of 3x4.
fn seed_frame(stream: usize) -> Frame {
    let mut f = Frame::new(
        vec![buf(U8, &[56], &seed_blob()), f32s(&[3, 4], &[1.0; 12])],
        vec![zeros(S8, &[3], 1)],
    );
    f.stream = Some(stream);
    f
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The seed kernel's parameters as `cuda/seed.cu` declares them: two pointers, two int64_t,
/// a float and an int32_t, at C's offsets (0, 8, 16, 24, 32, 36: 40 bytes).
fn seed_args(x: u64, y: u64, rows: i64, cols: i64, gain: f32, bias: i32) -> String {
    let mut b = Vec::new();
    b.extend(x.to_le_bytes());
    b.extend(y.to_le_bytes());
    b.extend(rows.to_le_bytes());
    b.extend(cols.to_le_bytes());
    b.extend(gain.to_le_bytes());
    b.extend(bias.to_le_bytes());
    hex(&b)
}

fn fatbin_size() -> usize {
    k::cuda::SEED_IMAGE.bytes().len()
}

#[test]
fn the_seed_op_checks_its_external_then_launches_once_per_call_on_the_calls_stream() {
    let (_g, s) = standin();
    // A stream (so a context) no other test uses: the module is loaded here first.
    let mut f = seed_frame(0x5100);
    let (blob, x, y) = (
        f.args[0].bytes.ptr() as u64,
        f.args[1].bytes.ptr() as u64,
        f.rets[0].bytes.ptr() as u64,
    );
    f.call(cuda_seed()).unwrap();
    f.call(cuda_seed()).unwrap();
    let lines = s.lines();
    // The stand-in numbers modules in load order across the process.
    let module = lines[2]
        .split_once(" module=")
        .map(|(_, m)| m.to_string())
        .unwrap_or_default();
    let launch = format!(
        "launch name=customop_seed_rows module={module} grid=1,1,1 block=128,1,1 shared=0 \
         stream=0x5100 args={}",
        seed_args(x, y, 3, 4, 2.0, -1)
    );
    let copy = format!("dtoh stream=0x5100 src={blob:#x} bytes=56");
    // Each call copies the external and waits for the copy, then launches; the module is
    // loaded into the stream's context once.
    assert_eq!(
        lines,
        [
            copy.clone(),
            "sync stream=0x5100".into(),
            format!(
                "load ctx=0x5100 kind=fatbin bytes={} module={module}",
                fatbin_size()
            ),
            format!("function module={module} name=customop_seed_rows found=1"),
            launch.clone(),
            copy,
            "sync stream=0x5100".into(),
            launch,
        ]
    );
    // The output is the kernel's to write: the host wrote nothing into device memory.
    assert_eq!(f.rets[0].bytes.get(), [0, 0, 0]);
}

#[test]
fn another_context_loads_the_module_again_and_large_inputs_get_more_blocks() {
    let (_g, s) = standin();
    let mut f = Frame::new(
        vec![buf(U8, &[56], &seed_blob()), f32s(&[300, 1], &[0.5; 300])],
        vec![zeros(S8, &[300], 1)],
    );
    f.stream = Some(0x7000);
    f.call(cuda_seed()).unwrap();
    let lines = s.lines();
    assert!(
        lines[2].starts_with("load ctx=0x7000 kind=fatbin"),
        "{lines:?}"
    );
    // 300 rows in blocks of 128 threads: 3 blocks.
    let launch = lines.iter().find(|l| l.starts_with("launch")).unwrap();
    assert!(launch.contains(" grid=3,1,1 block=128,1,1 "), "{launch}");
}

#[test]
fn the_image_is_machine_code_for_sm80_and_sm90_and_no_ptx() {
    let image = k::cuda::SEED_IMAGE.bytes();
    assert_eq!(k::cuda::SEED_IMAGE.kind(), Ok("fatbin"));
    assert_eq!(image[..4], 0xBA55_ED50u32.to_le_bytes());
    assert_eq!(image.as_ptr() as usize % 8, 0, "embedded 8-byte aligned");
    // Each fatbin entry: kind u16 (1 PTX, 2 ELF) at its start, the architecture at +28.
    let mut at = 16;
    let mut entries = Vec::new();
    while at + 32 <= image.len() {
        let kind = u16::from_le_bytes([image[at], image[at + 1]]);
        let header = u32::from_le_bytes(image[at + 4..at + 8].try_into().unwrap()) as usize;
        let size = u64::from_le_bytes(image[at + 8..at + 16].try_into().unwrap()) as usize;
        let arch = u32::from_le_bytes(image[at + 28..at + 32].try_into().unwrap());
        entries.push((kind, arch));
        at += header + size;
    }
    entries.sort();
    assert_eq!(entries, [(2, 80), (2, 90)], "ELF for sm_80 and sm_90 only");
}

#[test]
fn bad_external_bytes_are_refused_after_the_copy_and_nothing_launches() {
    let (_g, s) = standin();
    let mut f = seed_frame(0x5000);
    let mut bad = seed_blob();
    bad[0] = b'X';
    f.args[0] = buf(U8, &[56], &bad);
    let e = f.call(cuda_seed()).unwrap_err();
    assert_eq!(e.code, 3, "{}", e.message);
    assert!(e.message.contains("[bad_descriptor]") && e.message.contains("bad_magic"));
    let lines = s.lines();
    assert!(lines.iter().any(|l| l.starts_with("dtoh")), "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("launch")), "{lines:?}");
}

#[test]
fn a_wrong_dtype_shape_or_count_is_refused_before_the_device_is_touched() {
    // Every buffer is checked before an external's bytes are copied.
    let (_g, s) = standin();
    let cases: [(Frame, &str); 3] = [
        {
            let mut f = seed_frame(0x5000);
            f.args[1] = zeros(F64, &[3, 4], 8);
            (f, "[wrong_dtype]")
        },
        {
            let mut f = seed_frame(0x5000);
            f.rets[0] = zeros(S8, &[4], 1);
            (f, "[wrong_shape]")
        },
        {
            let mut f = seed_frame(0x5000);
            f.args.pop();
            (f, "[wrong_count]")
        },
    ];
    for (mut f, code) in cases {
        let e = f.call(cuda_seed()).unwrap_err();
        assert!(e.message.contains(code), "{code}: {}", e.message);
    }
    assert_eq!(s.lines(), Vec::<String>::new());
}

#[test]
fn a_failing_driver_call_is_cuda_failed_with_cudas_name_for_it() {
    let (_g, s) = standin();
    for (fail, needle) in [
        (
            "cuLaunchKernel:719",
            "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED (719)",
        ),
        (
            "cuMemcpyDtoHAsync_v2:700",
            "cuMemcpyDtoHAsync failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)",
        ),
        (
            "cuStreamSynchronize:999",
            "cuStreamSynchronize failed: CUDA_ERROR_UNKNOWN (999)",
        ),
    ] {
        // SAFETY: under the stand-in's lock; the stand-in reads it at each call.
        unsafe { std::env::set_var("CUDA_STANDIN_FAIL", fail) };
        let e = seed_frame(0x5000).call(cuda_seed()).unwrap_err();
        assert_eq!(e.code, 13, "{}", e.message);
        assert!(e.message.contains("[cuda_failed]"), "{}", e.message);
        assert!(e.message.contains(needle), "{}", e.message);
    }
    assert!(
        !s.lines().iter().any(|l| l.starts_with("launch")),
        "{:?}",
        s.lines()
    );
}

#[test]
fn a_module_the_driver_refuses_is_refused_and_loaded_again_next_time() {
    let (_g, s) = standin();
    // SAFETY: under the stand-in's lock.
    unsafe { std::env::set_var("CUDA_STANDIN_FAIL", "cuModuleLoadData:209") };
    let e = seed_frame(0x9000).call(cuda_seed()).unwrap_err();
    assert!(
        e.message
            .contains("cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209)"),
        "{}",
        e.message
    );
    // SAFETY: as above.
    unsafe { std::env::remove_var("CUDA_STANDIN_FAIL") };
    seed_frame(0x9000).call(cuda_seed()).unwrap();
    let loads = s.lines().iter().filter(|l| l.starts_with("load ")).count();
    assert_eq!(loads, 1, "{:?}", s.lines());
}

#[test]
fn a_frame_without_a_stream_is_no_cuda() {
    let (_g, s) = standin();
    let mut f = seed_frame(0x5000);
    f.stream = None;
    let e = f.call(cuda_seed()).unwrap_err();
    assert_eq!(e.code, 9, "{}", e.message);
    assert!(
        e.message.contains("[no_cuda]") && e.message.contains("gives no stream"),
        "{}",
        e.message
    );
    assert_eq!(s.lines(), Vec::<String>::new());
}

#[test]
fn the_manifest_names_the_cuda_handler_beside_the_host_one() {
    let m: serde_json::Value = serde_json::from_str(&customop::registry::manifest_json()).unwrap();
    let ops = m["ops"].as_array().unwrap();
    let seed = ops
        .iter()
        .find(|o| o["name"] == "my_custom_library::custom_op_external")
        .unwrap();
    assert_eq!(
        seed["cuda_handler_symbol"],
        "customop_cuda_handler_my_custom_library_custom_op_external"
    );
    let without = ops
        .iter()
        .find(|o| o["name"] == "example::rms_norm_t")
        .unwrap();
    assert!(without["cuda_handler_symbol"].is_null());
}

const BF16: i32 = 16;

fn rms_frame(dtype: i32, elem: usize, stream: usize, backward: bool) -> Frame {
    let dims = [2, 3, 5];
    let mut args = vec![zeros(dtype, &dims, elem)];
    if backward {
        args.push(zeros(dtype, &dims, elem));
    }
    let mut f = Frame::new(args, vec![zeros(dtype, &dims, elem)]).attr(
        "eps",
        AttrValue::Scalar(F32, 1e-5f32.to_le_bytes().to_vec()),
    );
    f.stream = Some(stream);
    f
}

#[test]
fn a_generic_op_launches_the_kernel_of_the_element_type_xla_passed() {
    let (_g, s) = standin();
    let fwd: Handler = k::any_rank::rms_norm_nd::customop_cuda_handler_example_rms_norm_nd;
    let bwd: Handler = k::any_rank::rms_norm_nd_bwd::customop_cuda_handler_example_rms_norm_nd_bwd;
    let mut f = rms_frame(F32, 4, 0x6100, false);
    let (x, y) = (f.args[0].bytes.ptr() as u64, f.rets[0].bytes.ptr() as u64);
    f.call(fwd).unwrap();
    let mut b = rms_frame(BF16, 2, 0x6100, true);
    let (bx, bdy, bdx) = (
        b.args[0].bytes.ptr() as u64,
        b.args[1].bytes.ptr() as u64,
        b.rets[0].bytes.ptr() as u64,
    );
    b.call(bwd).unwrap();
    let launches: Vec<String> = s
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("launch"))
        .map(|l| l.split_once(" module=").unwrap().1.to_string())
        .map(|l| l.split_once(' ').unwrap().1.to_string())
        .collect();
    let mut fwd_args = Vec::new();
    fwd_args.extend(x.to_le_bytes());
    fwd_args.extend(y.to_le_bytes());
    fwd_args.extend(5i64.to_le_bytes());
    fwd_args.extend(1e-5f32.to_le_bytes());
    let mut bwd_args = Vec::new();
    for p in [bx, bdy, bdx] {
        bwd_args.extend(p.to_le_bytes());
    }
    bwd_args.extend(5i64.to_le_bytes());
    bwd_args.extend(1e-5f32.to_le_bytes());
    // One block a row (2 * 3 rows) of 256 threads.
    assert_eq!(
        launches,
        [
            format!(
                "grid=6,1,1 block=256,1,1 shared=0 stream=0x6100 args={}",
                hex(&fwd_args)
            ),
            format!(
                "grid=6,1,1 block=256,1,1 shared=0 stream=0x6100 args={}",
                hex(&bwd_args)
            ),
        ]
    );
    let names: Vec<String> = s
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("function"))
        .collect();
    assert!(
        names[0].ends_with("name=customop_rms_norm_f32 found=1"),
        "{names:?}"
    );
    assert!(
        names[1].ends_with("name=customop_rms_norm_bwd_bf16 found=1"),
        "{names:?}"
    );
    // A type outside `dtypes(...)` is refused before anything is launched.
    let mut bad = rms_frame(S32, 4, 0x6100, false);
    let e = bad.call(fwd).unwrap_err();
    assert!(e.message.contains("[wrong_dtype]"), "{}", e.message);
    let after = s.lines().iter().filter(|l| l.starts_with("launch")).count();
    assert_eq!(after, 2);
}

#[test]
fn every_kernel_the_host_sides_name_is_in_its_image() {
    let (_g, s) = standin();
    // SAFETY: under the stand-in's lock: a name not in the image is then CUDA_ERROR_NOT_FOUND.
    unsafe { std::env::set_var("CUDA_STANDIN_STRICT_NAMES", "1") };
    let fwd: Handler = k::any_rank::rms_norm_nd::customop_cuda_handler_example_rms_norm_nd;
    let bwd: Handler = k::any_rank::rms_norm_nd_bwd::customop_cuda_handler_example_rms_norm_nd_bwd;
    for (dtype, elem) in [(F32, 4), (F64, 8), (BF16, 2), (10, 2)] {
        rms_frame(dtype, elem, 0x6200, false).call(fwd).unwrap();
        rms_frame(dtype, elem, 0x6200, true).call(bwd).unwrap();
    }
    seed_frame(0x6200).call(cuda_seed()).unwrap();
    // SAFETY: as above.
    unsafe { std::env::remove_var("CUDA_STANDIN_STRICT_NAMES") };
    let found = s
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("function") && l.ends_with("found=1"))
        .count();
    assert_eq!(found, 9, "{:?}", s.lines());
}

#[test]
fn a_tensor_updated_in_place_is_copied_on_the_stream_only_when_xla_did_not_alias_it() {
    let (_g, s) = standin();
    let add: Handler = k::in_place::myadd_out::customop_cuda_handler_example_myadd_out;
    let frame = |aliased: Vec<(usize, usize, usize)>| {
        let mut f = Frame::new(
            vec![
                f32s(&[6], &[1.0; 6]),
                f32s(&[6], &[2.0; 6]),
                f32s(&[6], &[7.0; 6]),
            ],
            vec![zeros(F32, &[6], 4)],
        );
        f.aliased = aliased;
        f.stream = Some(0x6300);
        f
    };
    // Aliased (one buffer): nothing copied, the kernel writes the operand's buffer.
    let mut one = frame(vec![(0, 2, 0)]);
    let out = one.args[2].bytes.ptr() as u64;
    one.call(add).unwrap();
    let lines = s.lines();
    assert!(!lines.iter().any(|l| l.starts_with("dtod")), "{lines:?}");
    let launch = lines.iter().find(|l| l.starts_with("launch")).unwrap();
    assert!(launch.contains(&hex(&out.to_le_bytes())), "{launch}");
    // A separate result: the input copied into it on the stream, then the launch on it.
    // SAFETY: the stand-in's log is this test's (LOCK held).
    unsafe { (s.reset)() };
    let mut two = frame(Vec::new());
    let (from, to) = (
        two.args[2].bytes.ptr() as u64,
        two.rets[0].bytes.ptr() as u64,
    );
    two.call(add).unwrap();
    let lines = s.lines();
    assert_eq!(
        lines[0],
        format!("dtod stream=0x6300 dst={to:#x} src={from:#x} bytes=24")
    );
    assert!(
        lines[1].starts_with("launch name=customop_myadd_out"),
        "{lines:?}"
    );
    assert!(lines[1].contains(&hex(&to.to_le_bytes())), "{lines:?}");
    assert_eq!(
        two.rets[0].bytes.get(),
        two.args[2].bytes.get(),
        "the input's values"
    );
    // A result inside another input is refused before any copy.
    // SAFETY: as above.
    unsafe { (s.reset)() };
    let e = frame(vec![(0, 0, 4)]).call(add).unwrap_err();
    assert!(e.message.contains("[overlap]"), "{}", e.message);
    assert_eq!(s.lines(), Vec::<String>::new());
}
