pub fn step(
    state: &mut Counter,
    x: TensorRef<'_, f32>,
    mut y: TensorMut<'_, f32>,
    eps: f32,
    label: &str,
    cfg: &Cfg,
) -> Result<(), OpError> {
    kernel(state, x, y, eps, label, cfg)
}
///Companion items of the custom op `example::step` (target `example.step`): its schema, its lowering and its XLA handler.
#[allow(non_snake_case, unused_imports)]
pub mod step {
    use super::*;
    /// The op's name.
    pub const NAME: &str = "example::step";
    /// The custom call target and FFI registration name.
    pub const TARGET: &str = "example.step";
    /// The custom call API version.
    pub const API_VERSION: u32 = 4u32;
    /// The exported handler's symbol.
    pub const HANDLER_SYMBOL: &str = "customop_handler_example_step";
    /// The op's definition: its schema and the plan the runtime derives from it once (operand
    /// and result order, shape rules, aliases, partitioning), which the lowering and the
    /// handler both read.
    pub fn definition() -> &'static ::customop::__private::OpDef
    where
        for<'__f> Counter: ::customop::__private::descriptor::Descriptor,
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> f32: ::customop::__private::ffi::AttrValue<'__f>,
        for<'__f> str: ::customop::__private::ffi::AttrRef<'__f>,
        for<'__f> Cfg: ::customop::__private::ffi::AttrRef<'__f>,
    {
        static DEF: ::customop::__private::OnceLock<::customop::__private::OpDef> = ::customop::__private::OnceLock::new();
        DEF.get_or_init(|| {
            ::customop::__private::OpDef::new(
                    ::customop::__private::op_schema(
                        "example::step",
                        "example.step",
                        4u32,
                        false,
                        ::core::convert::From::from([
                            ::customop::__private::external_param(
                                "state",
                                true,
                                <Counter as ::customop::__private::descriptor::Descriptor>::layout(),
                            ),
                            ::customop::__private::tensor_param(
                                "x",
                                <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                                ::core::option::Option::None,
                            ),
                            ::customop::__private::attr_param(
                                "eps",
                                <f32 as ::customop::__private::ffi::AttrValue<
                                    'static,
                                >>::attr_type(),
                            ),
                            ::customop::__private::attr_param(
                                "label",
                                <str as ::customop::__private::ffi::AttrRef<
                                    'static,
                                >>::attr_type(),
                            ),
                            ::customop::__private::attr_param(
                                "cfg",
                                <Cfg as ::customop::__private::ffi::AttrRef<
                                    'static,
                                >>::attr_type(),
                            ),
                        ]),
                        ::core::convert::From::from([
                            ::customop::__private::tensor_result(
                                "y",
                                <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                                ::core::convert::From::from([
                                    ::customop::__private::shape_of("x"),
                                ]),
                            ),
                            ::customop::__private::updated_external("state"),
                        ]),
                        ::core::option::Option::None,
                    ),
                )
                .with_handler(customop_handler_example_step)
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
        for<'__f> Counter: ::customop::__private::descriptor::Descriptor,
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> f32: ::customop::__private::ffi::AttrValue<'__f>,
        for<'__f> str: ::customop::__private::ffi::AttrRef<'__f>,
        for<'__f> Cfg: ::customop::__private::ffi::AttrRef<'__f>,
    {
        ::customop::__private::vjp::Signature {
            name: NAME,
            params: &[
                ::customop::__private::vjp::ParamSig {
                    name: "state",
                    role: ::customop::__private::vjp::Role::ExternalMut,
                    dtype: ::customop::__private::vjp::SigDtype::None,
                    rank: ::core::option::Option::None,
                    shape_of: "",
                    ty: "Counter",
                },
                ::customop::__private::vjp::ParamSig {
                    name: "x",
                    role: ::customop::__private::vjp::Role::Input,
                    dtype: ::customop::__private::vjp::SigDtype::Fixed(
                        <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                    ),
                    rank: ::core::option::Option::None,
                    shape_of: "",
                    ty: "",
                },
                ::customop::__private::vjp::ParamSig {
                    name: "y",
                    role: ::customop::__private::vjp::Role::Output,
                    dtype: ::customop::__private::vjp::SigDtype::Fixed(
                        <f32 as ::customop::__private::types::ElementOf>::ELEMENT_TYPE,
                    ),
                    rank: ::core::option::Option::None,
                    shape_of: "x",
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
                    name: "label",
                    role: ::customop::__private::vjp::Role::Attr,
                    dtype: ::customop::__private::vjp::SigDtype::None,
                    rank: ::core::option::Option::None,
                    shape_of: "",
                    ty: "& str",
                },
                ::customop::__private::vjp::ParamSig {
                    name: "cfg",
                    role: ::customop::__private::vjp::Role::Attr,
                    dtype: ::customop::__private::vjp::SigDtype::None,
                    rank: ::core::option::Option::None,
                    shape_of: "",
                    ty: "& Cfg",
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
        #[doc = r" The op's results."] #[derive(Debug, Clone)] pub struct Outputs { pub y
        : ::customop::__private::lower::Value, pub state :
        ::customop::__private::lower::DescriptorValue < Counter > } #[doc =
        "Emits `example::step` as a `stablehlo.custom_call`: checks the operands, computes the result types from the shape rules."]
        #[allow(clippy::too_many_arguments)] pub fn call(__f : & mut
        ::customop::__private::lower::FuncBuilder < '_ >, state : &
        ::customop::__private::lower::DescriptorValue < Counter >, x : &
        ::customop::__private::lower::Value, eps : f32, label : & str, cfg : & Cfg) ->
        ::core::result::Result < Outputs, ::customop::__private::lower::BuildError >
        where for < '__f > Counter : ::customop::__private::descriptor::Descriptor, for <
        '__f > f32 : ::customop::__private::types::Element, for < '__f > f32 :
        ::customop::__private::ffi::AttrValue < '__f >, for < '__f > str :
        ::customop::__private::ffi::AttrRef < '__f >, for < '__f > Cfg :
        ::customop::__private::ffi::AttrRef < '__f > { #[allow(unused_mut,
        unused_variables)] let mut __r =
        ::customop::__private::op_call::CallResults::new(::customop::__private::op_call::call_op(__f,
        definition(), & [state.value(), x], ::core::convert::From::from([< f32 as
        ::customop::__private::ffi::AttrValue < '_ >> ::lit(& eps), < str as
        ::customop::__private::ffi::AttrRef < '_ >> ::lit(label), < Cfg as
        ::customop::__private::ffi::AttrRef < '_ >> ::lit(cfg)]),) ?);
        ::core::result::Result::Ok(Outputs { y : __r.value() ?, state : __r.desc() ? }) }
    }
    /**The XLA FFI handler of `example::step` (register it for target `example.step`).

# Safety
`frame` must be null or a typed-FFI call frame, valid for the duration of the call, as XLA passes to a handler registered with API version 4.*/
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn customop_handler_example_step(
        frame: *mut ::customop::__private::ffi::abi::XLA_FFI_CallFrame,
    ) -> *mut ::customop::__private::ffi::abi::XLA_FFI_Error
    where
        for<'__f> Counter: ::customop::__private::descriptor::Descriptor,
        for<'__f> f32: ::customop::__private::types::Element,
        for<'__f> f32: ::customop::__private::ffi::AttrValue<'__f>,
        for<'__f> str: ::customop::__private::ffi::AttrRef<'__f>,
        for<'__f> Cfg: ::customop::__private::ffi::AttrRef<'__f>,
    {
        unsafe {
            ::customop::__private::ffi::run(
                frame,
                definition(),
                |__b| {
                    let mut state = __b.external::<Counter>()?;
                    let x = __b.input()?;
                    let y = __b.output()?;
                    let eps = __b.attr()?;
                    let label = __b.attr_ref::<str>()?;
                    let cfg = __b.attr_ref::<Cfg>()?;
                    __b.finish(super::step(&mut state, x, y, eps, &*label, &*cfg))?;
                    __b.write_back(&state)?;
                    ::core::result::Result::Ok(())
                },
            )
        }
    }
}
