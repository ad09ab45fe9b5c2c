//! Holding Rust's descriptions of C ABIs (XLA FFI, PJRT) to the headers installed beside
//! them: a C program compiled against the header prints each size, offset and constant. No
//! dependency on customop, so that customop's own unit tests can use it.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

/// The C expression of a layout key: `sizeof T` → `sizeof(T)`, `T.f` → `offsetof(T, f)`,
/// anything else (a `*_STRUCT_SIZE` macro, an enum constant) as written.
pub fn layout_expr(key: &str) -> String {
    if let Some(t) = key.strip_prefix("sizeof ") {
        format!("sizeof({t})")
    } else if let Some((t, f)) = key.split_once('.') {
        format!("offsetof({t}, {f})")
    } else {
        key.to_string()
    }
}

/// Compiles and runs a C program that includes `header` (found in `include`) and prints
/// `(size_t)(expr)` for each key's C expression, in `target/<dir>/`; returns the values by key.
/// The layout tests hold Rust's descriptions of C ABIs to the installed headers with it.
pub fn c_values(
    include: &Path,
    header: &str,
    dir: &str,
    exprs: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, usize> {
    let mut c = format!(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"{header}\"\nint main(void) {{\n"
    );
    for (key, expr) in exprs {
        c.push_str(&format!(
            "  printf(\"%s=%zu\\n\", \"{key}\", (size_t)({expr}));\n"
        ));
    }
    c.push_str("  return 0;\n}\n");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target")
        .join(dir);
    std::fs::create_dir_all(&dir).expect("create the layout directory");
    let src = dir.join("layout.c");
    std::fs::write(&src, c).expect("write layout.c");
    let exe = dir.join("layout");
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .arg("-I")
        .arg(include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling {} failed", src.display());
    let out = Command::new(&exe).output().expect("run the layout program");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("the layout program prints text")
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').expect("key=value");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect()
}
