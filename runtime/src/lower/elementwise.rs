//! Constants, elementwise ops and reductions.

use super::{Attr, Body, BuildError, FuncBuilder, Value, attr};
use crate::types::{ElementType, TensorType};

impl FuncBuilder<'_> {
    pub(super) fn one(
        &mut self,
        name: &'static str,
        operands: &[&Value],
        result: TensorType,
    ) -> Result<Value, BuildError> {
        let mut v = self.push_op(name, operands, vec![result], Vec::new(), None, None)?;
        v.pop().ok_or_else(|| BuildError::new("op made no result"))
    }

    /// `stablehlo.constant` holding `value` in every element of a tensor of type `ty`.
    pub fn constant_splat(&mut self, ty: &TensorType, value: f64) -> Result<Value, BuildError> {
        let lit = scalar_literal(ty.element(), value)?;
        let attrs = vec![("value", Attr::Raw(format!("dense<{lit}> : {ty}")))];
        let mut v = self.push_op(
            "stablehlo.constant",
            &[],
            vec![ty.clone()],
            attrs,
            None,
            None,
        )?;
        v.pop().ok_or_else(|| BuildError::new("op made no result"))
    }

    /// An elementwise op of one operand (`stablehlo.sine` and friends); see [`UnaryOp`].
    pub fn unary(&mut self, op: UnaryOp, x: &Value) -> Result<Value, BuildError> {
        let name = op.op_name();
        let element = x.element();
        if op.needs_float() && !element.is_float() && !element.is_complex() {
            return Err(BuildError::new(format!(
                "{name} takes a floating-point or complex tensor, got {}",
                x.ty()
            )));
        }
        if matches!(element, ElementType::Bool) || (op == UnaryOp::Negate && element.is_unsigned())
        {
            return Err(BuildError::new(format!("{name} does not take {}", x.ty())));
        }
        // The absolute value of a complex number is real.
        let result = match (op, element.complex_part()) {
            (UnaryOp::Abs, Some(part)) => x.ty().with_element(part),
            _ => x.ty().clone(),
        };
        let v = self.one(name, &[x], result)?;
        self.propagate_sharding(&[x], &v);
        Ok(v)
    }

    /// `stablehlo.sine`.
    pub fn sine(&mut self, x: &Value) -> Result<Value, BuildError> {
        self.unary(UnaryOp::Sine, x)
    }

    /// `stablehlo.negate`.
    pub fn negate(&mut self, x: &Value) -> Result<Value, BuildError> {
        self.unary(UnaryOp::Negate, x)
    }

    /// `stablehlo.exponential`.
    pub fn exp(&mut self, x: &Value) -> Result<Value, BuildError> {
        self.unary(UnaryOp::Exponential, x)
    }

    /// `stablehlo.tanh`.
    pub fn tanh(&mut self, x: &Value) -> Result<Value, BuildError> {
        self.unary(UnaryOp::Tanh, x)
    }

    /// An elementwise op of two operands of one type (`stablehlo.add` and friends).
    pub fn binary(&mut self, op: BinaryOp, lhs: &Value, rhs: &Value) -> Result<Value, BuildError> {
        let name = op.op_name();
        if lhs.ty() != rhs.ty() {
            return Err(BuildError::new(format!(
                "{name} takes two operands of one type, got {} and {}",
                lhs.ty(),
                rhs.ty()
            )));
        }
        if matches!(lhs.element(), ElementType::Bool) {
            return Err(BuildError::new(format!(
                "{name} does not take {}",
                lhs.ty()
            )));
        }
        let v = self.one(name, &[lhs, rhs], lhs.ty().clone())?;
        self.propagate_sharding(&[lhs, rhs], &v);
        Ok(v)
    }

    /// `stablehlo.add`.
    pub fn add(&mut self, lhs: &Value, rhs: &Value) -> Result<Value, BuildError> {
        self.binary(BinaryOp::Add, lhs, rhs)
    }

    /// `stablehlo.multiply`.
    pub fn mul(&mut self, lhs: &Value, rhs: &Value) -> Result<Value, BuildError> {
        self.binary(BinaryOp::Multiply, lhs, rhs)
    }

    /// `stablehlo.maximum`.
    pub fn max(&mut self, lhs: &Value, rhs: &Value) -> Result<Value, BuildError> {
        self.binary(BinaryOp::Maximum, lhs, rhs)
    }

    /// `stablehlo.reduce` of `x` over `dims` with an `add` or `max` body; the reduced dimensions
    /// disappear from the result.
    pub fn reduce(&mut self, op: ReduceOp, x: &Value, dims: &[i64]) -> Result<Value, BuildError> {
        let rank = x.shape().len() as i64;
        let mut sorted = dims.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != dims.len() || dims.iter().any(|&d| d < 0 || d >= rank) {
            return Err(BuildError::new(format!(
                "stablehlo.reduce: dimensions {dims:?} must be distinct and in 0..{rank} for {}",
                x.ty()
            )));
        }
        let element = x.element();
        if matches!(element, crate::types::ElementType::Bool) {
            return Err(BuildError::new(format!(
                "stablehlo.reduce does not take {}",
                x.ty()
            )));
        }
        if op == ReduceOp::Max && element.is_complex() {
            return Err(BuildError::new(format!(
                "stablehlo.reduce with max does not take {}: complex numbers have no order",
                x.ty()
            )));
        }
        if element == ElementType::F8E8M0FNU {
            return Err(BuildError::new(format!(
                "stablehlo.reduce does not take {}: f8E8M0FNU has no zero to start a sum or a \
                 lowest value to start a max from (it is a scale: convert it first)",
                x.ty()
            )));
        }
        let init = match (op, element.is_float()) {
            (ReduceOp::Add, _) => 0.0,
            // A format without infinities: its lowest value is the identity of max.
            (ReduceOp::Max, true) => crate::float8::lowest(element).unwrap_or(f64::NEG_INFINITY),
            (ReduceOp::Max, false) if element.is_unsigned() => 0.0,
            (ReduceOp::Max, false) => -(2f64.powi(element.bits() as i32 - 1)),
        };
        let init = self.constant_splat(&TensorType::scalar(element), init)?;
        let shape: Vec<i64> = x
            .shape()
            .iter()
            .enumerate()
            .filter(|(i, _)| !sorted.contains(&(*i as i64)))
            .map(|(_, &d)| d)
            .collect();
        let result = TensorType::from_parts(element, shape);
        let body = Body::Reduce(op.combiner(), element);
        let attrs = vec![("dimensions", Attr::DenseI64(dims.to_vec()))];
        let mut v = self.push_op(
            "stablehlo.reduce",
            &[x, &init],
            vec![result],
            attrs,
            Some(body),
            None,
        )?;
        v.pop().ok_or_else(|| BuildError::new("op made no result"))
    }
}

