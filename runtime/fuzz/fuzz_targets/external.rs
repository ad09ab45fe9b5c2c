//! Text into the external packer (`customop run --external name=cfg.json|toml`, Python's
//! `lib.pack`): JSON (first byte even) or TOML (odd), then `descriptor::pack_value` for the
//! layouts of every field kind. Any input packs or is refused, never a panic; bytes it packs
//! unpack (`unpack_value`) to a value that packs to the same bytes, and the derive reads them.
#![no_main]

#[path = "../../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../../../cli/src/values.rs"]
mod values;

use common::*;
use customop::Descriptor;
use customop::descriptor::{Layout, pack_value, unpack_value};

fn check<T: Descriptor>(value: &serde_json::Value) {
    let layout: &'static Layout = T::layout();
    let Ok(bytes) = pack_value(layout, value) else {
        return;
    };
    let back = unpack_value(layout, &bytes).expect("packed bytes unpack");
    assert_eq!(
        pack_value(layout, &back).ok(),
        Some(bytes.clone()),
        "{back}"
    );
    assert!(
        T::unpack(&bytes).is_ok(),
        "the derive refuses what pack_value wrote"
    );
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&first, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let value = if first % 2 == 0 {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => v,
            Err(_) => return,
        }
    } else {
        let Ok(table) = toml::from_str::<toml::Table>(text) else {
            return;
        };
        match values::from_toml(toml::Value::Table(table)) {
            Ok(v) => v,
            Err(_) => return,
        }
    };
    check::<Blob>(&value);
    check::<Everything>(&value);
    check::<Table>(&value);
    check::<Inner>(&value);
});
