//! The type-parameter rule of a generic op (`dtypes(T = [f32, bf16])`), in one place for every
//! host that checks a call before running it (the builder's lowering and the native torch
//! kernel; the handler checks the buffers XLA passes with the same rule): each operand a type
//! parameter types is one of the types it allows, and all of them are one type in one call.

use super::Plan;
use crate::schema::{OpSchema, one_of};
use crate::types::ElementType;

/// How a call's element types break a type parameter's rule. Indexes are into the plan's
/// `dtype_vars` and the call's operands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DtypeMismatch {
    /// Operand `operand` is `got`, which type parameter `var` does not allow.
    NotAllowed {
        /// The type parameter.
        var: usize,
        /// The operand.
        operand: usize,
        /// Its element type.
        got: ElementType,
    },
    /// Operands `first` and `other`, typed by the same parameter `var`, differ.
    Mixed {
        /// The type parameter.
        var: usize,
        /// The first operand it types, and its element type (which decides the call's).
        first: (usize, ElementType),
        /// The operand that differs, and its element type.
        other: (usize, ElementType),
    },
}

impl Plan {
    /// Checks a call's operand element types against the op's type parameters: `element(o)`
    /// is operand `o`'s element type, or None when it has none to check (skipped).
    pub fn check_dtype_vars(
        &self,
        element: impl Fn(usize) -> Option<ElementType>,
    ) -> Result<(), DtypeMismatch> {
        for (v, var) in self.dtype_vars.iter().enumerate() {
            let mut first: Option<(usize, ElementType)> = None;
            for &o in &var.operands {
                let Some(e) = element(o) else { continue };
                if !var.allowed.contains(&e) {
                    return Err(DtypeMismatch::NotAllowed {
                        var: v,
                        operand: o,
                        got: e,
                    });
                }
                match first {
                    None => first = Some((o, e)),
                    Some(f) if f.1 != e => {
                        return Err(DtypeMismatch::Mixed {
                            var: v,
                            first: f,
                            other: (o, e),
                        });
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    /// The message of a mismatch, naming the op, the parameters and the type parameter, as
    /// Python's `customop.schema.resolve_dtypes` does.
    pub fn dtype_message(&self, schema: &OpSchema, m: &DtypeMismatch) -> String {
        let name = |o: usize| {
            self.operand_params
                .get(o)
                .and_then(|&p| schema.params.get(p))
                .map_or("?", |p| p.name.as_str())
        };
        let var = |v: usize| self.dtype_vars.get(v);
        match *m {
            DtypeMismatch::NotAllowed {
                var: v,
                operand,
                got,
            } => format!(
                "{}: parameter `{}` takes a tensor of {} ({}), got {got}",
                schema.name,
                name(operand),
                var(v).map_or("?", |d| d.name.as_str()),
                var(v).map_or_else(String::new, |d| one_of(&d.allowed))
            ),
            DtypeMismatch::Mixed {
                var: v,
                first,
                other,
            } => format!(
                "{}: `{}` is {} and `{}` is {}, but both are `{}`: one type per call",
                schema.name,
                name(first.0),
                first.1,
                name(other.0),
                other.1,
                var(v).map_or("?", |d| d.name.as_str())
            ),
        }
    }
}
