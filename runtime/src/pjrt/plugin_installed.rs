//! The safe way to load a plugin: a plugin customop knows, checked by its hash and loaded from
//! one open file (`Plugin::known`, `Plugin::installed`).

use super::*;
use crate::pjrt::private_dir::{PrivateDir, hex};

/// Where the set-up installs the default plugin ([`KnownPlugin::default_plugin`]): customop's
/// cache (`$CUSTOMOP_CACHE`, else `$XDG_CACHE_HOME/customop`, else `~/.cache/customop`), then
/// the plugin's folder and file.
pub fn default_plugin_path() -> Option<PathBuf> {
    KnownPlugin::default_plugin().path()
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
    Ok(hex(&h.finalize()))
}

/// A file's identity (device, inode): what the dynamic loader compares to find a library
/// already loaded under another name.
pub(super) fn file_id(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

/// The stamp beside a verified plugin: its hash and the file's identity when it was hashed,
/// authenticated with the key of the plugin's folder (a private folder: [`PrivateDir`]).
pub(super) fn stamp_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".customop-verified");
    PathBuf::from(p)
}

/// The stamp of a file of sha256 `hash` and identity `identity`, in folder `dir`: the two and
/// their HMAC under the folder's key, which only this user can read, so that no one else can
/// make a stamp that vouches for a file they replaced.
pub(super) fn stamp_text(dir: &PrivateDir, hash: &str, identity: &str) -> String {
    let said = format!("sha256 {hash} {identity}");
    let mac = dir.mac(&[b"customop-plugin-stamp-1", said.as_bytes()]);
    format!("{said} hmac {}\n", hex(&mac))
}