/// Writes `value` as a literal of `element` for a dense attribute, refusing values the type
/// cannot hold exactly.
pub(super) fn scalar_literal(element: ElementType, value: f64) -> Result<String, BuildError> {
    let mut s = String::new();
    match element {
        ElementType::F32 => {
            let _ = attr::write_f32(&mut s, value as f32);
        }
        ElementType::F64 => {
            let _ = attr::write_f64(&mut s, value);
        }
        // The nearest value of the type, as its bits in hex (exact; MLIR reads a hex literal
        // of a float type as its bit pattern).
        ElementType::F16 => s = format!("0x{:04X}", half::f16::from_f64(value).to_bits()),
        ElementType::BF16 => s = format!("0x{:04X}", half::bf16::from_f64(value).to_bits()),
        e if e.is_float() && e.byte_size() == 1 => {
            let bits = crate::float8::bits_of(e, value).ok_or_else(|| {
                BuildError::new(format!("no {e} constant: this is not an 8-bit float type"))
            })?;
            s = format!("0x{bits:02X}");
        }
        // `(re, im)`: a real value, imaginary part zero.
        ElementType::C64 => {
            s.push('(');
            let _ = attr::write_f32(&mut s, value as f32);
            s.push_str(", ");
            let _ = attr::write_f32(&mut s, 0.0);
            s.push(')');
        }
        ElementType::C128 => {
            s.push('(');
            let _ = attr::write_f64(&mut s, value);
            s.push_str(", ");
            let _ = attr::write_f64(&mut s, 0.0);
            s.push(')');
        }
        ElementType::Bool => {
            if value != 0.0 && value != 1.0 {
                return Err(BuildError::new(format!(
                    "{value} is not a boolean (0 or 1)"
                )));
            }
            s = (value == 1.0).to_string();
        }
        _ => {
            let bits = element.bits();
            let (lo, hi) = if element.is_unsigned() {
                (0f64, 2f64.powi(bits as i32) - 1.0)
            } else {
                (
                    -(2f64.powi(bits as i32 - 1)),
                    2f64.powi(bits as i32 - 1) - 1.0,
                )
            };
            if value.fract() != 0.0 || value < lo || value > hi {
                return Err(BuildError::new(format!(
                    "{value} is not a value of {element} ({lo} to {hi})"
                )));
            }
            s = format!("{}", value as i128);
        }
    }
    Ok(s)
}

