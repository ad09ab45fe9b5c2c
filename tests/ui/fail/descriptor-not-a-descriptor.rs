// A field (or a Vec element) whose type does not derive Descriptor, a descriptor with tails
// nested in another, and a packed sub-byte type (a field is at least a byte).
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
    nibble: customop::I4,
}

fn main() {}
