//! One parallel API for kernels: [`parallel_for`] splits `0..n` into ranges and runs them on
//! the pool of whoever called the kernel, and [`num_threads`] says how many threads that pool
//! has.
//!
//! - Under XLA (jaxlib, and the Rust runner through the PJRT plugin), the pool is XLA's intra-op
//!   pool, reached through the call frame's `XLA_FFI_ThreadPool_Schedule`: a kernel never starts
//!   threads of its own, so it does not oversubscribe the cores XLA already uses.
//! - Under torch eager (a native kernel, torch 2.10 and later), it is torch's intra-op pool
//!   (`torch_parallel_for`); on torch 2.9, inline.
//! - Anywhere else (a unit test calling the kernel, Python's numpy handlers), inline.
//!
//! On XLA's pool the caller never waits for a task that has not started: the ranges are claimed
//! one at a time from a shared counter by the calling thread and by every task it scheduled, and
//! the caller waits only for ranges another thread is running. A task that starts after all
//! ranges are claimed does nothing. So a kernel that runs on one of the pool's own threads, or a
//! pool of one thread, or a pool that runs tasks in the caller, cannot deadlock (XLA's own FFT
//! handler did, blocking on work scheduled to its pool: openxla/xla#46345). torch's
//! `parallel_for` joins every task it queued (a late one finds nothing to do), as torch's own
//! ops do. A `parallel_for` inside a range runs inline. A panic in any range is re-raised in the caller once every range has
//! finished, where the handler turns it into the call's `[kernel_panic]` refusal.

use crate::ffi::abi::{
    XLA_FFI_Api_ThreadPool, XLA_FFI_CallFrame, XLA_FFI_ThreadPool_NumThreads_Args,
    XLA_FFI_ThreadPool_Schedule_Args,
};
use crate::ffi::table::{api_table, destroy_error};
use core::cell::Cell;
use core::ffi::c_void;
use core::ops::Range;
use core::ptr::null_mut;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;

/// Ranges per thread: more than one, so that a thread that starts late or runs slower leaves
/// its share to the others.
const RANGES_PER_THREAD: usize = 4;

