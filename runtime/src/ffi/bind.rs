//! Binding a call frame to a kernel's parameters, as the op's [`Plan`] says: a generated
//! handler asks for its parameters in declaration order (`input`, `external`, `attr`, `output`,
//! ...) and the binder knows, from the schema alone, which operand, attribute or result each one
//! is and what shape each output must have.

use super::frame::{element_name, op_err};
use super::state::{OpState, StateRef};
use super::{AttrRef, AttrValue, CallCx};
use crate::descriptor::{Descriptor, ReprC};
use crate::error::{OpError, Refusal};
use crate::plan::{OpDef, ParamSlot, Plan, ResultPlan, ShapeEnv};
use crate::schema::{OpSchema, ParamKind, one_of};
use crate::tensor::{Opaque, TensorMut, TensorRef};
use crate::types::{Element, ElementType};
use core::cell::Cell;

/// Hands a kernel's parameters out of one call frame, in the order the op declares them.
pub struct Binder<'c, 'f> {
    pub(super) cx: &'c CallCx<'f>,
    pub(super) schema: &'f OpSchema,
    pub(super) plan: &'f Plan,
    /// The next schema parameter to bind.
    param: Cell<usize>,
    /// The next result to bind (tensor outputs first, then an opaque result, then updated
    /// externals, as the plan orders them).
    result: Cell<usize>,
}

impl core::fmt::Debug for Binder<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Binder")
            .field("op", &self.schema.name)
            .field("param", &self.param.get())
            .field("result", &self.result.get())
            .finish()
    }
}

/// Runs a generated handler's `body` on `frame` for the op `def`: answers XLA's probe, checks
/// the operand and result counts against the plan, and maps a kernel error or panic to an XLA
/// error (see [`handle`](super::handle)).
///
/// # Safety
/// `frame` must be null or the call frame XLA passes to a typed-FFI handler, valid for the
/// duration of this call.
#[inline]
pub unsafe fn run(
    frame: *mut super::abi::XLA_FFI_CallFrame,
    def: &'static OpDef,
    body: impl FnOnce(&Binder<'_, '_>) -> Result<(), OpError>,
) -> *mut super::abi::XLA_FFI_Error {
    // SAFETY: the caller's contract, passed on.
    unsafe { run_stages(frame, def, None, body) }
}

/// [`run`] for an op with an `#[state]` parameter of type `T`: at XLA's instantiate stage the
/// state is built from the call site's attributes and handed to XLA.
///
/// # Safety
/// As for [`run`].
#[inline]
pub unsafe fn run_stateful<T: OpState>(
    frame: *mut super::abi::XLA_FFI_CallFrame,
    def: &'static OpDef,
    body: impl FnOnce(&Binder<'_, '_>) -> Result<(), OpError>,
) -> *mut super::abi::XLA_FFI_Error {
    let instantiate: super::entry::Instantiate = super::state::instantiate::<T>;
    // SAFETY: the caller's contract, passed on.
    unsafe { run_stages(frame, def, Some(instantiate), body) }
}

/// [`run`] and [`run_stateful`]: the binder over the checked frame, and the stages.
///
/// # Safety
/// As for [`run`].
#[inline]
unsafe fn run_stages(
    frame: *mut super::abi::XLA_FFI_CallFrame,
    def: &'static OpDef,
    instantiate: Option<super::entry::Instantiate>,
    body: impl FnOnce(&Binder<'_, '_>) -> Result<(), OpError>,
) -> *mut super::abi::XLA_FFI_Error {
    let schema = def.schema();
    let op: &'static str = &schema.name;
    let body = |cx: &CallCx<'_>| {
        let plan = def.plan().map_err(|e| op_err(op, Refusal::BadBinding, e))?;
        cx.expect_counts(plan.operand_params.len(), plan.results.len())?;
        // An op that takes the dictionary of its attributes (`#[attrs]`) takes any.
        if !schema
            .params
            .iter()
            .any(|p| matches!(p.kind, ParamKind::Attributes))
        {
            cx.expect_attributes(schema.params.iter().filter_map(|p| match p.kind {
                ParamKind::Attribute { .. } => Some(p.name.as_str()),
                _ => None,
            }))?;
        }
        body(&Binder {
            cx,
            schema,
            plan,
            param: Cell::new(0),
            result: Cell::new(0),
        })
    };
    // SAFETY: the caller's contract, passed on.
    unsafe { super::entry::handle_stages(frame, op, instantiate, body) }
}

