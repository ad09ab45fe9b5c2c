//! Compiling: explicit compile options (the plugin aborts the process on empty ones), and,
//! after compiling, the parameters of the executable the plugin built, read from its
//! optimized HLO module, so that every buffer the runner hands XLA is checked against what the
//! compiled program expects, not only against the signature read from the program's text.

use super::client::Client;
use super::error::RunError;
use super::executable::Executable;
use super::plugin::Plugin;
use super::program::Program;
use super::register::handler_registry;
use super::sys::{self, Args};
use crate::types::{ElementType, TensorType};

impl Client {
    /// Compiles `program` for this client: one device, or, for a program with a Shardy mesh
    /// (`sdy.mesh`), one partition per mesh device (SPMD with the Shardy partitioner). Reads
    /// the compiled executable's result count and parameters (each device's part), and
    /// refuses a program whose signature disagrees with them.
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
        {
            // Shared: compiling looks handlers up in XLA's registry, which registration writes.
            let _registry = handler_registry().read().unwrap_or_else(|e| e.into_inner());
            plugin.call("PJRT_Client_Compile", plugin.api.client_compile, &mut args)?;
        }
        let raw = args.executable;
        let (num_outputs, parameters) = read_compiled(plugin, raw);
        let mut exe = Executable::new(
            self.inner.clone(),
            raw,
            program.signature.clone(),
            partitions,
        );
        let num_outputs = num_outputs?;
        exe.set_compiled(num_outputs, parameters)?;
        Ok(exe)
    }
}

/// The compiled executable's number of outputs and, where the plugin reports its optimized
/// program, its parameters (one device's part of each).
fn read_compiled(
    plugin: &'static Plugin,
    loaded: *mut sys::PJRT_LoadedExecutable,
) -> (Result<usize, RunError>, Result<Vec<TensorType>, RunError>) {
    let mut g = sys::PJRT_LoadedExecutable_GetExecutable_Args::new();
    g.loaded_executable = loaded;
    if let Err(e) = plugin.call(
        "PJRT_LoadedExecutable_GetExecutable",
        plugin.api.loaded_executable_get_executable,
        &mut g,
    ) {
        return (Err(e.clone()), Err(e));
    }
    let mut n = sys::PJRT_Executable_NumOutputs_Args::new();
    n.executable = g.executable;
    let outputs = plugin
        .call(
            "PJRT_Executable_NumOutputs",
            plugin.api.executable_num_outputs,
            &mut n,
        )
        .map(|()| n.num_outputs);
    let parameters = optimized_program(plugin, g.executable)
        .and_then(|proto| entry_parameters(&proto).map_err(RunError::Program));
    let mut d = sys::PJRT_Executable_Destroy_Args::new();
    d.executable = g.executable;
    let _ = plugin.call(
        "PJRT_Executable_Destroy",
        plugin.api.executable_destroy,
        &mut d,
    );
    (outputs, parameters)
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

/// One field of a protobuf message: its number and its value (a varint, or the bytes of a
/// length-delimited field; fixed-width fields are skipped as `None`).
type Field<'a> = (u64, Option<Value<'a>>);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or("a varint runs past the end")?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("a varint longer than 10 bytes".into())
}

/// The fields of a protobuf message, in order.
fn fields(b: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let key = varint(b, &mut at)?;
        let value = match key & 7 {
            0 => Some(Value::Varint(varint(b, &mut at)?)),
            1 | 5 => {
                at += if key & 7 == 1 { 8 } else { 4 };
                None
            }
            2 => {
                let len = usize::try_from(varint(b, &mut at)?).map_err(|e| e.to_string())?;
                let end = at.checked_add(len).filter(|&e| e <= b.len());
                let end = end.ok_or("a field runs past the end")?;
                let v = &b[at..end];
                at = end;
                Some(Value::Bytes(v))
            }
            w => return Err(format!("wire type {w} is not read")),
        };
        if at > b.len() {
            return Err("a field runs past the end".into());
        }
        out.push((key >> 3, value));
    }
    Ok(out)
}

