pub fn rms_norm<T: Real>(
    x: TensorRef<'_, T, 2>,
    eps: f32,
    mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    kernel(x, eps, y)
}
///Companion items of the custom op `nn::rms_norm` (target `nn.rms_norm`): its schema, its lowering and its XLA handler.
#[allow(non_snake_case, unused_imports)]
pub mod rms_norm {
    use super::*;
    /// The op's name.
    pub const NAME: &str = "nn::rms_norm";
    /// The custom call target and FFI registration name.
    pub const TARGET: &str = "nn.rms_norm";
    /// The custom call API version.
    pub const API_VERSION: u32 = 4u32;
    /// The exported handler's symbol.
    pub const HANDLER_SYMBOL: &str = "customop_handler_nn_rms_norm";
    /// The op's definition: its schema and the plan the runtime derives from it once (operand
    /// and result order, shape rules, aliases, partitioning), which the lowering and the
    /// handler both read.
    pub fn definition() -> &'static ::customop::__private::OpDef
    where
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> bf16: ::customop::__private::types::Element,
        for<'__f> f32: ::customop::__private::ffi::AttrValue<'__f>,
    {
        static DEF: ::customop::__private::OnceLock<::customop::__private::OpDef> = ::customop::__private::OnceLock::new();
        DEF.get_or_init(|| {
            ::customop::__private::OpDef::new(
                    ::customop::__private::op_schema(
                        "nn::rms_norm",
                        "nn.rms_norm",
                        4u32,
                        false,
                        ::core::convert::From::from([
                            ::customop::__private::tensor_param_var(
                                "x",
                                "T",
                                ::core::convert::From::from([
                                    <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                                    <bf16 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                                ]),
                                ::core::option::Option::Some(2usize),
                            ),
                            ::customop::__private::attr_param(
                                "eps",
                                <f32 as ::customop::__private::ffi::AttrValue<
                                    'static,
                                >>::attr_type(),
                            ),
                        ]),
                        ::core::convert::From::from([
                            ::customop::__private::tensor_result_var(
                                "y",
                                "T",
                                ::core::convert::From::from([
                                    <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                                    <bf16 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                                ]),
                                ::core::convert::From::from([
                                    ::customop::__private::shape_of("x"),
                                ]),
                            ),
                        ]),
                        ::core::option::Option::None,
                    ),
                )
                .with_handler(customop_handler_nn_rms_norm)
        })
    }
    /// The op's schema.
    pub fn schema() -> &'static ::customop::__private::schema::OpSchema {
        definition().schema()
    }
    /// The op's schema in PyTorch FunctionSchema syntax.
    pub fn schema_string() -> ::customop::__private::String {
        schema().schema_string()
    }
    /// The op's signature, for pairing it with a backward op (`vjp = ...`).
    #[doc(hidden)]
    pub const fn signature() -> ::customop::__private::vjp::Signature
    where
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> bf16: ::customop::__private::types::Element,
        for<'__f> f32: ::customop::__private::ffi::AttrValue<'__f>,
    {
        ::customop::__private::vjp::Signature {
            name: NAME,
            params: &[
                ::customop::__private::vjp::ParamSig {
                    name: "x",
                    role: ::customop::__private::vjp::Role::Input,
                    dtype: ::customop::__private::vjp::SigDtype::Var(
                        "T",
                        &[
                            <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                            <bf16 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                        ],
                    ),
                    rank: ::core::option::Option::Some(2usize),
                    shape_of: "",
                    ty: "",
                },
                ::customop::__private::vjp::ParamSig {
                    name: "eps",
                    role: ::customop::__private::vjp::Role::Attr,
                    dtype: ::customop::__private::vjp::SigDtype::None,
                    rank: ::core::option::Option::None,
                    shape_of: "",
                    ty: "f32",
                },
                ::customop::__private::vjp::ParamSig {
                    name: "y",
                    role: ::customop::__private::vjp::Role::Output,
                    dtype: ::customop::__private::vjp::SigDtype::Var(
                        "T",
                        &[
                            <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                            <bf16 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                        ],
                    ),
                    rank: ::core::option::Option::None,
                    shape_of: "x",
                    ty: "",
                },
            ],
            opaque_result: false,
        }
    }
    /// The op's native torch kernels (CPU and Meta), registered by `customop.torch.load`.
    static TORCH_KERNELS: ::customop::__private::TorchKernels = ::customop::__private::TorchKernels::new(
        torch_cpu_kernel,
        torch_meta_kernel,
    );
    /// The op's CPU kernel in torch's dispatcher.
    ///
    /// # Safety
    /// Called by torch with the boxed stack of this op's schema.
    unsafe extern "C-unwind" fn torch_cpu_kernel(
        stack: *mut ::core::primitive::u64,
        n_args: ::core::primitive::u64,
        n_outs: ::core::primitive::u64,
    ) {
        unsafe {
            ::customop::__private::torch_kernel(
                &TORCH_KERNELS,
                false,
                stack,
                n_args,
                n_outs,
            )
        }
    }
    /// The op's Meta kernel (shapes and types, no data).
    ///
    /// # Safety
    /// As `torch_cpu_kernel`.
    unsafe extern "C-unwind" fn torch_meta_kernel(
        stack: *mut ::core::primitive::u64,
        n_args: ::core::primitive::u64,
        n_outs: ::core::primitive::u64,
    ) {
        unsafe {
            ::customop::__private::torch_kernel(
                &TORCH_KERNELS,
                true,
                stack,
                n_args,
                n_outs,
            )
        }
    }
    ::customop::__private::inventory::submit! {
        ::customop::__private::OpEntry { schema, handler_symbol : HANDLER_SYMBOL, }
    }
    ::customop::__private::inventory::submit! {
        ::customop::__private::TorchEntry { schema, kernels : & TORCH_KERNELS, }
    }
    ::customop::__private::if_mlir! {
        #[doc =
        "Emits `nn::rms_norm` as a `stablehlo.custom_call`: checks the operands, computes the result types from the shape rules."]
        #[allow(clippy::too_many_arguments)] pub fn call(__f : & mut
        ::customop::__private::lower::FuncBuilder < '_ >, x : &
        ::customop::__private::lower::Value, eps : f32) -> ::core::result::Result <
        ::customop::__private::lower::Value, ::customop::__private::lower::BuildError >
        where for < '__f > f32 : ::customop::__private::types::Element, for < '__f > bf16
        : ::customop::__private::types::Element, for < '__f > f32 :
        ::customop::__private::ffi::AttrValue < '__f > { #[allow(unused_mut,
        unused_variables)] let mut __r =
        ::customop::__private::op_call::CallResults::new(::customop::__private::op_call::call_op(__f,
        definition(), & [x], ::core::convert::From::from([< f32 as
        ::customop::__private::ffi::AttrValue < '_ >> ::lit(& eps)]),) ?); __r.value() }
    }
    /**The XLA FFI handler of `nn::rms_norm` (register it for target `nn.rms_norm`).

# Safety
`frame` must be null or a typed-FFI call frame, valid for the duration of the call, as XLA passes to a handler registered with API version 4.*/
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn customop_handler_nn_rms_norm(
        frame: *mut ::customop::__private::ffi::abi::XLA_FFI_CallFrame,
    ) -> *mut ::customop::__private::ffi::abi::XLA_FFI_Error
    where
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> bf16: ::customop::__private::types::Element,
        for<'__f> f32: ::customop::__private::ffi::AttrValue<'__f>,
    {
        unsafe {
            ::customop::__private::ffi::run(
                frame,
                definition(),
                |__b| {
                    let __dt_T = __b.dtype_var("T")?;
                    if __dt_T
                        == <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE
                    {
                        #[allow(non_camel_case_types)]
                        type __T_T = f32;
                        let x = __b.input()?;
                        let eps = __b.attr()?;
                        let y = __b.output()?;
                        __b.finish(super::rms_norm::<__T_T>(x, eps, y))?;
                        ::core::result::Result::Ok(())
                    } else if __dt_T
                        == <bf16 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE
                    {
                        #[allow(non_camel_case_types)]
                        type __T_T = bf16;
                        let x = __b.input()?;
                        let eps = __b.attr()?;
                        let y = __b.output()?;
                        __b.finish(super::rms_norm::<__T_T>(x, eps, y))?;
                        ::core::result::Result::Ok(())
                    } else {
                        ::core::result::Result::Err(__b.dtype_refused("T", __dt_T))
                    }
                },
            )
        }
    }
}
