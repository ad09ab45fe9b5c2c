//! The vector instructions of the CPU a kernel runs on, chosen at run time: a kernel library
//! built for plain x86-64 (the default target, as a wheel is built) still runs its AVX-512 or
//! AVX2 code where the CPU has it.
//!
//! [`simd`] gives a kernel the best level this CPU has, detected once per process, as a token of
//! the [`pulp`] crate (re-exported here, so a kernel crate names the same version): a token
//! exists only where its instructions do, and its `vectorize` runs a job compiled for them, so
//! the kernel's body is safe code (book: "Fast kernels").
//!
//! ```
//! use customop::cpu::pulp::NullaryFnOnce;
//! use customop::cpu::{Simd, simd};
//!
//! /// The job: plain loops, compiled for the level that runs them. A struct, not a closure: a
//! /// closure is called through a shim built without the level's features.
//! struct Sum<'a>(&'a [f32]);
//!
//! impl NullaryFnOnce for Sum<'_> {
//!     type Output = f32;
//!     #[inline(always)]
//!     fn call(self) -> f32 {
//!         self.0.iter().sum()
//!     }
//! }
//!
//! fn sum(v: &[f32]) -> f32 {
//!     match simd() {
//!         #[cfg(target_arch = "x86_64")]
//!         Simd::Avx512(v4) => v4.vectorize(Sum(v)),
//!         #[cfg(target_arch = "x86_64")]
//!         Simd::Avx2(v3) => v3.vectorize(Sum(v)),
//!         Simd::Portable => Sum(v).call(),
//!     }
//! }
//! assert_eq!(sum(&[1.0, 2.0, 3.0]), 6.0);
//! ```
//!
//! The environment variable `CUSTOMOP_CPU` (`avx512`, `avx2` or `portable`), read once, caps the
//! level: to test or measure each path on one machine. A level above what the CPU has is not
//! taken (the CPU's own is), and a value not in that list is refused by name on standard error
//! and ignored.

use std::sync::OnceLock;

/// The `pulp` crate: SIMD tokens (`pulp::x86::V3` for AVX2 + FMA, `V4` for AVX-512) whose
/// methods are the CPU's instructions as safe functions.
pub use pulp;

/// A level of vector instructions, in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// No vector instructions beyond the target's baseline (SSE2 on x86-64).
    Portable,
    /// AVX2 with FMA (x86-64-v3: pulp's `V3`).
    Avx2,
    /// AVX-512 F, BW, CD, DQ and VL (x86-64-v4: pulp's `V4`).
    Avx512,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2, Level::Avx512];

    /// The level's name, as `CUSTOMOP_CPU` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The level named `name` (`avx512`, `avx2`, `portable`).
    pub fn from_name(name: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// The token of a level, which a kernel's code for that level takes.
#[derive(Clone, Copy, Debug)]
pub enum Simd {
    /// AVX-512 (x86-64-v4).
    #[cfg(target_arch = "x86_64")]
    Avx512(pulp::x86::V4),
    /// AVX2 with FMA (x86-64-v3).
    #[cfg(target_arch = "x86_64")]
    Avx2(pulp::x86::V3),
    /// The target's baseline.
    Portable,
}

impl Simd {
    /// The token's level.
    pub fn level(self) -> Level {
        match self {
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512(_) => Level::Avx512,
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2(_) => Level::Avx2,
            Simd::Portable => Level::Portable,
        }
    }
}

/// The token of `level` where this CPU has its instructions, `None` where it does not
/// (`Portable` always exists). Tests take each level this way, whatever `CUSTOMOP_CPU` says.
pub fn simd_at(level: Level) -> Option<Simd> {
    match level {
        Level::Portable => Some(Simd::Portable),
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => pulp::x86::V3::try_new().map(Simd::Avx2),
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => pulp::x86::V4::try_new().map(Simd::Avx512),
        #[cfg(not(target_arch = "x86_64"))]
        _ => None,
    }
}

/// The highest level this CPU has.
pub fn detected() -> Level {
    *Level::ALL
        .iter()
        .rev()
        .find(|&&l| simd_at(l).is_some())
        .unwrap_or(&Level::Portable)
}

/// The level kernels take: [`detected`], capped by `CUSTOMOP_CPU`; found once per process.
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cap = std::env::var("CUSTOMOP_CPU").ok();
        capped(detected(), cap.as_deref())
    })
}