/// The bytes of field `n` (the first), if it is length-delimited.
fn bytes_field(message: &[u8], n: u64) -> Result<Option<&[u8]>, String> {
    Ok(fields(message)?.into_iter().find_map(|f| match f {
        (k, Some(Value::Bytes(b))) if k == n => Some(b),
        _ => None,
    }))
}

/// The entry parameters of a serialized `HloModuleProto`, or of the
/// `HloModuleProtoWithConfig` (its `hlo_module`, field 1) the CPU plugin returns: the
/// module's `host_program_shape` (field 4), a `ProgramShapeProto` whose `parameters` (field 1)
/// are `ShapeProto`s with `element_type` (field 2, XLA's `PrimitiveType`, the numbers XLA FFI
/// uses too) and `dimensions` (field 3).
pub(super) fn entry_parameters(module: &[u8]) -> Result<Vec<TensorType>, String> {
    let shape = match bytes_field(module, 4)? {
        Some(s) => s,
        None => bytes_field(module, 1)?
            .and_then(|inner| bytes_field(inner, 4).ok().flatten())
            .ok_or("the compiled module has no host program shape")?,
    };
    let mut params = Vec::new();
    for f in fields(shape)? {
        let (1, Some(Value::Bytes(p))) = f else {
            continue;
        };
        let i = params.len();
        let mut code = 0;
        let mut dims = Vec::new();
        for g in fields(p)? {
            match g {
                (2, Some(Value::Varint(v))) => code = v,
                (3, Some(Value::Varint(v))) => dims.push(v as i64),
                (3, Some(Value::Bytes(packed))) => {
                    let mut at = 0;
                    while at < packed.len() {
                        dims.push(varint(packed, &mut at)? as i64);
                    }
                }
                (4, _) => {
                    return Err(format!("compiled parameter {i} is a tuple"));
                }
                _ => {}
            }
        }
        let element = u32::try_from(code)
            .ok()
            .and_then(ElementType::from_xla_code)
            .ok_or_else(|| {
                format!("compiled parameter {i} has XLA type {code}, which customop does not feed")
            })?;
        params.push(TensorType::new(element, dims).map_err(|e| e.message)?);
    }
    Ok(params)
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
    fn compile_options_encode_the_build_options() {
        assert_eq!(compile_options(1), vec![0x1a, 0x04, 0x20, 0x01, 0x28, 0x01]);
        assert_eq!(
            compile_options(4),
            vec![
                0x1a, 0x09, 0x20, 0x01, 0x28, 0x04, 0x30, 0x01, 0x98, 0x01, 0x01
            ]
        );
    }

    /// A message with one length-delimited field.
    fn msg(field: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![(field << 3) | 2, body.len() as u8];
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn entry_parameters_are_read_from_the_module_proto() {
        // f32[3,4] with packed dimensions, then u8[56] with unpacked ones; a name field (1)
        // and a fixed64 field around them are skipped.
        let f32_34 = [vec![0x10, 11], msg(3, &[3, 4])].concat();
        let u8_56 = vec![0x10, 6, 0x18, 56];
        let shape = [msg(1, &f32_34), msg(1, &u8_56), msg(3, b"x")].concat();
        let module = [
            msg(1, b"main"),
            vec![0x29, 0, 0, 0, 0, 0, 0, 0, 0],
            msg(4, &shape),
        ]
        .concat();
        let p = entry_parameters(&module).unwrap();
        // The same module inside an `HloModuleProtoWithConfig` (a config in field 2).
        let with_config = [msg(1, &module), msg(2, &[0x08, 1])].concat();
        assert_eq!(entry_parameters(&with_config).unwrap(), p);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].to_string(), "tensor<3x4xf32>");
        assert_eq!(p[1].to_string(), "tensor<56xui8>");
        // Malformed: truncated, a tuple parameter, an unknown element type, no shape.
        assert!(entry_parameters(&module[..module.len() - 1]).is_err());
        let tuple = msg(4, &msg(1, &msg(4, &u8_56)));
        assert!(entry_parameters(&tuple).unwrap_err().contains("tuple"));
        let token = msg(4, &msg(1, &[0x10, 17]));
        assert!(
            entry_parameters(&token)
                .unwrap_err()
                .contains("XLA type 17")
        );
        assert!(entry_parameters(&msg(1, b"m")).is_err());
    }
}
