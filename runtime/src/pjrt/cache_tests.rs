//! The compile cache: its key (every input of it changes it), its entries (whole, under their
//! own key, authenticated: a planted, rewritten or linked entry is no entry), its folder (made
//! 0700; another user's or one others can write is refused and nothing is run from it or
//! written to it), its own file names only, and real executables through the CPU plugin:
//! another program's entry rewritten to this one's key is compiled again and gives this
//! program's numbers, and two threads compiling at once both run.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::super::{Client, HostTensor, Program};
use super::*;
use std::os::unix::fs::PermissionsExt;

fn fresh(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("customop-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn inputs() -> KeyInputs<'static> {
    KeyInputs {
        plugin_sha256: "ad13",
        topology: b"cpu topology",
        cpu_features: "sse2,avx2",
        xla_flags: b"",
        devices: 1,
        options: b"\x1a\x04",
        format: "mlir",
        program: b"module {}",
    }
}

#[test]
fn the_key_changes_with_every_input() {
    let base = Key::of(&inputs());
    assert_eq!(Key::of(&inputs()), base);
    let changed: Vec<(&str, KeyInputs<'static>)> = vec![
        (
            "plugin",
            KeyInputs {
                plugin_sha256: "ad14",
                ..inputs()
            },
        ),
        (
            "topology",
            KeyInputs {
                topology: b"cpu topology 2",
                ..inputs()
            },
        ),
        (
            "features",
            KeyInputs {
                cpu_features: "sse2,avx2,avx512f",
                ..inputs()
            },
        ),
        (
            "features, fewer",
            KeyInputs {
                cpu_features: "sse2",
                ..inputs()
            },
        ),
        (
            "XLA_FLAGS",
            KeyInputs {
                xla_flags: b"--xla_cpu_use_thunk_runtime=false",
                ..inputs()
            },
        ),
        (
            "devices",
            KeyInputs {
                devices: 2,
                ..inputs()
            },
        ),
        (
            "options",
            KeyInputs {
                options: b"\x1a\x05",
                ..inputs()
            },
        ),
        (
            "format",
            KeyInputs {
                format: "hlo",
                ..inputs()
            },
        ),
        (
            "program",
            KeyInputs {
                program: b"module { }",
                ..inputs()
            },
        ),
        // Bytes moved from one input to the next: each input is length-prefixed.
        (
            "a boundary moved",
            KeyInputs {
                topology: b"cpu topolog",
                cpu_features: "ysse2,avx2",
                ..inputs()
            },
        ),
    ];
    let mut keys = vec![base];
    for (what, i) in &changed {
        let k = Key::of(i);
        assert!(!keys.contains(&k), "{what}: the key did not change");
        keys.push(k);
    }
}

#[test]
fn an_entry_reads_back_only_whole_authentic_and_under_its_own_key() {
    let d = fresh("entries");
    let cache = Cache::open(&d).unwrap();
    assert_eq!(
        std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let key = Key([7; 32]);
    cache.write(&key, b"compiled code");
    assert_eq!(cache.read(&key).unwrap(), b"compiled code");
    // Another key: no entry (the file is named by the key, and holds it).
    assert!(cache.read(&Key([8; 32])).is_none());
    let path = d.join(entry_name(&key));
    let whole = std::fs::read(&path).unwrap();
    let mut flipped = whole.clone();
    *flipped.last_mut().unwrap() ^= 1;
    let mut foreign = whole.clone();
    foreign[MAGIC.len()] ^= 1;
    let mut old = whole.clone();
    old[..MAGIC.len()].copy_from_slice(b"customop-pjrt-1\n");
    let mut bad_mac = whole.clone();
    bad_mac[MAGIC.len() + 32] ^= 1;
    // Planted: an entry made as the cache makes them, but by someone without the folder's key
    // (here: another folder's).
    let other = Cache::open(&d.join("elsewhere")).unwrap();
    other.write(&key, b"their code");
    let planted = std::fs::read(other.path().join(entry_name(&key))).unwrap();
    for (what, bad) in [
        ("a flipped bit in the blob", flipped),
        ("a short file", whole[..whole.len() - 1].to_vec()),
        ("another key inside", foreign),
        ("the earlier format", old),
        ("a wrong code", bad_mac),
        ("planted under another key", planted),
        ("empty", Vec::new()),
    ] {
        std::fs::write(&path, &bad).unwrap();
        assert!(cache.read(&key).is_none(), "{what}");
    }
    // A link to a whole, authentic entry (of another key) is not followed.
    let second = Key([9; 32]);
    cache.write(&second, b"second");
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(d.join(entry_name(&second)), &path).unwrap();
    assert!(cache.read(&key).is_none());
    cache.write(&key, b"again");
    assert_eq!(cache.read(&key).unwrap(), b"again");
    assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn prune_and_clear_touch_only_the_caches_own_files() {
    let d = fresh("own");
    let cache = Cache::open(&d).unwrap();
    // What else the folder holds (`CUSTOMOP_COMPILE_CACHE=/tmp` would hold a user's files):
    // names like the cache's, but not its.
    let theirs = [
        "notes.tmp",
        "other.pjrt",
        &format!("{}.pjrt", "A".repeat(64)),
        &format!("{}.pjrt", "0".repeat(63)),
        &format!(".{}.pjrt.tmp", "0".repeat(64)),
    ];
    for t in theirs {
        std::fs::write(d.join(t), b"keep me").unwrap();
    }
    let (old, new) = (Key([1; 32]), Key([2; 32]));
    cache.write(&old, b"older entry");
    std::thread::sleep(std::time::Duration::from_millis(20));
    cache.write(&new, b"newer entry");
    // Unfinished writes of an entry and of the key, as the cache names them, and of an
    // entry as an earlier customop named them.
    let unfinished = private_dir::temp_name(&entry_name(&old));
    std::fs::write(d.join(&unfinished), b"half").unwrap();
    let key_half = private_dir::temp_name(private_dir::KEY_FILE);
    std::fs::write(d.join(&key_half), b"half").unwrap();
    let earlier = format!(".{}.4242.tmp", "3".repeat(64));
    std::fs::write(d.join(&earlier), b"half").unwrap();
    let size = std::fs::metadata(d.join(entry_name(&new))).unwrap().len();
    prune(&d, size);
    assert!(cache.read(&old).is_none());
    assert_eq!(cache.read(&new).unwrap(), b"newer entry");
    assert!(d.join(&unfinished).exists());
    assert_eq!(clear(&d).unwrap(), 4);
    assert!(!d.join(&key_half).exists() && !d.join(&earlier).exists());
    assert!(cache.read(&new).is_none());
    for t in theirs {
        assert_eq!(std::fs::read(d.join(t)).unwrap(), b"keep me", "{t}");
    }
    // The folder's key stays: entries written after are read back.
    cache.write(&new, b"after");
    assert_eq!(cache.read(&new).unwrap(), b"after");
    assert_eq!(clear(&d).unwrap(), 1);
    assert_eq!(clear(&d).unwrap(), 0);
    std::fs::remove_dir_all(&d).unwrap();
    assert_eq!(clear(&d).unwrap(), 0);
}

fn client() -> Client {
    Client::cpu(1).expect("the CPU plugin (scripts/setup.sh installs it)")
}

/// `y = f(x)` on 8 floats.
fn program(op: &str) -> Program {
    Program::text(&format!(
        "func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {{\n  \
         %0 = stablehlo.{op} %arg0 : tensor<8xf32>\n  return %0 : tensor<8xf32>\n}}\n"
    ))
    .unwrap()
}

fn run(client: &Client, op: &str) -> (Vec<f32>, bool) {
    let exe = client.compile(&program(op)).unwrap();
    let x: Vec<f32> = (0..8).map(|i| i as f32 * 0.25).collect();
    let y = exe.run(&[HostTensor::vector(&x)]).unwrap();
    (y[0].to_vec::<f32>().unwrap(), exe.from_cache())
}

fn sines() -> Vec<f32> {
    (0..8).map(|i| (i as f32 * 0.25).sin()).collect()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-6)
}

/// The only `.pjrt` file in `dir`.
fn only_entry(dir: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pjrt"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

/// The attack the key alone let through: another program's entry (cosine), its stored key
/// rewritten to this program's (sine) and put under its name, loaded and gave the cosines.
/// Now it is compiled again, gives the sines, and is replaced by an authentic entry.
#[test]
fn another_programs_entry_rewritten_to_this_key_is_compiled_again() {
    let d = fresh("rewritten");
    let c = client().with_compile_cache(Some(d.join("sine")));
    let (y, cached) = run(&c, "sine");
    assert!(close(&y, &sines()) && !cached);
    assert!(run(&c, "sine").1, "the second compile loads the entry");
    let sine_entry = only_entry(&d.join("sine"));
    let sine_key: Vec<u8> = std::fs::read(&sine_entry).unwrap()[16..48].to_vec();
    let other = client().with_compile_cache(Some(d.join("cosine")));
    run(&other, "cosine");
    let mut forged = std::fs::read(only_entry(&d.join("cosine"))).unwrap();
    forged[16..48].copy_from_slice(&sine_key);
    std::fs::write(&sine_entry, &forged).unwrap();
    let (y, cached) = run(&c, "sine");
    assert!(!cached, "a rewritten entry was loaded");
    assert!(close(&y, &sines()), "{y:?}");
    // Replaced by this program's own entry, which serves the next compile.
    let (y, cached) = run(&c, "sine");
    assert!(cached && close(&y, &sines()));
    std::fs::remove_dir_all(&d).unwrap();
}

/// A folder others can write, or (as root) another user's: named, then every program compiled
/// without it, and nothing written to it.
#[test]
fn an_untrusted_folder_is_named_and_not_used() {
    let d = fresh("untrusted");
    let dir = d.join("cache");
    Cache::open(&dir).unwrap();
    /// How a case spoils the folder.
    type Spoil = fn(&Path);
    let mut cases: Vec<(&str, Spoil)> = vec![("can be written by others", |p| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o707)).unwrap()
    })];
    if private_dir::euid() == 0 {
        cases.push(("belongs to uid 4321", |p| {
            std::os::unix::fs::chown(p, Some(4321), None).unwrap()
        }));
        // A group no one is known in (so not this user's alone), which may write it.
        cases.push(("can be written by its group", |p| {
            std::os::unix::fs::chown(p, None, Some(4321)).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o770)).unwrap()
        }));
    }
    for (why, spoil) in cases {
        spoil(&dir);
        let c = client().with_compile_cache(Some(dir.clone()));
        let refusal = c.compile_cache_refusal().unwrap().to_string();
        assert!(refusal.contains(why), "{refusal}");
        assert!(refusal.contains("compiling without it"), "{refusal}");
        for _ in 0..2 {
            let (y, cached) = run(&c, "sine");
            assert!(close(&y, &sines()) && !cached, "{why}");
        }
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(files.len(), 1, "{why}: only the key: {files:?}");
        if private_dir::euid() == 0 {
            std::os::unix::fs::chown(&dir, Some(0), Some(0)).unwrap();
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    // Trusted again, it is used.
    let c = client().with_compile_cache(Some(dir.clone()));
    assert_eq!(c.compile_cache_refusal(), None);
    run(&c, "sine");
    assert!(run(&c, "sine").1);
    std::fs::remove_dir_all(&d).unwrap();
}

/// Two threads compiling the same program into an empty cache at once: both run it (each
/// writes the entry through a file of its own), and the entry left is whole and served.
#[test]
fn two_threads_compiling_at_once_both_run_and_leave_one_whole_entry() {
    let d = fresh("threads");
    let c = client().with_compile_cache(Some(d.clone()));
    let results: Vec<(Vec<f32>, bool)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2).map(|_| s.spawn(|| run(&c, "sine"))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (y, _) in &results {
        assert!(close(y, &sines()));
    }
    only_entry(&d);
    let (y, cached) = run(&c, "sine");
    assert!(cached && close(&y, &sines()));
    let left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&d).unwrap();
}
