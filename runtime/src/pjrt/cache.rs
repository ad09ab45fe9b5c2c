//! The compile cache, as storage: executables the plugin compiled, kept on disk and read back
//! by a later compile of the same program for the same plugin, CPU and options. It makes no
//! plugin call of its own (the compile serializes and loads the executables, `compile.rs`).
//!
//! An entry's name is the sha256 of everything that makes the compiled code what it is
//! ([`KeyInputs`]): the plugin library's sha256 (a known plugin's, so the cache is used only with
//! [`Plugin::known`](super::Plugin::known) plugins: blobs of two plugin builds load into each
//! other without a word), the CPU XLA compiles for (the client's topology as the plugin
//! serializes it, and the features this CPU has, as detected here), `XLA_FLAGS`, the client's
//! device count, the compile options and the program's bytes.
//!
//! A compiled executable is machine code, so the folder is trusted like the plugin: it is a
//! private folder ([`PrivateDir`]: the user's own, made 0700, refused when another user owns it
//! or others can write it), and an entry holds its key and an HMAC of key and blob under the
//! folder's key, which only the user can read. An entry that is not whole, not under its own
//! key, not authenticated (planted, or another entry rewritten), a link, or that the plugin
//! refuses to load is compiled again and replaced, never run.

use super::private_dir::{self, MAC_LEN, PrivateDir};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The first bytes of an entry (its format's version).
const MAGIC: &[u8; 16] = b"customop-pjrt-2\n";

/// The environment variable that sets the cache's folder, or turns it off (`off`).
pub const CACHE_ENV: &str = "CUSTOMOP_COMPILE_CACHE";

/// The compile cache's folder: `CUSTOMOP_COMPILE_CACHE` if set (`off` for none), else
/// `compiled/` in customop's cache ([`cache_dir`](super::cache_dir)).
pub fn compile_cache_dir() -> Option<PathBuf> {
    match std::env::var_os(CACHE_ENV) {
        Some(v) if v == "off" || v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => Some(super::known::cache_dir()?.join("compiled")),
    }
}

/// Everything the compiled code depends on: the inputs of its key.
pub(super) struct KeyInputs<'a> {
    /// The plugin library's sha256 (hex).
    pub(super) plugin_sha256: &'a str,
    /// The client's topology, as the plugin serializes it.
    pub(super) topology: &'a [u8],
    /// The CPU's features as detected in this process ([`crate::cpu::features`]).
    pub(super) cpu_features: &'a str,
    /// `XLA_FLAGS`.
    pub(super) xla_flags: &'a [u8],
    /// The client's device count.
    pub(super) devices: usize,
    /// The compile options.
    pub(super) options: &'a [u8],
    /// The program's format (`mlir`).
    pub(super) format: &'a str,
    /// The program's bytes.
    pub(super) program: &'a [u8],
}

/// The key of a compile: the sha256 of its [`KeyInputs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key(pub(super) [u8; 32]);

impl Key {
    /// The key of a compile with these inputs (each tagged and length-prefixed).
    pub(super) fn of(i: &KeyInputs<'_>) -> Key {
        let mut h = Sha256::new();
        let mut part = |tag: &str, bytes: &[u8]| {
            h.update(tag.as_bytes());
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part("magic", MAGIC);
        part("plugin", i.plugin_sha256.as_bytes());
        part("topology", i.topology);
        part("cpu_features", i.cpu_features.as_bytes());
        part("xla_flags", i.xla_flags);
        part("devices", &(i.devices as u64).to_le_bytes());
        part("options", i.options);
        part("format", i.format.as_bytes());
        part("program", i.program);
        Key(h.finalize().into())
    }

    fn hex(&self) -> String {
        private_dir::hex(&self.0)
    }
}

/// An entry's file name: the key in hex, `.pjrt`.
fn entry_name(key: &Key) -> String {
    format!("{}.pjrt", key.hex())
}

/// Whether `name` is an entry's file name (64 lower-case hex digits, `.pjrt`).
fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(".pjrt")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// Whether `name` is one of this cache's files: an entry, an entry or the folder's key being
/// written (left by a process that died), or an unfinished write of an earlier customop
/// (`.{key}.{pid}.tmp`).
fn is_own_name(name: &str) -> bool {
    let earlier = || {
        name.strip_prefix('.')
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.split_once('.'))
            .is_some_and(|(key, pid)| {
                is_entry_name(&format!("{key}.pjrt"))
                    && !pid.is_empty()
                    && pid.bytes().all(|b| b.is_ascii_digit())
            })
    };
    is_entry_name(name)
        || private_dir::is_temp_name(name, |n| is_entry_name(n) || n == private_dir::KEY_FILE)
        || earlier()
}

