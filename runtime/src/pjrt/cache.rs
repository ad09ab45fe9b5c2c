//! The compile cache: executables the plugin compiled, kept on disk (`PJRT_Executable_Serialize`)
//! and loaded again (`PJRT_Executable_DeserializeAndLoad`) by a later compile of the same
//! program for the same plugin, CPU and options.
//!
//! An entry's name is the sha256 of everything that makes the compiled code what it is: the
//! plugin library's sha256 (a known plugin's, so the cache is used only with [`Plugin::known`]
//! plugins: blobs of two plugin builds load into each other without a word), the CPU XLA
//! compiles for (the client's topology as the plugin serializes it: target triple, CPU name and
//! features), `XLA_FLAGS`, the client's device count, the compile options and the program's
//! bytes. An entry holds that key again, the blob's sha256 and length, then the blob: an entry
//! whose key, hash or length is not what is read (a corrupt file, a file copied from elsewhere
//! or written by another build), or that the plugin refuses to load, is compiled again and
//! replaced, never run.

use super::client::ClientInner;
use super::error::RunError;
use super::plugin::Plugin;
use super::sys::{self, Args};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The first bytes of an entry (its format's version).
const MAGIC: &[u8; 16] = b"customop-pjrt-1\n";

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

/// The key of a compile: what the compiled code depends on.
pub(super) struct Key([u8; 32]);

impl Key {
    /// The key of compiling `code` (format `format`) with `options` on `client`, or none when
    /// the plugin is not a known one (its hash unknown) or cannot describe its CPU.
    pub(super) fn of(
        client: &ClientInner,
        format: &str,
        code: &[u8],
        options: &[u8],
    ) -> Option<Key> {
        let known = client.plugin.known_as()?;
        let topology = client.topology()?;
        let mut h = Sha256::new();
        let mut part = |tag: &str, bytes: &[u8]| {
            h.update(tag.as_bytes());
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part("magic", MAGIC);
        part("plugin", known.sha256.as_bytes());
        part("topology", topology);
        let flags = std::env::var_os("XLA_FLAGS").unwrap_or_default();
        part("xla_flags", flags.as_encoded_bytes());
        part("devices", &(client.devices.len() as u64).to_le_bytes());
        part("options", options);
        part("format", format.as_bytes());
        part("program", code);
        Some(Key(h.finalize().into()))
    }

    fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// An entry's file in `dir`.
fn entry_path(dir: &Path, key: &Key) -> PathBuf {
    dir.join(format!("{}.pjrt", key.hex()))
}

/// The blob of the entry for `key` in `dir`, if there is one and it is whole: its key is
/// `key`, its length and sha256 those it records. Anything else is no entry.
pub(super) fn read(dir: &Path, key: &Key) -> Option<Vec<u8>> {
    let bytes = std::fs::read(entry_path(dir, key)).ok()?;
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (stored_key, rest) = rest.split_at_checked(32)?;
    let (hash, rest) = rest.split_at_checked(32)?;
    let (len, blob) = rest.split_at_checked(8)?;
    let len = u64::from_le_bytes(len.try_into().ok()?);
    if stored_key != key.0 || blob.len() as u64 != len || Sha256::digest(blob)[..] != hash[..] {
        return None;
    }
    Some(blob.to_vec())
}

/// Writes `blob` as the entry for `key` in `dir`: to a file of its own first, renamed into
/// place, so that a reader sees a whole entry or none. Best effort: a cache that cannot be
/// written only means compiling again.
pub(super) fn write(dir: &Path, key: &Key, blob: &[u8]) {
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let mut out = Vec::with_capacity(MAGIC.len() + 72 + blob.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&key.0);
    out.extend_from_slice(&Sha256::digest(blob));
    out.extend_from_slice(&(blob.len() as u64).to_le_bytes());
    out.extend_from_slice(blob);
    let path = entry_path(dir, key);
    let tmp = dir.join(format!(".{}.{}.tmp", key.hex(), std::process::id()));
    if std::fs::write(&tmp, &out).is_ok() && std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    prune(dir, max_bytes());
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

/// Removes the oldest entries (by when they were written) while the entries in `dir` take more
/// than `max` bytes.
fn prune(dir: &Path, max: u64) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = read
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".pjrt"))
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

/// Removes every entry of the cache in `dir` (files ending `.pjrt`, and unfinished writes);
/// returns how many files it removed.
pub fn clear(dir: &Path) -> std::io::Result<usize> {
    let mut n = 0;
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    for e in entries {
        let e = e?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".pjrt") || name.ends_with(".tmp") {
            std::fs::remove_file(e.path())?;
            n += 1;
        }
    }
    Ok(n)
}

/// The serialized executable of `loaded` (`PJRT_Executable_Serialize`).
pub(super) fn serialize(
    plugin: &'static Plugin,
    loaded: *mut sys::PJRT_LoadedExecutable,
) -> Result<Vec<u8>, RunError> {
    super::compile::with_executable(plugin, loaded, |exe| {
        let mut s = sys::PJRT_Executable_Serialize_Args::new();
        s.executable = exe;
        let result = plugin.call(
            "PJRT_Executable_Serialize",
            plugin.api.executable_serialize,
            &mut s,
        );
        // SAFETY: what the call above handed out (null pointers when it failed).
        let blob = unsafe {
            handed_out(
                s.serialized_bytes,
                s.serialized_bytes_size,
                s.serialized_executable,
                s.serialized_executable_deleter,
            )
        };
        result.map(|()| blob)
    })?
}

/// A copy of the `size` bytes at `bytes` that the plugin handed out with `object`, then
/// `object` released by its `deleter` (if any): a serialized executable or topology.
///
/// # Safety
/// `bytes` is null or points at `size` bytes that live until `deleter` runs on `object`;
/// `deleter` is the plugin's own for `object`, not yet called.
unsafe fn handed_out<T>(
    bytes: *const std::ffi::c_char,
    size: usize,
    object: *mut T,
    deleter: Option<unsafe extern "C" fn(*mut T)>,
) -> Vec<u8> {
    let copy = if bytes.is_null() {
        Vec::new()
    } else {
        // SAFETY: `size` bytes at `bytes`, alive until the deleter runs (the caller's promise).
        unsafe { super::plugin::bytes(bytes.cast(), size) }.to_vec()
    };
    if let Some(delete) = deleter {
        // SAFETY: the plugin's deleter for the object it handed out, called once.
        unsafe { delete(object) };
    }
    copy
}

/// Loads a serialized executable onto `client` (`PJRT_Executable_DeserializeAndLoad`, with
/// the compile options the blob holds). Handlers must be registered before: XLA looks them up
/// as it loads.
pub(super) fn deserialize(
    client: &ClientInner,
    blob: &[u8],
) -> Result<*mut sys::PJRT_LoadedExecutable, RunError> {
    let plugin = client.plugin;
    let mut a = sys::PJRT_Executable_DeserializeAndLoad_Args::new();
    a.client = client.raw;
    a.serialized_executable = blob.as_ptr().cast();
    a.serialized_executable_size = blob.len();
    plugin.call(
        "PJRT_Executable_DeserializeAndLoad",
        plugin.api.executable_deserialize_and_load,
        &mut a,
    )?;
    Ok(a.loaded_executable)
}

impl ClientInner {
    /// The client's topology as the plugin serializes it (the CPU it compiles for), read once.
    pub(super) fn topology(&self) -> Option<&[u8]> {
        self.topology
            .get_or_init(|| read_topology(self).ok())
            .as_deref()
    }
}

/// `PJRT_Client_TopologyDescription`, then `PJRT_TopologyDescription_Serialize` (the topology
/// is the client's; the serialized bytes are released by their deleter).
fn read_topology(client: &ClientInner) -> Result<Vec<u8>, RunError> {
    let plugin = client.plugin;
    let mut t = sys::PJRT_Client_TopologyDescription_Args::new();
    t.client = client.raw;
    plugin.call(
        "PJRT_Client_TopologyDescription",
        plugin.api.client_topology_description,
        &mut t,
    )?;
    let mut s = sys::PJRT_TopologyDescription_Serialize_Args::new();
    s.topology = t.topology;
    let result = plugin.call(
        "PJRT_TopologyDescription_Serialize",
        plugin.api.topology_description_serialize,
        &mut s,
    );
    // SAFETY: what the call above handed out (null pointers when it failed).
    let bytes = unsafe {
        handed_out(
            s.serialized_bytes,
            s.serialized_bytes_size,
            s.serialized_topology,
            s.serialized_topology_deleter,
        )
    };
    let bytes = result.map(|()| bytes);
    let bytes = bytes?;
    if bytes.is_empty() {
        return Err(RunError::Plugin {
            path: plugin.path().to_path_buf(),
            message: "its serialized topology is empty".into(),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("customop-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn an_entry_reads_back_only_whole_and_under_its_own_key() {
        let d = dir("entries");
        let key = Key([7; 32]);
        write(&d, &key, b"compiled code");
        assert_eq!(read(&d, &key).unwrap(), b"compiled code");
        // Another key: no entry (the file is named by the key, and holds it).
        assert!(read(&d, &Key([8; 32])).is_none());
        let path = entry_path(&d, &key);
        let whole = std::fs::read(&path).unwrap();
        // A flipped bit in the blob, a short file, another key inside, another format.
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let mut foreign = whole.clone();
        foreign[MAGIC.len()] ^= 1;
        let mut old = whole.clone();
        old[..MAGIC.len()].copy_from_slice(b"customop-pjrt-0\n");
        for bad in [
            flipped,
            whole[..whole.len() - 1].to_vec(),
            foreign,
            old,
            Vec::new(),
        ] {
            std::fs::write(&path, &bad).unwrap();
            assert!(read(&d, &key).is_none());
        }
        write(&d, &key, b"again");
        assert_eq!(read(&d, &key).unwrap(), b"again");
        // Past the bound, the oldest entries go first.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let newer = Key([9; 32]);
        write(&d, &newer, b"newer");
        let size = std::fs::metadata(entry_path(&d, &newer)).unwrap().len();
        prune(&d, size);
        assert!(read(&d, &key).is_none());
        assert_eq!(read(&d, &newer).unwrap(), b"newer");
        write(&d, &key, b"again");
        assert_eq!(clear(&d).unwrap(), 2);
        assert!(read(&d, &key).is_none());
        assert_eq!(clear(&d).unwrap(), 0);
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(clear(&d).unwrap(), 0);
    }
}
