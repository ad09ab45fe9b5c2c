//! The declared derivative rules in an op's schema: the backward op (`vjp = ...`) and the
//! tangent op (`jvp = ...`), and where each of their inputs comes from.

use serde::Serialize;

/// A forward op's backward op and what each of its parameters and outputs is (see
/// `#[custom_op(vjp = ...)]`).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VjpSchema {
    /// The backward op's name.
    pub op: String,
    /// The backward's inputs (tensors, externals and attributes), in its declaration order.
    pub inputs: Vec<VjpInput>,
    /// Its outputs: the gradients, each of one forward input.
    pub gradients: Vec<VjpGradient>,
}

/// One input of a backward op.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VjpInput {
    /// The backward's parameter.
    pub param: String,
    /// Where its value comes from.
    pub source: ResidualSource,
    /// The forward parameter or output it is (for a cotangent, the output).
    pub of: String,
}

/// Where a backward op's input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResidualSource {
    /// A forward input (a tensor or an external), as given.
    Input,
    /// A forward attribute.
    Attribute,
    /// A forward output, as computed.
    Output,
    /// The cotangent of a forward output.
    Cotangent,
}

/// One output of a backward op: the gradient of a forward input.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VjpGradient {
    /// The backward's output.
    pub result: String,
    /// The forward input it is the gradient of.
    pub of: String,
}

/// A forward op's tangent op and what each of its parameters and outputs is (see
/// `#[custom_op(jvp = ...)]`).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JvpSchema {
    /// The tangent op's name.
    pub op: String,
    /// The tangent op's inputs (tensors, externals and attributes), in its declaration order.
    pub inputs: Vec<JvpInput>,
    /// Its outputs: the tangents, each of one forward output.
    pub tangents: Vec<JvpTangent>,
}

/// One input of a tangent op.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JvpInput {
    /// The tangent op's parameter.
    pub param: String,
    /// Where its value comes from.
    pub source: JvpSource,
    /// The forward parameter or output it is (for a tangent, the input).
    pub of: String,
}

/// Where a tangent op's input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JvpSource {
    /// A forward input (a tensor or an external), as given.
    Input,
    /// A forward attribute.
    Attribute,
    /// A forward output, as computed.
    Output,
    /// The tangent of a forward input.
    Tangent,
}

/// One output of a tangent op: the tangent of a forward output.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JvpTangent {
    /// The tangent op's output.
    pub result: String,
    /// The forward output it is the tangent of.
    pub of: String,
}
