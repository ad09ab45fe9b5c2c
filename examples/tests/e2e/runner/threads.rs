//! Threads: one executable run from many at once, handlers registered while others compile, and
//! kernels on the plugin's thread pool.

use super::*;

/// One executable shared by 8 threads (the runner's types are `Send + Sync`, as PJRT's
/// objects are thread-safe): every result right.
#[test]
fn one_executable_runs_from_many_threads_at_once() {
    let exe = client()
        .compile(&Program::module(&customop_examples::seed_model().unwrap()).unwrap())
        .unwrap();
    let b = seed_blob();
    let placed = client().upload_descriptor(&b).unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let (exe, b, placed) = (&exe, &b, &placed);
            s.spawn(move || {
                for i in 0..50 {
                    let x: Vec<f32> = (0..9)
                        .map(|j| (t * 100 + i * 9 + j) as f32 * 0.01)
                        .collect();
                    let out = exe
                        .inputs()
                        .arg(x33(&x))
                        .unwrap()
                        .external_placed("external", placed)
                        .unwrap()
                        .run()
                        .unwrap();
                    assert_eq!(out[0].to_vec::<i8>().unwrap(), seed_expected(&x, 3, b));
                }
            });
        }
    });
}

/// XLA's handler registry has no lock of its own: registering while another thread compiles
/// (which looks handlers up) would be a data race. The runner's process-wide lock makes
/// registration exclusive and compilation shared. Here one thread registers 4,000 new targets
/// (the example library's `checked_sqrt` handler under new names; the registry grows and
/// rehashes many times) while two others compile and run programs calling ops, until the
/// registering thread is done; every result must be right.
#[test]
fn registering_handlers_while_other_threads_compile_is_serialised() {
    let c = client();
    let manifest: serde_json::Value =
        serde_json::from_str(&customop::registry::manifest_json()).expect("the manifest is JSON");
    let symbol = manifest["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["name"] == "example::checked_sqrt")
        .and_then(|op| op["handler_symbol"].as_str())
        .unwrap()
        .to_string();
    let done = std::sync::atomic::AtomicBool::new(false);
    let compiled = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..4000 {
                // SAFETY: the symbol is the library's generated XLA FFI handler of
                // `checked_sqrt`; its new target names are never called.
                unsafe { c.register_symbol(&example_kernels(), &format!("stress.t{i}"), &symbol) }
                    .unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        for _ in 0..2 {
            s.spawn(|| {
                let module = customop_examples::seed_model().unwrap();
                let (x, b) = (seed_x(), seed_blob());
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    let exe = c.compile(&Program::module(&module).unwrap()).unwrap();
                    assert_eq!(run_seed(&exe, &x, "external", &b), vec![3, 5, -2]);
                    compiled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert!(compiled.load(std::sync::atomic::Ordering::SeqCst) > 0);
    // The new targets are registered for good: a second handler for one is refused.
    let other = manifest["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["name"] == "example::unlucky")
        .and_then(|op| op["handler_symbol"].as_str())
        .unwrap();
    {
        // SAFETY: a generated handler of the same library; the call is refused.
        let e = unsafe { c.register_symbol(&example_kernels(), "stress.t7", other) };
        match e {
            Err(e) => assert!(e.to_string().contains("already has another handler"), "{e}"),
            Ok(()) => panic!("a second handler ({other}) for stress.t7 was accepted"),
        }
    }
}

#[test]
fn kernels_run_on_the_plugins_thread_pool() {
    // `customop::parallel` under the runner: the plugin's intra-op pool, more than one of its
    // threads running a kernel's ranges; a panic in a range is the call's kernel_panic.
    let probe = |panic_at: i64| {
        format!(
            r#"func.func @main(%x: tensor<64xf32>) -> tensor<1xi64> {{
  %0 = "stablehlo.custom_call"(%x) {{api_version = 4 : i32, call_target_name = "example.pool_probe", backend_config = {{panic_at = {panic_at} : i64}}}} : (tensor<64xf32>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}}"#
        )
    };
    // A client of its own (the handlers are registered process-wide by `client()`): its pool
    // is not busy with the executions other tests run on the shared client meanwhile.
    let _registered = client();
    let c = Client::cpu(1).unwrap();
    let x = HostTensor::vector(&[0.0f32; 64]);
    let exe = c.compile(&Program::text(&probe(-1)).unwrap()).unwrap();
    let threads = exe.run(std::slice::from_ref(&x)).unwrap()[0]
        .to_vec::<i64>()
        .unwrap()[0];
    // The most threads a call on 64 elements saw: counted per length of x, and no other test
    // of this binary probes 64 elements.
    // SAFETY: the example cdylib (already loaded by `client()`), and its probe function's
    // signature as the kernel crate declares it.
    let seen = unsafe {
        let lib = libloading::Library::new(example_kernels()).unwrap();
        let f: libloading::Symbol<'_, extern "C" fn(i64) -> i64> =
            lib.get(b"example_pool_probe_threads_seen\0").unwrap();
        f(64)
    };
    println!("parallel: the runner's pool has {threads} threads; {seen} ran the ranges");
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        assert!(threads >= 2, "the plugin's pool, not inline: {threads}");
        assert!(seen >= 2, "{seen}");
    } else {
        // One core: XLA sizes its pool by the cores it may use; that one thread ran them all.
        assert_eq!(
            (threads, seen),
            (1, 1),
            "a one-core machine's pool and its threads"
        );
    }
    let exe = c.compile(&Program::text(&probe(40)).unwrap()).unwrap();
    let e = exe.run(std::slice::from_ref(&x)).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::KernelPanic), "{e}");
    assert!(e.to_string().contains("holds index 40"), "{e}");
}
