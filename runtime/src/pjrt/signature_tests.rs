#![allow(clippy::unwrap_used)]
use super::*;
use crate::types::{ElementType, TensorType};

const SEED: &str = r#"module {
  func.func @main(%arg0: tensor<3x3xf32>, %arg1: tensor<56xui8> {customop.external = {descriptor = "my_lib::Blob", fingerprint = "0x0731d6f6ff09d648", mutable = false, name = "external", size = 56 : i64}}) -> tensor<3xi8> {
    return %x : tensor<3xi8>
  }
}"#;

#[test]
fn the_seed_signature_is_read() {
    let s = Signature::parse(SEED).unwrap();
    assert_eq!(s.params.len(), 2);
    assert_eq!(s.params[0].ty.to_string(), "tensor<3x3xf32>");
    assert_eq!(s.params[0].external, None);
    let e = s.params[1].external.as_ref().unwrap();
    assert_eq!(
        (
            e.name.as_deref(),
            e.descriptor.as_str(),
            e.fingerprint,
            e.size,
            e.mutable
        ),
        (
            Some("external"),
            "my_lib::Blob",
            0x0731d6f6ff09d648,
            56,
            false
        )
    );
    assert_eq!(s.external("external").unwrap().index, 1);
    assert_eq!(s.results.len(), 1);
    assert_eq!(s.results[0].to_string(), "tensor<3xi8>");
    assert!(s.mesh.is_empty());
}

#[test]
fn results_in_parentheses_shardings_and_the_mesh_are_read() {
    let text = r#"module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%arg0: tensor<8x2xcomplex<f32>> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}, %arg1: tensor<i1>) -> (tensor<8xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<f8E4M3FN>) {
  }
}"#;
    let s = Signature::parse(text).unwrap();
    assert_eq!(s.mesh, vec![("x".into(), 2), ("y".into(), 2)]);
    let generic = text.replace(
        r#"sdy.mesh @mesh = <["x"=2, "y"=2]>"#,
        r#""sdy.mesh"() {mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"} : () -> ()"#,
    );
    assert_eq!(Signature::parse(&generic).unwrap().mesh, s.mesh);
    let properties = text.replace(
        r#"sdy.mesh @mesh = <["x"=2, "y"=2]>"#,
        r#""sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> : () -> ()"#,
    );
    assert_eq!(Signature::parse(&properties).unwrap().mesh, s.mesh);
    assert_eq!(s.mesh_devices(), 4);
    assert_eq!(s.params[0].ty.element(), ElementType::C64);
    assert_eq!(s.params[0].ty.shape(), &[8, 2]);
    assert_eq!(
        s.params[0].sharding,
        Some(vec![vec!["x".to_string(), "y".to_string()], vec![]])
    );
    assert_eq!(s.params[1].ty.element(), ElementType::Bool);
    assert_eq!(s.params[1].ty.shape(), &[] as &[i64]);
    assert_eq!(s.results.len(), 2);
    assert_eq!(s.results[0].element(), ElementType::BF16);
    assert_eq!(s.result_shardings[0], Some(vec![vec!["x".to_string()]]));
    assert_eq!(s.result_shardings[1], None);
    assert_eq!(s.results[1].element(), ElementType::F8E4M3FN);
}