/// What a generated handler binds a parameter as.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    Tensor,
    External,
    Attribute,
    Attributes,
}

impl Want {
    fn what(self) -> &'static str {
        match self {
            Want::Tensor => "a tensor",
            Want::External => "an external",
            Want::Attribute => "an attribute",
            Want::Attributes => "the dictionary of attributes",
        }
    }
}

impl<'c, 'f> Binder<'c, 'f> {
    /// The next parameter, which must be of the kind `want` says: its name and slot.
    #[inline]
    fn next_param(&self, want: Want) -> Result<(&'f str, ParamSlot), OpError> {
        let i = self.param.get();
        self.param.set(i + 1);
        match (self.schema.params.get(i), self.plan.params.get(i)) {
            (Some(p), Some(&slot)) => {
                let fits = match p.kind {
                    ParamKind::Tensor { .. } => want == Want::Tensor,
                    ParamKind::External { .. } => want == Want::External,
                    ParamKind::Attribute { .. } => want == Want::Attribute,
                    ParamKind::Attributes => want == Want::Attributes,
                };
                if fits {
                    Ok((&p.name, slot))
                } else {
                    Err(self.mismatch(&p.name, want.what()))
                }
            }
            _ => Err(self.beyond("parameter", i, self.schema.params.len())),
        }
    }

    #[inline]
    pub(super) fn operand(&self, want: Want) -> Result<(&'f str, usize), OpError> {
        match self.next_param(want)? {
            (name, ParamSlot::Operand(o)) => Ok((name, o)),
            (name, ParamSlot::Attribute(_) | ParamSlot::Attributes) => {
                Err(self.mismatch(name, want.what()))
            }
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn mismatch(&self, name: &str, want: &str) -> OpError {
        op_err(
            &self.schema.name,
            Refusal::BadBinding,
            format!("the handler binds `{name}` as {want}, which the schema does not say"),
        )
    }

    #[cold]
    #[inline(never)]
    fn beyond(&self, what: &str, i: usize, n: usize) -> OpError {
        op_err(
            &self.schema.name,
            Refusal::BadBinding,
            format!("the handler asks for {what} {i}, the schema has {n}"),
        )
    }

    /// The element type of the op's type parameter `var` in this call (a generic op's handler
    /// asks first, and runs the kernel's instantiation for it): the dtype XLA passed for the
    /// first tensor input it types, which must be one of the allowed types.
    pub fn dtype_var(&self, var: &str) -> Result<ElementType, OpError> {
        let Some(v) = self.plan.dtype_vars.iter().find(|v| v.name == var) else {
            return Err(self.mismatch(var, "a type parameter"));
        };
        let o = v.operands[0];
        let param = self
            .plan
            .operand_params
            .get(o)
            .and_then(|&p| self.schema.params.get(p))
            .map_or("?", |p| p.name.as_str());
        let code = self.cx.arg_dtype(o)?;
        match u32::try_from(code)
            .ok()
            .and_then(ElementType::from_xla_code)
        {
            Some(e) if v.allowed.contains(&e) => Ok(e),
            other => Err(op_err(
                &self.schema.name,
                Refusal::WrongDtype,
                format!(
                    "parameter `{param}`: expected a tensor of {} (`{var}`), got {}",
                    one_of(&v.allowed),
                    other.map_or_else(|| element_name(code), |e| e.to_string())
                ),
            )),
        }
    }

    /// The error for a type parameter's type that the handler has no instantiation for (the
    /// handler and the schema disagree: a bug, not a bad call).
    #[cold]
    pub fn dtype_refused(&self, var: &str, element: ElementType) -> OpError {
        op_err(
            &self.schema.name,
            Refusal::BadBinding,
            format!("the handler has no instantiation for `{var}` = {element}"),
        )
    }

    /// The next parameter, a tensor input, as a read-only view (dtype and rank checked).
    pub fn input<T: Element, const RANK: usize>(&self) -> Result<TensorRef<'f, T, RANK>, OpError> {
        let (name, o) = self.operand(Want::Tensor)?;
        self.cx.tensor_ref(o, name)
    }

    /// The next parameter, a tensor input of a packed sub-byte type (`PackedRef`).
    pub fn packed_input<T: crate::packed::Packed, const RANK: usize>(
        &self,
    ) -> Result<crate::packed::PackedRef<'f, T, RANK>, OpError> {
        let (name, o) = self.operand(Want::Tensor)?;
        self.cx.packed_ref(o, name)
    }

