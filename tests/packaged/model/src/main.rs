//! Builds `y = apply_gain(gain, x)`, runs it on the installed CPU plugin with the op's handler
//! linked in, and prints `y`.

use customop::lower::Module;
use customop::pjrt::{Client, HostTensor, Program};
use customop::prelude::*;
use quick_kernels::{Gain, apply_gain};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut m = Module::new();
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [3])?])?;
    let x = f.arg(0)?;
    let gain = f.external::<Gain>("gain")?;
    let y = apply_gain::call(&mut f, &gain, &x)?;
    f.ret(&[&y])?;
    let client = Client::cpu(1)?;
    client.register_linked_ops()?;
    let exe = client.compile(&Program::module(&m)?)?;
    let out = exe
        .inputs()
        .arg(HostTensor::from_slice(&[3], &[1.0f32, 2.0, 3.0])?)?
        .external("gain", &Gain { factor: 2.0, offset: 1.0 })?
        .run()?;
    println!("y = {:?}", out[0].to_vec::<f32>()?);
    Ok(())
}
