//! The wire format byte for byte: header, natural alignment and padding, tails, packing into
//! a buffer, unaligned input and the layout's JSON.

use super::*;

#[test]
fn blob_packs_to_the_documented_bytes() {
    let bytes = blob().pack();
    assert_eq!(bytes.len(), 56);
    assert_eq!(Blob::PACKED_SIZE, Some(56));
    assert_eq!(&bytes[0..4], b"CUOP");
    assert_eq!(&bytes[4..6], &1u16.to_le_bytes());
    assert_eq!(&bytes[6..8], &[0, 0]);
    assert_eq!(&bytes[8..12], &32u32.to_le_bytes());
    assert_eq!(&bytes[12..16], &[0; 4]);
    let canonical = "my_lib::Blob{gain:f32,bias:i32,seed:u64,tag:[u8;16]}";
    assert_eq!(Blob::layout().canonical, canonical);
    assert_eq!(
        &bytes[16..24],
        &fingerprint_of(canonical.as_bytes()).to_le_bytes()
    );
    assert_eq!(&bytes[24..28], &1.5f32.to_le_bytes());
    assert_eq!(&bytes[28..32], &(-3i32).to_le_bytes());
    assert_eq!(&bytes[32..40], &0x0102_0304_0506_0708u64.to_le_bytes());
    assert_eq!(&bytes[40..56], b"customop-tag-16b");
    assert_eq!(Blob::unpack(&bytes).unwrap(), blob());
}

#[test]
fn fields_sit_at_natural_alignment_with_zero_padding() {
    let l = Everything::layout();
    let offsets = field_offsets(l);
    assert_eq!(
        offsets,
        vec![
            ("a", Some(0), 1),
            ("b", Some(1), 1),
            ("c", Some(2), 2),
            ("d", Some(4), 4),
            ("e", Some(8), 8),
            ("f", Some(16), 1),
            ("g", Some(18), 2),
            ("h", Some(20), 4),
            ("i", Some(24), 8),
            ("j", Some(32), 4),
            ("k", Some(40), 8),
            ("mode", Some(48), 1),
            ("signed", Some(52), 4),
            ("inner", Some(56), 16),
            ("grid", Some(72), 12),
            ("inners", Some(88), 32),
        ]
    );
    assert_eq!(l.fixed_size, 120);
    assert_eq!(l.align, 8);
    let bytes = everything().pack();
    assert_eq!(bytes.len(), HEADER_SIZE + 120);
    // Padding after `mode` (49..52) and inside `inner` (57..64) is zero.
    assert_eq!(&bytes[HEADER_SIZE + 49..HEADER_SIZE + 52], &[0, 0, 0]);
    assert_eq!(&bytes[HEADER_SIZE + 57..HEADER_SIZE + 64], &[0; 7]);
    assert_eq!(Everything::unpack(&bytes).unwrap(), everything());
    assert_eq!(
        l.canonical,
        "Everything{a:bool,b:i8,c:i16,d:i32,e:i64,f:u8,g:u16,h:u32,i:u64,j:f32,k:f64,\
         mode:Mode(u8){Fast=0,Exact=1},signed:Signed(i32){Minus=-2,Plus=7},\
         inner:Inner{flag:bool,scale:f64},grid:[[i16;3];2],inners:[Inner{flag:bool,scale:f64};2]}"
    );
}

#[test]
fn tails_follow_the_fixed_part() {
    let t = table();
    let bytes = t.pack();
    assert_eq!(Table::PACKED_SIZE, None);
    let p = &bytes[HEADER_SIZE..];
    // Fixed part: id (2 bytes), rounded to align 2.
    assert_eq!(Table::FIXED_SIZE, 2);
    assert_eq!(&p[0..2], &7u16.to_le_bytes());
    // offsets: pad to 4, count 3, pad to 8, three u64s.
    assert_eq!(&p[2..4], &[0, 0]);
    assert_eq!(&p[4..8], &3u32.to_le_bytes());
    assert_eq!(&p[8..16], &1u64.to_le_bytes());
    assert_eq!(&p[24..32], &3u64.to_le_bytes());
    // label: count 6 (UTF-8 bytes), then the bytes.
    assert_eq!(&p[32..36], &6u32.to_le_bytes());
    assert_eq!(&p[36..42], "héllo".as_bytes());
    // modes: pad to 4 (42..44), count 2, bytes 0 1.
    assert_eq!(&p[42..44], &[0, 0]);
    assert_eq!(&p[44..48], &2u32.to_le_bytes());
    assert_eq!(&p[48..50], &[0, 1]);
    assert_eq!(p.len(), 50);
    assert_eq!(t.packed_len(), bytes.len());
    assert_eq!(Table::unpack(&bytes).unwrap(), t);
    let empty = Table {
        id: 0,
        offsets: vec![],
        label: String::new(),
        modes: vec![],
    };
    assert_eq!(Table::unpack(&empty.pack()).unwrap(), empty);
}

#[test]
fn pack_into_does_not_allocate_and_checks_the_buffer() {
    let mut buf = [0xAAu8; 64];
    assert_eq!(blob().pack_into(&mut buf).unwrap(), 56);
    assert_eq!(&buf[..56], &blob().pack()[..]);
    assert_eq!(buf[56], 0xAA, "bytes past the packed length are untouched");
    let err = blob().pack_into(&mut buf[..55]).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::BufferTooSmall {
            needed: 56,
            got: 55
        }
    );
}

#[test]
fn unpack_accepts_any_alignment() {
    let bytes = everything().pack();
    let mut shifted = vec![0u8; bytes.len() + 7];
    for shift in 0..8 {
        shifted[shift..shift + bytes.len()].copy_from_slice(&bytes);
        let v = Everything::unpack(&shifted[shift..shift + bytes.len()]).unwrap();
        assert_eq!(v, everything());
    }
}

#[test]
fn the_layout_exports_as_json() {
    let json: serde_json::Value = serde_json::from_str(&Table::layout().to_json()).unwrap();
    assert_eq!(json["name"], "Table");
    assert_eq!(
        json["fingerprint"],
        format!(
            "0x{:016x}",
            fingerprint_of(json["canonical"].as_str().unwrap().as_bytes())
        )
    );
    assert_eq!(json["fields"][1]["name"], "offsets");
    assert_eq!(json["fields"][1]["offset"], serde_json::Value::Null);
    assert_eq!(json["fields"][1]["type"]["kind"], "vec");
    assert_eq!(json["fields"][1]["type"]["element"]["kind"], "u64");
    assert_eq!(json["fields"][3]["type"]["element"]["kind"], "enum");
    assert_eq!(
        json["fields"][3]["type"]["element"]["variants"][1]["value"],
        1
    );
    assert!(matches!(
        Everything::layout().fields[13].ty,
        TypeLayout::Struct { .. }
    ));
}
