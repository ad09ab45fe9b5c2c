//! Compiling: explicit compile options (the plugin aborts the process on empty ones), and,
//! after compiling, the parameters of the executable the plugin built, read from its
//! optimized HLO module (`compiled_shape.rs`), so that every buffer the runner hands XLA is
//! checked against what the compiled program expects, not only against the signature read from
//! the program's text.

use super::cache::{Key, KeyInputs};
use super::client::{Client, ClientInner};
use super::compiled_shape::entry_parameters;
use super::error::RunError;
use super::executable::Executable;
use super::plugin::{Plugin, handed_out};
use super::program::Program;
use super::register::handler_registry;
use super::sys::{self, Args};
use crate::types::TensorType;

impl Client {
    /// Compiles `program` for this client: one device, or, for a program with a Shardy mesh
    /// (`sdy.mesh`), one partition per mesh device (SPMD with the Shardy partitioner). Reads
    /// the compiled executable's result count and parameters (each device's part), and
    /// refuses a program whose signature disagrees with them. With a compile cache
    /// ([`Client::compile_cache`]) a program compiled before for the same plugin, CPU, flags
    /// and options is loaded from it rather than compiled ([`Executable::from_cache`]), and a
    /// program compiled is written to it.
    pub fn compile(&self, program: &Program) -> Result<Executable, RunError> {
        let partitions = match &program.signature {
            Some(s) => s.mesh_devices() as usize,
            None => 1,
        };
        if partitions > self.inner.devices.len() {
            return Err(RunError::Input(format!(
                "the program's mesh has {partitions} devices, but the client has {}",
                self.inner.devices.len()
            )));
        }
        // Never empty: the plugin aborts the process on empty options.
        let options = compile_options(partitions);
        const FORMAT: &str = "mlir";
        let mut prog = sys::PJRT_Program::new();
        // The plugin reads `code` (it is `char*` only because other calls write it).
        prog.code = program.code.as_ptr() as *mut core::ffi::c_char;
        prog.code_size = program.code.len();
        prog.format = FORMAT.as_ptr().cast();
        prog.format_size = FORMAT.len();
        let mut args = sys::PJRT_Client_Compile_Args::new();
        args.client = self.inner.raw;
        args.program = &prog;
        args.compile_options = options.as_ptr().cast();
        args.compile_options_size = options.len();
        let plugin = self.inner.plugin;
        let cache = self.cache().and_then(|cache| {
            key_of(&self.inner, FORMAT, &program.code, &options).map(|key| (cache, key))
        });
        let (raw, from_cache) = {
            // Shared: compiling (and loading a compiled program) looks handlers up in XLA's
            // registry, which registration writes.
            let _registry = handler_registry().read().unwrap_or_else(|e| e.into_inner());
            // An entry the plugin refuses to load is compiled again (and replaced below).
            let loaded = cache
                .as_ref()
                .and_then(|(cache, key)| cache.read(key))
                .and_then(|blob| deserialize(&self.inner, &blob).ok());
            match loaded {
                Some(raw) => (raw, true),
                None => {
                    plugin
                        .call("PJRT_Client_Compile", plugin.api.client_compile, &mut args)
                        .map_err(|e| explained(&self.inner, program, e))?;
                    (args.executable, false)
                }
            }
        };
        if !from_cache
            && let Some((cache, key)) = &cache
            && let Ok(blob) = serialize(plugin, raw)
        {
            cache.write(key, &blob);
        }
        let (num_outputs, parameters) = read_compiled(plugin, raw);
        let mut exe = Executable::new(
            self.inner.clone(),
            raw,
            program.signature.clone(),
            partitions,
            from_cache,
        );
        // A layout or dynamic shape the runner cannot feed fails the compile (the executable
        // is destroyed as `exe` drops); a module it cannot read leaves the parameters unknown,
        // which `run` refuses for a program without a signature.
        let parameters = match parameters {
            Err(e @ (RunError::Layout(_) | RunError::DynamicShape(_))) => return Err(e),
            p => p,
        };
        let num_outputs = num_outputs?;
        exe.set_compiled(num_outputs, parameters)?;
        Ok(exe)
    }
}

