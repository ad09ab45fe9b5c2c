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
#[allow(non_snake_case, unused_imports, clippy::all)]
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
    /// The op's schema.
    pub fn schema() -> &'static ::customop::__private::schema::OpSchema {
        static SCHEMA: ::customop::__private::OnceLock<
            ::customop::__private::schema::OpSchema,
        > = ::customop::__private::OnceLock::new();
        SCHEMA
            .get_or_init(|| ::customop::__private::schema::OpSchema {
                name: ::customop::__private::ToString::to_string("example::step"),
                target: ::customop::__private::ToString::to_string("example.step"),
                api_version: 4u32,
                side_effect: true,
                params: ::core::convert::From::from([
                    ::customop::__private::schema::ParamSchema {
                        name: ::customop::__private::ToString::to_string("state"),
                        kind: ::customop::__private::schema::ParamKind::External {
                            mutable: true,
                            descriptor: ::core::clone::Clone::clone(
                                <Counter as ::customop::__private::descriptor::Descriptor>::layout(),
                            ),
                        },
                    },
                    ::customop::__private::schema::ParamSchema {
                        name: ::customop::__private::ToString::to_string("x"),
                        kind: ::customop::__private::schema::ParamKind::Tensor {
                            dtype: ::customop::__private::types::ElementType::F32,
                            rank: ::core::option::Option::None,
                        },
                    },
                    ::customop::__private::schema::ParamSchema {
                        name: ::customop::__private::ToString::to_string("eps"),
                        kind: ::customop::__private::schema::ParamKind::Attribute {
                            ty: ::customop::__private::schema::AttrType::Scalar {
                                dtype: ::customop::__private::types::ElementType::F32,
                            },
                        },
                    },
                    ::customop::__private::schema::ParamSchema {
                        name: ::customop::__private::ToString::to_string("label"),
                        kind: ::customop::__private::schema::ParamKind::Attribute {
                            ty: ::customop::__private::schema::AttrType::Str,
                        },
                    },
                    ::customop::__private::schema::ParamSchema {
                        name: ::customop::__private::ToString::to_string("cfg"),
                        kind: ::customop::__private::schema::ParamKind::Attribute {
                            ty: ::customop::__private::schema::AttrType::Descriptor {
                                descriptor: ::core::clone::Clone::clone(
                                    <Cfg as ::customop::__private::descriptor::Descriptor>::layout(),
                                ),
                            },
                        },
                    },
                ]),
                results: ::core::convert::From::from([
                    ::customop::__private::schema::ResultSchema {
                        name: ::customop::__private::ToString::to_string("y"),
                        kind: ::customop::__private::schema::ResultKind::Tensor {
                            dtype: ::customop::__private::types::ElementType::F32,
                            shape: ::core::convert::From::from([
                                ::customop::__private::schema::DimRule::ShapeOf {
                                    param: ::customop::__private::ToString::to_string("x"),
                                },
                            ]),
                        },
                    },
                    ::customop::__private::schema::ResultSchema {
                        name: ::customop::__private::ToString::to_string("state"),
                        kind: ::customop::__private::schema::ResultKind::UpdatedExternal {
                            param: ::customop::__private::ToString::to_string("state"),
                            operand: 0usize,
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
        #[doc = r" The op's results."] #[derive(Debug, Clone)] pub struct Outputs { pub y
        : ::customop::__private::lower::Value, pub state :
        ::customop::__private::lower::Desc < Counter > } #[doc =
        "Emits `example::step` as a `stablehlo.custom_call`: checks the operands, computes the result types from the shape rules."]
        pub fn call(__f : & mut ::customop::__private::lower::FuncBuilder < '_ >, state :
        & ::customop::__private::lower::Desc < Counter >, x : &
        ::customop::__private::lower::Value, eps : f32, label : & str, cfg : & Cfg) ->
        ::core::result::Result < Outputs, ::customop::__private::lower::BuildError > {
        ::customop::__private::op_support::check_operand(NAME, "x", x,
        ::customop::__private::types::ElementType::F32, ::core::option::Option::None) ?;
        let __result_types : ::customop::__private::Vec <
        ::customop::__private::types::TensorType > =
        ::core::convert::From::from([::customop::__private::op_support::output_type(NAME,
        "y", ::customop::__private::types::ElementType::F32, x.shape().to_vec()) ?,
        ::core::clone::Clone::clone(state.value().ty())]); let __operands :
        ::customop::__private::Vec < & ::customop::__private::lower::Value > =
        ::core::convert::From::from([state.value(), x]); let __aliases :
        ::customop::__private::Vec < (usize, usize) > =
        ::core::convert::From::from([(1usize, 0usize)]); __f.mark_external_mutable(state
        .value()); let __call = ::customop::__private::lower::CustomCall { target :
        TARGET, operands : & __operands, results : & __result_types, api_version :
        ::customop::__private::lower::ApiVersion::TypedFfi, backend_config :
        ::customop::__private::lower::BackendConfig::Dict(::core::convert::From::from([(::customop::__private::ToString::to_string("eps"),
        ::customop::__private::lower::Attr::F32(eps)),
        (::customop::__private::ToString::to_string("label"),
        ::customop::__private::lower::Attr::Str(::core::convert::From::from(label
        .as_bytes()))), (::customop::__private::ToString::to_string("cfg"),
        ::customop::__private::lower::Attr::Str(< Cfg as
        ::customop::__private::descriptor::Descriptor > ::pack(cfg)))])), has_side_effect
        : true, output_operand_aliases : & __aliases, partition :
        ::core::option::Option::None, }; #[allow(unused_mut, unused_variables)] let mut
        __values = __f.custom_call(__call) ? .into_iter();
        ::core::result::Result::Ok(Outputs { y : __values.next().ok_or_else(||
        ::customop::__private::lower::BuildError::new("custom_call made too few results"))
        ?, state : ::customop::__private::lower::Desc:: < Counter >
        ::from_value_unchecked(__values.next().ok_or_else(||
        ::customop::__private::lower::BuildError::new("custom_call made too few results"))
        ?) }) }
    }
    ///The XLA FFI handler of `example::step` (register it for target `example.step`).
    #[unsafe(no_mangle)]
    pub extern "C" fn customop_handler_example_step(
        __frame: *mut ::customop::__private::ffi::abi::XLA_FFI_CallFrame,
    ) -> *mut ::customop::__private::ffi::abi::XLA_FFI_Error {
        unsafe {
            ::customop::__private::ffi::handle(
                __frame,
                NAME,
                |__cx| {
                    __cx.expect_counts(2usize, 2usize)?;
                    let mut state: Counter = __cx.external::<Counter>(0usize, "state")?;
                    let x = __cx
                        .tensor_ref::<
                            f32,
                            { ::customop::__private::tensor::ANY_RANK },
                        >(1usize, "x")?;
                    let eps: f32 = __cx.attr_scalar::<f32>("eps")?;
                    let label: &str = __cx.attr_str("label")?;
                    let cfg: Cfg = __cx.attr_descriptor::<Cfg>("cfg")?;
                    let __y_dims: &[i64] = x.dims();
                    let y = __cx
                        .tensor_mut::<
                            f32,
                            { ::customop::__private::tensor::ANY_RANK },
                        >(0usize, "y", __y_dims)?;
                    let __result = super::step(&mut state, x, y, eps, label, &cfg);
                    __result?;
                    __cx.write_descriptor::<Counter>(1usize, "state", &state)?;
                    ::core::result::Result::Ok(())
                },
            )
        }
    }
}
