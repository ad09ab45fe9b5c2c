// `repr_c` descriptors are read in place: #[repr(C)], fixed size, fields that are InPlace.
use customop::Descriptor;

#[derive(Descriptor)]
#[descriptor(repr_c)]
pub struct NoReprC {
    pub a: u32,
}

#[derive(Descriptor)]
#[descriptor(repr_c)]
#[repr(C)]
pub struct WithTail {
    pub a: u32,
    pub name: String,
}

#[derive(Descriptor)]
pub struct Plain {
    pub a: u32,
}

#[derive(Descriptor)]
#[descriptor(repr_c)]
#[repr(C)]
pub struct Nested {
    pub a: u32,
    pub inner: Plain,
}

fn main() {}
