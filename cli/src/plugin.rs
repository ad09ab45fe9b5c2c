//! `customop plugin list | install | path | verify`: the PJRT plugins customop knows, pinned by
//! hash (`KnownPlugin`), put where `Plugin::known` (and so `Client::cpu` and `customop run`)
//! finds them, for a user who has only the crates.

use crate::Failure;
use customop::pjrt::KnownPlugin;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The known plugin `spec` names (`name` or `name==version`), or the default one.
pub fn choose(spec: Option<&str>) -> Result<&'static KnownPlugin, Failure> {
    let Some(spec) = spec else {
        return Ok(KnownPlugin::default_plugin());
    };
    KnownPlugin::find(spec).ok_or_else(|| {
        let known: Vec<String> = KnownPlugin::all().iter().map(KnownPlugin::spec).collect();
        Failure::Plugin(format!(
            "`{spec}` is not a plugin customop knows; it knows {}",
            known.join(", ")
        ))
    })
}

fn plugin_path(k: &KnownPlugin) -> Result<PathBuf, Failure> {
    k.path().ok_or_else(|| {
        Failure::Plugin(
            "no place for the plugin: set CUSTOMOP_CACHE, XDG_CACHE_HOME or HOME".into(),
        )
    })
}

/// `customop plugin list`: every plugin customop knows, the default first (`*`), with what it
/// reads and whether it is installed.
pub fn list() -> Result<String, Failure> {
    let mut out = String::new();
    for (i, k) in KnownPlugin::all().iter().enumerate() {
        let path = plugin_path(k)?;
        out.push_str(&format!(
            "{} {:<36} PJRT {}.{:<4} StableHLO {:<16} XLA FFI {}.{}  {}\n",
            if i == 0 { "*" } else { " " },
            k.spec(),
            k.pjrt.0,
            k.pjrt.1,
            k.stablehlo_range(),
            k.xla_ffi.0,
            k.xla_ffi.1,
            if path.is_file() {
                format!("installed: {}", path.display())
            } else {
                "not installed".to_string()
            }
        ));
    }
    out.push_str("(* the default: `customop run` and `Client::cpu` load it)");
    Ok(out)
}

