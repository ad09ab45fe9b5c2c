//! From the builder's ops to an MLIR module, in one pass over melior.
//!
//! StableHLO is not an upstream MLIR dialect, so its ops are built generically with
//! `OperationBuilder` in a context that allows unregistered dialects; MLIR's verifier then checks
//! the builtin and `func` rules. jaxlib (the tests' harness) is the judge of the StableHLO rules.

use super::{Body, BuildError, FuncData, Module, Sharding, ValRef};
use crate::types::TensorType;
use melior::{
    Context,
    dialect::DialectRegistry,
    ir::{
        Attribute, Block, BlockLike, Identifier, Operation, Region, RegionLike, Value,
        attribute::{FlatSymbolRefAttribute, StringAttribute, TypeAttribute},
        operation::OperationBuilder,
        r#type::FunctionType,
    },
    utility::register_all_dialects,
};

mod cache;
mod print;

use cache::Cache;
#[cfg(test)]
pub(crate) use print::text_to_bytecode;
pub(crate) use print::{bytecode, print};

/// How to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    Pretty,
    Generic,
}

/// A context for building: `func` and the builtin dialect loaded, unregistered dialects
/// (StableHLO) allowed, no threads.
fn context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    let ctx = Context::new_with_registry(&registry, false);
    ctx.get_or_load_dialect("func");
    ctx.set_allow_unregistered_dialects(true);
    ctx
}

#[derive(Clone, Copy)]
enum Source {
    Arg(usize),
    Result(usize),
}

fn value<'c, 'a>(
    block: &'a Block<'c>,
    results: &[Value<'c, 'a>],
    slot: Source,
) -> Result<Value<'c, 'a>, BuildError> {
    match slot {
        Source::Arg(i) => Ok(block.argument(i).map_err(mlir_err)?.into()),
        Source::Result(i) => results
            .get(i)
            .copied()
            .ok_or_else(|| BuildError::new("a value is used before its op")),
    }
}

/// Builds the melior module for `m`.
fn build<'c>(ctx: &'c Context, m: &Module) -> Result<melior::ir::Module<'c>, BuildError> {
    let entry = m
        .entry_index()
        .ok_or_else(|| BuildError::new("the module has no entry function"))?;
    m.check_side_effects_partitioned()?;
    let mut cache = Cache::new(ctx);
    let module = melior::ir::Module::new(cache.loc);
    for mesh in m.meshes() {
        let op = OperationBuilder::new("sdy.mesh", cache.loc)
            .add_attributes(&[
                (
                    Identifier::new(ctx, "sym_name"),
                    StringAttribute::new(ctx, &mesh.name).into(),
                ),
                (
                    Identifier::new(ctx, "mesh"),
                    cache.attr(&super::Attr::Raw(mesh.attr()))?,
                ),
            ])
            .build()
            .map_err(mlir_err)?;
        module.body().append_operation(op);
    }
    let all_externals: Vec<u32> = (0..m.externals().len() as u32).collect();
    for (index, f) in m.funcs().iter().enumerate() {
        let externals = if index as u32 == entry {
            &all_externals
        } else {
            &f.externals
        };
        let op = build_func(&mut cache, m, f, externals, index as u32 == entry)?;
        module.body().append_operation(op);
    }
    Ok(module)
}

