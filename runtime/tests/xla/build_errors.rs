//! Every `BuildError` the builder returns through its public API, each with its message.

use super::*;

/// Every `BuildError` the builder can return through its public API, one row each: what is
/// done wrong, and what the message must say. (Paths that only an internal invariant reaches,
/// such as "op made no result", MLIR's own parse and verifier messages and invalid UTF-8 from
/// MLIR's printer, are not reachable from the API and not listed.)
#[test]
fn every_build_error_names_its_cause() {
    use customop::lower::{
        ApiVersion, Attr, BackendConfig, BuildError, FuncBuilder, Sharding, Value,
    };
    type Case = (&'static str, &'static str, fn() -> Result<(), BuildError>);

    fn f32s(shape: &[i64]) -> TensorType {
        t(ElementType::F32, shape)
    }
    /// An entry taking f32[2,3] and i32[2,3]; `f` does the wrong thing.
    fn with(
        f: impl FnOnce(&mut FuncBuilder<'_>, Value, Value) -> Result<(), BuildError>,
    ) -> Result<(), BuildError> {
        let mut m = Module::new();
        let mut b = m.entry("main", [f32s(&[2, 3]), t(ElementType::I32, &[2, 3])])?;
        let (x, i) = (b.arg(0)?, b.arg(1)?);
        f(&mut b, x, i)
    }
    fn cc<'a>(target: &'a str, ops: &'a [&'a Value], res: &'a [TensorType]) -> CustomCall<'a> {
        CustomCall::new(target, ops, res)
    }

    let cases: Vec<Case> = vec![
        // Tensor types and constants.
        ("negative dimension", "negative", || {
            TensorType::new(ElementType::F32, [-1])?;
            Ok(())
        }),
        ("constant of the wrong length", "2 elements, got 1", || {
            with(|f, _, _| f.constant::<f32>(&[2], &[1.0]).map(drop))
        }),
        (
            "splat constant out of range",
            "is not a value of i8",
            || with(|f, _, _| f.constant_splat(&t(ElementType::I8, &[2]), 300.0).map(drop)),
        ),
        ("splat constant not a boolean", "is not a boolean", || {
            with(|f, _, _| f.constant_splat(&t(ElementType::Bool, &[2]), 2.0).map(drop))
        }),
        // Elementwise ops and reductions.
        (
            "unary op on integers",
            "floating-point or complex tensor",
            || with(|f, _, i| f.sine(&i).map(drop)),
        ),
        ("binary op on two types", "two operands of one type", || {
            with(|f, x, i| f.add(&x, &i).map(drop))
        }),
        ("binary op on booleans", "does not take", || {
            with(|f, x, _| {
                let p = f.compare(Compare::Lt, &x, &x)?;
                f.add(&p, &p).map(drop)
            })
        }),
        (
            "reduce over a missing dimension",
            "must be distinct and in 0..2",
            || with(|f, x, _| f.reduce(ReduceOp::Add, &x, &[2]).map(drop)),
        ),
        (
            "reduce over a repeated dimension",
            "must be distinct",
            || with(|f, x, _| f.reduce(ReduceOp::Add, &x, &[0, 0]).map(drop)),
        ),
        (
            "reduce of booleans",
            "stablehlo.reduce does not take",
            || {
                with(|f, x, _| {
                    let p = f.compare(Compare::Lt, &x, &x)?;
                    f.reduce(ReduceOp::Add, &p, &[0]).map(drop)
                })
            },
        ),
        // Shape ops.
        ("compare of two types", "stablehlo.compare", || {
            with(|f, x, i| f.compare(Compare::Lt, &x, &i).map(drop))
        }),
        (
            "select without an i1 predicate",
            "the predicate must be i1",
            || with(|f, x, _| f.select(&x, &x, &x).map(drop)),
        ),
        ("select of two branch types", "stablehlo.select", || {
            with(|f, x, i| {
                let p = f.compare(Compare::Lt, &x, &x)?;
                f.select(&p, &x, &i).map(drop)
            })
        }),
        ("reshape to another element count", "cannot reshape", || {
            with(|f, x, _| f.reshape(&x, &[4, 2]).map(drop))
        }),
        ("broadcast to a smaller shape", "cannot broadcast", || {
            with(|f, x, _| f.broadcast_in_dim(&x, &[2, 4], &[0, 1]).map(drop))
        }),
        (
            "broadcast with a bad dimension map",
            "stablehlo.broadcast_in_dim",
            || with(|f, x, _| f.broadcast_in_dim(&x, &[2, 3, 4], &[0]).map(drop)),
        ),
        ("transpose with a repeated axis", "appears twice", || {
            with(|f, x, _| f.transpose(&x, &[0, 0]).map(drop))
        }),
        (
            "transpose with a missing axis",
            "is not a dimension of a rank-2 tensor",
            || with(|f, x, _| f.transpose(&x, &[0, 2]).map(drop)),
        ),
        ("dot of mismatched contracting sizes", "has size 3", || {
            with(|f, x, _| f.dot_general(&x, &x, &DotDims::matmul()).map(drop))
        }),
        ("dot of two element types", "stablehlo.dot_general", || {
            with(|f, x, i| f.dot_general(&x, &i, &DotDims::default()).map(drop))
        }),
        (
            "dot with unequal dimension lists",
            "as many batch and contracting dimensions",
            || {
                with(|f, x, _| {
                    let d = DotDims {
                        lhs_contracting: vec![1],
                        ..DotDims::default()
                    };
                    f.dot_general(&x, &x, &d).map(drop)
                })
            },
        ),
        (
            "dot with a dimension both batch and contracting",
            "is both batch and contracting",
            || {
                with(|f, x, _| {
                    let d = DotDims {
                        lhs_batch: vec![0],
                        rhs_batch: vec![0],
                        lhs_contracting: vec![0],
                        rhs_contracting: vec![0],
                    };
                    f.dot_general(&x, &x, &d).map(drop)
                })
            },
        ),
        (
            "concatenate of nothing",
            "needs at least one operand",
            || with(|f, _, _| f.concatenate(&[], 0).map(drop)),
        ),
        ("concatenate of two types", "differ", || {
            with(|f, x, i| f.concatenate(&[&x, &i], 0).map(drop))
        }),
        (
            "concatenate along a missing dimension",
            "stablehlo.concatenate",
            || with(|f, x, _| f.concatenate(&[&x, &x], 5).map(drop)),
        ),
        ("slice out of bounds", "do not fit", || {
            with(|f, x, _| f.slice(&x, &[0, 0], &[3, 1], &[1, 1]).map(drop))
        }),
        ("slice with the wrong rank", "stablehlo.slice", || {
            with(|f, x, _| f.slice(&x, &[0], &[1], &[1]).map(drop))
        }),
        // Functions, values and calls.
        (
            "a function without a name",
            "a function needs a name",
            || Module::new().entry("", [f32s(&[1])]).map(drop),
        ),
        (
            "two functions of one name",
            "already has a function named `h`",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[1])])?;
                let a = h.arg(0)?;
                h.ret(&[&a])?;
                m.helper("h", [f32s(&[1])]).map(drop)
            },
        ),
        (
            "two entry functions",
            "already has an entry function, `main`",
            || {
                let mut m = Module::new();
                let f = m.entry("main", [f32s(&[1])])?;
                let a = f.arg(0)?;
                f.ret(&[&a])?;
                m.entry("other", [f32s(&[1])]).map(drop)
            },
        ),
        (
            "a parameter that is not there",
            "has 2 parameters; there is no parameter 5",
            || with(|f, _, _| f.arg(5).map(drop)),
        ),
        (
            "a value of another function",
            "comes from function `h`",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[2])])?;
                let foreign = h.arg(0)?;
                h.ret(&[&foreign])?;
                let mut f = m.entry("main", [f32s(&[2])])?;
                f.sine(&foreign).map(drop)
            },
        ),
        ("a value of another module", "another module", || {
            let mut m2 = Module::new();
            let g = m2.entry("main", [f32s(&[2])])?;
            let other = g.arg(0)?;
            with(|f, _, _| f.sine(&other).map(drop))
        }),
        (
            "a call with the wrong argument count",
            "takes 1 arguments, got 2",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[2, 3])])?;
                let a = h.arg(0)?;
                let h = h.ret(&[&a])?;
                let mut f = m.entry("main", [f32s(&[2, 3])])?;
                let x = f.arg(0)?;
                f.call(&h, &[&x, &x]).map(drop)
            },
        ),
        (
            "a call with a wrong argument type",
            "argument 0 must be tensor<2x3xf32>",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[2, 3])])?;
                let a = h.arg(0)?;
                let h = h.ret(&[&a])?;
                let mut f = m.entry("main", [t(ElementType::I32, &[2, 3])])?;
                let x = f.arg(0)?;
                f.call(&h, &[&x]).map(drop)
            },
        ),
        (
            "a call of another module's function",
            "belongs to another module",
            || {
                let mut m2 = Module::new();
                let h = m2.helper("h", [f32s(&[1])])?;
                let a = h.arg(0)?;
                let h = h.ret(&[&a])?;
                let mut m = Module::new();
                let mut f = m.entry("main", [f32s(&[1])])?;
                let x = f.arg(0)?;
                f.call(&h, &[&x]).map(drop)
            },
        ),
        (
            "a module without an entry",
            "the module has no entry function",
            || {
                let mut m = Module::new();
                let h = m.helper("h", [f32s(&[1])])?;
                let a = h.arg(0)?;
                h.ret(&[&a])?;
                m.to_text().map(drop)
            },
        ),
        // Externals.
        (
            "an external without a name",
            "an external needs a name",
            || with(|f, _, _| f.external::<Blob>("").map(drop)),
        ),
        (
            "one name for two descriptors",
            "is declared as descriptor",
            || {
                with(|f, _, _| {
                    f.external::<Blob>("cfg")?;
                    f.external_raw(External {
                        name: "cfg".into(),
                        descriptor: "other::Cfg".into(),
                        fingerprint: 1,
                        size: 40,
                        mutable: false,
                    })
                    .map(drop)
                })
            },
        ),
        // Custom calls.
        (
            "a custom call without a target",
            "needs a target name",
            || with(|f, x, _| f.custom_call(cc("", &[&x], &[f32s(&[2, 3])])).map(drop)),
        ),
        (
            "API 4 with a string config",
            "API version 4 takes a dictionary",
            || {
                with(|f, x, _| {
                    let (ops, res) = ([&x], [f32s(&[2, 3])]);
                    let mut c = cc("t", &ops, &res);
                    c.backend_config = BackendConfig::Bytes(b"x".to_vec());
                    f.custom_call(c).map(drop)
                })
            },
        ),
        (
            "API 1 with a dictionary config",
            "API versions 1-3 take a string",
            || {
                with(|f, x, _| {
                    let (ops, res) = ([&x], [f32s(&[2, 3])]);
                    let mut c = cc("t", &ops, &res);
                    c.api_version = ApiVersion::Original;
                    c.backend_config = BackendConfig::Dict(vec![("a".into(), Attr::Bool(true))]);
                    f.custom_call(c).map(drop)
                })
            },
        ),
        (
            "an alias out of range",
            "alias of output 0 to operand 3 is out of range",
            || {
                with(|f, x, _| {
                    let (ops, res) = ([&x], [f32s(&[2, 3])]);
                    let mut c = cc("t", &ops, &res);
                    c.output_operand_aliases = &[(0, 3)];
                    f.custom_call(c).map(drop)
                })
            },
        ),
        ("an alias of two types", "cannot alias operand 0", || {
            with(|f, x, _| {
                let (ops, res) = ([&x], [f32s(&[6])]);
                let mut c = cc("t", &ops, &res);
                c.output_operand_aliases = &[(0, 0)];
                f.custom_call(c).map(drop)
            })
        }),
        // Meshes and shardings.
        ("two meshes of one name", "already has a mesh `m`", || {
            let mut m = Module::new();
            m.mesh("m", &[("x", 2)])?;
            m.mesh("m", &[("x", 2)])
        }),
        ("a mesh axis of size 0", "axis `x` has size 0", || {
            Module::new().mesh("m", &[("x", 0)])
        }),
        (
            "a sharding on an undeclared mesh",
            "which the module does not declare",
            || with(|f, _, _| f.shard_arg(0, Sharding::new("nope", &[&["x"], &[]]))),
        ),
        (
            "a sharding of the wrong rank",
            "needs 2 dimensions, got 1",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let mut f = m.entry("main", [f32s(&[2, 4])])?;
                f.shard_arg(0, Sharding::new("m", &[&["x"]]))
            },
        ),
        ("an axis the mesh lacks", "mesh `m` has no axis `y`", || {
            let mut m = Module::new();
            m.mesh("m", &[("x", 2)])?;
            let mut f = m.entry("main", [f32s(&[2, 4])])?;
            f.shard_arg(0, Sharding::new("m", &[&["y"], &[]]))
        }),
        (
            "one axis on two dimensions",
            "axis `x` shards two dimensions",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let mut f = m.entry("main", [f32s(&[2, 4])])?;
                f.shard_arg(0, Sharding::new("m", &[&["x"], &["x"]]))
            },
        ),
        (
            "a split that does not divide",
            "is not divisible by 4",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 4)])?;
                let mut f = m.entry("main", [f32s(&[6, 4])])?;
                f.shard_arg(0, Sharding::new("m", &[&["x"], &[]]))
            },
        ),
        (
            "a sharded helper parameter",
            "only the entry function's parameters",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let mut h = m.helper("h", [f32s(&[2, 4])])?;
                h.shard_arg(0, Sharding::new("m", &[&["x"], &[]]))
            },
        ),
        (
            "shardings that do not match the results",
            "one sharding (or None) per returned value",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let f = m.entry("main", [f32s(&[2, 4])])?;
                let x = f.arg(0)?;
                f.ret_sharded(&[&x], &[]).map(drop)
            },
        ),
        (
            "a side-effecting call in a mesh without a rule",
            "cannot replicate a side-effecting op",
            || {
                let mut m = Module::new();
                m.mesh("m", &[("x", 2)])?;
                let mut f = m.entry("main", [f32s(&[2, 4])])?;
                let x = f.arg(0)?;
                let (ops, res) = ([&x], [f32s(&[2, 4])]);
                let mut c = cc("t", &ops, &res);
                c.has_side_effect = true;
                let y = f.custom_call(c)?;
                f.ret(&[&y[0]])?;
                m.to_text().map(drop)
            },
        ),
    ];
    let mut wrong = Vec::new();
    for (what, needle, case) in &cases {
        match case() {
            Ok(()) => wrong.push(format!("{what}: no error")),
            Err(e) if !e.message().contains(needle) => {
                wrong.push(format!("{what}: {:?} lacks {needle:?}", e.message()))
            }
            Err(_) => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    println!(
        "{} build-time error paths, each with its message",
        cases.len()
    );
}
