//! A compiled program and its executions: inputs given by position and by external name,
//! each checked against the program's signature (read from its text) and against the
//! parameters of the executable the plugin compiled, before any buffer reaches XLA.

use super::buffer::{Buffer, DeviceTensor, Event, read_buffer, upload};
use super::client::ClientInner;
use super::error::RunError;
use super::host::HostTensor;
use super::register::handler_registry;
use super::sharding::{assemble, shard_of};
use super::signature::Signature;
use super::sys::{self, Args};
use crate::types::TensorType;
use std::sync::Arc;

/// A compiled program, ready to run on its client's devices.
///
/// One `Executable` may be shared by many threads (`&Executable` is `Send`): each `run` or
/// `inputs().run()` is an execution of its own, as the runner's tests do from 8 threads.
pub struct Executable {
    client: Arc<ClientInner>,
    raw: *mut sys::PJRT_LoadedExecutable,
    signature: Option<Signature>,
    num_outputs: usize,
    partitions: usize,
    /// Each parameter's type on one device, as the compiled executable takes it; or why the
    /// plugin could not say.
    compiled: Result<Vec<TensorType>, String>,
    /// Whether it was loaded from the compile cache rather than compiled.
    from_cache: bool,
}

// SAFETY: the executable belongs to a CPU client (`Client::new` refuses other platforms),
// whose executables the runner's tests execute from 8 threads at once; the raw pointer is
// owned by this value and destroyed once, in Drop (see `ClientInner`'s Send for why the claim
// is scoped to the CPU plugin).
unsafe impl Send for Executable {}
// SAFETY: as for Send: `run` takes `&self`, and concurrent executions were tested.
unsafe impl Sync for Executable {}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable")
            .field("outputs", &self.num_outputs)
            .field("partitions", &self.partitions)
            .finish()
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        let plugin = self.client.plugin;
        let mut d = sys::PJRT_LoadedExecutable_Destroy_Args::new();
        d.executable = self.raw;
        let _ = plugin.call(
            "PJRT_LoadedExecutable_Destroy",
            plugin.api.loaded_executable_destroy,
            &mut d,
        );
    }
}

impl Executable {
    /// What the runner read of the program's entry function.
    pub fn signature(&self) -> Result<&Signature, RunError> {
        self.signature.as_ref().ok_or_else(|| {
            RunError::Input(
                "the program was given as bytecode without a signature: inputs can only be \
                 passed in order, with `run`"
                    .into(),
            )
        })
    }

    /// The number of results.
    pub fn num_outputs(&self) -> usize {
        self.num_outputs
    }

    /// The number of devices each execution runs on (the mesh's, or 1).
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    pub(super) fn new(
        client: Arc<ClientInner>,
        raw: *mut sys::PJRT_LoadedExecutable,
        signature: Option<Signature>,
        partitions: usize,
        from_cache: bool,
    ) -> Executable {
        Executable {
            client,
            raw,
            signature,
            num_outputs: 0,
            partitions,
            compiled: Err("not read yet".into()),
            from_cache,
        }
    }

    /// Whether the executable was loaded from the client's compile cache rather than
    /// compiled.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// Records what the plugin reports of the compiled executable, and holds the signature
    /// read from the program's text to it: the same number of results and parameters, and
    /// (without a mesh) the same parameter types.
    pub(super) fn set_compiled(
        &mut self,
        num_outputs: usize,
        parameters: Result<Vec<TensorType>, RunError>,
    ) -> Result<(), RunError> {
        self.num_outputs = num_outputs;
        self.compiled = parameters.map_err(|e| e.to_string());
        let Some(s) = &self.signature else {
            return Ok(());
        };
        if s.results.len() != num_outputs {
            return Err(RunError::Program(format!(
                "the signature has {} results, the compiled program {num_outputs}",
                s.results.len(),
            )));
        }
        if let Ok(params) = &self.compiled {
            if params.len() != s.params.len() {
                return Err(RunError::Program(format!(
                    "the signature has {} arguments, the compiled program {}",
                    s.params.len(),
                    params.len()
                )));
            }
            for (p, c) in s.params.iter().zip(params) {
                let same = if self.partitions > 1 {
                    p.ty.element() == c.element() && p.ty.rank() == c.rank()
                } else {
                    p.ty == *c
                };
                if !same {
                    return Err(RunError::Program(format!(
                        "the program's text says argument {} is {}, but the compiled program \
                         takes {c}",
                        p.index, p.ty
                    )));
                }
            }
        }
        Ok(())
    }

    /// The parameters of the compiled executable, one device's part of each, as the plugin
    /// reports them (from its optimized program).
    pub fn compiled_parameters(&self) -> Result<&[TensorType], RunError> {
        self.compiled
            .as_deref()
            .map_err(|e| RunError::Program(format!("the compiled parameters are unknown: {e}")))
    }

