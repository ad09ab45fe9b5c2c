//! Device meshes and shardings (Shardy, the `sdy` dialect) for entry arguments and results, so
//! that XLA's SPMD partitioner splits the program across devices.

use super::{Attr, BuildError, FuncBuilder, Module};
use crate::types::TensorType;

/// A named device mesh: `sdy.mesh @name = <["x"=4, "y"=2]>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mesh {
    /// The mesh's symbol name.
    pub name: String,
    /// The axes and their sizes, in order.
    pub axes: Vec<(String, i64)>,
}

impl Mesh {
    /// The mesh attribute, `#sdy.mesh<["x"=4]>`.
    pub(crate) fn attr(&self) -> String {
        let axes: Vec<String> = self
            .axes
            .iter()
            .map(|(a, n)| format!("\"{a}\"={n}"))
            .collect();
        format!("#sdy.mesh<[{}]>", axes.join(", "))
    }
}

/// How a tensor is split over a mesh: for each dimension, the mesh axes it is split along
/// (none: that dimension is replicated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sharding {
    /// The mesh's name.
    pub mesh: String,
    /// Per dimension, the axes it is split along.
    pub dims: Vec<Vec<String>>,
}

impl Sharding {
    /// Split dimension `i` along the axes `dims[i]` of mesh `mesh` (`&[]`: not split).
    pub fn new(mesh: &str, dims: &[&[&str]]) -> Sharding {
        Sharding {
            mesh: mesh.to_string(),
            dims: dims
                .iter()
                .map(|d| d.iter().map(|a| a.to_string()).collect())
                .collect(),
        }
    }

    /// Every dimension replicated.
    pub fn replicated(mesh: &str, rank: usize) -> Sharding {
        Sharding {
            mesh: mesh.to_string(),
            dims: vec![Vec::new(); rank],
        }
    }

    /// The sharding attribute, `#sdy.sharding<@mesh, [{"x"}, {}]>`.
    pub(crate) fn attr(&self) -> Attr {
        let dims: Vec<String> = self
            .dims
            .iter()
            .map(|d| {
                let axes: Vec<String> = d.iter().map(|a| format!("\"{a}\"")).collect();
                format!("{{{}}}", axes.join(", "))
            })
            .collect();
        Attr::Raw(format!(
            "#sdy.sharding<@{}, [{}]>",
            self.mesh,
            dims.join(", ")
        ))
    }

    /// The shape of one shard of `ty`.
    pub fn local_shape(&self, m: &Module, ty: &TensorType) -> Result<Vec<i64>, BuildError> {
        m.check_sharding(self, ty)
    }
}

impl Module {
    /// Declares a device mesh with named axes; shardings refer to it by name.
    pub fn mesh(&mut self, name: &str, axes: &[(&str, i64)]) -> Result<(), BuildError> {
        if self.meshes.iter().any(|m| m.name == name) {
            return Err(BuildError::new(format!(
                "the module already has a mesh `{name}`"
            )));
        }
        if let Some((a, n)) = axes.iter().find(|(_, n)| *n < 1) {
            return Err(BuildError::new(format!(
                "mesh `{name}`: axis `{a}` has size {n}"
            )));
        }
        self.meshes.push(Mesh {
            name: name.to_string(),
            axes: axes.iter().map(|(a, n)| (a.to_string(), *n)).collect(),
        });
        Ok(())
    }

    /// The module's meshes.
    pub fn meshes(&self) -> &[Mesh] {
        &self.meshes
    }

    /// Checks `s` against `ty` and returns the local (per-shard) shape.
    pub(crate) fn check_sharding(
        &self,
        s: &Sharding,
        ty: &TensorType,
    ) -> Result<Vec<i64>, BuildError> {
        let mesh = self
            .meshes
            .iter()
            .find(|m| m.name == s.mesh)
            .ok_or_else(|| {
                BuildError::new(format!(
                    "sharding names mesh `{}`, which the module does not declare",
                    s.mesh
                ))
            })?;
        if s.dims.len() != ty.rank() {
            return Err(BuildError::new(format!(
                "a sharding of {ty} needs {} dimensions, got {}",
                ty.rank(),
                s.dims.len()
            )));
        }
        let mut local = Vec::with_capacity(ty.rank());
        let mut used: Vec<&str> = Vec::new();
        for (d, axes) in s.dims.iter().enumerate() {
            let mut parts = 1i64;
            for a in axes {
                let Some((_, n)) = mesh.axes.iter().find(|(name, _)| name == a) else {
                    return Err(BuildError::new(format!(
                        "mesh `{}` has no axis `{a}`",
                        mesh.name
                    )));
                };
                if used.contains(&a.as_str()) {
                    return Err(BuildError::new(format!(
                        "axis `{a}` shards two dimensions of {ty}"
                    )));
                }
                used.push(a);
                parts *= n;
            }
            let size = ty.shape()[d];
            if size % parts != 0 {
                return Err(BuildError::new(format!(
                    "dimension {d} of {ty} (size {size}) is not divisible by {parts}, the size of mesh axes {axes:?}"
                )));
            }
            local.push(size / parts);
        }
        Ok(local)
    }
}

impl FuncBuilder<'_> {
    /// Shards entry parameter `i` (externals are always replicated).
    pub fn shard_arg(&mut self, i: usize, sharding: Sharding) -> Result<(), BuildError> {
        if self.module.entry != Some(self.index) {
            return Err(BuildError::new(
                "only the entry function's parameters carry shardings",
            ));
        }
        let ty = self.arg(i)?.ty().clone();
        self.module.check_sharding(&sharding, &ty)?;
        let f = &mut self.module.funcs[self.index as usize];
        f.param_shardings.resize(f.params.len(), None);
        f.param_shardings[i] = Some(sharding);
        Ok(())
    }

    /// Ends the entry function like [`FuncBuilder::ret`], with a sharding (or `None`) for each
    /// result.
    pub fn ret_sharded(
        self,
        values: &[&super::Value],
        shardings: &[Option<Sharding>],
    ) -> Result<super::FuncRef, BuildError> {
        if shardings.len() != values.len() {
            return Err(BuildError::new("one sharding (or None) per returned value"));
        }
        for (v, s) in values.iter().zip(shardings) {
            if let Some(s) = s {
                self.module.check_sharding(s, v.ty())?;
            }
        }
        let index = self.index as usize;
        self.module.funcs[index].result_shardings = shardings.to_vec();
        self.ret(values)
    }
}
