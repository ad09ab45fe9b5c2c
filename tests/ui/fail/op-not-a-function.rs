// #[custom_op] goes on a function.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::a")]
pub struct NotAnOp {
    pub x: f32,
}

fn main() {}
