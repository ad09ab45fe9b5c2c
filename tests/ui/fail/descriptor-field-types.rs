// Field types that cannot travel as plain, portable bytes.
use customop::Descriptor;

#[derive(Descriptor)]
struct Bad<'a> {
    reference: &'a u32,
    boxed: Box<u32>,
    pointer: *const u8,
    size: usize,
    offset: isize,
    letter: char,
    pair: (u32, u32),
    maybe: Option<u32>,
    names: [String; 2],
    nested: Vec<Vec<u8>>,
}

fn main() {}
