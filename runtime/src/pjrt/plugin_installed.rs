//! The safe way to load a plugin: the CPU plugin the set-up installed, hashed and loaded from
//! one open file (`Plugin::installed`).

use super::*;

/// Where the set-up installs the CPU plugin: `$CUSTOMOP_CACHE`, else
/// `$XDG_CACHE_HOME/customop`, else `~/.cache/customop`, then
/// `pjrt-cpu-<version>/xla_cpu_pjrt.so` (as `scripts/setup.sh --pjrt` does).
pub fn default_plugin_path() -> Option<PathBuf> {
    let cache = if let Some(c) = std::env::var_os("CUSTOMOP_CACHE") {
        PathBuf::from(c)
    } else if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        PathBuf::from(x).join("customop")
    } else {
        PathBuf::from(std::env::var_os("HOME")?).join(".cache/customop")
    };
    Some(
        cache
            .join(format!("pjrt-cpu-{CPU_PLUGIN_VERSION}"))
            .join("xla_cpu_pjrt.so"),
    )
}

/// The sha256 of what `f` reads from its current position, in lower-case hex.
fn sha256_of(mut f: &std::fs::File) -> std::io::Result<String> {
    use sha2::Digest;
    use std::io::Read;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// A file's identity (device, inode): what the dynamic loader compares to find a library
/// already loaded under another name.
pub(super) fn file_id(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

impl Plugin {
    /// The CPU plugin the set-up installed ([`default_plugin_path`]), loaded only if the file
    /// has the hash this version of customop was tested with ([`CPU_PLUGIN_SHA256`]): the one
    /// safe way to load a plugin. The hash is computed once per process (about 0.2 s for the
    /// 259 MB library) over an open file, and the library is loaded from that same open file
    /// (`/proc/self/fd/N`), so the bytes loaded are the bytes hashed even if the path is
    /// replaced meanwhile. A plugin already loaded from that file by the unsafe
    /// [`Plugin::load`] (under any name) is refused: its bytes were never hashed. It ignores
    /// `CUSTOMOP_PJRT_PLUGIN`; [`Plugin::locate`] reads it.
    pub fn installed() -> Result<&'static Plugin, RunError> {
        static VERIFIED: OnceLock<&'static Plugin> = OnceLock::new();
        if let Some(p) = VERIFIED.get() {
            return Ok(p);
        }
        let Some(path) = default_plugin_path() else {
            return Err(RunError::PluginNotFound { tried: Vec::new() });
        };
        if !path.is_file() {
            return Err(RunError::PluginNotFound { tried: vec![path] });
        }
        let p = Plugin::verified_at(&path)?;
        Ok(VERIFIED.get_or_init(|| p))
    }

    /// Opens `path`, hashes it and loads it from the open file, refusing a file whose hash is
    /// not the tested plugin's or that was loaded unverified before.
    pub(super) fn verified_at(path: &Path) -> Result<&'static Plugin, RunError> {
        use std::os::fd::AsRawFd;
        let fail = |message: String| RunError::Plugin {
            path: path.to_path_buf(),
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
        let id = file_id(
            &file
                .metadata()
                .map_err(|e| fail(format!("cannot stat: {e}")))?,
        );
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        // Held from the check to the load: no `Plugin::load` of this file comes between.
        let mut map = loaded().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = map.get(&key).copied().filter(|p| p.is_verified()) {
            return Ok(p);
        }
        if let Some(p) = map
            .values()
            .find(|p| p.path == key || p.file_id == Some(id))
        {
            return Err(fail(format!(
                "this file was already loaded, unverified, by `Plugin::load` (as {}): the \
                 bytes it runs were never hashed, so the runner cannot vouch for them; load \
                 the installed plugin with `Plugin::installed` before any `Plugin::load` of it",
                p.path.display()
            )));
        }
        let hash = sha256_of(&file).map_err(|e| fail(format!("cannot read: {e}")))?;
        if hash != CPU_PLUGIN_SHA256 {
            return Err(fail(format!(
                "its sha256 is {hash}, not the {CPU_PLUGIN_SHA256} of the CPU plugin \
                 {CPU_PLUGIN_VERSION} this customop was tested with (run `bash \
                 scripts/setup.sh --pjrt` again, or load another plugin with the unsafe \
                 `Plugin::load`)"
            )));
        }
        let through = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        // SAFETY: the open file is the CPU plugin the set-up installed, byte for byte (its
        // hash, read through this descriptor, which the loader opens again: the same inode),
        // whose API version and struct layouts the layout test checked; no library of that
        // inode was loaded before (checked above, under the map's lock).
        let p = unsafe { Plugin::load_locked(&mut map, &through, key, Some(id)) }?;
        p.verified.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(file);
        Ok(p)
    }

    /// Whether [`Plugin::installed`] verified this plugin's bytes.
    pub(super) fn is_verified(&self) -> bool {
        self.verified.load(std::sync::atomic::Ordering::SeqCst)
    }
}
