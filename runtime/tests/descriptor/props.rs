//! Properties: round trips, arbitrary and mutated bytes, and huge counts.

use super::*;
use proptest::prelude::*;

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Fast), Just(Mode::Exact)]
}

fn inner() -> impl Strategy<Value = Inner> {
    (any::<bool>(), any::<f64>()).prop_map(|(flag, scale)| Inner { flag, scale })
}

prop_compose! {
    fn blob_s()(gain in any::<f32>(), bias in any::<i32>(), seed in any::<u64>(),
                tag in any::<[u8; 16]>()) -> Blob {
        Blob { gain, bias, seed, tag }
    }
}

prop_compose! {
    fn everything_s()(ints in any::<(bool, i8, i16, i32, i64, u8, u16, u32, u64)>(),
                      j in any::<f32>(), k in any::<f64>(), mode in mode(),
                      signed in prop_oneof![Just(Signed::Minus), Just(Signed::Plus)],
                      inner in inner(), grid in any::<[[i16; 3]; 2]>(),
                      i0 in inner(), i1 in inner()) -> Everything {
        let (a, b, c, d, e, f, g, h, i) = ints;
        Everything { a, b, c, d, e, f, g, h, i, j, k, mode, signed, inner, grid, inners: [i0, i1] }
    }
}

prop_compose! {
    fn table_s()(id in any::<u16>(), offsets in prop::collection::vec(any::<u64>(), 0..40),
                 label in ".{0,40}", modes in prop::collection::vec(mode(), 0..40)) -> Table {
        Table { id, offsets, label, modes }
    }
}

/// Equality that treats NaN payloads bit for bit (packing must preserve them exactly).
fn same_bits<T: Descriptor>(a: &T, b: &T) -> bool {
    a.pack() == b.pack()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn blob_round_trips(v in blob_s()) {
        let back = Blob::unpack(&v.pack()).unwrap();
        prop_assert!(same_bits(&back, &v));
    }

    #[test]
    fn everything_round_trips(v in everything_s()) {
        let back = Everything::unpack(&v.pack()).unwrap();
        prop_assert!(same_bits(&back, &v));
    }

    #[test]
    fn table_round_trips(v in table_s()) {
        let bytes = v.pack();
        prop_assert_eq!(bytes.len(), v.packed_len());
        prop_assert_eq!(Table::unpack(&bytes).unwrap(), v);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = Blob::unpack(&bytes);
        let _ = Everything::unpack(&bytes);
        let _ = Table::unpack(&bytes);
    }

    /// Valid bytes with a few bytes changed: unpack errors or returns a value that packs
    /// back to exactly those bytes (nothing is silently reinterpreted).
    #[test]
    fn mutated_bytes_are_rejected_or_exact(v in table_s(), e in everything_s(),
                                           edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        for mut bytes in [v.pack(), e.pack()] {
            for (i, b) in &edits {
                let at = i.index(bytes.len());
                bytes[at] = *b;
            }
            if let Ok(t) = Table::unpack(&bytes) {
                prop_assert_eq!(t.pack(), bytes.clone());
            }
            if let Ok(t) = Everything::unpack(&bytes) {
                prop_assert_eq!(t.pack(), bytes.clone());
            }
        }
    }

    /// A header that claims a huge tail never makes unpack allocate past the input.
    #[test]
    fn huge_counts_fail_fast(count in 4u32..) {
        let mut bytes = table().pack();
        bytes[HEADER_SIZE + 4..HEADER_SIZE + 8].copy_from_slice(&count.to_le_bytes());
        prop_assert!(Table::unpack(&bytes).is_err());
    }
}
