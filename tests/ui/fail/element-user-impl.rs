// `Element` is sealed: the handler builds slices over XLA's buffers from it, so a user type
// claiming an element type (four floats as one `f32`) would read past the buffer.
use customop::types::{Element, ElementType};

#[derive(Clone, Copy)]
pub struct Wide([f32; 4]);

impl Element for Wide {
    const ELEMENT_TYPE: ElementType = ElementType::F32;
}

fn main() {}
