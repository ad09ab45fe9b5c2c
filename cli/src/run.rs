//! `customop run MODULE --ops LIB --input [N=]x.npy --external name=config.json`: a StableHLO
//! program (text or bytecode) run by the Rust runner on the installed CPU plugin, with the
//! libraries' handlers; inputs from `.npy`, externals packed from JSON or TOML by their
//! descriptor's layout, outputs printed or written to `.npy`/`.npz`.

use crate::npy::{self, Array};
use crate::values::value_of;
use crate::{Failure, ops};
use customop::descriptor::{Layout, pack_value};
use customop::pjrt::{Client, HostTensor, Param, Program, RunError};
use customop::{ElementType, TensorType};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What `customop run` was given.
#[derive(Debug)]
pub struct Request {
    pub module: PathBuf,
    pub ops: Vec<PathBuf>,
    pub inputs: Vec<String>,
    pub externals: Vec<String>,
    pub out: Option<PathBuf>,
    /// The known plugin to run on (`name` or `name==version`); the default when none.
    pub plugin: Option<String>,
}

/// Reads the program: MLIR bytecode, a serialized `jax.export`, else text.
fn program(path: &Path) -> Result<(Program, Option<Vec<Param>>), Failure> {
    let bytes =
        std::fs::read(path).map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?;
    let p =
        Program::load(&bytes).map_err(|e| Failure::Program(format!("{}: {e}", path.display())))?;
    let params = p.signature().map(|s| s.params.clone());
    Ok((p, params))
}

/// `name=value` split at the first `=`; `None` for the name when there is no `=`.
fn named(arg: &str) -> (Option<&str>, &str) {
    match arg.split_once('=') {
        Some((n, v)) => (Some(n), v),
        None => (None, arg),
    }
}

/// The layout of descriptor `name` among the libraries' manifests.
fn layout<'m>(manifests: &'m [Value], name: &str) -> Option<&'m Value> {
    manifests
        .iter()
        .flat_map(ops::descriptors)
        .find(|d| d["name"] == name)
}

/// The host tensor of argument `p` from `.npy` array `a` (read from `what`), checked.
fn tensor(p: &Param, a: Array, what: &str) -> Result<HostTensor, Failure> {
    if p.ty.element() != a.element || p.ty.shape() != a.shape.as_slice() {
        return Err(Failure::Input(format!(
            "{what} is {} {:?}; argument {} takes {} {:?}",
            a.element,
            a.shape,
            p.index,
            p.ty.element(),
            p.ty.shape()
        )));
    }
    HostTensor::from_bytes(p.ty.clone(), a.data).map_err(|e| Failure::Input(format!("{what}: {e}")))
}