/// `detected` capped by the value of `CUSTOMOP_CPU` (`None`: unset).
fn capped(detected: Level, cap: Option<&str>) -> Level {
    match cap.map(|c| (c, Level::from_name(c.trim()))) {
        None | Some(("", _)) => detected,
        Some((_, Some(cap))) => cap.min(detected),
        Some((bad, None)) => {
            eprintln!(
                "customop: CUSTOMOP_CPU={bad:?} is not one of avx512, avx2, portable; ignored \
                 (kernels take {})",
                detected.name()
            );
            detected
        }
    }
}

/// The token of [`level`]: what a kernel matches on to take its best path.
pub fn simd() -> Simd {
    simd_at(level()).unwrap_or(Simd::Portable)
}

/// The instruction-set features this CPU has, as the standard library detects them (the CPU's
/// and the operating system's support both), by their `target_feature` names, in a fixed order:
/// what code compiled for this machine may use (XLA compiles for the host's features, so the
/// runner's compile cache keys its entries by this list too: an entry compiled for AVX-512 is
/// never loaded on a CPU without it). Empty on targets other than x86-64.
pub fn features() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! detected {
            ($($f:tt),* $(,)?) => {
                [$(($f, std::arch::is_x86_feature_detected!($f))),*]
            };
        }
        detected!(
            "aes",
            "pclmulqdq",
            "rdrand",
            "rdseed",
            "tsc",
            "mmx",
            "sse",
            "sse2",
            "sse3",
            "ssse3",
            "sse4.1",
            "sse4.2",
            "sse4a",
            "sha",
            "avx",
            "avx2",
            "avx512f",
            "avx512cd",
            "avx512bw",
            "avx512dq",
            "avx512vl",
            "avx512ifma",
            "avx512vbmi",
            "avx512vpopcntdq",
            "avx512vbmi2",
            "gfni",
            "vaes",
            "vpclmulqdq",
            "avx512vnni",
            "avx512bitalg",
            "avx512bf16",
            "avx512vp2intersect",
            "avx512fp16",
            "avxvnni",
            "f16c",
            "fma",
            "bmi1",
            "bmi2",
            "abm",
            "lzcnt",
            "tbm",
            "popcnt",
            "fxsr",
            "xsave",
            "xsaveopt",
            "xsaves",
            "xsavec",
            "cmpxchg16b",
            "adx",
            "rtm",
            "movbe",
            "ermsb",
        )
        .into_iter()
        .filter_map(|(name, has)| has.then_some(name))
        .collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order() {
        for l in Level::ALL {
            assert_eq!(Level::from_name(l.name()), Some(l));
        }
        assert_eq!(Level::from_name("sse9"), None);
        assert!(Level::Portable < Level::Avx2 && Level::Avx2 < Level::Avx512);
    }

    #[test]
    fn the_variable_caps_never_raises() {
        assert_eq!(capped(Level::Avx512, None), Level::Avx512);
        assert_eq!(capped(Level::Avx512, Some("avx2")), Level::Avx2);
        assert_eq!(capped(Level::Avx512, Some(" portable ")), Level::Portable);
        assert_eq!(capped(Level::Avx2, Some("avx512")), Level::Avx2);
        assert_eq!(capped(Level::Avx2, Some("neon")), Level::Avx2);
        assert_eq!(capped(Level::Avx2, Some("")), Level::Avx2);
    }

    #[test]
    fn features_agree_with_the_levels_detected() {
        let f = features();
        #[cfg(target_arch = "x86_64")]
        {
            // x86-64's baseline, always there.
            assert!(f.contains(&"sse2"), "{f:?}");
            let has = |x: &str| f.contains(&x);
            // x86-64-v3 and v4 as pulp's tokens need them.
            let v3 = [
                "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "bmi1", "bmi2",
                "fma", "lzcnt",
            ]
            .iter()
            .all(|x| has(x));
            assert_eq!(simd_at(Level::Avx2).is_some(), v3, "{f:?}");
            assert_eq!(
                simd_at(Level::Avx512).is_some(),
                v3 && ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"]
                    .iter()
                    .all(|x| has(x)),
                "{f:?}"
            );
        }
        // Each feature once.
        let mut sorted = f.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), f.len());
    }

    #[test]
    fn tokens_match_detection() {
        let top = detected();
        for l in Level::ALL {
            let token = simd_at(l);
            assert_eq!(token.is_some(), l <= top, "{l:?}");
            if let Some(t) = token {
                assert_eq!(t.level(), l);
            }
        }
        // On x86-64 the detection agrees with std's.
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            top >= Level::Avx2,
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        );
    }
}
