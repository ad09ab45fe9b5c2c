// A field (or a Vec element) whose type does not derive Descriptor, and a descriptor with tails
// nested in another.
use customop::Descriptor;

struct Plain {
    x: u32,
}

#[derive(Descriptor)]
struct WithTail {
    name: String,
}

#[derive(Descriptor)]
struct Outer {
    plain: Plain,
    plains: Vec<Plain>,
    tailed: WithTail,
}

fn main() {}
