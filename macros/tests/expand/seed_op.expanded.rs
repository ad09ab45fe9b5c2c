pub fn custom_op_external(
    blob: &Blob,
    x: TensorRef<'_, f32, 2>,
    mut y: TensorMut<'_, i8>,
) -> Result<(), OpError> {
    kernel(blob, x, y)
}
///Companion items of the custom op `my_custom_library::custom_op_external` (target `my_custom_library.custom_op_external`): its schema, its lowering and its XLA handler.
#[allow(non_snake_case, unused_imports, clippy::all)]
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
    /// The op's schema.
    pub fn schema() -> &'static ::customop::__private::schema::OpSchema {
        static SCHEMA: ::customop::__private::OnceLock<
            ::customop::__private::schema::OpSchema,
        > = ::customop::__private::OnceLock::new();
        SCHEMA
            .get_or_init(|| ::customop::__private::schema::OpSchema {
                name: ::customop::__private::ToString::to_string(
                    "my_custom_library::custom_op_external",
                ),
                target: ::customop::__private::ToString::to_string(
                    "my_custom_library.custom_op_external",
                ),
                api_version: 4u32,
                side_effect: true,
                params: ::core::convert::From::from([
                    ::customop::__private::schema::ParamSchema {
                        name: ::customop::__private::ToString::to_string("blob"),
                        kind: ::customop::__private::schema::ParamKind::External {
                            mutable: false,
                            descriptor: ::core::clone::Clone::clone(
                                <Blob as ::customop::__private::descriptor::Descriptor>::layout(),
                            ),
                        },
                    },
                    ::customop::__private::schema::ParamSchema {
                        name: ::customop::__private::ToString::to_string("x"),
                        kind: ::customop::__private::schema::ParamKind::Tensor {
                            dtype: ::customop::__private::types::ElementType::F32,
                            rank: ::core::option::Option::Some(2usize),
                        },
                    },
                ]),
                results: ::core::convert::From::from([
                    ::customop::__private::schema::ResultSchema {
                        name: ::customop::__private::ToString::to_string("y"),
                        kind: ::customop::__private::schema::ResultKind::Tensor {
                            dtype: ::customop::__private::types::ElementType::I8,
                            shape: ::core::convert::From::from([
                                ::customop::__private::schema::DimRule::DimOf {
                                    param: ::customop::__private::ToString::to_string("x"),
                                    dim: 0usize,
                                },
                            ]),
                        },
                    },
                ]),
                partition: ::core::option::Option::Some(::customop::__private::schema::PartitionRule {
                    factors: ::core::convert::From::from([
                        ::customop::__private::ToString::to_string("rows"),
                    ]),
                    operands: ::core::convert::From::from([
                        ::customop::__private::schema::FactorDims {
                            name: ::customop::__private::ToString::to_string("x"),
                            index: 1usize,
                            dims: ::core::convert::From::from([
                                ::core::option::Option::Some(
                                    ::customop::__private::ToString::to_string("rows"),
                                ),
                                ::core::option::Option::None,
                            ]),
                        },
                    ]),
                    results: ::core::convert::From::from([
                        ::customop::__private::schema::FactorDims {
                            name: ::customop::__private::ToString::to_string("y"),
                            index: 0usize,
                            dims: ::core::convert::From::from([
                                ::core::option::Option::Some(
                                    ::customop::__private::ToString::to_string("rows"),
                                ),
                            ]),
                        },
                    ]),
                }),
            })
    }
    /// The op's schema in PyTorch FunctionSchema syntax.
    pub fn schema_string() -> ::customop::__private::String {
        schema().schema_string()
    }
    ::customop::__private::inventory::submit! {
        ::customop::__private::schema::registry::OpEntry { schema, handler_symbol :
        HANDLER_SYMBOL, }
    }
    ::customop::__private::if_mlir! {
        #[doc =
        "Emits `my_custom_library::custom_op_external` as a `stablehlo.custom_call`: checks the operands, computes the result types from the shape rules. In a module with a device mesh, the call is wrapped in an `sdy.manual_computation` split as the op's partition rule says."]
        pub fn call(__f : & mut ::customop::__private::lower::FuncBuilder < '_ >, blob :
        & ::customop::__private::lower::Desc < Blob >, x : &
        ::customop::__private::lower::Value) -> ::core::result::Result <
        ::customop::__private::lower::Value, ::customop::__private::lower::BuildError > {
        ::customop::__private::op_support::check_operand(NAME, "x", x,
        ::customop::__private::types::ElementType::F32,
        ::core::option::Option::Some(2usize)) ?; let __result_types :
        ::customop::__private::Vec < ::customop::__private::types::TensorType > =
        ::core::convert::From::from([::customop::__private::op_support::output_type(NAME,
        "y", ::customop::__private::types::ElementType::I8,
        ::core::convert::From::from([::customop::__private::op_support::dim_of(NAME, "y",
        "x", x, 0usize) ?])) ?]); let __operands : ::customop::__private::Vec < &
        ::customop::__private::lower::Value > = ::core::convert::From::from([blob
        .value(), x]); let __aliases : ::customop::__private::Vec < (usize, usize) > =
        ::core::convert::From::from([]); let __call =
        ::customop::__private::lower::CustomCall { target : TARGET, operands : &
        __operands, results : & __result_types, api_version :
        ::customop::__private::lower::ApiVersion::TypedFfi, backend_config :
        ::customop::__private::lower::BackendConfig::Dict(::core::convert::From::from([])),
        has_side_effect : true, output_operand_aliases : & __aliases, partition :
        schema().partition.as_ref(), }; #[allow(unused_mut, unused_variables)] let mut
        __values = __f.custom_call(__call) ? .into_iter();
        ::core::result::Result::Ok(__values.next().ok_or_else(||
        ::customop::__private::lower::BuildError::new("custom_call made too few results"))
        ?) }
    }
    ///The XLA FFI handler of `my_custom_library::custom_op_external` (register it for target `my_custom_library.custom_op_external`).
    #[unsafe(no_mangle)]
    pub extern "C" fn customop_handler_my_custom_library_custom_op_external(
        __frame: *mut ::customop::__private::ffi::abi::XLA_FFI_CallFrame,
    ) -> *mut ::customop::__private::ffi::abi::XLA_FFI_Error {
        unsafe {
            ::customop::__private::ffi::handle(
                __frame,
                NAME,
                |__cx| {
                    __cx.expect_counts(2usize, 1usize)?;
                    let blob: Blob = __cx.external::<Blob>(0usize, "blob")?;
                    let x = __cx.tensor_ref::<f32, 2usize>(1usize, "x")?;
                    let __y_dims: &[i64] = &[
                        match x.dims().get(0usize) {
                            ::core::option::Option::Some(d) => *d,
                            ::core::option::Option::None => {
                                return ::core::result::Result::Err(
                                    ::customop::__private::tensor::OpError::invalid_argument(
                                        "custom op `my_custom_library::custom_op_external`: output `y` takes dimension 0 of `x`, which XLA passed with fewer dimensions",
                                    ),
                                );
                            }
                        },
                    ];
                    let y = __cx
                        .tensor_mut::<
                            i8,
                            { ::customop::__private::tensor::ANY_RANK },
                        >(0usize, "y", __y_dims)?;
                    let __result = super::custom_op_external(&blob, x, y);
                    __result?;
                    ::core::result::Result::Ok(())
                },
            )
        }
    }
}
