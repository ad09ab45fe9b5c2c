// The generated code names everything by absolute path: it compiles without the prelude and
// next to user items that shadow common names.
#![no_implicit_prelude]

#[allow(dead_code)]
struct Vec;
#[allow(dead_code)]
struct Result;
#[allow(dead_code)]
struct Box;
#[allow(dead_code)]
struct String;
#[allow(dead_code)]
mod core {}

#[derive(::customop::Descriptor)]
#[repr(u8)]
enum Mode {
    A = 0,
}

#[derive(::customop::Descriptor)]
struct Cfg {
    scale: f32,
    mode: Mode,
    list: ::std::vec::Vec<u32>,
    name: ::std::string::String,
}

pub fn run() {
    use ::customop::Descriptor as _;
    let c = Cfg {
        scale: 1.0,
        mode: Mode::A,
        list: ::std::vec::Vec::new(),
        name: ::std::string::String::new(),
    };
    let _ = Cfg::unpack(&c.pack());
}
