//! Private folders: what is refused (another user's folder, one others can write, a folder
//! above that others can write without the sticky bit, a key that is not the user's alone),
//! links never followed, and keys and names that two threads or processes never share.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use std::os::unix::fs::PermissionsExt;

/// A new, empty folder for one test (0755, in the system's temporary folder, which is sticky).
fn fresh(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("customop-private-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn chmod(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

#[test]
fn a_missing_folder_is_made_0700_with_a_0600_key_and_reopened_with_the_same_key() {
    let base = fresh("made");
    let dir = base.join("a/b");
    let d = PrivateDir::open(&dir, true).unwrap();
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&base.join("a")), 0o700);
    assert_eq!(mode(&dir.join(KEY_FILE)), 0o600);
    assert_eq!(std::fs::read(dir.join(KEY_FILE)).unwrap().len(), MAC_LEN);
    let code = d.mac(&[b"x", b"y"]);
    let again = PrivateDir::open(&dir, false).unwrap();
    assert!(again.verify(&[b"x", b"y"], &code));
    // The parts are length-prefixed: the same bytes cut elsewhere are other parts.
    assert!(!again.verify(&[b"xy"], &code));
    assert!(!again.verify(&[b"x", b"y"], &code[1..]));
    // Another folder, another key.
    let other = PrivateDir::open(&base.join("c"), true).unwrap();
    assert!(!other.verify(&[b"x", b"y"], &code));
    // Without `create`, a missing folder, or a folder without a key, is refused.
    assert!(PrivateDir::open(&base.join("none"), false).is_err());
    std::fs::create_dir(base.join("keyless")).unwrap();
    let e = PrivateDir::open(&base.join("keyless"), false).unwrap_err();
    assert!(e.contains("has no key"), "{e}");
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_folder_others_can_write_is_refused_and_so_is_one_above_it_without_the_sticky_bit() {
    let base = fresh("writable");
    let dir = base.join("cache");
    PrivateDir::open(&dir, true).unwrap();
    // Writable by its group: refused unless the group is this user's alone, so the folder is
    // given (as root, the test command's user) to a group no one is known in.
    if euid() == 0 {
        std::os::unix::fs::chown(&dir, None, Some(4321)).unwrap();
    }
    // (The sticky bit does not save the folder itself: 1777 is refused for its group as
    // root, here, else for others.)
    let mut cases = vec![(0o702, "others")];
    if euid() == 0 {
        cases.extend([(0o770, "its group"), (0o1777, "its group")]);
    } else {
        use std::os::unix::fs::MetadataExt;
        let gid = std::fs::metadata(&dir).unwrap().gid();
        cases.push((
            0o1777,
            if private_group(gid, euid()) {
                "others"
            } else {
                "its group"
            },
        ));
    }
    for (m, who) in cases {
        chmod(&dir, m);
        let e = PrivateDir::open(&dir, true).unwrap_err();
        assert!(
            e.contains(&format!("can be written by {who}")),
            "{m:o}: {e}"
        );
        assert!(e.contains("`chmod go-w "), "{e}");
        assert!(
            e.contains(&dir.canonicalize().unwrap().display().to_string()),
            "{e}"
        );
    }
    // Readable by others is not writable by them.
    chmod(&dir, 0o755);
    PrivateDir::open(&dir, true).unwrap();
    // A folder above it that others can write: refused, unless sticky (as /tmp is).
    chmod(&base, 0o777);
    let e = PrivateDir::open(&dir, true).unwrap_err();
    assert!(
        e.contains(&base.canonicalize().unwrap().display().to_string()),
        "{e}"
    );
    chmod(&base, 0o1777);
    PrivateDir::open(&dir, true).unwrap();
    chmod(&base, 0o755);
    // A folder reached through a link is checked where it is.
    let link = base.join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    assert_eq!(
        PrivateDir::open(&link, true).unwrap().path(),
        dir.canonicalize().unwrap()
    );
    chmod(&dir, 0o777);
    assert!(PrivateDir::open(&link, true).is_err());
    chmod(&dir, 0o700);
    std::fs::remove_dir_all(&base).unwrap();
}

/// Another user's folder, and another user's key, are refused. As root (the test command's
/// user here) the folder is given to another uid; as any other user, a folder of root's is
/// taken (this user cannot give a folder away).
#[test]
fn another_users_folder_or_key_is_refused() {
    let base = fresh("foreign");
    if euid() == 0 {
        let dir = base.join("theirs");
        PrivateDir::open(&dir, true).unwrap();
        std::os::unix::fs::chown(&dir, Some(4321), None).unwrap();
        let e = PrivateDir::open(&dir, true).unwrap_err();
        assert!(
            e.contains("belongs to uid 4321, not to this user (uid 0)"),
            "{e}"
        );
        // Their key in a folder of ours.
        std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
        std::os::unix::fs::chown(dir.join(KEY_FILE), Some(4321), None).unwrap();
        let e = PrivateDir::open(&dir, true).unwrap_err();
        assert!(e.contains("belongs to uid 4321"), "{e}");
    } else {
        let e = PrivateDir::open(Path::new("/"), false).unwrap_err();
        assert!(e.contains("belongs to uid 0, not to this user"), "{e}");
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_key_others_can_read_a_key_of_another_length_or_a_linked_key_is_refused() {
    let base = fresh("key");
    let dir = base.join("cache");
    PrivateDir::open(&dir, true).unwrap();
    let key = dir.join(KEY_FILE);
    chmod(&key, 0o640);
    let e = PrivateDir::open(&dir, true).unwrap_err();
    assert!(
        e.contains("can be read or written by others (mode 640"),
        "{e}"
    );
    chmod(&key, 0o600);
    std::fs::write(&key, [7u8; 33]).unwrap();
    let e = PrivateDir::open(&dir, true).unwrap_err();
    assert!(e.contains("is not a key"), "{e}");
    std::fs::write(&key, [7u8; 31]).unwrap();
    assert!(PrivateDir::open(&dir, true).is_err());
    // A link in the key's place (to a key that would pass) is not followed.
    std::fs::remove_file(&key).unwrap();
    let real = base.join("real-key");
    std::fs::write(&real, [7u8; MAC_LEN]).unwrap();
    chmod(&real, 0o600);
    std::os::unix::fs::symlink(&real, &key).unwrap();
    let e = PrivateDir::open(&dir, true).unwrap_err();
    assert!(e.contains("never a link"), "{e}");
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn files_are_read_without_following_links_and_written_over_links_not_through_them() {
    let base = fresh("files");
    let d = PrivateDir::open(&base.join("cache"), true).unwrap();
    d.write("entry", b"ours").unwrap();
    assert_eq!(d.read("entry").unwrap(), b"ours");
    assert_eq!(mode(&d.path().join("entry")), 0o600);
    // A link planted in an entry's place: not read, and a write replaces the link, leaving
    // what it points at as it was.
    let target = base.join("target");
    std::fs::write(&target, b"someone else's").unwrap();
    std::fs::remove_file(d.path().join("entry")).unwrap();
    std::os::unix::fs::symlink(&target, d.path().join("entry")).unwrap();
    assert!(d.read("entry").is_none());
    d.write("entry", b"ours again").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"someone else's");
    assert!(
        !std::fs::symlink_metadata(d.path().join("entry"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(d.read("entry").unwrap(), b"ours again");
    // A fifo in its place is not read (nor waited on).
    let fifo = d.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(d.read("fifo").is_none());
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn temporary_names_are_never_shared_and_are_told_apart() {
    let names: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| (0..100).map(|_| temp_name("e")).collect::<Vec<_>>()))
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 800);
    let is_e = |n: &str| n == "e";
    assert!(names.iter().all(|n| is_temp_name(n, is_e)), "{}", names[0]);
    for other in [
        "e",
        ".e.tmp",
        ".e.1.2.tmp",
        ".f.1.2.0123456789abcdef.tmp",
        ".e.1.x.0123456789abcdef.tmp",
        ".e.1.2.0123456789abcde.tmp",
        "x.e.1.2.0123456789abcdef.tmp",
        "notes.tmp",
    ] {
        assert!(!is_temp_name(other, is_e), "{other}");
    }
}

/// Threads (here) and processes (the test below) making a folder's key at once all take one
/// key: the first linked into place.
#[test]
fn threads_making_a_key_at_once_take_one() {
    let base = fresh("race");
    let dir = base.join("cache");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    let codes: Vec<[u8; MAC_LEN]> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| PrivateDir::open(&dir, true).unwrap().mac(&[b"same"])))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(codes.iter().all(|c| *c == codes[0]));
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from(KEY_FILE)]);
    std::fs::remove_dir_all(&base).unwrap();
}

/// A group-writable folder of this user's private group (no one else in it) is taken, as
/// Debian's ssh takes it (users' folders are 0775 where their umask is 002); a group with
/// another member is not. Made with a group of its own (as root: the test command's user).
#[test]
fn a_folder_writable_by_a_group_of_this_user_alone_is_taken() {
    if euid() != 0 {
        // Only root can give a folder to another group; the rule is the same either way.
        assert!(!private_group(u32::MAX - 7, euid()));
        return;
    }
    let base = fresh("group");
    let dir = base.join("cache");
    PrivateDir::open(&dir, true).unwrap();
    // A gid no group has: not a private group.
    std::os::unix::fs::chown(&dir, None, Some(u32::MAX - 7)).unwrap();
    chmod(&dir, 0o770);
    assert!(PrivateDir::open(&dir, true).is_err());
    // Root's own group, as /etc/group lists it: private where no one else is in it.
    std::os::unix::fs::chown(&dir, None, Some(0)).unwrap();
    chmod(&dir, 0o770);
    assert_eq!(PrivateDir::open(&dir, true).is_ok(), private_group(0, 0));
    std::fs::remove_dir_all(&base).unwrap();
}