/// Whether `text` is a stamp of folder `dir` for a file of sha256 `hash` and identity
/// `identity`.
fn stamp_holds(dir: &PrivateDir, text: &str, hash: &str, identity: &str) -> bool {
    let said = format!("sha256 {hash} {identity}");
    let Some(mac) = text
        .trim_end_matches('\n')
        .strip_prefix(said.as_str())
        .and_then(|rest| rest.strip_prefix(" hmac "))
    else {
        return false;
    };
    let bytes: Option<Vec<u8>> = (0..mac.len())
        .step_by(2)
        .map(|i| {
            mac.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect();
    bytes.is_some_and(|b| dir.verify(&[b"customop-plugin-stamp-1", said.as_bytes()], &b))
}

/// What the stamp records of an open file: device, inode, size, modification and change times
/// (nanoseconds). Writing the file's bytes changes its change time, which no call sets back,
/// and replacing the file changes its inode.
pub(super) fn identity(m: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "dev {} ino {} size {} mtime {}.{:09} ctime {}.{:09}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

impl Plugin {
    /// The default plugin the set-up installed ([`KnownPlugin::default_plugin`], at
    /// [`default_plugin_path`]): [`Plugin::known`] of it.
    pub fn installed() -> Result<&'static Plugin, RunError> {
        Plugin::known(KnownPlugin::default_plugin())
    }

    /// A plugin customop knows, where the set-up (or `customop plugin install`) put it
    /// ([`KnownPlugin::path`]), loaded only if the file has the hash customop knows it by: the
    /// safe way to load a plugin. The file is hashed once (about 0.2 s for 250 MB), and a stamp
    /// beside it (`<file>.customop-verified`) records the hash with the file's identity (device,
    /// inode, size, modification and change times); a later process whose open file has that
    /// identity takes the stamp's hash rather than reading the file again. The stamp is taken
    /// only from a folder of the user's alone (owned by them, written by no one else) and only
    /// with its HMAC under that folder's key (`.customop-key`, which only the user can read), so
    /// no one else can vouch for a file they replaced; otherwise the file is hashed. The library is loaded
    /// from the open file that was checked (`/proc/self/fd/N`), so the bytes loaded are the
    /// bytes vouched for even if the path is replaced meanwhile. A plugin already loaded from
    /// that file by the unsafe [`Plugin::load`] (under any name) is refused: its bytes were
    /// never checked. It ignores `CUSTOMOP_PJRT_PLUGIN`; [`Plugin::locate`] reads it.
    pub fn known(plugin: &'static KnownPlugin) -> Result<&'static Plugin, RunError> {
        let Some(path) = plugin.path() else {
            return Err(RunError::PluginNotFound { tried: Vec::new() });
        };
        if !path.is_file() {
            return Err(RunError::PluginNotFound { tried: vec![path] });
        }
        Plugin::verified_at(&path, plugin)
    }

    /// Opens `path`, checks that it is `known` (by the stamp or by hashing it) and loads it from
    /// the open file, refusing a file of another hash or that was loaded unverified before.
    pub(super) fn verified_at(
        path: &Path,
        known: &'static KnownPlugin,
    ) -> Result<&'static Plugin, RunError> {
        use std::os::fd::AsRawFd;
        let fail = |message: String| RunError::Plugin {
            path: path.to_path_buf(),
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| fail(format!("cannot stat: {e}")))?;
        let id = file_id(&meta);
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        // Held from the check to the load: no `Plugin::load` of this file comes between.
        let mut map = loaded().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = map.get(&key).copied()
            && let Some(k) = p.verified.get()
        {
            if std::ptr::eq(*k, known) {
                return Ok(p);
            }
            return Err(fail(format!(
                "this file is loaded as {}, not {}",
                k.spec(),
                known.spec()
            )));
        }
        if let Some(p) = map
            .values()
            .find(|p| p.path == key || p.file_id == Some(id))
        {
            return Err(fail(format!(
                "this file was already loaded, unverified, by `Plugin::load` (as {}): the \
                 bytes it runs were never hashed, so the runner cannot vouch for them; load \
                 it with `Plugin::known` (or `Plugin::installed`) before any `Plugin::load` of it",
                p.path.display()
            )));
        }
        // The stamp is trusted only in a folder of this user's alone, under its key.
        let folder = path.parent().and_then(|d| PrivateDir::open(d, true).ok());
        let stamp = stamp_path(path);
        let stamp_name = stamp.file_name().and_then(|n| n.to_str());
        let identity = identity(&meta);
        let stamped = folder.as_ref().zip(stamp_name).is_some_and(|(dir, name)| {
            dir.read(name)
                .and_then(|b| String::from_utf8(b).ok())
                .is_some_and(|text| stamp_holds(dir, &text, known.sha256, &identity))
        });
        if !stamped {
            let hash = sha256_of(&file).map_err(|e| fail(format!("cannot read: {e}")))?;
            if hash != known.sha256 {
                return Err(fail(format!(
                    "its sha256 is {hash}, not the {} of {} (`customop plugin install {}` \
                     installs it again; another plugin loads with the unsafe `Plugin::load`)",
                    known.sha256,
                    known.spec(),
                    known.spec()
                )));
            }
            // Best effort: without the stamp the next process hashes the file again.
            if let Some((dir, name)) = folder.as_ref().zip(stamp_name) {
                let _ = dir.write(name, stamp_text(dir, &hash, &identity).as_bytes());
            }
        }
        let through = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        // SAFETY: the open file is the known plugin, byte for byte (its hash, read through
        // this descriptor, which the loader opens again: the same inode; or the stamp of that
        // hash for this very inode, size and change time, authenticated under the key of a
        // folder only this user can write), whose API version the runner takes;
        // no library of that inode was loaded before (checked above, under the map's lock).
        let p = unsafe { Plugin::load_locked(&mut map, &through, key, Some(id)) }?;
        let _ = p.verified.set(known);
        drop(file);
        Ok(p)
    }

    /// Whether [`Plugin::known`] verified this plugin's bytes.
    #[cfg(test)]
    pub(super) fn is_verified(&self) -> bool {
        self.verified.get().is_some()
    }

    /// The known plugin this one was verified as.
    pub fn known_as(&self) -> Option<&'static KnownPlugin> {
        self.verified.get().copied()
    }
}
