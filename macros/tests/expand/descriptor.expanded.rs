const _: () = {
    impl ::customop::__private::descriptor::Descriptor for Cfg
    where
        f32: ::customop::__private::descriptor::Wire,
        Mode: ::customop::__private::descriptor::Wire,
        [u8; 4]: ::customop::__private::descriptor::Wire,
        u64: ::customop::__private::descriptor::Wire,
    {
        const NAME: &'static str = "my_lib::Cfg";
        const FIXED_SIZE: usize = ::customop::__private::descriptor::__derive::layout_offsets::<
            3usize,
        >([
                (
                    <f32 as ::customop::__private::descriptor::Wire>::SIZE,
                    <f32 as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
                (
                    <Mode as ::customop::__private::descriptor::Wire>::SIZE,
                    <Mode as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
                (
                    <[u8; 4] as ::customop::__private::descriptor::Wire>::SIZE,
                    <[u8; 4] as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
            ])
            .1;
        const ALIGN: usize = ::customop::__private::descriptor::__derive::layout_offsets::<
            3usize,
        >([
                (
                    <f32 as ::customop::__private::descriptor::Wire>::SIZE,
                    <f32 as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
                (
                    <Mode as ::customop::__private::descriptor::Wire>::SIZE,
                    <Mode as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
                (
                    <[u8; 4] as ::customop::__private::descriptor::Wire>::SIZE,
                    <[u8; 4] as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
            ])
            .2;
        const HAS_TAILS: bool = true;
        const __OFFSETS: &'static [usize] = &::customop::__private::descriptor::__derive::layout_offsets::<
            3usize,
        >([
                (
                    <f32 as ::customop::__private::descriptor::Wire>::SIZE,
                    <f32 as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
                (
                    <Mode as ::customop::__private::descriptor::Wire>::SIZE,
                    <Mode as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
                (
                    <[u8; 4] as ::customop::__private::descriptor::Wire>::SIZE,
                    <[u8; 4] as ::customop::__private::descriptor::Wire>::ALIGN,
                ),
            ])
            .0;
        fn layout() -> &'static ::customop::__private::descriptor::Layout {
            static LAYOUT: ::customop::__private::OnceLock<
                ::customop::__private::descriptor::Layout,
            > = ::customop::__private::OnceLock::new();
            LAYOUT
                .get_or_init(|| {
                    ::customop::__private::descriptor_layout(
                        "my_lib::Cfg",
                        <Self as ::customop::__private::descriptor::Descriptor>::ALIGN,
                        <Self as ::customop::__private::descriptor::Descriptor>::FIXED_SIZE,
                        <Cfg as ::customop::__private::descriptor::Descriptor>::PACKED_SIZE,
                        ::core::convert::From::from([
                            ::customop::__private::fixed_field(
                                "scale",
                                <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[0usize],
                                <f32 as ::customop::__private::descriptor::Wire>::SIZE,
                                <f32 as ::customop::__private::descriptor::Wire>::describe(),
                            ),
                            ::customop::__private::fixed_field(
                                "mode",
                                <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[1usize],
                                <Mode as ::customop::__private::descriptor::Wire>::SIZE,
                                <Mode as ::customop::__private::descriptor::Wire>::describe(),
                            ),
                            ::customop::__private::fixed_field(
                                "tag",
                                <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[2usize],
                                <[u8; 4] as ::customop::__private::descriptor::Wire>::SIZE,
                                <[u8; 4] as ::customop::__private::descriptor::Wire>::describe(),
                            ),
                            ::customop::__private::tail_field(
                                "offsets",
                                ::customop::__private::vec_type(
                                    <u64 as ::customop::__private::descriptor::Wire>::describe(),
                                ),
                            ),
                        ]),
                    )
                })
        }
        fn __payload_len(&self) -> usize {
            #[allow(unused_mut)]
            let mut __at: usize = <Self as ::customop::__private::descriptor::Descriptor>::FIXED_SIZE;
            __at = ::customop::__private::descriptor::__derive::tail_len_vec::<
                u64,
            >(__at, self.offsets.len());
            __at
        }
        fn __write_payload(&self, __payload: &mut [u8]) {
            ::customop::__private::descriptor::__derive::write_field(
                &self.scale,
                __payload,
                <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[0usize],
            );
            ::customop::__private::descriptor::__derive::write_field(
                &self.mode,
                __payload,
                <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[1usize],
            );
            ::customop::__private::descriptor::__derive::write_field(
                &self.tag,
                __payload,
                <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[2usize],
            );
            #[allow(unused_mut, unused_assignments)]
            let mut __at: usize = <Self as ::customop::__private::descriptor::Descriptor>::FIXED_SIZE;
            __at = ::customop::__private::descriptor::__derive::write_vec_tail(
                &self.offsets,
                __payload,
                __at,
            );
            let _ = __at;
        }
        fn __read_payload(
            __payload: &[u8],
        ) -> ::core::result::Result<
            Self,
            ::customop::__private::descriptor::DescriptorError,
        > {
            let __read = || -> ::core::result::Result<
                Self,
                ::customop::__private::descriptor::DescriptorError,
            > {
                if __payload.len()
                    < <Self as ::customop::__private::descriptor::Descriptor>::FIXED_SIZE
                {
                    return ::core::result::Result::Err(
                        ::customop::__private::descriptor::DescriptorError::field_error(::customop::__private::descriptor::ErrorKind::TooShort {
                            needed: ::customop::__private::descriptor::HEADER_SIZE
                                + <Self as ::customop::__private::descriptor::Descriptor>::FIXED_SIZE,
                            got: ::customop::__private::descriptor::HEADER_SIZE
                                + __payload.len(),
                        }),
                    );
                }
                ::customop::__private::descriptor::__derive::check_zero(
                    __payload,
                    <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[0usize]
                        + <f32 as ::customop::__private::descriptor::Wire>::SIZE,
                    <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[1usize],
                )?;
                ::customop::__private::descriptor::__derive::check_zero(
                    __payload,
                    <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[1usize]
                        + <Mode as ::customop::__private::descriptor::Wire>::SIZE,
                    <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[2usize],
                )?;
                ::customop::__private::descriptor::__derive::check_zero(
                    __payload,
                    <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[2usize]
                        + <[u8; 4] as ::customop::__private::descriptor::Wire>::SIZE,
                    <Self as ::customop::__private::descriptor::Descriptor>::FIXED_SIZE,
                )?;
                #[allow(unused_mut)]
                let mut __at: usize = <Self as ::customop::__private::descriptor::Descriptor>::FIXED_SIZE;
                let scale: f32 = ::customop::__private::descriptor::__derive::read_field(
                    __payload,
                    <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[0usize],
                    "scale",
                )?;
                let mode: Mode = ::customop::__private::descriptor::__derive::read_field(
                    __payload,
                    <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[1usize],
                    "mode",
                )?;
                let tag: [u8; 4] = ::customop::__private::descriptor::__derive::read_field(
                    __payload,
                    <Self as ::customop::__private::descriptor::Descriptor>::__OFFSETS[2usize],
                    "tag",
                )?;
                let (offsets, __end) = ::customop::__private::descriptor::__derive::read_vec_tail(
                    __payload,
                    __at,
                    "offsets",
                )?;
                __at = __end;
                if __at != __payload.len() {
                    return ::core::result::Result::Err(
                        ::customop::__private::descriptor::DescriptorError::field_error(::customop::__private::descriptor::ErrorKind::TooLong {
                            used: ::customop::__private::descriptor::HEADER_SIZE + __at,
                            got: ::customop::__private::descriptor::HEADER_SIZE
                                + __payload.len(),
                        }),
                    );
                }
                ::core::result::Result::Ok(Cfg { scale, mode, tag, offsets })
            };
            __read().map_err(|e| e.in_descriptor("my_lib::Cfg"))
        }
    }
};
const _: () = {
    ::core::assert!(
        ::core::mem::size_of::<Mode>() == ::core::mem::size_of::<u8>(),
        "`Mode` is not the size of its `repr(u8)`",
    );
    unsafe impl ::customop::__private::descriptor::InPlace for Mode {}
    impl ::customop::__private::descriptor::Wire for Mode {
        const SIZE: usize = ::core::mem::size_of::<u8>();
        const ALIGN: usize = ::core::mem::size_of::<u8>();
        fn describe() -> ::customop::__private::descriptor::TypeLayout {
            ::customop::__private::enum_type(
                "Mode",
                "u8",
                &[("Fast", 0i64), ("Exact", 1i64)],
            )
        }
        #[inline]
        fn write(&self, __out: &mut [u8]) {
            let __v: u8 = match self {
                Mode::Fast => 0,
                Mode::Exact => 1,
            };
            <u8 as ::customop::__private::descriptor::Wire>::write(&__v, __out)
        }
        #[inline]
        fn read(
            __bytes: &[u8],
        ) -> ::core::result::Result<
            Self,
            ::customop::__private::descriptor::DescriptorError,
        > {
            match <u8 as ::customop::__private::descriptor::Wire>::read(__bytes)? {
                0 => ::core::result::Result::Ok(Mode::Fast),
                1 => ::core::result::Result::Ok(Mode::Exact),
                __other => {
                    ::core::result::Result::Err(
                        ::customop::__private::descriptor::DescriptorError::field_error(::customop::__private::descriptor::ErrorKind::InvalidEnum {
                            name: "Mode",
                            value: __other as i64,
                        }),
                    )
                }
            }
        }
        fn placeholder() -> Self {
            Mode::Fast
        }
    }
    impl ::customop::__private::descriptor::WireEnum for Mode {
        const DISCRIMINANTS: &'static [i64] = &[0i64, 1i64];
    }
};