/// The compile cache's key for compiling `code` (format `format`) with `options` on `client`,
/// or none when the plugin is not a known one (its hash unknown) or cannot describe its CPU.
fn key_of(client: &ClientInner, format: &str, code: &[u8], options: &[u8]) -> Option<Key> {
    // Detected once: what the CPU has does not change in a process.
    static FEATURES: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let flags = std::env::var_os("XLA_FLAGS").unwrap_or_default();
    Some(Key::of(&KeyInputs {
        plugin_sha256: client.plugin.known_as()?.sha256,
        topology: client.topology()?,
        cpu_features: FEATURES.get_or_init(|| crate::cpu::features().join(",")),
        xla_flags: flags.as_encoded_bytes(),
        devices: client.devices.len(),
        options,
        format,
        program: code,
    }))
}

/// A compile error in customop's words where its cause is known, the plugin's diagnostic kept
/// as its detail: custom-call targets with no handler registered (named first, whatever else the
/// plugin said), or a portable artifact of a newer StableHLO than the plugin reads that the
/// plugin could not read (both versions said, and what to do); any other error as it is. (The
/// plugin reads an artifact from a newer patch release when it has no op the plugin lacks, so
/// a newer version alone is no cause.)
fn explained(client: &ClientInner, program: &Program, e: RunError) -> RunError {
    let RunError::Pjrt { message, code, .. } = &e else {
        return e;
    };
    let targets = missing_handlers(message);
    if !targets.is_empty() {
        return RunError::MissingHandlers {
            targets,
            linked_none: client
                .linked_none
                .load(std::sync::atomic::Ordering::Relaxed),
            detail: e.to_string(),
        };
    }
    let plugin = client.plugin;
    let (Some(v), Some(hi)) = (
        program.stablehlo_version(),
        plugin.stablehlo_current_version(),
    ) else {
        return e;
    };
    // The signs of an artifact the plugin cannot read: VHLO it does not know, or its own
    // "Failed to parse using StableHLO v...".
    let unread = [
        "Failed to parse using StableHLO",
        "forward incompatibility",
        "'vhlo.",
    ]
    .iter()
    .any(|sign| message.contains(sign));
    if v.as_slice() <= hi || !unread {
        return e;
    }
    let show = |x: &[i64]| x.iter().map(i64::to_string).collect::<Vec<_>>().join(".");
    let lo = plugin.stablehlo_minimum_version().map_or("?".into(), show);
    RunError::StableHloVersion {
        program: show(&v),
        plugin: plugin.describe(),
        reads: Box::new((lo, show(hi))),
        code: *code,
        detail: e.to_string(),
    }
}

/// The targets XLA says have no handler ("No FFI handler registered for TARGET on a platform
/// ..."), each once, in the order said.
fn missing_handlers(message: &str) -> Vec<String> {
    const SAID: &str = "No FFI handler registered for ";
    let mut targets: Vec<String> = Vec::new();
    for (at, _) in message.match_indices(SAID) {
        let rest = &message[at + SAID.len()..];
        let target: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect::<String>()
            .trim_matches(|c| c == '`' || c == '\'' || c == '"')
            .to_string();
        if !target.is_empty() && !targets.contains(&target) {
            targets.push(target);
        }
    }
    targets
}

/// The compiled executable's number of outputs and, where the plugin reports its optimized
/// program, its parameters (one device's part of each).
fn read_compiled(
    plugin: &'static Plugin,
    loaded: *mut sys::PJRT_LoadedExecutable,
) -> (Result<usize, RunError>, Result<Vec<TensorType>, RunError>) {
    let read = with_executable(plugin, loaded, |exe| {
        let mut n = sys::PJRT_Executable_NumOutputs_Args::new();
        n.executable = exe;
        let outputs = plugin
            .call(
                "PJRT_Executable_NumOutputs",
                plugin.api.executable_num_outputs,
                &mut n,
            )
            .map(|()| n.num_outputs);
        let parameters = optimized_program(plugin, exe).and_then(|proto| entry_parameters(&proto));
        (outputs, parameters)
    });
    read.unwrap_or_else(|e| (Err(e.clone()), Err(e)))
}

