//! The inputs of one execution, given by position and by external name, each checked against
//! the program's signature as it is given.

use super::buffer::{DeviceDescriptor, DeviceTensor};
use super::error::RunError;
use super::executable::{Check, Executable, Read, Slot, check_type};
use super::host::HostTensor;
use crate::descriptor::Descriptor;
use crate::types::{ElementType, TensorType};

/// Inputs for one execution, by position and by external name (see [`Executable::inputs`]).
#[derive(Debug)]
pub struct Inputs<'e> {
    exe: &'e Executable,
    slots: Vec<Option<Given<'e>>>,
}

impl Executable {
    /// Inputs to fill by position ([`Inputs::arg`]) and external name ([`Inputs::external`]).
    pub fn inputs(&self) -> Inputs<'_> {
        let n = self.signature().map_or(0, |s| s.params.len());
        Inputs {
            exe: self,
            slots: (0..n).map(|_| None).collect(),
        }
    }
}

/// An input as given: host data, or a tensor kept on the device.
#[derive(Debug)]
enum Given<'e> {
    Host(HostTensor),
    Device(&'e DeviceTensor),
}

impl<'e> Inputs<'e> {
    /// The next argument that is not an external and not yet given.
    fn next_arg(&self, ty: &TensorType) -> Result<usize, RunError> {
        let sig = self.exe.signature()?;
        let Some(p) = sig
            .params
            .iter()
            .find(|p| p.external.is_none() && self.slots[p.index].is_none())
        else {
            let n = sig.params.iter().filter(|p| p.external.is_none()).count();
            return Err(RunError::Input(format!(
                "the program takes {n} arguments besides its externals; one more was given"
            )));
        };
        check_type(p.index, &p.ty, ty)?;
        Ok(p.index)
    }

    /// Gives the next argument that is not an external (in the entry function's order), and
    /// checks its type.
    pub fn arg(mut self, tensor: HostTensor) -> Result<Self, RunError> {
        let i = self.next_arg(tensor.ty())?;
        self.slots[i] = Some(Given::Host(tensor));
        Ok(self)
    }

    /// As [`Inputs::arg`], with a tensor kept on the device ([`Client::upload`](super::Client::upload)), for
    /// one-device programs.
    pub fn arg_placed(mut self, tensor: &'e DeviceTensor) -> Result<Self, RunError> {
        let i = self.next_arg(tensor.ty())?;
        self.slots[i] = Some(Given::Device(tensor));
        Ok(self)
    }

    /// The argument of external `name`, checked against a `T` packed into `size` bytes.
    fn external_slot<T: Descriptor>(&self, name: &str, size: usize) -> Result<usize, RunError> {
        let sig = self.exe.signature()?;
        let Some(p) = sig.external(name) else {
            let names: Vec<&str> = sig
                .params
                .iter()
                .filter_map(|p| p.external.as_ref()?.name.as_deref())
                .collect();
            return Err(RunError::Input(format!(
                "the program has no external `{name}` (its externals: {names:?})"
            )));
        };
        let Some(spec) = &p.external else {
            return Err(RunError::Input(format!(
                "argument {} is no external",
                p.index
            )));
        };
        if spec.descriptor != T::NAME || spec.fingerprint != T::fingerprint() {
            return Err(RunError::Input(format!(
                "external `{name}` is `{}` (fingerprint 0x{:016x}) in the program, but a `{}` \
                 (fingerprint 0x{:016x}) was given",
                spec.descriptor,
                spec.fingerprint,
                T::NAME,
                T::fingerprint()
            )));
        }
        if size != spec.size || p.ty.element() != ElementType::U8 || p.ty.shape() != [size as i64] {
            return Err(RunError::Input(format!(
                "external `{name}` ({}) packs to {size} bytes, but the program takes {} ({})",
                T::NAME,
                spec.size,
                p.ty
            )));
        }
        Ok(p.index)
    }

    /// Refuses a second value for external `name` (argument `i`), as a second value for the
    /// last positional argument is refused.
    fn not_given(&self, i: usize, name: &str) -> Result<(), RunError> {
        if self.slots[i].is_some() {
            return Err(RunError::Input(format!(
                "external `{name}` was given twice"
            )));
        }
        Ok(())
    }

    /// Gives external `name`: checks that the program's annotation names this descriptor
    /// (`T::NAME`), with this layout's fingerprint and packed size, then packs `value`.
    pub fn external<T: Descriptor>(mut self, name: &str, value: &T) -> Result<Self, RunError> {
        let packed = value.pack();
        let i = self.external_slot::<T>(name, packed.len())?;
        self.not_given(i, name)?;
        let ty = TensorType::new(ElementType::U8, [packed.len() as i64])
            .map_err(|e| RunError::Input(e.message))?;
        self.slots[i] = Some(Given::Host(HostTensor::from_bytes(ty, packed)?));
        Ok(self)
    }

    /// As [`Inputs::external`], with a descriptor kept on the device
    /// ([`Client::upload_descriptor`](super::Client::upload_descriptor)), for one-device programs.
    pub fn external_placed<T: Descriptor>(
        mut self,
        name: &str,
        value: &'e DeviceDescriptor<T>,
    ) -> Result<Self, RunError> {
        let size = value.tensor.ty().element_count() as usize;
        let i = self.external_slot::<T>(name, size)?;
        self.not_given(i, name)?;
        self.slots[i] = Some(Given::Device(&value.tensor));
        Ok(self)
    }

    /// Runs the program on these inputs (see [`Executable::run`]).
    pub fn run(self) -> Result<Vec<HostTensor>, RunError> {
        let mut args = Vec::with_capacity(self.slots.len());
        for (i, s) in self.slots.iter().enumerate() {
            match s {
                Some(Given::Host(t)) => args.push(Slot::Host(t)),
                Some(Given::Device(t)) => args.push(Slot::Device(t)),
                None => {
                    let what = match self
                        .exe
                        .signature()
                        .ok()
                        .and_then(|s| s.params.get(i))
                        .and_then(|p| p.external.as_ref())
                    {
                        Some(e) => format!(
                            "external `{}` ({})",
                            e.name.as_deref().unwrap_or("?"),
                            e.descriptor
                        ),
                        None => format!("argument {i}"),
                    };
                    return Err(RunError::Input(format!("{what} was not given")));
                }
            }
        }
        self.exe.run_slots(&args, Read::InPlace, Check::Always)
    }
}
