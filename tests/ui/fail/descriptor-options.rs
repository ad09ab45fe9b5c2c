// `#[descriptor(...)]` options: unknown, duplicate, ill-typed.
use customop::Descriptor;

#[derive(Descriptor)]
#[descriptor(name = "a::A", name = "a::B")]
struct Duplicate {
    x: u32,
}

#[derive(Descriptor)]
#[descriptor(nmae = "a::A")]
struct Unknown {
    x: u32,
}

#[derive(Descriptor)]
#[descriptor(name = 3)]
struct NotAString {
    x: u32,
}

#[derive(Descriptor)]
#[descriptor(name = "")]
struct Empty {
    x: u32,
}

fn main() {}