/// The arguments, in order: externals by name, the others from `--input` (by position `N=`,
/// or in order).
fn arguments(
    r: &Request,
    params: Option<&[Param]>,
    manifests: &[Value],
) -> Result<Vec<HostTensor>, Failure> {
    let Some(params) = params else {
        // Bytecode: no signature to read; the inputs as given, in order.
        if !r.externals.is_empty() {
            return Err(Failure::Input(
                "externals are given by name, which only a program's text says (bytecode and \
                 `jax.export` serializations are read by position): give the program as text \
                 (`exported.mlir_module()`), or the external's packed bytes as a uint8 .npy \
                 input"
                    .into(),
            ));
        }
        // Each input at its position `N=`, the others in order into the first free ones; the
        // arguments are those given, without a gap (their types are the `.npy`s').
        let mut slots: Vec<Option<HostTensor>> = Vec::new();
        let mut next = 0;
        for i in &r.inputs {
            let (name, file) = named(i);
            let k = match name {
                Some(n) => n.parse::<usize>().map_err(|_| {
                    Failure::Input(format!("--input {i}: `{n}` is not an argument's position"))
                })?,
                None => {
                    while slots.get(next).is_some_and(Option::is_some) {
                        next += 1;
                    }
                    next
                }
            };
            if slots.len() <= k {
                slots.resize(k + 1, None);
            }
            if slots[k].is_some() {
                return Err(Failure::Input(format!("argument {k} is given twice")));
            }
            let a = npy::read(Path::new(file)).map_err(Failure::Input)?;
            let ty = TensorType::new(a.element, a.shape.clone())
                .map_err(|e| Failure::Input(format!("{file}: {}", e.message)))?;
            let t = HostTensor::from_bytes(ty, a.data)
                .map_err(|e| Failure::Input(format!("{file}: {e}")))?;
            slots[k] = Some(t);
        }
        return slots
            .into_iter()
            .enumerate()
            .map(|(k, s)| {
                s.ok_or_else(|| {
                    Failure::Input(format!(
                        "argument {k} is not given (a later one is): --input {k}=FILE.npy"
                    ))
                })
            })
            .collect();
    };
    let mut slots: Vec<Option<HostTensor>> = vec![None; params.len()];
    let externals: Vec<&Param> = params.iter().filter(|p| p.external.is_some()).collect();
    for e in &r.externals {
        let (Some(name), file) = named(e) else {
            return Err(Failure::Input(format!(
                "--external {e}: give it as NAME=FILE"
            )));
        };
        let Some(p) = externals
            .iter()
            .find(|p| p.external.as_ref().and_then(|x| x.name.as_deref()) == Some(name))
        else {
            let known: Vec<&str> = externals
                .iter()
                .filter_map(|p| p.external.as_ref().and_then(|x| x.name.as_deref()))
                .collect();
            return Err(Failure::Input(format!(
                "the program has no external `{name}` (its externals: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        };
        if slots[p.index].is_some() {
            return Err(Failure::Input(format!("external `{name}` is given twice")));
        }
        let spec = p
            .external
            .as_ref()
            .ok_or_else(|| Failure::Input(name.into()))?;
        let layout = layout(manifests, &spec.descriptor).ok_or_else(|| {
            Failure::Input(format!(
                "external `{name}` is a `{}`, which no library given with --ops declares",
                spec.descriptor
            ))
        })?;
        let layout = Layout::from_json(layout).map_err(Failure::Library)?;
        if layout.fingerprint != spec.fingerprint {
            return Err(Failure::Input(format!(
                "external `{name}`: the program's `{}` has fingerprint {:#018x}, the library's \
                 {:#018x}: they were built from different layouts",
                spec.descriptor, spec.fingerprint, layout.fingerprint
            )));
        }
        let bytes = pack_value(&layout, &value_of(Path::new(file)).map_err(Failure::Input)?)
            .map_err(|e| Failure::Input(format!("{file}: {e}")))?;
        if bytes.len() != spec.size {
            return Err(Failure::Input(format!(
                "external `{name}`: {file} packs to {} bytes; the program's argument takes {}",
                bytes.len(),
                spec.size
            )));
        }
        let t = HostTensor::from_bytes(p.ty.clone(), bytes)
            .map_err(|e| Failure::Input(format!("external `{name}`: {e}")))?;
        slots[p.index] = Some(t);
    }
    let mut free = params.iter().filter(|p| p.external.is_none());
    for i in &r.inputs {
        let (name, file) = named(i);
        let p = match name {
            Some(n) => {
                let k: usize = n.parse().map_err(|_| {
                    Failure::Input(format!("--input {i}: `{n}` is not an argument's position"))
                })?;
                params.get(k).ok_or_else(|| {
                    Failure::Input(format!(
                        "--input {i}: the program has {} arguments",
                        params.len()
                    ))
                })?
            }
            None => free
                .by_ref()
                .find(|p| slots[p.index].is_none())
                .ok_or_else(|| Failure::Input(format!("--input {i}: every argument is given")))?,
        };
        if slots[p.index].is_some() {
            return Err(Failure::Input(format!(
                "argument {} is given twice",
                p.index
            )));
        }
        let a = npy::read(Path::new(file)).map_err(Failure::Input)?;
        slots[p.index] = Some(tensor(p, a, file)?);
    }
    slots
        .into_iter()
        .zip(params)
        .map(|(s, p)| {
            s.ok_or_else(|| {
                Failure::Input(match &p.external {
                    Some(e) => format!(
                        "external `{}` ({}) is not given: --external {}=FILE.json",
                        e.name.as_deref().unwrap_or("?"),
                        e.descriptor,
                        e.name.as_deref().unwrap_or("NAME")
                    ),
                    None => format!(
                        "argument {} ({} {:?}) is not given: --input {}=FILE.npy",
                        p.index,
                        p.ty.element(),
                        p.ty.shape(),
                        p.index
                    ),
                })
            })
        })
        .collect()
}

/// How a runner error maps to the command's failure kinds (where customop says the cause in
/// its own words, the plugin's diagnostic behind it after [`DETAIL`](crate::DETAIL)).
fn at(stage: &'static str) -> impl Fn(RunError) -> Failure {
    move |e| match e {
        RunError::MissingHandlers { .. } => Failure::Library(with_detail(&e)),
        RunError::StableHloVersion { .. } => Failure::Program(with_detail(&e)),
        RunError::Library { .. } => Failure::Library(e.to_string()),
        RunError::PluginNotFound { .. } | RunError::Plugin { .. } | RunError::PluginEnv { .. } => {
            Failure::Plugin(format!(
                "{e} (`customop plugin install` installs the default plugin, `customop plugin \
                 list` names the others)"
            ))
        }
        RunError::Input(_) => Failure::Input(e.to_string()),
        RunError::Program(_) => Failure::Program(e.to_string()),
        e if stage == "setup" => Failure::Plugin(format!("the CPU plugin's client: {e}")),
        e if stage == "compile" => Failure::Program(format!("compiling: {e}")),
        e => Failure::Execute(e.to_string()),
    }
}

/// `e`'s message, then the plugin's diagnostic behind it.
fn with_detail(e: &RunError) -> String {
    match e.detail() {
        Some(d) => format!("{e}{}{d}", crate::DETAIL),
        None => e.to_string(),
    }
}

/// Runs the request; the outputs as `.npy` arrays.
pub fn run(r: &Request) -> Result<Vec<Array>, Failure> {
    let (program, params) = program(&r.module)?;
    let manifests: Vec<Value> = r
        .ops
        .iter()
        .map(|l| ops::manifest(l))
        .collect::<Result<_, _>>()?;
    let args = arguments(r, params.as_deref(), &manifests)?;
    let devices = program.signature().map_or(1, |s| s.mesh_devices());
    let devices = usize::try_from(devices).unwrap_or(usize::MAX);
    let client = match &r.plugin {
        Some(spec) => Client::known(crate::plugin::choose(Some(spec))?, devices),
        None => Client::cpu(devices),
    }
    .map_err(at("setup"))?;
    for l in &r.ops {
        // SAFETY: loaded by `ops::manifest` above as a customop kernel library (it has the
        // manifest); its handlers are what its manifest names.
        unsafe { client.register_library(l) }.map_err(at("setup"))?;
    }
    let exe = client.compile(&program).map_err(at("compile"))?;
    let outs = exe.run(&args).map_err(at("execute"))?;
    Ok(outs
        .into_iter()
        .map(|t| Array {
            element: t.element(),
            shape: t.dims().to_vec(),
            data: t.bytes().to_vec(),
        })
        .collect())
}

/// Element `i` of sub-byte data `data` of type `element` as the runner hands it to the host
/// (one element a byte, in its low bits, as ml_dtypes keeps it), as text.
fn packed_value(element: ElementType, data: &[u8], i: usize) -> String {
    let bits = element.bits() as usize;
    let Some(byte) = data.get(i).copied() else {
        return "?".to_string();
    };
    let code = byte & ((1u8 << bits) - 1);
    match element {
        ElementType::F4E2M1FN => customop::F4E2M1FN::from_bits(code).to_f32().to_string(),
        // Signed: the top bit of the code is the sign.
        ElementType::S4 | ElementType::S2 => {
            (i16::from(code) - (i16::from(code >> (bits - 1)) << bits)).to_string()
        }
        _ => code.to_string(),
    }
}

/// The values of `a` as text (at most `limit` of them), e.g. `3xi8=[3, 5, -2]`.
pub fn show(a: &Array, limit: usize) -> String {
    let dims: Vec<String> = a.shape.iter().map(i64::to_string).collect();
    let count: i64 = a.shape.iter().product();
    let n = usize::try_from(count).unwrap_or(0);
    let size = a.element.byte_size().max(1);
    let value = |i: usize| -> String {
        if a.element.is_packed() {
            return packed_value(a.element, &a.data, i);
        }
        let Some(b) = a.data.get(i * size..(i + 1) * size) else {
            return "?".to_string();
        };
        let arr = |k: usize| -> [u8; 8] {
            let mut x = [0u8; 8];
            x[..k].copy_from_slice(&b[..k]);
            x
        };
        match a.element {
            ElementType::Bool => (b[0] != 0).to_string(),
            ElementType::I8 => (b[0] as i8).to_string(),
            ElementType::U8 => b[0].to_string(),
            ElementType::I16 => i16::from_le_bytes([b[0], b[1]]).to_string(),
            ElementType::U16 => u16::from_le_bytes([b[0], b[1]]).to_string(),
            ElementType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_string(),
            ElementType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_string(),
            ElementType::I64 => i64::from_le_bytes(arr(8)).to_string(),
            ElementType::U64 => u64::from_le_bytes(arr(8)).to_string(),
            ElementType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_string(),
            ElementType::F64 => f64::from_le_bytes(arr(8)).to_string(),
            ElementType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_string(),
            ElementType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_string(),
            ElementType::C64 => {
                let (re, im) = (&b[..4], &b[4..8]);
                let f = |x: &[u8]| f32::from_le_bytes([x[0], x[1], x[2], x[3]]);
                format!("{}{:+}i", f(re), f(im))
            }
            ElementType::C128 => {
                let f = |x: &[u8]| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(x);
                    f64::from_le_bytes(a)
                };
                format!("{}{:+}i", f(&b[..8]), f(&b[8..16]))
            }
            // The 8-bit floats by value; anything else by its bits.
            e => customop::float8::value_of(e, b[0]).map_or_else(
                || {
                    let hex: String = b.iter().rev().map(|x| format!("{x:02x}")).collect();
                    format!("0x{hex}")
                },
                |v| v.to_string(),
            ),
        }
    };
    let mut values: Vec<String> = (0..n.min(limit)).map(value).collect();
    if n > limit {
        values.push(format!("... ({} more)", n - limit));
    }
    format!(
        "{}{}{}=[{}]",
        dims.join("x"),
        if dims.is_empty() { "" } else { "x" },
        a.element.mlir_name(),
        values.join(", ")
    )
}
