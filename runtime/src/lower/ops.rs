//! The StableHLO ops of the builder beyond the elementwise ones: each computes its result type
//! and refuses misuse with a [`BuildError`] that names the op and the problem.

use super::{Attr, BuildError, FuncBuilder, Value};
use crate::types::{ElementType, TensorType};

/// `stablehlo.compare` directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl Compare {
    fn name(self) -> &'static str {
        match self {
            Compare::Eq => "EQ",
            Compare::Ne => "NE",
            Compare::Lt => "LT",
            Compare::Le => "LE",
            Compare::Gt => "GT",
            Compare::Ge => "GE",
        }
    }
}

/// The dimension numbers of a `stablehlo.dot_general`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DotDims {
    /// Batch dimensions of the left operand.
    pub lhs_batch: Vec<i64>,
    /// Batch dimensions of the right operand (same sizes, in the same order).
    pub rhs_batch: Vec<i64>,
    /// Contracted dimensions of the left operand.
    pub lhs_contracting: Vec<i64>,
    /// Contracted dimensions of the right operand (same sizes, in the same order).
    pub rhs_contracting: Vec<i64>,
}

impl DotDims {
    /// A plain matrix product: contract `lhs` dim 1 with `rhs` dim 0.
    pub fn matmul() -> DotDims {
        DotDims {
            lhs_contracting: vec![1],
            rhs_contracting: vec![0],
            ..DotDims::default()
        }
    }
}

pub(super) fn err<T>(op: &str, message: impl AsRef<str>) -> Result<T, BuildError> {
    Err(BuildError::new(format!("{op}: {}", message.as_ref())))
}

/// Checks that `dims` are distinct and in `0..rank`.
fn check_dims(op: &str, what: &str, dims: &[i64], rank: usize) -> Result<(), BuildError> {
    for (i, &d) in dims.iter().enumerate() {
        if d < 0 || d as usize >= rank {
            return err(
                op,
                format!("{what} {d} is not a dimension of a rank-{rank} tensor"),
            );
        }
        if dims[..i].contains(&d) {
            return err(op, format!("{what} {d} appears twice"));
        }
    }
    Ok(())
}

fn tensor(element: ElementType, shape: Vec<i64>) -> TensorType {
    TensorType::from_parts(element, shape)
}

