//! `parallel_for` on fabricated XLA pools: one of real threads, one that runs tasks in the
//! caller, one that refuses, one that runs them only after the call returned; on a fabricated
//! torch pool that runs the ranges or fails; panics, nesting, and every region released.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::ffi::abi::*;
use core::ptr::null;
use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::AtomicI64;

/// How the fabricated pool schedules.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Threads,
    Caller,
    Refuse,
    Later,
}

static MODE: Mutex<Mode> = Mutex::new(Mode::Threads);
static DESTROYED: AtomicI64 = AtomicI64::new(0);
/// Tasks the `Later` pool holds, as addresses.
static HELD: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
/// The tests share the pool's mode: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

unsafe extern "C" fn schedule(args: *mut XLA_FFI_ThreadPool_Schedule_Args) -> *mut XLA_FFI_Error {
    // SAFETY: XLA's contract, which `Pool::start` keeps: valid arguments.
    let a = unsafe { &*args };
    let (task, data) = (a.task.unwrap(), a.data as usize);
    match *MODE.lock().unwrap() {
        Mode::Threads => {
            // SAFETY: the task and its data, run once, as XLA would.
            std::thread::spawn(move || unsafe { task(data as *mut c_void) });
        }
        // SAFETY: as above, in the caller.
        Mode::Caller => unsafe { task(data as *mut c_void) },
        Mode::Refuse => return Box::into_raw(Box::new(0u8)).cast(),
        Mode::Later => HELD.lock().unwrap().push((task as usize, data)),
    }
    null_mut()
}

unsafe extern "C" fn num_threads_4(
    args: *mut XLA_FFI_ThreadPool_NumThreads_Args,
) -> *mut XLA_FFI_Error {
    // SAFETY: valid arguments with a writable out-pointer.
    unsafe { *(*args).num_threads = 4 };
    null_mut()
}

unsafe extern "C" fn destroy_error(args: *mut XLA_FFI_Error_Destroy_Args) {
    DESTROYED.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the errors `schedule` makes are boxed bytes, destroyed once.
    drop(unsafe { Box::from_raw((*args).error.cast::<u8>()) });
}

fn api() -> XLA_FFI_Api_ThreadPool {
    XLA_FFI_Api_ThreadPool {
        head: XLA_FFI_Api {
            struct_size: size_of::<XLA_FFI_Api_ThreadPool>(),
            extension_start: null_mut(),
            api_version: XLA_FFI_Api_Version {
                struct_size: size_of::<XLA_FFI_Api_Version>(),
                extension_start: null_mut(),
                major_version: 0,
                minor_version: 5,
            },
            internal_api: null(),
            error_create: None,
        },
        error_get_details: None,
        error_destroy: Some(destroy_error),
        handler_register: None,
        stream_get: None,
        type_register: None,
        invoke_context_get: null(),
        state_set: None,
        state_get: None,
        device_memory_allocate: null(),
        device_memory_free: null(),
        thread_pool_schedule: Some(schedule),
        thread_pool_num_threads: Some(num_threads_4),
    }
}

fn frame(api: &XLA_FFI_Api_ThreadPool, ctx: *mut c_void) -> XLA_FFI_CallFrame {
    let empty = || (0i64, null_mut(), null_mut());
    let (n, t, p) = empty();
    XLA_FFI_CallFrame {
        struct_size: XLA_FFI_CallFrame_STRUCT_SIZE,
        extension_start: null_mut(),
        api: (api as *const XLA_FFI_Api_ThreadPool).cast(),
        ctx,
        stage: XLA_FFI_EXECUTION_STAGE_EXECUTE,
        args: XLA_FFI_Args {
            struct_size: XLA_FFI_Args_STRUCT_SIZE,
            extension_start: null_mut(),
            size: n,
            types: t,
            args: p,
        },
        rets: XLA_FFI_Rets {
            struct_size: XLA_FFI_Rets_STRUCT_SIZE,
            extension_start: null_mut(),
            size: n,
            types: t,
            rets: p,
        },
        attrs: XLA_FFI_Attrs {
            struct_size: XLA_FFI_Attrs_STRUCT_SIZE,
            extension_start: null_mut(),
            size: n,
            types: t,
            names: null_mut(),
            attrs: p,
        },
        future: null_mut(),
    }
}

