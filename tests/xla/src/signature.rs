//! Reading a printed function's arguments and their `customop.external` annotations.

/// One argument of a printed function that carries a `customop.external` annotation: what its
/// type says and what the annotation says, so that tests can hold the two against each other
/// and against the descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalArg {
    /// The argument's position in the function's parameter list.
    pub index: usize,
    /// `N` of the argument's type `tensor<Nxui8>` (`None` when the type is anything else).
    pub type_bytes: Option<i64>,
    /// The annotation's `descriptor`.
    pub descriptor: String,
    /// The annotation's `size`.
    pub size: i64,
    /// The annotation's `mutable`.
    pub mutable: bool,
}

/// The arguments of function `@name` in the pretty-printed module `text`, each as written
/// (`%arg1: tensor<56xui8> {customop.external = {...}}`), split at top-level commas. `None`
/// when the module has no such function.
pub fn function_args(text: &str, name: &str) -> Option<Vec<String>> {
    let head = format!("@{name}(");
    let start = text
        .lines()
        .find(|l| l.trim_start().starts_with("func.func") && l.contains(&head))?;
    let open = start.find(&head)? + head.len();
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut cur = String::new();
    for c in start[open..].chars() {
        if in_str {
            cur.push(c);
            if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '<' | '[' | '(' => depth += 1,
            '}' | '>' | ']' => depth -= 1,
            ')' if depth == 0 => {
                if !cur.trim().is_empty() {
                    args.push(cur.trim().to_string());
                }
                return Some(args);
            }
            ')' => depth -= 1,
            ',' if depth == 0 => {
                args.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    None
}

/// Every argument of function `@name` in `text` that carries `customop.external`, in order.
/// Panics when the function is missing or an annotation lacks a field.
pub fn external_args(text: &str, name: &str) -> Vec<ExternalArg> {
    let args =
        function_args(text, name).unwrap_or_else(|| panic!("no function @{name} in\n{text}"));
    let field = |arg: &str, key: &str| -> String {
        let at = arg
            .find(&format!("{key} = "))
            .unwrap_or_else(|| panic!("no `{key}` in the annotation of `{arg}`"))
            + key.len()
            + 3;
        let rest = &arg[at..];
        let end = rest.find([',', '}', ' ']).unwrap_or(rest.len());
        rest[..end].trim_matches('"').to_string()
    };
    args.iter()
        .enumerate()
        .filter(|(_, a)| a.contains("customop.external = {"))
        .map(|(index, a)| {
            let ty = a.split_once(": ").map(|(_, t)| t).unwrap_or("");
            let type_bytes = ty
                .strip_prefix("tensor<")
                .and_then(|t| t.split_once("xui8>"))
                .and_then(|(n, _)| n.parse().ok());
            let ann = &a[a.find("customop.external").unwrap_or(0)..];
            ExternalArg {
                index,
                type_bytes,
                descriptor: field(ann, "descriptor"),
                size: field(ann, "size").parse().expect("size is a number"),
                mutable: field(ann, "mutable") == "true",
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_args_are_read_from_a_printed_signature() {
        let text = r#"module {
  func.func private @h(%arg0: tensor<2xf32>, %arg1: tensor<28xui8>) -> tensor<2xf32> {
  }
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<28xui8> {customop.external = {descriptor = "a::B", fingerprint = "0x01", mutable = false, size = 28 : i64}}, %arg2: tensor<72xui8> {customop.external = {descriptor = "c::D", fingerprint = "0x02", mutable = true, size = 96 : i64}, sdy.sharding = #sdy.sharding<@mesh, [{}]>}) -> (tensor<2xf32>, tensor<3xi8>) {
"#;
        assert_eq!(function_args(text, "h").unwrap().len(), 2);
        assert_eq!(
            external_args(text, "main"),
            vec![
                ExternalArg {
                    index: 1,
                    type_bytes: Some(28),
                    descriptor: "a::B".into(),
                    size: 28,
                    mutable: false
                },
                ExternalArg {
                    index: 2,
                    type_bytes: Some(72),
                    descriptor: "c::D".into(),
                    size: 96,
                    mutable: true
                },
            ]
        );
        assert!(external_args(text, "h").is_empty());
        assert!(function_args(text, "nope").is_none());
    }
}