fn build_func<'c>(
    cache: &mut Cache<'c>,
    m: &Module,
    f: &FuncData,
    externals: &[u32],
    is_entry: bool,
) -> Result<Operation<'c>, BuildError> {
    let ctx = cache.ctx;
    let loc = cache.loc;
    let n_params = f.params.len();
    // Position of each module external among this function's arguments.
    let mut ext_arg = vec![usize::MAX; m.externals().len()];
    for (pos, &e) in externals.iter().enumerate() {
        ext_arg[e as usize] = n_params + pos;
    }
    let mut arg_types = Vec::with_capacity(n_params + externals.len());
    for t in &f.params {
        arg_types.push(cache.ty(t)?);
    }
    for &e in externals {
        arg_types.push(cache.ty(&m.externals()[e as usize].tensor_type())?);
    }
    let mut result_types = Vec::with_capacity(f.results.len());
    for t in &f.results {
        result_types.push(cache.ty(t)?);
    }
    let block = Block::new(&arg_types.iter().map(|t| (*t, loc)).collect::<Vec<_>>());
    {
        let mut results: Vec<Value<'c, '_>> = Vec::new();
        let mut starts: Vec<usize> = Vec::with_capacity(f.ops.len());
        // Where a value of the builder lives in the MLIR block.
        let slot = |starts: &[usize], r: ValRef| -> Result<Source, BuildError> {
            match r {
                ValRef::Param(i) => Ok(Source::Arg(i as usize)),
                ValRef::External(e) => match ext_arg.get(e as usize) {
                    Some(&p) if p != usize::MAX => Ok(Source::Arg(p)),
                    _ => Err(BuildError::new(format!(
                        "function `{}` uses an external it does not have",
                        f.name
                    ))),
                },
                ValRef::Op { op, result } => starts
                    .get(op as usize)
                    .map(|s| Source::Result(s + result as usize))
                    .ok_or_else(|| BuildError::new("a value is used before its op")),
            }
        };
        for op in &f.ops {
            let mut operands: Vec<Value<'c, '_>> = Vec::with_capacity(op.operands.len());
            for &r in &op.operands {
                operands.push(value(&block, &results, slot(&starts, r)?)?);
            }
            let mut builder = OperationBuilder::new(op.name, loc);
            if let Some(callee) = op.callee {
                let callee = &m.funcs()[callee as usize];
                for &e in &callee.externals {
                    let p = ext_arg[e as usize];
                    if p == usize::MAX {
                        return Err(BuildError::new(format!(
                            "function `{}` calls `{}` but lacks one of its externals",
                            f.name, callee.name
                        )));
                    }
                    operands.push(block.argument(p).map_err(mlir_err)?.into());
                }
                builder = builder.add_attributes(&[(
                    Identifier::new(ctx, "callee"),
                    FlatSymbolRefAttribute::new(ctx, &callee.name).into(),
                )]);
            }
            let mut types = Vec::with_capacity(op.results.len());
            for t in &op.results {
                types.push(cache.ty(t)?);
            }
            let attrs = attributes(cache, &op.attrs)?;
            builder = builder
                .add_operands(&operands)
                .add_results(&types)
                .add_attributes(&attrs);
            if let Some(body) = &op.body {
                builder = builder.add_regions([body_region(cache, body)?]);
            }
            let built = builder.build().map_err(mlir_err)?;
            let op_ref = block.append_operation(built);
            starts.push(results.len());
            for i in 0..op.results.len() {
                results.push(op_ref.result(i).map_err(mlir_err)?.into());
            }
        }
        let mut returned = Vec::with_capacity(f.returns.len());
        for &r in &f.returns {
            returned.push(value(&block, &results, slot(&starts, r)?)?);
        }
        block.append_operation(melior::dialect::func::r#return(&returned, loc));
    }
    let region = Region::new();
    region.append_block(block);
    let function_type = FunctionType::new(ctx, &arg_types, &result_types);
    let mut attrs = vec![
        (
            Identifier::new(ctx, "sym_name"),
            StringAttribute::new(ctx, &f.name).into(),
        ),
        (
            Identifier::new(ctx, "function_type"),
            TypeAttribute::new(function_type.into()).into(),
        ),
    ];
    if !is_entry {
        attrs.push((
            Identifier::new(ctx, "sym_visibility"),
            StringAttribute::new(ctx, "private").into(),
        ));
    }
    let mesh = m.meshes().first();
    let has_param_shardings = f.param_shardings.iter().any(Option::is_some);
    if is_entry && (!externals.is_empty() || has_param_shardings) {
        let mut text = String::from("[");
        for i in 0..arg_types.len() {
            if i > 0 {
                text.push_str(", ");
            }
            if i < n_params {
                match f.param_shardings.get(i).and_then(Option::as_ref) {
                    Some(s) => text.push_str(&format!("{{sdy.sharding = {}}}", s.attr())),
                    None => text.push_str("{}"),
                }
            } else {
                let e = &m.externals()[externals[i - n_params] as usize];
                text.push_str(&format!("{{customop.external = {}", e.annotation()));
                // With a mesh, externals are replicated on every device.
                if let Some(mesh) = mesh {
                    text.push_str(&format!(
                        ", sdy.sharding = {}",
                        Sharding::replicated(&mesh.name, 1).attr()
                    ));
                }
                text.push('}');
            }
        }
        text.push(']');
        attrs.push((
            Identifier::new(ctx, "arg_attrs"),
            cache.attr(&super::Attr::Raw(text))?,
        ));
    }
    if is_entry && f.result_shardings.iter().any(Option::is_some) {
        let items: Vec<String> = f
            .result_shardings
            .iter()
            .map(|s| match s {
                Some(s) => format!("{{sdy.sharding = {}}}", s.attr()),
                None => "{}".to_string(),
            })
            .collect();
        attrs.push((
            Identifier::new(ctx, "res_attrs"),
            cache.attr(&super::Attr::Raw(format!("[{}]", items.join(", "))))?,
        ));
    }
    OperationBuilder::new("func.func", loc)
        .add_attributes(&attrs)
        .add_regions([region])
        .build()
        .map_err(mlir_err)
}

