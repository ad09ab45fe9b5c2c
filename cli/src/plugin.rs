//! `customop plugin install | path | verify`: XLA's CPU PJRT plugin, pinned by hash, put where
//! `Plugin::installed` (and so `Client::cpu` and `customop run`) finds it, for a user who has
//! only the crates.

use crate::Failure;
use customop::pjrt::{
    CPU_PLUGIN_SHA256, CPU_PLUGIN_VERSION, CPU_PLUGIN_WHEEL, CPU_PLUGIN_WHEEL_SHA256,
    default_plugin_path,
};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The wheel's members that are installed, and their names in the plugin's folder.
const MEMBERS: [(&str, &str); 2] = [
    (
        "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so",
        "xla_cpu_pjrt.so",
    ),
    (
        "xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h",
        "pjrt_c_api.h",
    ),
];

fn plugin_path() -> Result<PathBuf, Failure> {
    default_plugin_path().ok_or_else(|| {
        Failure::Plugin(
            "no place for the plugin: set CUSTOMOP_CACHE, XDG_CACHE_HOME or HOME".into(),
        )
    })
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
pub fn path() -> Result<String, Failure> {
    let p = plugin_path()?;
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
pub fn verify() -> Result<String, Failure> {
    let p = plugin_path()?;
    if !p.is_file() {
        return Err(Failure::Plugin(format!(
            "{}: not installed (`customop plugin install`)",
            p.display()
        )));
    }
    let got = sha256(&p).map_err(Failure::Plugin)?;
    if got != CPU_PLUGIN_SHA256 {
        return Err(Failure::Plugin(format!(
            "{}: its sha256 is {got}, not the {CPU_PLUGIN_SHA256} of the CPU plugin \
             {CPU_PLUGIN_VERSION} (`customop plugin install --force` replaces it)",
            p.display()
        )));
    }
    Ok(format!(
        "{}: sha256 {got}, the CPU plugin {CPU_PLUGIN_VERSION}",
        p.display()
    ))
}

/// `customop plugin install [--wheel FILE] [--force]`: the pinned wheel (downloaded by pip,
/// whose progress bar shows, unless given), its hash checked, the plugin and its C header
/// unpacked next to each other, the plugin's own hash checked, then moved into place.
pub fn install(wheel: Option<&Path>, force: bool) -> Result<String, Failure> {
    let target = plugin_path()?;
    if !force && target.is_file() && verify().is_ok() {
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
    let result = install_in(&work, wheel, dir);
    let _ = std::fs::remove_dir_all(&work);
    result?;
    Ok(format!(
        "{}: the CPU plugin {CPU_PLUGIN_VERSION}, sha256 {CPU_PLUGIN_SHA256}",
        target.display()
    ))
}

fn install_in(work: &Path, wheel: Option<&Path>, dir: &Path) -> Result<(), Failure> {
    let fail = Failure::Plugin;
    let wheel = match wheel {
        Some(w) => w.to_path_buf(),
        None => download(work)?,
    };
    let got = sha256(&wheel).map_err(fail)?;
    if got != CPU_PLUGIN_WHEEL_SHA256 {
        return Err(fail(format!(
            "{}: its sha256 is {got}, not the pinned {CPU_PLUGIN_WHEEL_SHA256} of \
             {CPU_PLUGIN_WHEEL}: refused",
            wheel.display()
        )));
    }
    let file =
        std::fs::File::open(&wheel).map_err(|e| fail(format!("{}: {e}", wheel.display())))?;
    let mut zip =
        zip::ZipArchive::new(file).map_err(|e| fail(format!("{}: {e}", wheel.display())))?;
    let staged = work.join("plugin");
    std::fs::create_dir_all(&staged).map_err(|e| fail(format!("{}: {e}", staged.display())))?;
    for (member, name) in MEMBERS {
        let mut m = zip
            .by_name(member)
            .map_err(|e| fail(format!("{}: {member}: {e}", wheel.display())))?;
        let out = staged.join(name);
        let mut f =
            std::fs::File::create(&out).map_err(|e| fail(format!("{}: {e}", out.display())))?;
        std::io::copy(&mut m, &mut f).map_err(|e| fail(format!("{}: {e}", out.display())))?;
    }
    let so = staged.join(MEMBERS[0].1);
    let got = sha256(&so).map_err(fail)?;
    if got != CPU_PLUGIN_SHA256 {
        return Err(fail(format!(
            "the wheel's plugin has sha256 {got}, not the pinned {CPU_PLUGIN_SHA256}: refused"
        )));
    }
    // Marks it complete, as `scripts/setup.sh` does (it then leaves it as it is).
    std::fs::write(
        staged.join(".complete"),
        format!("{CPU_PLUGIN_WHEEL} {CPU_PLUGIN_WHEEL_SHA256}\n"),
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
fn download(work: &Path) -> Result<PathBuf, Failure> {
    let python = std::env::var("CUSTOMOP_PYTHON").unwrap_or_else(|_| "python3".into());
    eprintln!("downloading {CPU_PLUGIN_WHEEL} (63 MB) with {python} -m pip");
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
        .arg(format!("xla-cpu-pjrt=={CPU_PLUGIN_VERSION}"))
        .stdout(std::process::Stdio::inherit())
        .status()
        .map_err(|e| {
            Failure::Plugin(format!(
                "cannot run `{python} -m pip` ({e}): install pip, or download {CPU_PLUGIN_WHEEL} \
                 yourself and give it with --wheel"
            ))
        })?;
    if !status.success() {
        return Err(Failure::Plugin(format!(
            "`{python} -m pip download xla-cpu-pjrt=={CPU_PLUGIN_VERSION}` failed ({status})"
        )));
    }
    Ok(work.join(CPU_PLUGIN_WHEEL))
}
