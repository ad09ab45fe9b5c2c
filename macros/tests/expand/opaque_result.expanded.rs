pub fn make_stats(x: TensorRef<'_, f32>) -> Result<Opaque<Stats>, OpError> {
    kernel(x)
}
///Companion items of the custom op `example::make_stats` (target `example.make_stats`): its schema, its lowering and its XLA handler.
#[allow(non_snake_case, unused_imports, clippy::all)]
pub mod make_stats {
    use super::*;
    /// The op's name.
    pub const NAME: &str = "example::make_stats";
    /// The custom call target and FFI registration name.
    pub const TARGET: &str = "example.make_stats";
    /// The custom call API version.
    pub const API_VERSION: u32 = 4u32;
    /// The exported handler's symbol.
    pub const HANDLER_SYMBOL: &str = "customop_handler_example_make_stats";
    /// The op's schema.
    pub fn schema() -> &'static ::customop::__private::schema::OpSchema {
        static SCHEMA: ::customop::__private::OnceLock<
            ::customop::__private::schema::OpSchema,
        > = ::customop::__private::OnceLock::new();
        SCHEMA
            .get_or_init(|| ::customop::__private::schema::OpSchema {
                name: ::customop::__private::ToString::to_string("example::make_stats"),
                target: ::customop::__private::ToString::to_string("example.make_stats"),
                api_version: 4u32,
                side_effect: false,
                params: ::core::convert::From::from([
                    ::customop::__private::schema::ParamSchema {
                        name: ::customop::__private::ToString::to_string("x"),
                        kind: ::customop::__private::schema::ParamKind::Tensor {
                            dtype: ::customop::__private::types::ElementType::F32,
                            rank: ::core::option::Option::None,
                        },
                    },
                ]),
                results: ::core::convert::From::from([
                    ::customop::__private::schema::ResultSchema {
                        name: ::customop::__private::ToString::to_string("result"),
                        kind: ::customop::__private::schema::ResultKind::Opaque {
                            descriptor: ::core::clone::Clone::clone(
                                <Stats as ::customop::__private::descriptor::Descriptor>::layout(),
                            ),
                        },
                    },
                ]),
                partition: ::core::option::Option::None,
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
        "Emits `example::make_stats` as a `stablehlo.custom_call`: checks the operands, computes the result types from the shape rules."]
        pub fn call(__f : & mut ::customop::__private::lower::FuncBuilder < '_ >, x : &
        ::customop::__private::lower::Value) -> ::core::result::Result <
        ::customop::__private::lower::Desc < Stats >,
        ::customop::__private::lower::BuildError > {
        ::customop::__private::op_support::check_operand(NAME, "x", x,
        ::customop::__private::types::ElementType::F32, ::core::option::Option::None) ?;
        let __result_types : ::customop::__private::Vec <
        ::customop::__private::types::TensorType > =
        ::core::convert::From::from([::customop::__private::op_support::descriptor_type::
        < Stats > (NAME, "opaque result") ?]); let __operands :
        ::customop::__private::Vec < & ::customop::__private::lower::Value > =
        ::core::convert::From::from([x]); let __aliases : ::customop::__private::Vec <
        (usize, usize) > = ::core::convert::From::from([]); let __call =
        ::customop::__private::lower::CustomCall { target : TARGET, operands : &
        __operands, results : & __result_types, api_version :
        ::customop::__private::lower::ApiVersion::TypedFfi, backend_config :
        ::customop::__private::lower::BackendConfig::Dict(::core::convert::From::from([])),
        has_side_effect : false, output_operand_aliases : & __aliases, partition :
        ::core::option::Option::None, }; #[allow(unused_mut, unused_variables)] let mut
        __values = __f.custom_call(__call) ? .into_iter();
        ::core::result::Result::Ok(::customop::__private::lower::Desc:: < Stats >
        ::from_value_unchecked(__values.next().ok_or_else(||
        ::customop::__private::lower::BuildError::new("custom_call made too few results"))
        ?)) }
    }
    ///The XLA FFI handler of `example::make_stats` (register it for target `example.make_stats`).
    #[unsafe(no_mangle)]
    pub extern "C" fn customop_handler_example_make_stats(
        __frame: *mut ::customop::__private::ffi::abi::XLA_FFI_CallFrame,
    ) -> *mut ::customop::__private::ffi::abi::XLA_FFI_Error {
        unsafe {
            ::customop::__private::ffi::handle(
                __frame,
                NAME,
                |__cx| {
                    __cx.expect_counts(1usize, 1usize)?;
                    let x = __cx
                        .tensor_ref::<
                            f32,
                            { ::customop::__private::tensor::ANY_RANK },
                        >(0usize, "x")?;
                    let __result = super::make_stats(x);
                    let ::customop::__private::tensor::Opaque(__value) = __result?;
                    __cx.write_descriptor::<Stats>(0usize, "result", &__value)?;
                    ::core::result::Result::Ok(())
                },
            )
        }
    }
}