/// Runs `f` on ranges whose union is `0..n`, each range once, on the calling host's pool (see
/// the module docs); returns when every range has run. Each range holds at least `grain`
/// indices (except the last), so that a range is worth scheduling; with one thread, or `n <=
/// grain`, or when called inside another `parallel_for`, `f(0..n)` runs once on this thread.
///
/// A panic in `f` is raised again here, after every range has finished.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// let total = AtomicU64::new(0);
/// customop::parallel::parallel_for(1000, 64, |r| {
///     let s: u64 = r.map(|i| i as u64).sum();
///     total.fetch_add(s, Ordering::Relaxed);
/// });
/// assert_eq!(total.into_inner(), 999 * 1000 / 2);
/// ```
pub fn parallel_for<F: Fn(Range<usize>) + Sync>(n: usize, grain: usize, f: F) {
    if n == 0 {
        return;
    }
    let grain = grain.max(1);
    let pool = POOL.with(Cell::get);
    let threads = if n <= grain || IN_RANGE.with(Cell::get) {
        1
    } else {
        pool.threads()
    };
    if threads <= 1 {
        f(0..n);
        return;
    }
    let len = grain.max(n.div_ceil(threads * RANGES_PER_THREAD));
    let ranges = n.div_ceil(len);
    let body: &(dyn Fn(Range<usize>) + Sync) = &f;
    // SAFETY: only the lifetime is erased. `body` is called only for a range claimed below
    // `ranges`, and this function returns only after all `ranges` have finished (`wait`), so
    // every call happens while `f` lives; a task that starts later claims nothing and never
    // reads `body`.
    let body: *const (dyn Fn(Range<usize>) + Sync + 'static) =
        unsafe { core::mem::transmute(body as *const (dyn Fn(Range<usize>) + Sync)) };
    #[cfg(test)]
    LIVE_REGIONS.fetch_add(1, Ordering::Relaxed);
    let region = Arc::new(Region {
        n,
        len,
        ranges,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        body,
        panic: Mutex::new(None),
        caller: std::thread::current(),
    });
    {
        // Dropped on every way out of this block, unwinding included: no range can outlive `f`.
        let _finish = Finish(&region);
        pool.start(&region, (threads - 1).min(ranges - 1));
    }
    let panic = region.panic.lock().map(|mut p| p.take()).unwrap_or(None);
    if let Some(payload) = panic {
        resume_unwind(payload);
    }
}

/// Runs `f(i, chunk)` for each `chunk_len`-long chunk `i` of `data` (the last may be shorter),
/// with [`parallel_for`] over the chunks, at least `grain` chunks to a range: the safe way for
/// a kernel to write disjoint parts of an output in parallel (rows of a matrix, or one partial
/// result per block for a reduction).
///
/// ```
/// let mut rows = vec![0.0f32; 6 * 4];
/// customop::parallel::par_chunks_mut(&mut rows, 4, 1, |i, row| row.fill(i as f32));
/// assert_eq!(rows[20], 5.0);
/// ```
pub fn par_chunks_mut<T: Send, F: Fn(usize, &mut [T]) + Sync>(
    data: &mut [T],
    chunk_len: usize,
    grain: usize,
    f: F,
) {
    let chunk_len = chunk_len.max(1);
    let len = data.len();
    let chunks = len.div_ceil(chunk_len);
    let base = SendPtr(data.as_mut_ptr());
    parallel_for(chunks, grain, |r| {
        for i in r {
            let start = i * chunk_len;
            let end = (start + chunk_len).min(len);
            // SAFETY: `parallel_for` hands out each chunk index once, so the chunks made here
            // are disjoint parts of `data`, which is borrowed mutably for this whole call.
            let chunk = unsafe { core::slice::from_raw_parts_mut(base.at(start), end - start) };
            f(i, chunk);
        }
    });
}

/// `data`'s base pointer, shared by the ranges of `par_chunks_mut` (each writes its own chunks).
struct SendPtr<T>(*mut T);

impl<T> SendPtr<T> {
    fn at(&self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

// SAFETY: only used by `par_chunks_mut`, whose ranges touch disjoint chunks of a `&mut [T]`
// with `T: Send`.
unsafe impl<T: Send> Sync for SendPtr<T> {}

/// The number of threads [`parallel_for`] can use here: the pool's size under XLA or torch, 1
/// inline (and inside a `parallel_for` range).
pub fn num_threads() -> usize {
    if IN_RANGE.with(Cell::get) {
        return 1;
    }
    POOL.with(Cell::get).threads()
}

/// One `parallel_for` call's ranges, shared by the caller and its tasks.
struct Region {
    n: usize,
    len: usize,
    ranges: usize,
    /// The next range to claim.
    next: AtomicUsize,
    /// Ranges finished.
    done: AtomicUsize,
    /// The kernel's closure; called only for claimed ranges (see `parallel_for`).
    body: *const (dyn Fn(Range<usize>) + Sync),
    /// The first panic's payload.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Woken when the last range finishes.
    caller: Thread,
}

// SAFETY: `body` is `Sync` and is called (shared) only while the caller's closure lives (see
// `parallel_for`); the other fields are atomics, a mutex and a thread handle.
unsafe impl Send for Region {}
// SAFETY: as for Send.
unsafe impl Sync for Region {}

impl Region {
    /// Claims and runs ranges until none is left.
    fn drain(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.ranges {
                return;
            }
            let start = i * self.len;
            let range = start..(start + self.len).min(self.n);
            let was = IN_RANGE.with(|r| r.replace(true));
            // SAFETY: range `i` was claimed, so the caller is still waiting and the closure
            // lives (see `parallel_for`).
            let body = unsafe { &*self.body };
            let outcome = catch_unwind(AssertUnwindSafe(|| body(range)));
            IN_RANGE.with(|r| r.set(was));
            if let Err(payload) = outcome
                && let Ok(mut first) = self.panic.lock()
                && first.is_none()
            {
                *first = Some(payload);
            }
            // Release: the range's writes are seen by the caller once it sees the count.
            if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.ranges {
                self.caller.unpark();
            }
        }
    }

    /// Waits until every range has finished (all are claimed when the caller's `drain`
    /// returns, so this waits only for ranges other threads are running).
    fn wait(&self) {
        while self.done.load(Ordering::Acquire) < self.ranges {
            std::thread::park();
        }
    }
}

/// Runs what is left of a region and waits for the ranges other threads are running.
struct Finish<'r>(&'r Region);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.0.drain();
        self.0.wait();
    }
}

/// Regions alive, for the tests: each `Arc` a task holds is released.
#[cfg(test)]
static LIVE_REGIONS: AtomicUsize = AtomicUsize::new(0);