/// Elementwise ops of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `stablehlo.negate`.
    Negate,
    /// `stablehlo.sine`.
    Sine,
    /// `stablehlo.cosine`.
    Cosine,
    /// `stablehlo.exponential`.
    Exponential,
    /// `stablehlo.log`.
    Log,
    /// `stablehlo.tanh`.
    Tanh,
    /// `stablehlo.sqrt`.
    Sqrt,
    /// `stablehlo.rsqrt`.
    Rsqrt,
    /// `stablehlo.abs`.
    Abs,
}

impl UnaryOp {
    /// The StableHLO op name.
    pub fn op_name(self) -> &'static str {
        match self {
            UnaryOp::Negate => "stablehlo.negate",
            UnaryOp::Sine => "stablehlo.sine",
            UnaryOp::Cosine => "stablehlo.cosine",
            UnaryOp::Exponential => "stablehlo.exponential",
            UnaryOp::Log => "stablehlo.log",
            UnaryOp::Tanh => "stablehlo.tanh",
            UnaryOp::Sqrt => "stablehlo.sqrt",
            UnaryOp::Rsqrt => "stablehlo.rsqrt",
            UnaryOp::Abs => "stablehlo.abs",
        }
    }

    pub(super) fn needs_float(self) -> bool {
        !matches!(self, UnaryOp::Negate | UnaryOp::Abs)
    }
}

/// Elementwise ops of two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `stablehlo.add`.
    Add,
    /// `stablehlo.subtract`.
    Subtract,
    /// `stablehlo.multiply`.
    Multiply,
    /// `stablehlo.divide`.
    Divide,
    /// `stablehlo.maximum`.
    Maximum,
    /// `stablehlo.minimum`.
    Minimum,
    /// `stablehlo.power`.
    Power,
}

impl BinaryOp {
    /// The StableHLO op name.
    pub fn op_name(self) -> &'static str {
        match self {
            BinaryOp::Add => "stablehlo.add",
            BinaryOp::Subtract => "stablehlo.subtract",
            BinaryOp::Multiply => "stablehlo.multiply",
            BinaryOp::Divide => "stablehlo.divide",
            BinaryOp::Maximum => "stablehlo.maximum",
            BinaryOp::Minimum => "stablehlo.minimum",
            BinaryOp::Power => "stablehlo.power",
        }
    }
}

/// The combining op of a [`FuncBuilder::reduce`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum.
    Add,
    /// Maximum.
    Max,
}

impl ReduceOp {
    pub(super) fn combiner(self) -> &'static str {
        match self {
            ReduceOp::Add => "stablehlo.add",
            ReduceOp::Max => "stablehlo.maximum",
        }
    }
}
