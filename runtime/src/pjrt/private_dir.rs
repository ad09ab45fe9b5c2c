//! A folder of the user's own, for what the runner runs or trusts from disk: the compile
//! cache's executables (machine code) and the verified plugin's stamp. Checked as ssh checks
//! its own folder: the folder and every folder above it belong to this user (or, above it, to
//! root) and no one else can write them (a folder above it that others can write is accepted
//! only with its sticky bit, as `/tmp`). What it holds is authenticated with a key only this
//! user can read (`.customop-key`, 32 random bytes made on first use, mode 0600): an HMAC-SHA256
//! of each file's contents, so a file planted or rewritten by anyone else is never taken. Files
//! are read without following links, and written to a new file of a name of their own
//! (`O_EXCL`, mode 0600), renamed into place.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The key's file in a private folder.
pub(super) const KEY_FILE: &str = ".customop-key";

/// A length of the key, and of each authentication code.
pub(super) const MAC_LEN: usize = 32;

/// A folder that passed the checks, with its key.
pub(super) struct PrivateDir {
    path: PathBuf,
    key: [u8; MAC_LEN],
}

impl std::fmt::Debug for PrivateDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("PrivateDir")
            .field("path", &self.path)
            .finish()
    }
}

/// `bytes` in lower-case hex.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The effective user of this process.
pub(super) fn euid() -> u32 {
    // SAFETY: geteuid takes nothing, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// Whether group `gid` is this user's private group: no one else is in it, by `/etc/group`
/// (no other member) and `/etc/passwd` (no other user's primary group), as Debian's ssh allows a
/// group-writable folder of such a group (the default where users' umask is 002).
fn private_group(gid: u32, uid: u32) -> bool {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let users: Vec<(String, u32, u32)> = read("/etc/passwd")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((
                f.first()?.to_string(),
                f.get(2)?.parse().ok()?,
                f.get(3)?.parse().ok()?,
            ))
        })
        .collect();
    let Some(me) = users.iter().find(|u| u.1 == uid) else {
        return false;
    };
    let Some(group) = read("/etc/group").lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.get(2)?.parse::<u32>().ok()? == gid).then(|| f.get(3).unwrap_or(&"").to_string())
    }) else {
        return false;
    };
    group
        .split(',')
        .filter(|m| !m.is_empty())
        .all(|m| m == me.0)
        && users.iter().all(|u| u.2 != gid || u.1 == uid)
}

/// Why `m` (of folder `path`, the folder itself when `own`, else one above it) is not one this
/// user alone controls, if it is not.
fn folder_refusal(path: &Path, m: &Metadata, own: bool) -> Option<String> {
    let me = euid();
    let mode = m.mode();
    if !m.is_dir() {
        return Some(format!("{} is not a folder", path.display()));
    }
    if m.uid() != me && (own || m.uid() != 0) {
        return Some(format!(
            "{} belongs to uid {}, not to this user (uid {me})",
            path.display(),
            m.uid()
        ));
    }
    // A folder above that others may write is safe only if they cannot rename or remove
    // what they do not own in it (the sticky bit, as on /tmp); the folder itself never. Its
    // group may write it where that group is this user's alone.
    let sticky = mode & 0o1000 != 0;
    let group = mode & 0o020 != 0 && !private_group(m.gid(), me);
    if (group || mode & 0o002 != 0) && (own || !sticky) {
        return Some(format!(
            "{} can be written by {} (mode {:o}; `chmod go-w {}` makes it yours alone)",
            path.display(),
            if group { "its group" } else { "others" },
            mode & 0o7777,
            path.display()
        ));
    }
    None
}