/// An op's attributes as MLIR named attributes.
fn attributes<'c>(
    cache: &mut Cache<'c>,
    attrs: &[(&'static str, super::Attr)],
) -> Result<Vec<(Identifier<'c>, Attribute<'c>)>, BuildError> {
    let mut out = Vec::with_capacity(attrs.len());
    for (name, a) in attrs {
        out.push((cache.name(name), cache.attr(a)?));
    }
    Ok(out)
}

fn body_region<'c>(cache: &mut Cache<'c>, body: &Body) -> Result<Region<'c>, BuildError> {
    match body {
        // `^bb0(%a: tensor<T>, %b: tensor<T>)`, the combining op, `stablehlo.return`.
        Body::Reduce(op, element) => {
            let scalar = TensorType::scalar(*element);
            let pair = [scalar.clone(), scalar.clone()];
            one_op_region(cache, &pair, op, &[], &[scalar], "stablehlo.return")
        }
        // Block arguments of the per-device types, the custom call, `sdy.return`.
        Body::Manual(m) => one_op_region(
            cache,
            &m.operands,
            m.name,
            &m.attrs,
            &m.results,
            "sdy.return",
        ),
    }
}

/// A region of one block: arguments of types `args`, op `name` applied to all of them (with
/// `attrs`, results of types `results`), and `ret` returning its results.
fn one_op_region<'c>(
    cache: &mut Cache<'c>,
    args: &[impl std::borrow::Borrow<TensorType>],
    name: &str,
    attrs: &[(&'static str, super::Attr)],
    results: &[impl std::borrow::Borrow<TensorType>],
    ret: &str,
) -> Result<Region<'c>, BuildError> {
    let loc = cache.loc;
    let mut arg_types = Vec::with_capacity(args.len());
    for t in args {
        arg_types.push((cache.ty(std::borrow::Borrow::borrow(t))?, loc));
    }
    let mut result_types = Vec::with_capacity(results.len());
    for t in results {
        result_types.push(cache.ty(std::borrow::Borrow::borrow(t))?);
    }
    let attrs = attributes(cache, attrs)?;
    let block = Block::new(&arg_types);
    {
        let mut operands: Vec<Value<'c, '_>> = Vec::with_capacity(arg_types.len());
        for i in 0..arg_types.len() {
            operands.push(block.argument(i).map_err(mlir_err)?.into());
        }
        let op = OperationBuilder::new(name, loc)
            .add_operands(&operands)
            .add_results(&result_types)
            .add_attributes(&attrs)
            .build()
            .map_err(mlir_err)?;
        let op = block.append_operation(op);
        let mut returned: Vec<Value<'c, '_>> = Vec::with_capacity(result_types.len());
        for i in 0..result_types.len() {
            returned.push(op.result(i).map_err(mlir_err)?.into());
        }
        let ret = OperationBuilder::new(ret, loc)
            .add_operands(&returned)
            .build()
            .map_err(mlir_err)?;
        block.append_operation(ret);
    }
    let region = Region::new();
    region.append_block(block);
    Ok(region)
}

fn mlir_err(e: melior::Error) -> BuildError {
    BuildError::new(format!("MLIR: {e}"))
}