/// Runs `f` with the fabricated pool in `mode` current.
fn with_pool<R>(mode: Mode, f: impl FnOnce() -> R) -> R {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The previous test's tasks may still be releasing their regions.
    no_region_left();
    *MODE.lock().unwrap() = mode;
    let api = api();
    let mut ctx = 0u8;
    let fr = frame(&api, (&raw mut ctx).cast());
    let pool = Pool::of_frame(&fr).expect("the table has a pool");
    let _current = Current::enter(pool);
    f()
}

/// Each index of `0..n` seen exactly once, and the threads that saw them.
fn cover(n: usize, grain: usize) -> (Vec<Range<usize>>, HashSet<std::thread::ThreadId>) {
    let seen: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    let ranges = Mutex::new(Vec::new());
    let threads = Mutex::new(HashSet::new());
    parallel_for(n, grain, |r| {
        threads.lock().unwrap().insert(std::thread::current().id());
        ranges.lock().unwrap().push(r.clone());
        for i in r {
            seen[i].fetch_add(1, Ordering::Relaxed);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    });
    assert!(
        seen.iter().all(|s| s.load(Ordering::Relaxed) == 1),
        "every index once"
    );
    (ranges.into_inner().unwrap(), threads.into_inner().unwrap())
}

/// Waits (up to 10 s) until no region is alive: every task released its reference.
fn no_region_left() {
    let t = std::time::Instant::now();
    while LIVE_REGIONS.load(Ordering::Relaxed) != 0 && t.elapsed().as_secs() < 10 {
        std::thread::yield_now();
    }
    assert_eq!(
        LIVE_REGIONS.load(Ordering::Relaxed),
        0,
        "a region was leaked"
    );
}

#[test]
fn inline_without_a_pool() {
    let (ranges, threads) = cover(1000, 10);
    assert_eq!(ranges, vec![0..1000]);
    assert_eq!(threads.len(), 1);
    assert_eq!(num_threads(), 1);
}

#[test]
fn xla_pool_threads_share_the_ranges() {
    with_pool(Mode::Threads, || {
        assert_eq!(num_threads(), 4);
        // Each range waits until a second thread has run one (or 5 s passed), so that the
        // pool's threads take part however slowly they start.
        // A pool thread's ranges also take 50 ms longer, so that the caller runs out of ranges
        // first: it must still wait for theirs before returning.
        let ids = Mutex::new(HashSet::new());
        let finished = AtomicUsize::new(0);
        let caller = std::thread::current().id();
        parallel_for(64, 1, |_| {
            ids.lock().unwrap().insert(std::thread::current().id());
            let t = std::time::Instant::now();
            while ids.lock().unwrap().len() < 2 && t.elapsed().as_secs() < 5 {
                std::thread::yield_now();
            }
            if std::thread::current().id() != caller {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            finished.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(
            finished.load(Ordering::Relaxed),
            16,
            "every range finished first"
        );
        assert!(
            ids.into_inner().unwrap().len() > 1,
            "tasks ran on the pool's threads"
        );
        let (ranges, _) = cover(1000, 10);
        // 4 threads x 4 ranges each, of 63 indices (at least the grain).
        assert_eq!(ranges.len(), 16);
        assert!(ranges.iter().all(|r| r.len() >= 10 || r.end == 1000));
        // A grain larger than n: one call, inline.
        let (ranges, _) = cover(50, 64);
        assert_eq!(ranges, vec![0..50]);
    });
    no_region_left();
}

#[test]
fn a_pool_that_runs_tasks_in_the_caller_or_refuses_them() {
    with_pool(Mode::Caller, || {
        let (ranges, threads) = cover(160, 1);
        assert_eq!(ranges.len(), 16);
        assert_eq!(threads.len(), 1);
    });
    let before = DESTROYED.load(Ordering::Relaxed);
    with_pool(Mode::Refuse, || {
        let (ranges, threads) = cover(160, 1);
        assert_eq!(ranges.len(), 16);
        assert_eq!(threads.len(), 1);
        // The refused task's reference was released at once.
        assert_eq!(LIVE_REGIONS.load(Ordering::Relaxed), 0);
    });
    assert_eq!(
        DESTROYED.load(Ordering::Relaxed) - before,
        1,
        "the refusal was destroyed"
    );
}

#[test]
fn tasks_that_start_after_the_call_returned_do_nothing() {
    let calls = AtomicUsize::new(0);
    with_pool(Mode::Later, || {
        parallel_for(160, 1, |_| {
            calls.fetch_add(1, Ordering::Relaxed);
        });
        let held: Vec<(usize, usize)> = std::mem::take(&mut *HELD.lock().unwrap());
        assert_eq!(
            calls.load(Ordering::Relaxed),
            16,
            "the caller ran every range"
        );
        assert_eq!(held.len(), 3);
        assert_eq!(
            LIVE_REGIONS.load(Ordering::Relaxed),
            1,
            "the held tasks keep the region"
        );
        for (task, data) in held {
            // SAFETY: the address of the `XLA_FFI_Task` `schedule` held, run once with its data.
            let task: XLA_FFI_Task = unsafe { core::mem::transmute(task) };
            // SAFETY: as above.
            unsafe { task(data as *mut c_void) };
        }
        assert_eq!(calls.load(Ordering::Relaxed), 16);
        assert_eq!(
            LIVE_REGIONS.load(Ordering::Relaxed),
            0,
            "the last task released it"
        );
    });
}

#[test]
fn a_panic_in_a_range_reaches_the_caller_after_every_range() {
    let ran = AtomicUsize::new(0);
    let outcome = with_pool(Mode::Threads, || {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            parallel_for(160, 1, |r| {
                ran.fetch_add(1, Ordering::Relaxed);
                assert!(!r.contains(&50), "index 50 is bad");
            })
        }));
        assert_eq!(num_threads(), 4, "the pool and the range flag are back");
        outcome
    });
    let payload = outcome.expect_err("the panic is raised again");
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(msg.contains("index 50 is bad"), "{msg}");
    assert_eq!(ran.load(Ordering::Relaxed), 16);
}

#[test]
fn nested_calls_run_inline() {
    with_pool(Mode::Threads, || {
        let inner = Mutex::new(Vec::new());
        parallel_for(8, 1, |_| {
            inner.lock().unwrap().push(num_threads());
            parallel_for(10, 1, |q| assert_eq!(q, 0..10));
        });
        assert!(inner.into_inner().unwrap().iter().all(|&n| n == 1));
        assert_eq!(num_threads(), 4, "the caller's pool is back after the call");
    });
}

/// How the fabricated `torch_parallel_for` behaves: each index on a thread of its own, joined
/// (0), or a failure without running anything (1).
static TORCH_MODE: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn fake_torch_parallel_for(
    begin: i64,
    end: i64,
    _grain: i64,
    func: TorchParallelFunc,
    ctx: *mut c_void,
) -> i32 {
    if TORCH_MODE.load(Ordering::Relaxed) == 1 {
        return 1;
    }
    let ctx = ctx as usize;
    std::thread::scope(|s| {
        for i in begin..end {
            // SAFETY: torch's contract: the function with its context, joined before return.
            s.spawn(move || unsafe { func(i, i + 1, ctx as *mut c_void) });
        }
    });
    0
}

unsafe extern "C" fn fake_torch_threads(out: *mut u32) -> i32 {
    // SAFETY: a writable u32, as torch's function is given.
    unsafe { *out = 3 };
    0
}

#[test]
fn torchs_pool_runs_the_ranges_or_leaves_them_to_the_caller() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    no_region_left();
    let _current = Current::enter(Pool::Torch {
        parallel_for: fake_torch_parallel_for,
        num_threads: fake_torch_threads,
    });
    assert_eq!(num_threads(), 3);
    for mode in [0, 1] {
        TORCH_MODE.store(mode, Ordering::Relaxed);
        let (ranges, threads) = cover(120, 1);
        assert_eq!(ranges.len(), 12, "mode {mode}");
        if mode == 0 {
            assert!(threads.len() > 1, "torch's threads ran ranges");
        } else {
            assert_eq!(threads.len(), 1, "the caller ran them all");
        }
    }
    no_region_left();
}

#[test]
fn no_pool_from_a_short_table_or_without_a_context() {
    let mut short = api();
    short.head.struct_size = size_of::<XLA_FFI_Api>();
    let mut ctx = 0u8;
    assert!(Pool::of_frame(&frame(&short, (&raw mut ctx).cast())).is_none());
    assert!(Pool::of_frame(&frame(&api(), null_mut())).is_none());
    let mut none = api();
    none.thread_pool_schedule = None;
    assert!(Pool::of_frame(&frame(&none, (&raw mut ctx).cast())).is_none());
}