impl PrivateDir {
    /// Opens `dir` as a private folder: created with mode 0700 (its missing parents too) when
    /// missing and `create`, then checked with every folder above it (links resolved), and its
    /// key read, or made when missing and `create`. `Err` names what is wrong: a folder of
    /// another user, one others can write, a key file that is not this user's alone.
    pub(super) fn open(dir: &Path, create: bool) -> Result<PrivateDir, String> {
        if create && std::fs::symlink_metadata(dir).is_err() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let path = dir
            .canonicalize()
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut own = true;
        for folder in path.ancestors() {
            let m = std::fs::metadata(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
            if let Some(why) = folder_refusal(folder, &m, own) {
                return Err(why);
            }
            own = false;
        }
        let key = read_key(&path, create)?;
        Ok(PrivateDir { path, key })
    }

    /// The folder (links resolved).
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The authentication code of `parts` (each length-prefixed, so that no two lists of parts
    /// give the same bytes) under this folder's key.
    pub(super) fn mac(&self, parts: &[&[u8]]) -> [u8; MAC_LEN] {
        self.hmac(parts).finalize().into_bytes().into()
    }

    /// Whether `code` is the authentication code of `parts` (compared in constant time).
    pub(super) fn verify(&self, parts: &[&[u8]], code: &[u8]) -> bool {
        self.hmac(parts).verify_slice(code).is_ok()
    }

    fn hmac(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        // HMAC takes a key of any length: this never fails.
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        for p in parts {
            m.update(&(p.len() as u64).to_le_bytes());
            m.update(p);
        }
        m
    }

    /// The bytes of file `name` in the folder, if it is a regular file of this user's, read
    /// without following a link.
    pub(super) fn read(&self, name: &str) -> Option<Vec<u8>> {
        let mut f = open_no_follow(&self.path.join(name)).ok()?;
        let m = f.metadata().ok()?;
        if !m.is_file() || m.uid() != euid() {
            return None;
        }
        let mut bytes = Vec::with_capacity(usize::try_from(m.len()).unwrap_or(0));
        f.read_to_end(&mut bytes).ok()?;
        Some(bytes)
    }

    /// Writes `bytes` as file `name` in the folder: to a new file of its own first (`O_EXCL`,
    /// mode 0600, a name no other thread or process uses), renamed into place, so that a reader
    /// sees the whole file or none, and a link in its place is replaced, never followed.
    pub(super) fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let tmp = self.path.join(temp_name(name));
        let written = create_new(&tmp).and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_data()
        });
        let placed = written.and_then(|()| std::fs::rename(&tmp, self.path.join(name)));
        if placed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        placed
    }
}

/// A new file at `path` (failing if anything is there, a link included), mode 0600.
fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// `path` opened for reading, failing on a link.
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// A name for the file that becomes `name`, of this process and call alone:
/// `.{name}.{pid}.{n}.{random}.tmp`.
pub(super) fn temp_name(name: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let r = u64::from_le_bytes(random_bytes::<8>().unwrap_or([0; 8]));
    format!(".{name}.{}.{n}.{r:016x}.tmp", std::process::id())
}

/// Whether `file` is a name [`temp_name`] gives for a name `is_name` takes.
pub(super) fn is_temp_name(file: &str, is_name: impl Fn(&str) -> bool) -> bool {
    let Some(inner) = file.strip_prefix('.').and_then(|f| f.strip_suffix(".tmp")) else {
        return false;
    };
    let mut parts = inner.rsplitn(4, '.');
    let (Some(random), Some(n), Some(pid), Some(name)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    random.len() == 16
        && random.bytes().all(|b| b.is_ascii_hexdigit())
        && digits(n)
        && digits(pid)
        && is_name(name)
}

/// `N` bytes from the kernel's random source.
fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b)
}

/// The key of private folder `dir` (checked already): its key file, if it is a regular file of
/// this user's that no one else may read or write, of the key's length; or, when there is none
/// and `create`, a new one (written whole to a file of its own, then linked into place, so that
/// of two processes making one at once, both take the one that was linked first).
fn read_key(dir: &Path, create: bool) -> Result<[u8; MAC_LEN], String> {
    let path = dir.join(KEY_FILE);
    match open_no_follow(&path) {
        Ok(f) => checked_key(&path, f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            let key = random_bytes::<MAC_LEN>()
                .map_err(|e| format!("cannot read /dev/urandom for a key: {e}"))?;
            let tmp = dir.join(temp_name(KEY_FILE));
            let made = create_new(&tmp).and_then(|mut f| {
                f.write_all(&key)?;
                f.sync_data()
            });
            let linked = made.and_then(|()| std::fs::hard_link(&tmp, &path));
            let _ = std::fs::remove_file(&tmp);
            match linked {
                Ok(()) => Ok(key),
                // Another process linked its key first: that one is the key.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let f =
                        open_no_follow(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                    checked_key(&path, f)
                }
                Err(e) => Err(format!("cannot make the key {}: {e}", path.display())),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("{} has no key ({KEY_FILE})", dir.display()))
        }
        Err(e) => Err(format!(
            "{}: {e} (a key file is a regular file, never a link)",
            path.display()
        )),
    }
}

/// The key in open file `f` (at `path`), if it is this user's alone and whole.
fn checked_key(path: &Path, mut f: File) -> Result<[u8; MAC_LEN], String> {
    let m = f
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !m.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if m.uid() != euid() {
        return Err(format!(
            "{} belongs to uid {}, not to this user (uid {})",
            path.display(),
            m.uid(),
            euid()
        ));
    }
    if m.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "{} can be read or written by others (mode {:o}; a key is 0600)",
            path.display(),
            m.permissions().mode() & 0o7777
        ));
    }
    let mut key = [0u8; MAC_LEN];
    let mut rest = Vec::new();
    f.read_exact(&mut key)
        .and_then(|()| f.read_to_end(&mut rest))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !rest.is_empty() {
        return Err(format!("{} is not a key ({MAC_LEN} bytes)", path.display()));
    }
    Ok(key)
}

#[cfg(test)]
#[path = "private_dir_tests.rs"]
mod tests;