    /// The next output, of a packed sub-byte type (`PackedMut`), its shape checked against
    /// the rule as [`output`](Binder::output)'s.
    pub fn packed_output<T: crate::packed::Packed, const RANK: usize>(
        &self,
    ) -> Result<crate::packed::PackedMut<'f, T, RANK>, OpError> {
        let (i, r, name) = self.next_result()?;
        let ResultPlan::Tensor { shape, .. } = r else {
            return Err(self.mismatch(name, "an output"));
        };
        let env = FrameEnv(self.cx);
        self.cx.packed_view(
            i,
            name,
            |got| shape.matches(got, &env),
            || self.expected_shape(name, shape, &env),
        )
    }

    /// The next parameter, an external, unpacked with full validation.
    pub fn external<T: Descriptor>(&self) -> Result<T, OpError> {
        let (name, o) = self.operand(Want::External)?;
        self.cx.external(o, name)
    }

    /// The next parameter, an external read in place (`#[external(borrow)]`): validated as
    /// `external` does, then borrowed from XLA's buffer without a copy.
    pub fn external_ref<T: ReprC>(&self) -> Result<&'f T, OpError> {
        let (name, o) = self.operand(Want::External)?;
        self.cx.external_ref(o, name)
    }

    /// The next parameter, an attribute by value (a scalar, `bool`, or `&[T]`).
    pub fn attr<V: AttrValue<'f>>(&self) -> Result<V, OpError> {
        let (name, _) = self.next_param(Want::Attribute)?;
        V::decode(&self.cx.attrs(), name)
    }

    /// The next parameter, an attribute taken by reference (`&str` or `&T` of a descriptor):
    /// what the kernel's reference points at.
    pub fn attr_ref<V: AttrRef<'f> + ?Sized>(&self) -> Result<V::Decoded, OpError> {
        let (name, _) = self.next_param(Want::Attribute)?;
        V::decode(&self.cx.attrs(), name)
    }

    /// The next parameter, the dictionary of all the call's attributes (`#[attrs]`): every
    /// entry has a UTF-8 name (checked here, so that iterating it cannot fail).
    pub fn attrs(&self) -> Result<super::Dictionary<'f>, OpError> {
        self.next_param(Want::Attributes)?;
        self.cx.attrs().checked()
    }

    #[inline]
    pub(super) fn next_result(&self) -> Result<(usize, &'f ResultPlan, &'f str), OpError> {
        let i = self.result.get();
        self.result.set(i + 1);
        match (self.plan.results.get(i), self.schema.results.get(i)) {
            (Some(r), Some(s)) => Ok((i, r, &s.name)),
            _ => Err(self.beyond("result", i, self.schema.results.len())),
        }
    }

    /// The next output, a writable view whose shape XLA must have passed as the output's shape
    /// rule says.
    pub fn output<T: Element, const RANK: usize>(&self) -> Result<TensorMut<'f, T, RANK>, OpError> {
        let (i, r, name) = self.next_result()?;
        let ResultPlan::Tensor { shape, .. } = r else {
            return Err(self.mismatch(name, "an output"));
        };
        let env = FrameEnv(self.cx);
        self.cx.output_view(
            i,
            name,
            |got| shape.matches(got, &env),
            || self.expected_shape(name, shape, &env),
        )
    }

    /// The next parameter, a tensor updated in place (`#[inout]`): a writable view of its
    /// result, which holds the input's values (the same buffer where the host aliases them).
    pub fn inout<T: Element, const RANK: usize>(&self) -> Result<TensorMut<'f, T, RANK>, OpError> {
        let (name, o, ret) = self.next_inout()?;
        self.cx.inplace_view(o, ret, name)
    }

    /// The next parameter, a tensor updated in place: its name, operand and result.
    pub(super) fn next_inout(&self) -> Result<(&'f str, usize, usize), OpError> {
        let (name, o) = self.operand(Want::Tensor)?;
        let ret = self
            .plan
            .results
            .iter()
            .position(|r| matches!(r, ResultPlan::Updated { operand } if *operand == o))
            .ok_or_else(|| self.mismatch(name, "a tensor updated in place"))?;
        Ok((name, o, ret))
    }

    /// The shape output `name`'s rule gives in this call (for the message when XLA passed
    /// another), or why it has none.
    #[cold]
    pub(super) fn expected_shape(
        &self,
        name: &str,
        shape: &crate::plan::OutputShape,
        env: &FrameEnv<'_, '_>,
    ) -> Result<Vec<i64>, OpError> {
        shape.eval(env).map_err(|(d, e)| {
            op_err(
                &self.schema.name,
                Refusal::WrongShape,
                format!("output `{name}`: {}", shape.explain(d, &e)),
            )
        })
    }

    /// The op's `#[state]`: XLA's for this call site, or the process cache's.
    pub fn state<T: OpState>(&self) -> Result<StateRef<'f, T>, OpError> {
        super::state::get::<T>(self.cx)
    }

    /// Ends the call: takes the kernel's result, and for an `Opaque<T>` writes `T`'s packed
    /// bytes to the opaque result.
    pub fn finish<R: KernelResult>(&self, result: Result<R, OpError>) -> Result<(), OpError> {
        result?.write(self)
    }

    /// Writes the new value of the next `&mut` external to its result (aliased to its
    /// operand).
    pub fn write_back<T: Descriptor>(&self, value: &T) -> Result<(), OpError> {
        let (i, r, name) = self.next_result()?;
        // An updated result of an external's operand (not an `#[inout]` tensor's).
        let external = match r {
            ResultPlan::Updated { operand } => self
                .plan
                .operand_params
                .get(*operand)
                .and_then(|&p| self.schema.params.get(p))
                .is_some_and(|p| matches!(p.kind, ParamKind::External { .. })),
            _ => false,
        };
        if !external {
            return Err(self.mismatch(name, "an updated external"));
        }
        self.cx.write_descriptor(i, name, value)
    }
}