/// `f` of the executable `loaded` holds (`PJRT_LoadedExecutable_GetExecutable`), destroyed
/// after (`PJRT_Executable_Destroy`).
pub(super) fn with_executable<R>(
    plugin: &'static Plugin,
    loaded: *mut sys::PJRT_LoadedExecutable,
    f: impl FnOnce(*mut sys::PJRT_Executable) -> R,
) -> Result<R, RunError> {
    let mut g = sys::PJRT_LoadedExecutable_GetExecutable_Args::new();
    g.loaded_executable = loaded;
    plugin.call(
        "PJRT_LoadedExecutable_GetExecutable",
        plugin.api.loaded_executable_get_executable,
        &mut g,
    )?;
    let r = f(g.executable);
    let mut d = sys::PJRT_Executable_Destroy_Args::new();
    d.executable = g.executable;
    let _ = plugin.call(
        "PJRT_Executable_Destroy",
        plugin.api.executable_destroy,
        &mut d,
    );
    Ok(r)
}

/// The serialized optimized HLO module of `exe` (`PJRT_Executable_OptimizedProgram`, called
/// once for the size and once for the bytes).
fn optimized_program(
    plugin: &'static Plugin,
    exe: *mut sys::PJRT_Executable,
) -> Result<Vec<u8>, RunError> {
    const FORMAT: &str = "hlo";
    let mut prog = sys::PJRT_Program::new();
    prog.format = FORMAT.as_ptr().cast();
    prog.format_size = FORMAT.len();
    let mut a = sys::PJRT_Executable_OptimizedProgram_Args::new();
    a.executable = exe;
    a.program = &mut prog;
    let f = plugin.api.executable_optimized_program;
    plugin.call("PJRT_Executable_OptimizedProgram", f, &mut a)?;
    let mut code = vec![0u8; prog.code_size];
    prog.code = code.as_mut_ptr().cast();
    a.program = &mut prog;
    plugin.call("PJRT_Executable_OptimizedProgram", f, &mut a)?;
    code.truncate(prog.code_size);
    Ok(code)
}

/// The serialized executable of `loaded` (`PJRT_Executable_Serialize`).
pub(super) fn serialize(
    plugin: &'static Plugin,
    loaded: *mut sys::PJRT_LoadedExecutable,
) -> Result<Vec<u8>, RunError> {
    with_executable(plugin, loaded, |exe| {
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

/// `CompileOptionsProto { executable_build_options { num_replicas: 1, num_partitions: n,
/// use_spmd_partitioning, use_shardy_partitioner } }`, encoded by hand (field numbers from
/// XLA's `compile_options.proto`: build options 3; replicas 4, partitions 5, SPMD 6, Shardy
/// 19). The plugin aborts the process on empty options (`replica_count > 0`), so they are
/// always given.
fn compile_options(partitions: usize) -> Vec<u8> {
    fn put(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    let mut build = Vec::new();
    for (field, value) in [(4u64, 1u64), (5, partitions as u64)] {
        put(&mut build, field << 3);
        put(&mut build, value);
    }
    if partitions > 1 {
        for field in [6u64, 19] {
            put(&mut build, field << 3);
            put(&mut build, 1);
        }
    }
    let mut out = Vec::new();
    put(&mut out, (3 << 3) | 2);
    put(&mut out, build.len() as u64);
    out.extend_from_slice(&build);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn missing_handlers_are_read_from_what_xla_says() {
        let said = "No FFI handler registered for nc.fused_gelu_scale on a platform Host \
                    (canonical host)\nNo FFI handler registered for `b.two` on a platform Host\n\
                    No FFI handler registered for nc.fused_gelu_scale on a platform Host";
        assert_eq!(missing_handlers(said), ["nc.fused_gelu_scale", "b.two"]);
        assert!(missing_handlers("error: unregistered operation 'vhlo.custom_call_v2'").is_empty());
    }

    #[test]
    fn compile_options_encode_the_build_options() {
        assert_eq!(compile_options(1), vec![0x1a, 0x04, 0x20, 0x01, 0x28, 0x01]);
        assert_eq!(
            compile_options(4),
            vec![
                0x1a, 0x09, 0x20, 0x01, 0x28, 0x04, 0x30, 0x01, 0x98, 0x01, 0x01
            ]
        );
    }
}