impl FuncBuilder<'_> {
    pub(super) fn single(
        &mut self,
        name: &'static str,
        operands: &[&Value],
        result: TensorType,
        attrs: Vec<(&'static str, Attr)>,
    ) -> Result<Value, BuildError> {
        let mut v = self.push_op(name, operands, vec![result], attrs, None, None)?;
        v.pop().ok_or_else(|| BuildError::new("op made no result"))
    }

    /// `stablehlo.compare`: elementwise comparison of two operands of one type, giving `i1`.
    pub fn compare(
        &mut self,
        direction: Compare,
        lhs: &Value,
        rhs: &Value,
    ) -> Result<Value, BuildError> {
        if lhs.ty() != rhs.ty() {
            return err(
                "stablehlo.compare",
                format!(
                    "takes two operands of one type, got {} and {}",
                    lhs.ty(),
                    rhs.ty()
                ),
            );
        }
        if lhs.element().is_complex() && !matches!(direction, Compare::Eq | Compare::Ne) {
            return err(
                "stablehlo.compare",
                format!(
                    "complex numbers have no order: {} compares {} only with Eq or Ne",
                    lhs.ty(),
                    direction.name()
                ),
            );
        }
        let kind = match lhs.element() {
            e if e.is_float() || e.is_complex() => "FLOAT",
            e if e.is_unsigned() || e == ElementType::Bool => "UNSIGNED",
            _ => "SIGNED",
        };
        let attrs = vec![
            (
                "comparison_direction",
                Attr::Raw(format!(
                    "#stablehlo<comparison_direction {}>",
                    direction.name()
                )),
            ),
            (
                "compare_type",
                Attr::Raw(format!("#stablehlo<comparison_type {kind}>")),
            ),
        ];
        let result = lhs.ty().with_element(ElementType::Bool);
        self.single("stablehlo.compare", &[lhs, rhs], result, attrs)
    }

    /// `stablehlo.select`: `pred ? on_true : on_false`, elementwise (`pred` is `i1` of the same
    /// shape, or a scalar).
    pub fn select(
        &mut self,
        pred: &Value,
        on_true: &Value,
        on_false: &Value,
    ) -> Result<Value, BuildError> {
        let op = "stablehlo.select";
        if pred.element() != ElementType::Bool {
            return err(op, format!("the predicate must be i1, got {}", pred.ty()));
        }
        if on_true.ty() != on_false.ty() {
            return err(
                op,
                format!(
                    "both branches must have one type, got {} and {}",
                    on_true.ty(),
                    on_false.ty()
                ),
            );
        }
        if pred.shape() != on_true.shape() && pred.ty().rank() != 0 {
            return err(
                op,
                format!(
                    "the predicate {} must be a scalar or have the shape of {}",
                    pred.ty(),
                    on_true.ty()
                ),
            );
        }
        let result = on_true.ty().clone();
        self.single(op, &[pred, on_true, on_false], result, Vec::new())
    }

    /// `stablehlo.convert`: the same shape with another element type.
    pub fn convert(&mut self, x: &Value, to: ElementType) -> Result<Value, BuildError> {
        let result = x.ty().with_element(to);
        let v = self.single("stablehlo.convert", &[x], result, Vec::new())?;
        self.propagate_sharding(&[x], &v);
        Ok(v)
    }

    /// `stablehlo.reshape` to `shape` (the same number of elements).
    pub fn reshape(&mut self, x: &Value, shape: &[i64]) -> Result<Value, BuildError> {
        let result = TensorType::new(x.element(), shape)?;
        if result.element_count() != x.ty().element_count() {
            return err(
                "stablehlo.reshape",
                format!(
                    "cannot reshape {} ({} elements) to {result}",
                    x.ty(),
                    x.ty().element_count()
                ),
            );
        }
        self.single("stablehlo.reshape", &[x], result, Vec::new())
    }

    /// `stablehlo.broadcast_in_dim`: operand dimension `i` becomes result dimension
    /// `dims[i]`; each operand dimension is 1 or the result's size.
    pub fn broadcast_in_dim(
        &mut self,
        x: &Value,
        shape: &[i64],
        dims: &[i64],
    ) -> Result<Value, BuildError> {
        let op = "stablehlo.broadcast_in_dim";
        let result = TensorType::new(x.element(), shape)?;
        if dims.len() != x.ty().rank() {
            return err(
                op,
                format!(
                    "needs one result dimension per operand dimension: {} has rank {}, got {dims:?}",
                    x.ty(),
                    x.ty().rank()
                ),
            );
        }
        check_dims(op, "dimension", dims, shape.len())?;
        for (i, &d) in dims.iter().enumerate() {
            let (from, to) = (x.shape()[i], shape[d as usize]);
            if from != 1 && from != to {
                return err(
                    op,
                    format!(
                        "operand dimension {i} has size {from}, which cannot broadcast to size {to} (dimension {d} of {result})"
                    ),
                );
            }
        }
        let attrs = vec![("broadcast_dimensions", Attr::DenseI64(dims.to_vec()))];
        self.single(op, &[x], result, attrs)
    }

    /// `stablehlo.transpose` by `permutation` (result dimension `i` is operand dimension
    /// `permutation[i]`).
    pub fn transpose(&mut self, x: &Value, permutation: &[i64]) -> Result<Value, BuildError> {
        let op = "stablehlo.transpose";
        if permutation.len() != x.ty().rank() {
            return err(
                op,
                format!(
                    "a permutation of {} needs {} entries, got {permutation:?}",
                    x.ty(),
                    x.ty().rank()
                ),
            );
        }
        check_dims(op, "permutation entry", permutation, x.ty().rank())?;
        let shape = permutation.iter().map(|&p| x.shape()[p as usize]).collect();
        let attrs = vec![("permutation", Attr::DenseI64(permutation.to_vec()))];
        self.single(op, &[x], tensor(x.element(), shape), attrs)
    }

    /// `stablehlo.dot_general`: the result has the batch dimensions, then the left operand's
    /// free dimensions, then the right operand's.
    pub fn dot_general(
        &mut self,
        lhs: &Value,
        rhs: &Value,
        dims: &DotDims,
    ) -> Result<Value, BuildError> {
        let op = "stablehlo.dot_general";
        if lhs.element() != rhs.element() {
            return err(
                op,
                format!(
                    "operands of different element types: {} and {}",
                    lhs.ty(),
                    rhs.ty()
                ),
            );
        }
        check_dims(op, "left batch dimension", &dims.lhs_batch, lhs.ty().rank())?;
        check_dims(
            op,
            "right batch dimension",
            &dims.rhs_batch,
            rhs.ty().rank(),
        )?;
        check_dims(
            op,
            "left contracting dimension",
            &dims.lhs_contracting,
            lhs.ty().rank(),
        )?;
        check_dims(
            op,
            "right contracting dimension",
            &dims.rhs_contracting,
            rhs.ty().rank(),
        )?;
        if dims.lhs_batch.len() != dims.rhs_batch.len()
            || dims.lhs_contracting.len() != dims.rhs_contracting.len()
        {
            return err(
                op,
                "the left and right operands need as many batch and contracting dimensions",
            );
        }
        for (what, l, r) in [
            ("batch", &dims.lhs_batch, &dims.rhs_batch),
            ("contracting", &dims.lhs_contracting, &dims.rhs_contracting),
        ] {
            for (&a, &b) in l.iter().zip(r) {
                let (sa, sb) = (lhs.shape()[a as usize], rhs.shape()[b as usize]);
                if sa != sb {
                    return err(
                        op,
                        format!(
                            "{what} dimension {a} of {} has size {sa}, but dimension {b} of {} has size {sb}",
                            lhs.ty(),
                            rhs.ty()
                        ),
                    );
                }
            }
        }
        for d in &dims.lhs_batch {
            if dims.lhs_contracting.contains(d) {
                return err(
                    op,
                    format!("left dimension {d} is both batch and contracting"),
                );
            }
        }
        for d in &dims.rhs_batch {
            if dims.rhs_contracting.contains(d) {
                return err(
                    op,
                    format!("right dimension {d} is both batch and contracting"),
                );
            }
        }
        let free = |v: &Value, batch: &[i64], contracting: &[i64]| -> Vec<i64> {
            (0..v.ty().rank() as i64)
                .filter(|d| !batch.contains(d) && !contracting.contains(d))
                .map(|d| v.shape()[d as usize])
                .collect()
        };
        let mut shape: Vec<i64> = dims
            .lhs_batch
            .iter()
            .map(|&d| lhs.shape()[d as usize])
            .collect();
        shape.extend(free(lhs, &dims.lhs_batch, &dims.lhs_contracting));
        shape.extend(free(rhs, &dims.rhs_batch, &dims.rhs_contracting));
        let list = |v: &[i64]| {
            v.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let attrs = vec![(
            "dot_dimension_numbers",
            Attr::Raw(format!(
                "#stablehlo.dot<lhs_batching_dimensions = [{}], rhs_batching_dimensions = [{}], lhs_contracting_dimensions = [{}], rhs_contracting_dimensions = [{}]>",
                list(&dims.lhs_batch),
                list(&dims.rhs_batch),
                list(&dims.lhs_contracting),
                list(&dims.rhs_contracting)
            )),
        )];
        self.single(op, &[lhs, rhs], tensor(lhs.element(), shape), attrs)
    }

    /// `stablehlo.concatenate` along `dimension`; the other dimensions must agree.
    pub fn concatenate(&mut self, inputs: &[&Value], dimension: i64) -> Result<Value, BuildError> {
        let op = "stablehlo.concatenate";
        let Some(first) = inputs.first() else {
            return err(op, "needs at least one operand");
        };
        let rank = first.ty().rank();
        check_dims(op, "dimension", &[dimension], rank)?;
        let mut shape = first.shape().to_vec();
        shape[dimension as usize] = 0;
        for v in inputs {
            if v.element() != first.element() || v.ty().rank() != rank {
                return err(
                    op,
                    format!(
                        "operands {} and {} differ in element type or rank",
                        first.ty(),
                        v.ty()
                    ),
                );
            }
            for (d, (size, &first_size)) in shape.iter_mut().zip(first.shape()).enumerate() {
                if d as i64 == dimension {
                    *size += v.shape()[d];
                } else if v.shape()[d] != first_size {
                    return err(
                        op,
                        format!(
                            "operands {} and {} differ in dimension {d}, which is not the concatenated one",
                            first.ty(),
                            v.ty()
                        ),
                    );
                }
            }
        }
        let attrs = vec![("dimension", Attr::I64(dimension))];
        self.single(op, inputs, tensor(first.element(), shape), attrs)
    }

    /// `stablehlo.slice`: elements `start[d]..limit[d]` by `strides[d]` of each dimension.
    pub fn slice(
        &mut self,
        x: &Value,
        start: &[i64],
        limit: &[i64],
        strides: &[i64],
    ) -> Result<Value, BuildError> {
        let op = "stablehlo.slice";
        let rank = x.ty().rank();
        if start.len() != rank || limit.len() != rank || strides.len() != rank {
            return err(
                op,
                format!(
                    "start, limit and strides need {rank} entries each for {}",
                    x.ty()
                ),
            );
        }
        let mut shape = Vec::with_capacity(rank);
        for d in 0..rank {
            let (s, l, st, size) = (start[d], limit[d], strides[d], x.shape()[d]);
            if st < 1 || s < 0 || l < s || l > size {
                return err(
                    op,
                    format!(
                        "dimension {d}: start {s}, limit {l}, stride {st} do not fit size {size} (need 0 <= start <= limit <= size, stride >= 1)"
                    ),
                );
            }
            shape.push((l - s + st - 1) / st);
        }
        let attrs = vec![
            ("start_indices", Attr::DenseI64(start.to_vec())),
            ("limit_indices", Attr::DenseI64(limit.to_vec())),
            ("strides", Attr::DenseI64(strides.to_vec())),
        ];
        self.single(op, &[x], tensor(x.element(), shape), attrs)
    }
}
