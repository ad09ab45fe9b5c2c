//! Packing values of byte arrays and structs (`pack_value`, what Python's `lib.pack` and the
//! command line call): what it takes, and refusals that name the descriptor and the field.

use super::*;
use customop::descriptor::{Layout, pack_value};
use serde_json::{Value, json};

/// A C-style struct: `char name[8]` arrives as `[i8; 8]` (`c_char`), next to a byte array.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "test::Named")]
pub struct Named {
    pub id: u16,
    pub name: [i8; 8],
    pub key: [u8; 4],
}

fn layout<T: Descriptor>() -> &'static Layout {
    T::layout()
}

fn bytes(b: &[u8]) -> Value {
    json!({ "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() })
}

fn pack(layout: &Layout, value: Value) -> Result<Vec<u8>, String> {
    pack_value(layout, &value).map_err(|e| e.to_string())
}

#[test]
fn byte_arrays_take_bytes_and_str_of_their_length() {
    let l = layout::<Named>();
    let want = Named {
        id: 3,
        name: [104, 105, -1, 0, 0, 0, 0, 0], // "hi", 0xff, zeros
        key: *b"k3y!",
    };
    // bytes for both the i8 (C char) and the u8 array; str (UTF-8) for the u8 one.
    let from_bytes = pack(
        l,
        json!({"id": 3, "name": bytes(b"hi\xff\0\0\0\0\0"), "key": bytes(b"k3y!")}),
    )
    .unwrap();
    assert_eq!(from_bytes, want.pack());
    let from_str = pack(
        l,
        json!({"id": 3, "name": [104, 105, -1, 0, 0, 0, 0, 0], "key": "k3y!"}),
    )
    .unwrap();
    assert_eq!(from_str, want.pack());
    // Of another length: an error that says how many bytes, and how to pad.
    let err = pack(l, json!({"id": 3, "name": "hi", "key": "k3y!"})).unwrap_err();
    assert!(
        err.contains(
            "descriptor `test::Named`, field `name`: a [i8; 8] takes exactly 8 bytes, got 2; \
             pad it"
        ),
        "{err}"
    );
    let err = pack(
        l,
        json!({"id": 3, "name": "hi\0\0\0\0\0\0", "key": "key-too-long"}),
    )
    .unwrap_err();
    assert!(
        err.contains("field `key`: a [u8; 4] takes exactly 4 bytes, got 12"),
        "{err}"
    );
    // A str for an array of other elements is refused, not read as characters.
    let mut v = everything_value();
    v["grid"] = json!("abcdef");
    let err = pack(layout::<Everything>(), v).unwrap_err();
    assert!(
        err.contains("field `grid`: a [[i16; 3]; 2] takes a list, got \"abcdef\""),
        "{err}"
    );
}

fn everything_value() -> Value {
    json!({
        "a": true, "b": -8, "c": -1600, "d": 32_000_000, "e": -64_000_000_000i64,
        "f": 200, "g": 60_000, "h": 4_000_000_000u32, "i": 1,
        "j": -0.25, "k": 1.0e300, "mode": "Exact", "signed": "Minus",
        "inner": {"flag": true, "scale": 1.0},
        "grid": [[1, -2, 3], [-4, 5, -6]],
        "inners": [{"flag": false, "scale": 0.5}, {"flag": true, "scale": 8.0}],
    })
}

#[test]
fn pack_names_the_descriptor_and_the_field() {
    let blob = layout::<Blob>();
    let err = pack(blob, json!({"gain": 1.0, "bias": 0, "tag": vec![0; 16]})).unwrap_err();
    assert_eq!(
        err,
        "descriptor `my_lib::Blob` has no value for field `seed`"
    );
    let err = pack(
        blob,
        json!({"gain": 1.0, "bias": 0, "seed": 0, "tag": vec![0; 16], "gian": 2.0}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "descriptor `my_lib::Blob` has no field `gian` (its fields: gain, bias, seed, tag)"
    );
    let err = pack(
        blob,
        json!({"gain": 1.0, "bias": 1.5, "seed": 0, "tag": vec![0; 16]}),
    )
    .unwrap_err();
    assert!(
        err.contains("field `bias`: expected an integer (i32), got 1.5"),
        "{err}"
    );
    let err = pack(
        blob,
        json!({"gain": 1.0, "bias": 0, "seed": -1, "tag": vec![0; 16]}),
    )
    .unwrap_err();
    assert!(err.contains("field `seed`: -1 does not fit u64"), "{err}");
    let err = pack(
        blob,
        json!({"gain": 1.0, "bias": 0, "seed": 0, "tag": vec![0; 15]}),
    )
    .unwrap_err();
    assert!(
        err.contains("field `tag`: expected 16 elements, got 15"),
        "{err}"
    );
    // Nested: the path to the field.
    let everything = layout::<Everything>();
    let mut v = everything_value();
    v["inner"] = json!({"flag": true});
    let err = pack(everything, v.clone()).unwrap_err();
    assert_eq!(
        err,
        "descriptor `Everything` has no value for field `inner.scale`"
    );
    v["inner"] = json!({"flag": true, "scale": 1.0});
    v["mode"] = json!("Slow");
    let err = pack(everything, v.clone()).unwrap_err();
    assert!(
        err.contains("field `mode`: \"Slow\" is not a variant of Mode (its variants: Fast, Exact)"),
        "{err}"
    );
    v["mode"] = json!("Fast");
    v["grid"][1][2] = json!(40_000);
    let err = pack(everything, v).unwrap_err();
    assert!(
        err.contains("field `grid[1][2]`: 40000 does not fit i16"),
        "{err}"
    );
}
