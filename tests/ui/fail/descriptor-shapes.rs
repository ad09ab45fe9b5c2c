// Shapes that cannot be descriptors: unions, generic structs, tuple structs.
use customop::Descriptor;

#[derive(Descriptor)]
union Bits {
    a: u32,
    b: f32,
}

#[derive(Descriptor)]
struct Generic<T> {
    value: T,
}

#[derive(Descriptor)]
struct Tuple(u32, f32);

fn main() {}
