pub fn custom_op_external(
    blob: &Blob,
    x: TensorRef<'_, f32, 2>,
    mut y: TensorMut<'_, i8>,
) -> Result<(), OpError> {
    kernel(blob, x, y)
}
///Companion items of the custom op `my_custom_library::custom_op_external` (target `my_custom_library.custom_op_external`): its schema, its lowering and its XLA handler.
#[allow(non_snake_case, unused_imports)]
pub mod custom_op_external {
    use super::*;
    /// The op's name.
    pub const NAME: &str = "my_custom_library::custom_op_external";
    /// The custom call target and FFI registration name.
    pub const TARGET: &str = "my_custom_library.custom_op_external";
    /// The custom call API version.
    pub const API_VERSION: u32 = 4u32;
    /// The exported handler's symbol.
    pub const HANDLER_SYMBOL: &str = "customop_handler_my_custom_library_custom_op_external";
    /// The op's definition: its schema and the plan the runtime derives from it once (operand
    /// and result order, shape rules, aliases, partitioning), which the lowering and the
    /// handler both read.
    pub fn definition() -> &'static ::customop::__private::OpDef
    where
        for<'__f> Blob: ::customop::__private::descriptor::Descriptor,
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> i8: ::customop::__private::types::Element,
    {
        static DEF: ::customop::__private::OnceLock<::customop::__private::OpDef> = ::customop::__private::OnceLock::new();
        DEF.get_or_init(|| {
            ::customop::__private::OpDef::new(
                    ::customop::__private::op_schema(
                        "my_custom_library::custom_op_external",
                        "my_custom_library.custom_op_external",
                        4u32,
                        true,
                        ::core::convert::From::from([
                            ::customop::__private::external_param(
                                "blob",
                                false,
                                <Blob as ::customop::__private::descriptor::Descriptor>::layout(),
                            ),
                            ::customop::__private::tensor_param(
                                "x",
                                <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                                ::core::option::Option::Some(2usize),
                            ),
                        ]),
                        ::core::convert::From::from([
                            ::customop::__private::tensor_result(
                                "y",
                                <i8 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                                ::core::convert::From::from([
                                    ::customop::__private::dim_rule(
                                        ::customop::__private::expr_dim("x", 0usize),
                                    ),
                                ]),
                            ),
                        ]),
                        ::core::option::Option::Some(
                            ::customop::__private::partition_rule(
                                ::core::convert::From::from([
                                    (
                                        "x",
                                        ::core::convert::From::from([
                                            ::core::option::Option::Some("rows"),
                                            ::core::option::Option::None,
                                        ]),
                                    ),
                                ]),
                            ),
                        ),
                    ),
                )
                .with_handler(customop_handler_my_custom_library_custom_op_external)
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
        for<'__f> Blob: ::customop::__private::descriptor::Descriptor,
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> i8: ::customop::__private::types::Element,
    {
        ::customop::__private::vjp::Signature {
            name: NAME,
            params: &[
                ::customop::__private::vjp::ParamSig {
                    name: "blob",
                    role: ::customop::__private::vjp::Role::External,
                    dtype: ::customop::__private::vjp::SigDtype::None,
                    rank: ::core::option::Option::None,
                    shape_of: "",
                    ty: "Blob",
                },
                ::customop::__private::vjp::ParamSig {
                    name: "x",
                    role: ::customop::__private::vjp::Role::Input,
                    dtype: ::customop::__private::vjp::SigDtype::Fixed(
                        <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                    ),
                    rank: ::core::option::Option::Some(2usize),
                    shape_of: "",
                    ty: "",
                },
                ::customop::__private::vjp::ParamSig {
                    name: "y",
                    role: ::customop::__private::vjp::Role::Output,
                    dtype: ::customop::__private::vjp::SigDtype::Fixed(
                        <i8 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                    ),
                    rank: ::core::option::Option::None,
                    shape_of: "",
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
        "Emits `my_custom_library::custom_op_external` as a `stablehlo.custom_call`: checks the operands, computes the result types from the shape rules. In a module with a device mesh, the call is wrapped in an `sdy.manual_computation` split as the op's partition rule says."]
        #[allow(clippy::too_many_arguments)] pub fn call(__f : & mut
        ::customop::__private::lower::FuncBuilder < '_ >, blob : &
        ::customop::__private::lower::DescriptorValue < Blob >, x : &
        ::customop::__private::lower::Value) -> ::core::result::Result <
        ::customop::__private::lower::Value, ::customop::__private::lower::BuildError >
        where for < '__f > Blob : ::customop::__private::descriptor::Descriptor, for <
        '__f > f32 : ::customop::__private::types::Element, for < '__f > i8 :
        ::customop::__private::types::Element { #[allow(unused_mut, unused_variables)]
        let mut __r =
        ::customop::__private::op_call::CallResults::new(::customop::__private::op_call::call_op(__f,
        definition(), & [blob.value(), x], ::core::convert::From::from([]),) ?); __r
        .value() }
    }
    /**The XLA FFI handler of `my_custom_library::custom_op_external` (register it for target `my_custom_library.custom_op_external`).

# Safety
`frame` must be null or a typed-FFI call frame, valid for the duration of the call, as XLA passes to a handler registered with API version 4.*/
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn customop_handler_my_custom_library_custom_op_external(
        frame: *mut ::customop::__private::ffi::abi::XLA_FFI_CallFrame,
    ) -> *mut ::customop::__private::ffi::abi::XLA_FFI_Error
    where
        for<'__f> Blob: ::customop::__private::descriptor::Descriptor,
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> i8: ::customop::__private::types::Element,
    {
        unsafe {
            ::customop::__private::ffi::run(
                frame,
                definition(),
                |__b| {
                    let blob = __b.external::<Blob>()?;
                    let x = __b.input()?;
                    let y = __b.output()?;
                    __b.finish(super::custom_op_external(&blob, x, y))?;
                    ::core::result::Result::Ok(())
                },
            )
        }
    }
}