    /// Runs the program once on `args`, every argument in order (externals as their packed
    /// bytes), and returns its results. Every argument is checked first: against the
    /// signature read from the program's text (count, element type, dimensions, an
    /// external's packed size), and each device's buffer against the compiled executable's
    /// parameter; a program with neither (bytecode, on a plugin that does not report its
    /// optimized program) is refused: see [`Executable::run_unchecked`]. In a program with a
    /// mesh, each argument is split over the devices as its sharding says, and each result
    /// assembled from its shards.
    pub fn run(&self, args: &[HostTensor]) -> Result<Vec<HostTensor>, RunError> {
        let slots: Vec<Slot<'_>> = args.iter().map(Slot::Host).collect();
        self.run_slots(&slots, Read::InPlace, Check::Always)
    }

    /// [`Executable::run`] without refusing a program whose inputs cannot be checked (the
    /// checks that can be made still are).
    ///
    /// # Safety
    /// Where neither a signature nor the compiled parameters are known, nothing stops a
    /// buffer of the wrong size or element type from reaching XLA, which reads and writes as
    /// many bytes as the program says: the caller promises that `args` are, in order, exactly
    /// the entry function's parameters. Where the compiled parameters are unknown, the
    /// caller also promises that the program takes and returns row-major buffers (no
    /// `mhlo.layout_mode` asking for another layout).
    pub unsafe fn run_unchecked(&self, args: &[HostTensor]) -> Result<Vec<HostTensor>, RunError> {
        let slots: Vec<Slot<'_>> = args.iter().map(Slot::Host).collect();
        self.run_slots(&slots, Read::InPlace, Check::WhatIsKnown)
    }

    /// [`Executable::run`], every output read through `PJRT_Buffer_ToHostBuffer` (the path
    /// for buffers not in host memory), for tests that hold the two ways of reading alike.
    #[cfg(test)]
    pub(super) fn run_reading_through_the_plugin(
        &self,
        args: &[HostTensor],
    ) -> Result<Vec<HostTensor>, RunError> {
        let slots: Vec<Slot<'_>> = args.iter().map(Slot::Host).collect();
        self.run_slots(&slots, Read::ThroughThePlugin, Check::Always)
    }

