//! Device meshes and shardings (Shardy, the `sdy` dialect) for entry arguments, results and
//! values, so that XLA's SPMD partitioner splits the program across devices; and partitioned
//! custom calls, wrapped in `sdy.manual_computation` so that each device runs the handler once,
//! on its shard.

use super::{Attr, Body, BuildError, FuncBuilder, Module, ValRef, Value};
use crate::schema::{FactorDims, PartitionRule};
use crate::types::TensorType;
use std::sync::Arc;

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

    /// The sharding's text inside `#sdy.sharding...`: `<@mesh, [{"x"}, {}]>`.
    fn body(&self) -> String {
        let dims: Vec<String> = self
            .dims
            .iter()
            .map(|d| {
                let axes: Vec<String> = d.iter().map(|a| format!("\"{a}\"")).collect();
                format!("{{{}}}", axes.join(", "))
            })
            .collect();
        format!("<@{}, [{}]>", self.mesh, dims.join(", "))
    }

    /// The sharding attribute, `#sdy.sharding<@mesh, [{"x"}, {}]>`.
    pub(crate) fn attr(&self) -> Attr {
        Attr::Raw(format!("#sdy.sharding{}", self.body()))
    }

    /// One sharding per value: `#sdy.sharding_per_value<[<@mesh, [...]>, ...]>`.
    fn per_value(shardings: &[Sharding]) -> Attr {
        let items: Vec<String> = shardings.iter().map(Sharding::body).collect();
        Attr::Raw(format!("#sdy.sharding_per_value<[{}]>", items.join(", ")))
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

/// The per-device body of an `sdy.manual_computation`: one op (a custom call) on the block's
/// arguments.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ManualBody {
    /// The op's name.
    pub(crate) name: &'static str,
    /// The op's attributes.
    pub(crate) attrs: Vec<(&'static str, Attr)>,
    /// The per-device (local) operand types: the block's arguments.
    pub(crate) operands: Vec<Arc<TensorType>>,
    /// The per-device result types.
    pub(crate) results: Vec<Arc<TensorType>>,
}

/// How a partitioned custom call is split: the mesh, and each operand's and result's sharding
/// and per-device type.
#[derive(Debug)]
pub(crate) struct Plan {
    manual_axes: Vec<String>,
    in_shardings: Vec<Sharding>,
    out_shardings: Vec<Sharding>,
    local_operands: Vec<TensorType>,
    local_results: Vec<TensorType>,
}

/// The sharding, on mesh `mesh`, of a tensor of `ty` whose dimensions split as `rule` says,
/// with `axes[f]` the mesh axes of factor `f`.
fn rule_sharding(
    target: &str,
    mesh: &str,
    rule: Option<&FactorDims>,
    factors: &[String],
    axes: &[Vec<String>],
    ty: &TensorType,
) -> Result<Sharding, BuildError> {
    let mut dims = vec![Vec::new(); ty.rank()];
    if let Some(rule) = rule {
        if rule.dims.len() != ty.rank() {
            return Err(BuildError::new(format!(
                "custom_call @{target}: the partition rule of `{}` has {} dimensions, but it is {ty}",
                rule.name,
                rule.dims.len()
            )));
        }
        for (d, factor) in rule.dims.iter().enumerate() {
            if let Some(f) = factor
                .as_ref()
                .and_then(|f| factors.iter().position(|g| g == f))
            {
                dims[d] = axes[f].clone();
            }
        }
    }
    Ok(Sharding {
        mesh: mesh.to_string(),
        dims,
    })
}

impl FuncBuilder<'_> {
    /// Constrains how `v` is split (`sdy.sharding_constraint`) and returns the constrained
    /// value. XLA reshards `v` as needed; partitioned custom calls that take the result split
    /// along the same mesh axes.
    pub fn shard(&mut self, v: &Value, sharding: Sharding) -> Result<Value, BuildError> {
        self.check_own(v, "sdy.sharding_constraint")?;
        self.module.check_sharding(&sharding, v.ty())?;
        let mut out = self.push_op(
            "sdy.sharding_constraint",
            &[v],
            vec![v.ty().clone()],
            vec![("sharding", sharding.attr())],
            None,
            None,
        )?;
        let out = out
            .pop()
            .ok_or_else(|| BuildError::new("op made no result"))?;
        self.data_mut().value_shardings.insert(out.at, sharding);
        Ok(out)
    }

    /// How the builder knows `v` to be split: declared on an entry parameter
    /// ([`FuncBuilder::shard_arg`]), constrained ([`FuncBuilder::shard`]), carried through an
    /// elementwise op, or the result of a partitioned custom call. `None` when it does not know
    /// (XLA's propagation then decides).
    pub fn sharding_of(&self, v: &Value) -> Option<&Sharding> {
        if v.module != self.module.id || v.func != self.index {
            return None;
        }
        let f = self.data();
        match v.at {
            ValRef::Param(i) => f.param_shardings.get(i as usize)?.as_ref(),
            at => f.value_shardings.get(&at),
        }
    }

    /// An elementwise op's result is split like its first operand whose split is known.
    pub(crate) fn propagate_sharding(&mut self, operands: &[&Value], result: &Value) {
        let known = operands
            .iter()
            .find_map(|v| self.sharding_of(v))
            .filter(|s| s.dims.len() == result.ty().rank())
            .cloned();
        if let Some(s) = known {
            self.data_mut().value_shardings.insert(result.at, s);
        }
    }

    /// Decides how a custom call with a partition rule is split, or `None` when the module has
    /// no mesh. Each factor takes the mesh axes that the first operand splitting it along
    /// known axes uses (axes already taken by an earlier factor are skipped); a factor that no
    /// operand splits stays whole. Every mesh axis is manual, so each device runs the handler
    /// exactly once.
    pub(crate) fn plan_partition(
        &self,
        target: &str,
        operands: &[&Value],
        results: &[TensorType],
        rule: &PartitionRule,
    ) -> Result<Option<Plan>, BuildError> {
        let known = |i: usize| operands.get(i).and_then(|v| self.sharding_of(v));
        let mesh_name = rule
            .operands
            .iter()
            .find_map(|o| known(o.index).map(|s| s.mesh.clone()))
            .or_else(|| self.module.meshes.first().map(|m| m.name.clone()));
        let Some(mesh) = mesh_name.and_then(|n| self.module.meshes.iter().find(|m| m.name == n))
        else {
            return Ok(None);
        };
        let mut axes: Vec<Vec<String>> = vec![Vec::new(); rule.factors.len()];
        let mut sizes: Vec<Option<(i64, &str)>> = vec![None; rule.factors.len()];
        let mut used: Vec<&str> = Vec::new();
        for o in &rule.operands {
            let Some(v) = operands.get(o.index) else {
                return Err(BuildError::new(format!(
                    "custom_call @{target}: the partition rule names operand {}, but the call has {}",
                    o.index,
                    operands.len()
                )));
            };
            let split_as = known(o.index).filter(|s| s.mesh == mesh.name);
            for (d, factor) in o.dims.iter().enumerate() {
                let Some(f) = factor
                    .as_ref()
                    .and_then(|f| rule.factors.iter().position(|g| g == f))
                else {
                    continue;
                };
                let Some(&size) = v.shape().get(d) else {
                    continue; // reported by `split`
                };
                match sizes[f] {
                    Some((s, other)) if s != size => {
                        return Err(BuildError::new(format!(
                            "custom_call @{target}: factor `{}` is a dimension of size {s} of `{other}` but of size {size} of `{}`",
                            rule.factors[f], o.name
                        )));
                    }
                    Some(_) => {}
                    None => sizes[f] = Some((size, &o.name)),
                }
                let candidate = split_as
                    .and_then(|s| s.dims.get(d))
                    .filter(|a| !a.is_empty());
                if let Some(candidate) = candidate
                    && axes[f].is_empty()
                    && candidate.iter().all(|a| !used.contains(&a.as_str()))
                {
                    used.extend(candidate.iter().map(String::as_str));
                    axes[f] = candidate.clone();
                }
            }
        }
        let mut plan = Plan {
            manual_axes: mesh.axes.iter().map(|(a, _)| a.clone()).collect(),
            in_shardings: Vec::new(),
            out_shardings: Vec::new(),
            local_operands: Vec::new(),
            local_results: Vec::new(),
        };
        // Each operand's and result's sharding, and its per-device type (checked to divide).
        let local = |r: Option<&FactorDims>, ty: &TensorType| {
            let s = rule_sharding(target, &mesh.name, r, &rule.factors, &axes, ty)?;
            let shape = self.module.check_sharding(&s, ty).map_err(|e| {
                let name = r.map_or("?", |r| r.name.as_str());
                BuildError::new(format!("custom_call @{target}: `{name}`: {e}"))
            })?;
            Ok::<_, BuildError>((s, TensorType::from_parts(ty.element(), shape)))
        };
        for (i, v) in operands.iter().enumerate() {
            let (s, t) = local(rule.operands.iter().find(|o| o.index == i), v.ty())?;
            plan.in_shardings.push(s);
            plan.local_operands.push(t);
        }
        for (i, ty) in results.iter().enumerate() {
            let (s, t) = local(rule.results.iter().find(|o| o.index == i), ty)?;
            plan.out_shardings.push(s);
            plan.local_results.push(t);
        }
        Ok(Some(plan))
    }

    /// Appends `sdy.manual_computation` over the custom call with `attrs`, as `plan` splits it.
    pub(crate) fn push_manual(
        &mut self,
        operands: &[&Value],
        results: &[TensorType],
        attrs: Vec<(&'static str, Attr)>,
        plan: Plan,
    ) -> Result<Vec<Value>, BuildError> {
        let axes: Vec<String> = plan
            .manual_axes
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect();
        let outer = vec![
            ("in_shardings", Sharding::per_value(&plan.in_shardings)),
            ("out_shardings", Sharding::per_value(&plan.out_shardings)),
            (
                "manual_axes",
                Attr::Raw(format!("#sdy<manual_axes{{{}}}>", axes.join(", "))),
            ),
        ];
        let body = ManualBody {
            name: "stablehlo.custom_call",
            attrs,
            operands: plan
                .local_operands
                .into_iter()
                .map(|t| self.module.intern(t))
                .collect(),
            results: plan
                .local_results
                .into_iter()
                .map(|t| self.module.intern(t))
                .collect(),
        };
        let values = self.push_op(
            "sdy.manual_computation",
            operands,
            results.to_vec(),
            outer,
            Some(Body::Manual(Box::new(body))),
            None,
        )?;
        let f = self.data_mut();
        for (v, s) in values.iter().zip(plan.out_shardings) {
            f.value_shardings.insert(v.at, s);
        }
        Ok(values)
    }
}

impl Module {
    /// In a module with a mesh, XLA's SPMD partitioner rejects a side-effecting custom call
    /// that is not inside a manual computation ("Side-effect HLO must have sharding"): say so
    /// before XLA does.
    pub(crate) fn check_side_effects_partitioned(&self) -> Result<(), BuildError> {
        if self.meshes.is_empty() {
            return Ok(());
        }
        for f in &self.funcs {
            for op in &f.ops {
                if op.name != "stablehlo.custom_call"
                    || !op
                        .attrs
                        .iter()
                        .any(|(n, a)| *n == "has_side_effect" && *a == Attr::Bool(true))
                {
                    continue;
                }
                let target = op
                    .attrs
                    .iter()
                    .find_map(|(n, a)| match (n, a) {
                        (&"call_target_name", Attr::Str(t)) => {
                            Some(String::from_utf8_lossy(t).into_owned())
                        }
                        _ => None,
                    })
                    .unwrap_or_default();
                return Err(BuildError::new(format!(
                    "custom_call @{target} in function `{}` has side effects, and the module has a device mesh: XLA's SPMD partitioner cannot replicate a side-effecting op. Declare how the op splits (`#[custom_op(partition(...))]`) so that it runs once per device on its shard",
                    f.name
                )));
            }
        }
        Ok(())
    }
}
