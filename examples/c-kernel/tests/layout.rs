//! The layout proof: the descriptor's layout (what the wire format and the manifest say) is
//! compared, field by field, with what the C compiler says of the same header (`offsetof`,
//! `sizeof`, `_Alignof`), so a header whose struct no longer matches fails here with the field
//! named. bindgen's own assertions tie the Rust struct to C, and the `repr_c` derive ties it to
//! the wire format; this test checks the end-to-end claim directly, against `cc`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use customop::Descriptor;
use customop::descriptor::Layout;
use customop_example_c_kernel::Params;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles a C program against `header` that prints the struct's size and alignment and each
/// field's offset and size, and compares them with `layout`. Returns every difference.
fn check_against_c(header: &Path, c_struct: &str, layout: &Layout) -> Result<(), Vec<String>> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "layout-{}",
        header.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = format!(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"{}\"\nint main(void) {{\n\
         printf(\"size %zu\\n\", sizeof(struct {c_struct}));\n\
         printf(\"align %zu\\n\", _Alignof(struct {c_struct}));\n",
        header.display()
    );
    for f in &layout.fields {
        c.push_str(&format!(
            "printf(\"field {n} %zu %zu\\n\", offsetof(struct {c_struct}, {n}), \
             sizeof(((struct {c_struct} *)0)->{n}));\n",
            n = f.name
        ));
    }
    c.push_str("return 0;\n}\n");
    let src = dir.join("layout.c");
    std::fs::write(&src, c).unwrap();
    let exe = dir.join("layout");
    let out = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run cc");
    if !out.status.success() {
        return Err(vec![format!(
            "the C compiler refused the layout program: {}",
            String::from_utf8_lossy(&out.stderr)
        )]);
    }
    let text = String::from_utf8(Command::new(&exe).output().unwrap().stdout).unwrap();
    let mut wrong = Vec::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| w[i].parse::<usize>().unwrap();
        match w[0] {
            "size" if num(1) != layout.fixed_size => wrong.push(format!(
                "struct {c_struct} is {} bytes in C, {} in the wire format",
                num(1),
                layout.fixed_size
            )),
            "align" if num(1) != layout.align => wrong.push(format!(
                "struct {c_struct} is aligned to {} in C, {} in the wire format",
                num(1),
                layout.align
            )),
            "field" => {
                let f = layout.fields.iter().find(|f| f.name == w[1]).unwrap();
                if Some(num(2)) != f.offset || num(3) != f.size {
                    wrong.push(format!(
                        "field `{}`: offset {} size {} in C, offset {:?} size {} in the wire format",
                        f.name,
                        num(2),
                        num(3),
                        f.offset,
                        f.size
                    ));
                }
            }
            _ => {}
        }
    }
    if wrong.is_empty() { Ok(()) } else { Err(wrong) }
}

fn header() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c/scale_rows.h")
}

#[test]
fn the_descriptor_is_laid_out_as_c_lays_out_the_header() {
    let layout = Params::layout();
    assert_eq!(layout.fixed_size, 56);
    assert_eq!(layout.packed_size, Some(80));
    check_against_c(&header(), "params", layout).unwrap_or_else(|w| panic!("{}", w.join("\n")));
}

#[test]
fn a_moved_field_is_caught_and_named() {
    // The same header with `version` moved before `scale`: C's offsets change, the descriptor
    // (generated from the real header) does not.
    let text = std::fs::read_to_string(header()).unwrap();
    let moved = text.replace(
        "  double scale;\n  uint16_t version;\n",
        "  uint16_t version;\n  double scale;\n",
    );
    assert_ne!(moved, text, "the header's field order changed");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("scale_rows_moved.h");
    std::fs::write(&path, moved).unwrap();
    let wrong = check_against_c(&path, "params", Params::layout()).unwrap_err();
    let all = wrong.join("\n");
    // `version` moves to offset 2, which lets `taps`, `name` and `offset` move up by 4 and
    // shrinks the struct to 48 bytes; `flags` and `scale` stay where they were.
    assert!(
        all.contains("field `version`: offset 2 size 2 in C, offset Some(16)"),
        "{all}"
    );
    assert!(
        all.contains("field `taps`: offset 16 size 20 in C, offset Some(20)"),
        "{all}"
    );
    assert!(
        all.contains("struct params is 48 bytes in C, 56 in the wire format"),
        "{all}"
    );
    assert!(
        !all.contains("`scale`") && !all.contains("`flags`"),
        "{all}"
    );
    assert_eq!(wrong.len(), 5, "{all}");
}

#[test]
fn a_resized_field_is_caught_and_named() {
    let text = std::fs::read_to_string(header()).unwrap();
    let resized = text.replace("  float taps[5];\n", "  float taps[6];\n");
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scale_rows_resized.h");
    std::fs::write(&path, resized).unwrap();
    let all = check_against_c(&path, "params", Params::layout())
        .unwrap_err()
        .join("\n");
    assert!(
        all.contains("field `taps`: offset 20 size 24 in C"),
        "{all}"
    );
    assert!(all.contains("field `name`"), "{all}");
}
