// Every parameter kind and option of #[custom_op]: the schema, the lowering and the handler
// are generated, and the kernel stays a plain function.
use customop::lower::Module;
use customop::prelude::*;

#[derive(Descriptor, Clone, Copy)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[derive(Descriptor, Clone, Copy)]
#[descriptor(name = "ui::State")]
pub struct State {
    pub n: u64,
}

#[custom_op(
    name = "ui::every",
    target = "ui_every_target",
    side_effect,
    api_version = 4,
    crate = "::customop"
)]
#[allow(clippy::too_many_arguments)]
pub fn every(
    #[external] cfg: &Cfg,
    #[external] state: &mut State,
    x: TensorRef<'_, f32, 2>,
    z: TensorRef<'_, i32>,
    #[out(shape = x)] y: TensorMut<'_, f32>,
    #[out(shape = [x.dim(1), 2, z.dim(0)])] w: TensorMut<'_, i8, 3>,
    #[attr] eps: f32,
    #[attr] flag: bool,
    #[attr] n: i64,
    #[attr] name: &str,
    #[attr] dims: &[i64],
    #[attr] weights: &[f32],
    #[attr] inner: &Cfg,
) -> Result<Opaque<Cfg>, OpError> {
    state.n += 1;
    let _ = (y, w, eps, flag, n, name, dims, weights, inner, z);
    Ok(Opaque(Cfg {
        scale: cfg.scale * x.dim(0) as f32,
    }))
}

#[custom_op(name = "ui::no_results", side_effect)]
pub fn no_results(x: TensorRef<'_, u8>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

// Two inputs that share the factor `rows`; the output takes it through its shape rule.
#[custom_op(name = "ui::scaled_rows", partition(x = [rows, _], w = [rows]))]
pub fn scaled_rows(
    x: TensorRef<'_, f32, 2>,
    w: TensorRef<'_, f32, 1>,
    #[out(shape = [x.dim(0), 3])] y: TensorMut<'_, f32>,
    #[attr] eps: f32,
) -> Result<(), OpError> {
    let _ = (x, w, y, eps);
    Ok(())
}

pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    use customop::lower::Sharding;
    let rule = scaled_rows::schema().partition.as_ref().ok_or("no rule")?;
    assert_eq!(rule.notation(), "([rows, _], [rows])->([rows, _])");
    let mut m = Module::new();
    m.mesh("mesh", &[("x", 2)])?;
    let mut f = m.entry(
        "main",
        [
            TensorType::new(ElementType::F32, [4, 2])?,
            TensorType::new(ElementType::F32, [4])?,
            TensorType::new(ElementType::F32, [3])?,
        ],
    )?;
    f.shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))?;
    let (x, w, short) = (f.arg(0)?, f.arg(1)?, f.arg(2)?);
    let y = scaled_rows::call(&mut f, &x, &w, 0.5)?;
    assert_eq!(y.ty().to_string(), "tensor<4x3xf32>");
    assert_eq!(
        f.sharding_of(&y),
        Some(&Sharding::new("mesh", &[&["x"], &[]]))
    );
    let err = scaled_rows::call(&mut f, &x, &short, 0.5)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("factor `rows` is a dimension of size 4 of `x` but of size 3 of `w`"),
        "{err}"
    );
    f.ret(&[&y])?;
    let text = m.to_text()?;
    // `w` is split like `x`, since they share `rows`; each device sees 2 rows.
    assert!(
        text.contains(
            r#"in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, <@mesh, [{"x"}]>]>"#
        ),
        "{text}"
    );
    assert!(
        text.contains("(tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x3xf32>"),
        "{text}"
    );

    assert_eq!(every::TARGET, "ui_every_target");
    assert_eq!(
        every::schema_string(),
        "ui::every(Tensor cfg, Tensor(a!) state, Tensor x, Tensor z, *, float eps, bool flag, int n, str name, int[] dims, float[] weights, str inner) -> (Tensor, Tensor, Tensor)"
    );
    let mut m = Module::new();
    let mut f = m.entry(
        "main",
        [
            TensorType::new(ElementType::F32, [2, 3])?,
            TensorType::new(ElementType::I32, [4])?,
        ],
    )?;
    let (x, z) = (f.arg(0)?, f.arg(1)?);
    let cfg = f.external::<Cfg>("cfg")?;
    let state = f.external::<State>("state")?;
    let out = every::call(
        &mut f,
        &cfg,
        &state,
        &x,
        &z,
        0.5,
        true,
        3,
        "n",
        &[1, 2],
        &[0.5],
        &Cfg { scale: 2.0 },
    )?;
    assert_eq!(out.y.ty().to_string(), "tensor<2x3xf32>");
    assert_eq!(out.w.ty().to_string(), "tensor<3x2x4xi8>");
    let _: customop::lower::DescriptorValue<Cfg> = out.result;
    let _: customop::lower::DescriptorValue<State> = out.state;
    let bytes = f.convert(&z, ElementType::U8)?;
    no_results::call(&mut f, &bytes)?;
    f.ret(&[&out.y])?;
    let text = m.to_text()?;
    assert!(text.contains("mutable = true"));
    Ok(())
}