/// The compile cache in a private folder.
#[derive(Debug)]
pub(super) struct Cache {
    dir: PrivateDir,
}

impl Cache {
    /// The cache in `dir` (made when missing, 0700): `Err` naming why the folder is not
    /// trusted ([`PrivateDir::open`]).
    pub(super) fn open(dir: &Path) -> Result<Cache, String> {
        Ok(Cache {
            dir: PrivateDir::open(dir, true)?,
        })
    }

    /// The blob of the entry for `key`, if there is one and it is whole and authentic: a
    /// regular file of this user's (not a link), of this format, holding `key`, and an HMAC of
    /// both under the folder's key. Anything else is no entry.
    pub(super) fn read(&self, key: &Key) -> Option<Vec<u8>> {
        let bytes = self.dir.read(&entry_name(key))?;
        let rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let (stored_key, rest) = rest.split_at_checked(32)?;
        let (mac, blob) = rest.split_at_checked(MAC_LEN)?;
        if stored_key != key.0 || !self.dir.verify(&[MAGIC, &key.0, blob], mac) {
            return None;
        }
        Some(blob.to_vec())
    }

    /// Writes `blob` as the entry for `key` (a file of its own first, renamed into place: a
    /// reader sees a whole entry or none), then prunes the cache to its bound. Best effort: a
    /// cache that cannot be written only means compiling again.
    pub(super) fn write(&self, key: &Key, blob: &[u8]) {
        let mac = self.dir.mac(&[MAGIC, &key.0, blob]);
        let mut out = Vec::with_capacity(MAGIC.len() + 32 + MAC_LEN + blob.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&key.0);
        out.extend_from_slice(&mac);
        out.extend_from_slice(blob);
        let _ = self.dir.write(&entry_name(key), &out);
        prune(self.dir.path(), max_bytes());
    }

    /// The folder (links resolved).
    #[cfg(test)]
    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A client's compile cache: its folder, opened (and checked) at the first compile that
/// uses it.
#[derive(Debug)]
pub(super) struct CacheSlot {
    dir: PathBuf,
    opened: OnceLock<Result<Cache, String>>,
}

impl CacheSlot {
    pub(super) fn new(dir: PathBuf) -> CacheSlot {
        CacheSlot {
            dir,
            opened: OnceLock::new(),
        }
    }

    /// The folder as given.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cache, or why its folder is refused: said on stderr once per folder and process
    /// (the first time a client opens it), and programs are then compiled without a cache.
    pub(super) fn get(&self) -> Result<&Cache, &str> {
        self.opened
            .get_or_init(|| {
                Cache::open(&self.dir).map_err(|why| {
                    let why = format!(
                        "the compile cache {} is not used: {why}. Its executables are machine \
                         code, so its folder must be yours alone (`customop cache path`); \
                         compiling without it",
                        self.dir.display()
                    );
                    static SAID: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
                    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
                    if !said.contains(&self.dir) {
                        said.push(self.dir.clone());
                        eprintln!("customop: {why}");
                    }
                    why
                })
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

/// The environment variable that bounds the cache's size, in MiB (default 2048).
pub const CACHE_MAX_ENV: &str = "CUSTOMOP_COMPILE_CACHE_MAX_MB";

/// The cache's bound in bytes: `CUSTOMOP_COMPILE_CACHE_MAX_MB` MiB, else 2 GiB.
fn max_bytes() -> u64 {
    std::env::var(CACHE_MAX_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(2048)
        .saturating_mul(1 << 20)
}

/// The cache's own files in `dir` (entries, and with `temps` unfinished writes): regular
/// files and links of its names only, never anything else the folder holds.
fn own_files(dir: &Path, temps: bool) -> std::io::Result<impl Iterator<Item = std::fs::DirEntry>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(move |e| {
            let name = e.file_name();
            let Some(name) = name.to_str() else {
                return false;
            };
            let named = if temps {
                is_own_name(name)
            } else {
                is_entry_name(name)
            };
            // `file_type` does not follow links.
            named && e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink())
        }))
}

/// Removes the oldest entries (by when they were written) while the entries in `dir` take more
/// than `max` bytes.
fn prune(dir: &Path, max: u64) {
    let Ok(files) = own_files(dir, false) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = files
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort();
    for (_, len, path) in entries {
        if total <= max {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

/// Removes every entry of the cache in `dir` and its unfinished writes: files of its own names
/// only (`<sha256>.pjrt`, and the names it writes them under), whatever else the folder holds
/// (the folder's key stays). Returns how many files it removed.
pub fn clear(dir: &Path) -> std::io::Result<usize> {
    let files = match own_files(dir, true) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut n = 0;
    for e in files {
        std::fs::remove_file(e.path())?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
