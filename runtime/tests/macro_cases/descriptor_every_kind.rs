// Every supported field kind derives, packs and unpacks.
use customop::prelude::*;

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[repr(u16)]
enum Level {
    Low = 1,
    High = 300,
}

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "ui::Point")]
struct Point {
    x: f32,
    y: f32,
}

#[derive(Descriptor, Debug, PartialEq)]
#[descriptor(name = "ui::All", crate = "::customop")]
struct All {
    a: bool,
    b: i8,
    c: i16,
    d: i32,
    e: i64,
    f: u8,
    g: u16,
    h: u32,
    i: u64,
    j: f32,
    k: f64,
    level: Level,
    point: Point,
    grid: [[u8; 2]; 3],
    points: Vec<Point>,
    label: String,
}

#[derive(Descriptor, Debug, PartialEq)]
struct Empty {}

pub fn run() {
    let v = All {
        a: true,
        b: 1,
        c: 2,
        d: 3,
        e: 4,
        f: 5,
        g: 6,
        h: 7,
        i: 8,
        j: 9.0,
        k: 10.0,
        level: Level::High,
        point: Point { x: 1.0, y: 2.0 },
        grid: [[1, 2], [3, 4], [5, 6]],
        points: vec![Point { x: 3.0, y: 4.0 }],
        label: "ok".into(),
    };
    assert_eq!(All::unpack(&v.pack()).unwrap(), v);
    assert_eq!(Empty::unpack(&Empty {}.pack()).unwrap(), Empty {});
    assert_eq!(Empty::PACKED_SIZE, Some(24));
    assert_eq!(Point::PACKED_SIZE, Some(32));
}
