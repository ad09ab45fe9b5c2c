// Enums must be field-less, with an explicit integer repr and explicit discriminants.
use customop::Descriptor;

#[derive(Descriptor)]
enum NoRepr {
    A = 0,
}

#[derive(Descriptor)]
#[repr(u64)]
enum WideRepr {
    A = 0,
}

#[derive(Descriptor)]
#[repr(u8)]
enum WithData {
    Fast = 0,
    Tuned(u32) = 1,
    Named { level: u8 } = 2,
}

#[derive(Descriptor)]
#[repr(u8)]
enum Implicit {
    First = 0,
    Second,
}

const THREE: u8 = 3;

#[derive(Descriptor)]
#[repr(u8)]
enum NotLiteral {
    A = THREE,
}

fn main() {}