#[test]
fn what_cannot_be_read_is_an_error_not_a_guess() {
    for (text, needle) in [
        (
            "func.func @other(%a: tensor<f32>) {}",
            "no `func.func @main`",
        ),
        (
            "func.func @main(%a: tensor<?x3xf32>) {}",
            "dynamic dimension",
        ),
        (
            "func.func @main(%a: tensor<3xf128>) {}",
            "element type `f128`",
        ),
        ("func.func @main(%a: tensor<3xf32>", "never closed"),
        ("func.func @main(%a: tensor<3xf32>) } {", "does not match"),
        (
            "func.func @main(%a: tensor<3xf32, #enc>) {}",
            "has an encoding",
        ),
        (
            "func.func @main(%a: !stablehlo.token) {}",
            "not a ranked tensor type",
        ),
        (
            r#"func.func @main(%a: tensor<3xui8> {customop.external = {descriptor = "a", fingerprint = "12", size = 3 : i64}}) {}"#,
            "fingerprint `12`",
        ),
        (
            r#"func.func @main(%a: tensor<3xui8> {customop.external = {fingerprint = "0x12", size = 3 : i64}}) {}"#,
            "no `descriptor`",
        ),
        (
            r#"func.func @main(%a: tensor<3xui8> {customop.external = {descriptor = "a", fingerprint = "0x0000000000000001", size = 3 : i64, name = 4}}) {}"#,
            "`name` is not a string",
        ),
        (
            "module { func.func @main() {} }\nmodule @inner { func.func @main() {} }",
            "defines `@main` 2 times",
        ),
        (
            r#""func.func"() <{sym_name = "main", function_type = () -> ()}> ({}) : () -> ()"#,
            "generic form",
        ),
        (
            "func.func @main(%a: tensor<3xf32>) { \"x\n\" }",
            "past the end",
        ),
    ] {
        let e = Signature::parse(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
}

#[test]
fn unit_attributes_and_locations_do_not_hide_annotations() {
    let text = r#"func.func @main(%a: tensor<2xf32> {llvm.noalias, sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>} loc("x"), %b: tensor<4xui8> {customop.external = {descriptor = "a::B", fingerprint = "0x0000000000000001", name = "b", size = 4 : i64}} loc(unknown)) -> tensor<2xf32> {
  }
  sdy.mesh @mesh = <["x"=2]>"#;
    let s = Signature::parse(text).unwrap();
    assert_eq!(s.params[0].sharding, Some(vec![vec!["x".to_string()]]));
    assert_eq!(s.external("b").unwrap().index, 1);
}

#[test]
fn meshes_the_runner_cannot_place_are_refused() {
    for (text, needle) in [
        (
            "sdy.mesh @a = <[\"x\"=2]>\nsdy.mesh @b = <[\"y\"=2]>\nfunc.func @main(%a: tensor<2xf32>) {}",
            "2 meshes",
        ),
        (
            "sdy.mesh @a = <[\"x\"=2], device_ids=[1, 0]>\nfunc.func @main(%a: tensor<2xf32>) {}",
            "device_ids",
        ),
        (
            "sdy.mesh @a = <[\"x\"=0]>\nfunc.func @main(%a: tensor<2xf32>) {}",
            "size 0",
        ),
        (
            r#"sdy.mesh @a = <["x"=2]>
func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32> {sdy.sharding = #sdy.sharding<@a, [{}], unreduced={"x"}>}) {}"#,
            "unreduced",
        ),
    ] {
        let e = Signature::parse(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
}

#[test]
fn a_signature_given_with_bytecode_is_checked() {
    let mut s = Signature::parse(SEED).unwrap();
    s.params[1].index = 5;
    // SAFETY: the call is refused before the signature is used.
    let e = unsafe { Program::bytecode_with_signature(b"ML\xefR", s) }
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("parameter 1 of the signature says it is argument 5"),
        "{e}"
    );
}

#[test]
fn strings_with_brackets_do_not_confuse_the_splitter() {
    let text = r#"func.func @main(%a: tensor<2xf32> {a.b = "x, (y", c = ">", d = "\"}"}, %b: tensor<1xi8>) -> tensor<2xf32> {}"#;
    let s = Signature::parse(text).unwrap();
    assert_eq!(s.params.len(), 2);
    assert_eq!(s.params[1].ty.element(), ElementType::I8);
}

/// The real entry function of the decoy modules: 1024 f32 in, 1024 f32 out.
const REAL_MAIN: &str = "func.func public @main(%arg0: tensor<1024xf32>) -> tensor<1024xf32> {\n    \
     %0 = stablehlo.sine %arg0 : tensor<1024xf32>\n    return %0 : tensor<1024xf32>\n  }";

/// The four decoys that fooled the line scanner (and two more): each is a valid module whose
/// real `@main` takes `tensor<1024xf32>`.
pub(crate) fn decoy_modules() -> Vec<(&'static str, String)> {
    let m =
        |before: &str, attrs: &str| format!("module{attrs} {{\n  {before}\n  {REAL_MAIN}\n}}\n");
    vec![
        (
            "a comment",
            m(
                "// func.func @main(%arg0: tensor<1xf32>) -> tensor<1xf32>",
                "",
            ),
        ),
        (
            "a string attribute",
            m(
                "",
                r#" attributes {x.note = "func.func @main(%arg0: tensor<1xf32>) -> tensor<1xf32>"}"#,
            ),
        ),
        (
            "a quoted symbol name",
            m(
                "func.func private @\"helper@main(%arg0: tensor<1xf32>) -> tensor<1xf32>\"(%arg0: tensor<1xf32>) -> tensor<1xf32> {\n    return %arg0 : tensor<1xf32>\n  }",
                "",
            ),
        ),
        (
            "a comment of the same byte size",
            m(
                "// func.func @main(%arg0: tensor<1024xi32>) -> tensor<1024xi32>",
                "",
            ),
        ),
        (
            "a comment inside the argument's attributes",
            format!(
                "module {{\n  {}\n}}\n",
                REAL_MAIN.replace(
                    "%arg0: tensor<1024xf32>)",
                    "%arg0: tensor<1024xf32> {x.y = 1 : i32 // , %arg1: tensor<1xi8>)\n  })"
                )
            ),
        ),
        (
            "a resource section",
            format!(
                "{}{{-#\n  dialect_resources: {{ x: {{ func.func @main(%a: tensor<1xf32>) {{}} }} }}\n#-}}\n",
                m("", "")
            ),
        ),
    ]
}

#[test]
fn decoys_in_comments_strings_and_symbol_names_are_not_read() {
    let want = TensorType::new(ElementType::F32, [1024]).unwrap();
    for (what, text) in decoy_modules() {
        let s = Signature::parse(&text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
        assert_eq!(s.params.len(), 1, "{what}");
        assert_eq!(s.params[0].ty, want, "{what}");
        assert_eq!(s.results, vec![want.clone()], "{what}");
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// A decoy: text that looks like an entry function, in a place MLIR does not read as one.
    fn decoy() -> impl Strategy<Value = String> {
        let ty = (
            1i64..5000,
            prop::sample::select(vec!["f32", "i32", "ui8", "f64"]),
        )
            .prop_map(|(n, e)| format!("tensor<{n}x{e}>"));
        (ty, 0usize..6).prop_map(|(ty, kind)| {
            let sig = format!("func.func @main(%arg0: {ty}) -> {ty}");
            match kind {
                0 => format!("// {sig}\n"),
                1 => format!("\"x.note\"() {{text = \"{sig} {{\\\"\"}} : () -> ()\n"),
                2 => format!(
                    "func.func private @\"{sig}\"(%a: {ty}) -> {ty} {{\n return %a : {ty}\n}}\n"
                ),
                3 => format!("\"x.op\"() {{a = #x.attr<{sig} {{ }}>}} : () -> ()\n"),
                4 => format!("func.func private @main_{}(%a: {ty}) {{ }}\n", ty.len()),
                _ => format!(
                    "%c = \"x.c\"() {{v = dense<\"0x{}\"> : {ty}}} : () -> {ty} // {sig}\n",
                    "00".repeat(3)
                ),
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Decoys inserted before, between and after the real module's lines never change the
        /// signature read.
        #[test]
        fn decoys_anywhere_between_operations_change_nothing(
            decoys in prop::collection::vec((0usize..4, decoy()), 0..6),
        ) {
            let lines = [
                "module {\n",
                "  func.func public @main(%arg0: tensor<1024xf32>, %arg1: tensor<56xui8> {customop.external = {descriptor = \"a::B\", fingerprint = \"0x0000000000000001\", name = \"b\", size = 56 : i64}}) -> tensor<1024xf32> {\n",
                "    %0 = stablehlo.sine %arg0 : tensor<1024xf32>\n",
                "    return %0 : tensor<1024xf32>\n  }\n}\n",
            ];
            let mut text = String::new();
            for (i, line) in lines.iter().enumerate() {
                for (at, d) in &decoys {
                    // Between operations: before `module` (top level), or inside a region.
                    if *at == i && i != 3 {
                        text.push_str(d);
                    }
                }
                text.push_str(line);
            }
            let s = Signature::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(s.params.len(), 2);
            prop_assert_eq!(s.params[0].ty.to_string(), "tensor<1024xf32>");
            prop_assert_eq!(s.external("b").map(|p| p.index), Some(1));
            prop_assert_eq!(s.results.len(), 1);
        }
    }
}

/// A serialized `jax.export` as its flatbuffer lays it out: the root table's field 13 a vector
/// of bytes (the module). Built here by hand, field by field.
fn jax_export_bytes(module: &[u8], vtable_fields: u16) -> Vec<u8> {
    let vsize = 4 + 2 * vtable_fields;
    let table = 4 + usize::from(vsize);
    let mut b = Vec::new();
    b.extend_from_slice(&u32::try_from(table).unwrap().to_le_bytes());
    b.extend_from_slice(&vsize.to_le_bytes());
    b.extend_from_slice(&8u16.to_le_bytes());
    for field in 0..vtable_fields {
        b.extend_from_slice(&(if field == 13 { 4u16 } else { 0 }).to_le_bytes());
    }
    assert_eq!(b.len(), table);
    b.extend_from_slice(&i32::try_from(table - 4).unwrap().to_le_bytes());
    b.extend_from_slice(&4u32.to_le_bytes()); // the vector, 4 bytes on
    b.extend_from_slice(&u32::try_from(module.len()).unwrap().to_le_bytes());
    b.extend_from_slice(module);
    b
}

#[test]
fn a_program_is_loaded_from_any_of_its_forms() {
    let module = b"ML\xefR\x00some bytecode";
    let p = Program::jax_export(&jax_export_bytes(module, 14)).unwrap();
    assert_eq!(p.code, module);
    assert!(p.signature().is_none());
    let p = Program::load(&jax_export_bytes(module, 14)).unwrap();
    assert_eq!(p.code, module);
    // Field 13 absent (a vtable of 13 fields), or not bytecode: not a jax.export.
    assert!(Program::jax_export(&jax_export_bytes(module, 13)).is_none());
    assert!(Program::jax_export(&jax_export_bytes(b"not bytecode", 14)).is_none());
    // Cut anywhere, it is none, never a read beyond the bytes.
    let whole = jax_export_bytes(module, 14);
    for n in 0..whole.len() {
        assert!(Program::jax_export(&whole[..n]).is_none(), "cut at {n}");
    }
    let p = Program::load(module).unwrap();
    assert_eq!(p.code, module);
    assert!(p.signature().is_none());
    let p = Program::load(SEED.as_bytes()).unwrap();
    assert_eq!(p.signature().unwrap().params.len(), 2);
    let e = Program::load(b"\xff\xfe not text").unwrap_err();
    assert_eq!(
        e.to_string(),
        "program: neither MLIR text, MLIR bytecode nor a serialized `jax.export`"
    );
}