#[cfg(test)]
impl Drop for Region {
    fn drop(&mut self) {
        LIVE_REGIONS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The pool of the current kernel call.
#[derive(Clone, Copy)]
pub(crate) enum Pool {
    Inline,
    /// XLA's intra-op pool, through the call frame's API table and context.
    Xla {
        api: *const XLA_FFI_Api_ThreadPool,
        ctx: *mut c_void,
    },
    /// torch's intra-op pool.
    Torch {
        parallel_for: TorchParallelFor,
        num_threads: TorchNumThreads,
    },
}

/// `torch_parallel_for(begin, end, grain_size, func, ctx)` (torch/csrc/stable/c/shim.h, 2.10+).
pub(crate) type TorchParallelFor =
    unsafe extern "C" fn(i64, i64, i64, TorchParallelFunc, *mut c_void) -> i32;
/// `void (*)(int64_t begin, int64_t end, void* ctx)`.
pub(crate) type TorchParallelFunc = unsafe extern "C" fn(i64, i64, *mut c_void);
/// `torch_get_num_threads(uint32_t* out)` (2.10+).
pub(crate) type TorchNumThreads = unsafe extern "C" fn(*mut u32) -> i32;

thread_local! {
    static POOL: Cell<Pool> = const { Cell::new(Pool::Inline) };
    static IN_RANGE: Cell<bool> = const { Cell::new(false) };
}

impl Pool {
    /// XLA's pool, if `frame`'s API table has the thread-pool functions and the frame a
    /// context.
    pub(crate) fn of_frame(frame: &XLA_FFI_CallFrame) -> Option<Pool> {
        let t = api_table(frame)?;
        if t.thread_pool_schedule.is_none() || t.thread_pool_num_threads.is_none() {
            return None;
        }
        Some(Pool::Xla {
            api: t,
            ctx: frame.ctx.cast(),
        })
    }

    fn threads(self) -> usize {
        match self {
            Pool::Inline => 1,
            Pool::Torch { num_threads, .. } => {
                let mut n: u32 = 1;
                // SAFETY: torch's function, writing one u32.
                if unsafe { num_threads(&mut n) } != 0 {
                    return 1;
                }
                usize::try_from(n).unwrap_or(1).max(1)
            }
            Pool::Xla { api, ctx } => {
                // SAFETY: `api` was checked by `of_frame` and lives for the call this pool
                // belongs to (the pool is current only during that call).
                let t = unsafe { &*api };
                let Some(f) = t.thread_pool_num_threads else {
                    return 1;
                };
                let mut n: i64 = 0;
                let mut args = XLA_FFI_ThreadPool_NumThreads_Args {
                    struct_size: size_of::<XLA_FFI_ThreadPool_NumThreads_Args>(),
                    extension_start: null_mut(),
                    ctx,
                    num_threads: &mut n,
                };
                // SAFETY: XLA's function, with valid arguments for the call.
                let err = unsafe { f(&mut args) };
                if !err.is_null() {
                    destroy_error(t, err);
                    return 1;
                }
                usize::try_from(n).unwrap_or(1).max(1)
            }
        }
    }

    /// Starts `helpers` tasks that drain `region` (fewer if the pool refuses some: the caller
    /// drains what they leave).
    fn start(self, region: &Arc<Region>, helpers: usize) {
        match self {
            Pool::Inline => {}
            Pool::Xla { api, ctx } => {
                // SAFETY: as in `threads`.
                let t = unsafe { &*api };
                let Some(schedule) = t.thread_pool_schedule else {
                    return;
                };
                for _ in 0..helpers {
                    let data = Arc::into_raw(Arc::clone(region))
                        .cast_mut()
                        .cast::<c_void>();
                    let mut args = XLA_FFI_ThreadPool_Schedule_Args {
                        struct_size: size_of::<XLA_FFI_ThreadPool_Schedule_Args>(),
                        extension_start: null_mut(),
                        ctx,
                        task: Some(xla_task),
                        data,
                    };
                    // SAFETY: XLA's function with valid arguments; on success the task owns
                    // the reference in `data` and releases it when it runs.
                    let err = unsafe { schedule(&mut args) };
                    if !err.is_null() {
                        // SAFETY: not scheduled: the reference is still ours.
                        drop(unsafe { Arc::from_raw(data.cast::<Region>()) });
                        destroy_error(t, err);
                        return;
                    }
                }
            }
            Pool::Torch { parallel_for, .. } => {
                let helpers = i64::try_from(helpers + 1).unwrap_or(1);
                let data = Arc::as_ptr(region).cast_mut().cast::<c_void>();
                // SAFETY: torch's function; it returns when every invocation of `torch_task`
                // has, and `region` outlives this call. Its status is not needed: whatever
                // the pool did not drain, the caller drains next.
                let _ = unsafe { parallel_for(0, helpers, 1, torch_task, data) };
            }
        }
    }
}

/// An XLA task: drains the region it holds a reference to, then releases it.
unsafe extern "C" fn xla_task(data: *mut c_void) {
    // SAFETY: `data` is the reference `Pool::start` leaked for this task, released here once.
    let region = unsafe { Arc::from_raw(data.cast_const().cast::<Region>()) };
    region.drain();
}

/// torch's per-range function: drains the region (torch's ranges are only a count of helpers).
unsafe extern "C" fn torch_task(_begin: i64, _end: i64, data: *mut c_void) {
    // SAFETY: `data` is the region `Pool::start` passed, alive until `torch_parallel_for`
    // returns.
    let region = unsafe { &*data.cast_const().cast::<Region>() };
    region.drain();
}

/// Makes `pool` the current thread's pool until dropped (then the previous one again).
pub(crate) struct Current(Pool);

impl Current {
    pub(crate) fn enter(pool: Pool) -> Current {
        Current(POOL.with(|p| p.replace(pool)))
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        POOL.with(|p| p.set(self.0));
    }
}

#[cfg(test)]
mod tests;