    pub(super) fn run_slots(
        &self,
        args: &[Slot<'_>],
        read: Read,
        check: Check,
    ) -> Result<Vec<HostTensor>, RunError> {
        let plugin = self.client.plugin;
        let compiled = self.compiled.as_ref().ok();
        if let Some(c) = compiled {
            if args.len() != c.len() {
                return Err(RunError::Input(format!(
                    "the compiled program takes {} arguments, {} were given",
                    c.len(),
                    args.len()
                )));
            }
        } else if check == Check::Always {
            return Err(RunError::Input(format!(
                "the plugin does not report the compiled program's parameters ({}): {}; \
                 `run_unchecked` runs it on the caller's word",
                self.compiled.as_ref().err().map_or("", |e| e.as_str()),
                if self.signature.is_none() {
                    "the inputs of a program given as bytecode cannot be checked"
                } else {
                    "the layouts of its buffers cannot be checked"
                }
            )));
        }
        if let Some(sig) = &self.signature {
            if args.len() != sig.params.len() {
                return Err(RunError::Input(format!(
                    "the program takes {} arguments, {} were given",
                    sig.params.len(),
                    args.len()
                )));
            }
            for (p, a) in sig.params.iter().zip(args) {
                check_type(p.index, &p.ty, a.ty())?;
                if let (Some(e), Slot::Host(h)) = (&p.external, a) {
                    check_external_bytes(e, h)?;
                }
            }
        }
        let mut kept = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if let Slot::Device(d) = a {
                if !Arc::ptr_eq(d.client(), &self.client) {
                    return Err(RunError::Input(format!(
                        "argument {i} was uploaded by another client"
                    )));
                }
                if self.partitions > 1 {
                    return Err(RunError::Input(format!(
                        "argument {i} is on one device, but the program runs on {}: give it \
                         from the host, to be split",
                        self.partitions
                    )));
                }
                if let Some(c) = compiled {
                    check_compiled(i, &c[i], d.ty())?;
                }
                kept.push(i as i64);
            }
        }
        let n_dev = self.partitions;
        let mesh = self
            .signature
            .as_ref()
            .map(|s| s.mesh.clone())
            .unwrap_or_default();
        // Per device, per argument: the buffer (uploaded here and owned by `inputs`, or one
        // the caller keeps on the device).
        let mut inputs: Vec<Buffer<'_>> = Vec::with_capacity(n_dev * args.len());
        let mut arg_ptrs: Vec<Vec<*mut sys::PJRT_Buffer>> = Vec::with_capacity(n_dev);
        for d in 0..n_dev {
            let mut row = Vec::with_capacity(args.len());
            for (i, a) in args.iter().enumerate() {
                let a = match a {
                    Slot::Device(t) => {
                        row.push(t.raw());
                        continue;
                    }
                    Slot::Host(h) => *h,
                };
                let sharding = self
                    .signature
                    .as_ref()
                    .and_then(|s| s.params.get(i))
                    .and_then(|p| p.sharding.as_ref());
                let piece = match sharding {
                    Some(sh) if n_dev > 1 => shard_of(a, sh, &mesh, d)?,
                    _ => None,
                };
                let piece = piece.as_ref().unwrap_or(a);
                if let Some(c) = compiled {
                    check_compiled(i, &c[i], piece.ty())?;
                }
                let b = Buffer::new(plugin, upload(&self.client, piece, d)?);
                row.push(b.raw);
                inputs.push(b);
            }
            arg_ptrs.push(row);
        }
        let arg_lists: Vec<*const *mut sys::PJRT_Buffer> =
            arg_ptrs.iter().map(|r| r.as_ptr()).collect();
        let mut out_ptrs: Vec<Vec<*mut sys::PJRT_Buffer>> =
            vec![vec![core::ptr::null_mut(); self.num_outputs.max(1)]; n_dev];
        let out_lists: Vec<*mut *mut sys::PJRT_Buffer> =
            out_ptrs.iter_mut().map(|r| r.as_mut_ptr()).collect();
        let mut events: Vec<*mut sys::PJRT_Event> = vec![core::ptr::null_mut(); n_dev];
        let mut options = sys::PJRT_ExecuteOptions::new();
        // Buffers the caller keeps are never donated to the outputs.
        options.non_donatable_input_indices = kept.as_ptr();
        options.num_non_donatable_input_indices = kept.len();
        let mut ex = sys::PJRT_LoadedExecutable_Execute_Args::new();
        ex.executable = self.raw;
        ex.options = &mut options;
        ex.argument_lists = arg_lists.as_ptr();
        ex.num_devices = n_dev;
        ex.num_args = args.len();
        ex.output_lists = out_lists.as_ptr();
        ex.device_complete_events = events.as_mut_ptr();
        let launched = {
            // Shared with other executions, exclusive of handler registration.
            let _registry = handler_registry().read().unwrap_or_else(|e| e.into_inner());
            plugin.call(
                "PJRT_LoadedExecutable_Execute",
                plugin.api.loaded_executable_execute,
                &mut ex,
            )
        };
        // Take ownership of whatever the plugin produced, before looking at errors: the
        // events (each awaited before it is destroyed) and the output buffers.
        let events: Vec<Event<'_>> = events.into_iter().map(|e| Event::new(plugin, e)).collect();
        let outputs: Vec<Vec<Buffer<'_>>> = out_ptrs
            .iter()
            .map(|row| {
                row.iter()
                    .take(self.num_outputs)
                    .map(|&raw| Buffer::new(plugin, raw))
                    .collect()
            })
            .collect();
        let mut first_error = launched.err();
        for e in events {
            if let Err(err) = e.wait() {
                first_error.get_or_insert(err);
            }
        }
        // Every execution is complete: the inputs may go.
        drop(inputs);
        if let Some(e) = first_error {
            return Err(e);
        }
        let mut results = Vec::with_capacity(self.num_outputs);
        for k in 0..self.num_outputs {
            let shards: Vec<HostTensor> = outputs
                .iter()
                .map(|row| read_buffer(&row[k], read == Read::InPlace))
                .collect::<Result<_, _>>()?;
            let sharding = self
                .signature
                .as_ref()
                .and_then(|s| s.result_shardings.get(k).cloned().flatten());
            let global = self
                .signature
                .as_ref()
                .and_then(|s| s.results.get(k).cloned());
            results.push(assemble(k, shards, sharding.as_ref(), global, &mesh)?);
        }
        Ok(results)
    }
}

/// An input: from the host, or already on the device.
#[derive(Debug, Clone, Copy)]
pub(super) enum Slot<'a> {
    Host(&'a HostTensor),
    Device(&'a DeviceTensor),
}

impl Slot<'_> {
    fn ty(&self) -> &TensorType {
        match self {
            Slot::Host(h) => h.ty(),
            Slot::Device(d) => d.ty(),
        }
    }
}

/// How outputs are read: in place where they are host memory, or always through the plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Read {
    InPlace,
    #[cfg_attr(not(test), allow(dead_code))]
    ThroughThePlugin,
}

/// Whether a program whose inputs cannot be checked is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Check {
    Always,
    WhatIsKnown,
}

/// An input for parameter `index` must be of the type the program's signature gives it.
pub(super) fn check_type(
    index: usize,
    want: &TensorType,
    got: &TensorType,
) -> Result<(), RunError> {
    if want != got {
        return Err(RunError::Input(format!(
            "argument {index} is {want}, but {got} was given"
        )));
    }
    Ok(())
}

/// A buffer for parameter `index` must be what the compiled program takes.
fn check_compiled(index: usize, want: &TensorType, got: &TensorType) -> Result<(), RunError> {
    if want != got {
        return Err(RunError::Input(format!(
            "argument {index}: the compiled program takes {want} on each device, but {got} \
             was given"
        )));
    }
    Ok(())
}

fn check_external_bytes(
    e: &super::signature::ExternalSpec,
    a: &HostTensor,
) -> Result<(), RunError> {
    if a.bytes().len() != e.size {
        return Err(RunError::Input(format!(
            "external `{}` ({}) takes {} bytes, {} were given",
            e.name.as_deref().unwrap_or("?"),
            e.descriptor,
            e.size,
            a.bytes().len()
        )));
    }
    Ok(())
}