/// A shape rule's values in a call: the operands' dimensions and the attributes XLA passed.
pub(super) struct FrameEnv<'c, 'f>(pub(super) &'c CallCx<'f>);

impl ShapeEnv for FrameEnv<'_, '_> {
    #[inline]
    fn operand_dims(&self, operand: usize) -> Option<&[i64]> {
        self.0.arg_dims(operand)
    }
    fn attr_int(&self, _: usize, name: &str) -> Option<i64> {
        self.0.attr_int(name)
    }
    fn attr_len(&self, _: usize, name: &str) -> Option<i64> {
        self.0.attr_len(name)
    }
}

/// What a kernel returns on success: `()` or an [`Opaque<T>`].
pub trait KernelResult {
    /// Writes what there is to write.
    fn write(self, b: &Binder<'_, '_>) -> Result<(), OpError>;
}

impl KernelResult for () {
    fn write(self, _: &Binder<'_, '_>) -> Result<(), OpError> {
        Ok(())
    }
}

impl<T: Descriptor> KernelResult for Opaque<T> {
    fn write(self, b: &Binder<'_, '_>) -> Result<(), OpError> {
        let (i, r, name) = b.next_result()?;
        if !matches!(r, ResultPlan::Opaque { .. }) {
            return Err(b.mismatch(name, "an opaque result"));
        }
        b.cx.write_descriptor(i, name, &self.0)
    }
}