/// The sha256 of file `path`, in lower-case hex.
fn sha256(path: &Path) -> Result<String, String> {
    use sha2::Digest;
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// `customop plugin path`: where the plugin is (or goes); whether it is there.
pub fn path(k: &KnownPlugin) -> Result<String, Failure> {
    let p = plugin_path(k)?;
    Ok(format!(
        "{}{}",
        p.display(),
        if p.is_file() {
            ""
        } else {
            " (not installed: `customop plugin install`)"
        }
    ))
}

/// `customop plugin verify`: the installed plugin has the pinned hash.
pub fn verify(k: &KnownPlugin) -> Result<String, Failure> {
    let p = plugin_path(k)?;
    if !p.is_file() {
        return Err(Failure::Plugin(format!(
            "{}: not installed (`customop plugin install`)",
            p.display()
        )));
    }
    let got = sha256(&p).map_err(Failure::Plugin)?;
    if got != k.sha256 {
        return Err(Failure::Plugin(format!(
            "{}: its sha256 is {got}, not the {} of {} (`customop plugin install {} --force` \
             replaces it)",
            p.display(),
            k.sha256,
            k.spec(),
            k.spec()
        )));
    }
    Ok(format!("{}: sha256 {got}, {}", p.display(), k.spec()))
}

/// `customop plugin install [--wheel FILE] [--force]`: the pinned wheel (downloaded by pip,
/// whose progress bar shows, unless given), its hash checked, the plugin and its C header
/// unpacked next to each other, the plugin's own hash checked, then moved into place.
pub fn install(k: &KnownPlugin, wheel: Option<&Path>, force: bool) -> Result<String, Failure> {
    let target = plugin_path(k)?;
    if !force && target.is_file() && verify(k).is_ok() {
        return Ok(format!("{}: already installed", target.display()));
    }
    let dir = target
        .parent()
        .ok_or_else(|| Failure::Plugin(format!("{}: no parent folder", target.display())))?;
    let cache = dir
        .parent()
        .ok_or_else(|| Failure::Plugin(format!("{}: no parent folder", dir.display())))?;
    std::fs::create_dir_all(cache)
        .map_err(|e| Failure::Plugin(format!("{}: {e}", cache.display())))?;
    let work = cache.join(format!(".install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)
        .map_err(|e| Failure::Plugin(format!("{}: {e}", work.display())))?;
    let result = install_in(k, &work, wheel, dir);
    let _ = std::fs::remove_dir_all(&work);
    result?;
    Ok(format!(
        "{}: {}, sha256 {}",
        target.display(),
        k.spec(),
        k.sha256
    ))
}

fn install_in(
    k: &KnownPlugin,
    work: &Path,
    wheel: Option<&Path>,
    dir: &Path,
) -> Result<(), Failure> {
    let fail = Failure::Plugin;
    let wheel = match wheel {
        Some(w) => w.to_path_buf(),
        None => download(k, work)?,
    };
    let got = sha256(&wheel).map_err(fail)?;
    if got != k.wheel_sha256 {
        return Err(fail(format!(
            "{}: its sha256 is {got}, not the pinned {} of {}: refused",
            wheel.display(),
            k.wheel_sha256,
            k.wheel
        )));
    }
    let file =
        std::fs::File::open(&wheel).map_err(|e| fail(format!("{}: {e}", wheel.display())))?;
    let mut zip =
        zip::ZipArchive::new(file).map_err(|e| fail(format!("{}: {e}", wheel.display())))?;
    let staged = work.join("plugin");
    std::fs::create_dir_all(&staged).map_err(|e| fail(format!("{}: {e}", staged.display())))?;
    let members: Vec<&str> = std::iter::once(k.member).chain(k.header).collect();
    for member in members {
        let name = member.rsplit('/').next().unwrap_or(member);
        let mut m = zip
            .by_name(member)
            .map_err(|e| fail(format!("{}: {member}: {e}", wheel.display())))?;
        let out = staged.join(name);
        let mut f =
            std::fs::File::create(&out).map_err(|e| fail(format!("{}: {e}", out.display())))?;
        std::io::copy(&mut m, &mut f).map_err(|e| fail(format!("{}: {e}", out.display())))?;
    }
    let so = staged.join(k.file_name());
    let got = sha256(&so).map_err(fail)?;
    if got != k.sha256 {
        return Err(fail(format!(
            "the wheel's plugin has sha256 {got}, not the pinned {}: refused",
            k.sha256
        )));
    }
    // Marks it complete, as `scripts/setup.sh` does (it then leaves it as it is).
    std::fs::write(
        staged.join(".complete"),
        format!("{} {}\n", k.wheel, k.wheel_sha256),
    )
    .map_err(|e| fail(format!("{}: {e}", staged.display())))?;
    // Into place: the old folder aside first, so that a reader never sees half of either.
    let old = work.join("old");
    let had_old = dir.exists();
    if had_old {
        std::fs::rename(dir, &old).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    }
    if let Err(e) = std::fs::rename(&staged, dir) {
        if had_old {
            // The old plugin back where it was, not lost with the work folder.
            let _ = std::fs::rename(&old, dir);
        }
        return Err(fail(format!("{}: {e}", dir.display())));
    }
    Ok(())
}

/// Downloads the pinned wheel with pip (`python3 -m pip download`, PyPI's own client; its
/// progress bar shows on a terminal) into `work`.
fn download(k: &KnownPlugin, work: &Path) -> Result<PathBuf, Failure> {
    let python = std::env::var("CUSTOMOP_PYTHON").unwrap_or_else(|_| "python3".into());
    eprintln!("downloading {} with {python} -m pip (--no-deps)", k.wheel);
    let status = std::process::Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .args([
            "--only-binary=:all:",
            "--platform",
            "manylinux_2_27_x86_64",
            "-d",
        ])
        .arg(work)
        .arg(k.spec())
        .stdout(std::process::Stdio::inherit())
        .status()
        .map_err(|e| {
            Failure::Plugin(format!(
                "cannot run `{python} -m pip` ({e}): install pip, or download {} yourself \
                 and give it with --wheel",
                k.wheel
            ))
        })?;
    if !status.success() {
        return Err(Failure::Plugin(format!(
            "`{python} -m pip download {}` failed ({status})",
            k.spec()
        )));
    }
    Ok(work.join(k.wheel))
}
