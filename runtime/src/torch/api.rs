//! The part of torch's stable C ABI (`torch/csrc/inductor/aoti_torch/c/shim.h`, torch 2.9 to
//! 2.15) the native kernels use, declared here from that header and resolved at run time from the
//! `libtorch_cpu` the process already loaded: a kernel cdylib neither links torch nor needs it
//! to load.

use core::ffi::{c_char, c_int, c_void};

/// The torch versions (major, minor) the declarations below hold for: >= 2.9, < 2.16 (tested on
/// 2.9 and 2.15; none of the functions used changed in between), as `customop.torch` checks
/// them too.
const NATIVE_TORCH: ((u64, u64), (u64, u64)) = ((2, 9), (2, 16));

/// `AtenTensorHandle`: an owning pointer to an `at::Tensor` on the heap.
pub(crate) type Tensor = *mut c_void;
/// `TorchLibraryHandle`.
pub(crate) type LibraryHandle = *mut c_void;
/// `AOTITorchError`: 0 success, 1 failure.
type Status = i32;
/// A boxed kernel: `void fn(StableIValue* stack, uint64_t num_args, uint64_t num_outputs)`.
/// `C-unwind`: the kernel reports an error by calling `aoti_torch_check`, which throws.
pub(crate) type BoxedKernel = unsafe extern "C-unwind" fn(*mut u64, u64, u64);

/// `torch/csrc/stable/c/shim.h`'s string and list functions (torch 2.10 and later).
#[derive(Debug)]
pub(crate) struct Direct {
    pub string_length: unsafe extern "C" fn(*mut c_void, *mut usize) -> Status,
    pub string_c_str: unsafe extern "C" fn(*mut c_void, *mut *const c_char) -> Status,
    pub delete_string: unsafe extern "C" fn(*mut c_void) -> Status,
    pub list_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> Status,
    pub list_get_item: unsafe extern "C" fn(*mut c_void, usize, *mut u64) -> Status,
    pub delete_list: unsafe extern "C" fn(*mut c_void) -> Status,
    /// torch's intra-op pool, for `customop::parallel` (None if this libtorch lacks either
    /// function: kernels then run their ranges inline).
    pub pool: Option<(
        crate::parallel::TorchParallelFor,
        crate::parallel::TorchNumThreads,
    )>,
}

/// The functions, resolved once.
#[derive(Debug)]
pub(crate) struct Api {
    pub library_init_impl: unsafe extern "C" fn(
        *const c_char,
        *const c_char,
        *const c_char,
        u32,
        *mut LibraryHandle,
    ) -> Status,
    pub library_impl: unsafe extern "C" fn(LibraryHandle, *const c_char, BoxedKernel) -> Status,
    /// `aoti_torch_library_init_fragment(ns, file, line, &lib)`.
    pub library_init_fragment:
        unsafe extern "C" fn(*const c_char, *const c_char, u32, *mut LibraryHandle) -> Status,
    /// `aoti_torch_library_def(lib, schema)`.
    pub library_def: unsafe extern "C" fn(LibraryHandle, *const c_char) -> Status,
    pub delete_library_object: unsafe extern "C" fn(LibraryHandle) -> Status,
    pub delete_tensor_object: unsafe extern "C" fn(Tensor) -> Status,
    pub get_data_ptr: unsafe extern "C" fn(Tensor, *mut *mut c_void) -> Status,
    pub get_dim: unsafe extern "C" fn(Tensor, *mut i64) -> Status,
    pub get_sizes: unsafe extern "C" fn(Tensor, *mut *mut i64) -> Status,
    pub get_dtype: unsafe extern "C" fn(Tensor, *mut i32) -> Status,
    pub is_contiguous: unsafe extern "C" fn(Tensor, *mut bool) -> Status,
    pub empty_strided:
        unsafe extern "C" fn(i64, *const i64, *const i64, i32, i32, i32, *mut Tensor) -> Status,
    pub copy_: unsafe extern "C" fn(Tensor, Tensor, i32) -> Status,
    pub check: unsafe extern "C-unwind" fn(bool, *const c_char, *const c_char, u32, *const c_char),
    /// Strings and lists, which torch 2.10 and later pass to a boxed kernel (as owned
    /// `StringHandle`s and `StableListHandle`s); None before 2.10.
    pub direct: Option<Direct>,
    /// torch's dtype code of each customop element type that torch has.
    pub dtypes: Vec<(i32, crate::ElementType)>,
    /// `aoti_torch_device_type_cpu()`.
    pub cpu: i32,
    /// `aoti_torch_device_type_meta()`.
    pub meta: i32,
    /// Keeps `libtorch_cpu` loaded (it is never unloaded while torch runs anyway).
    _lib: libloading::os::unix::Library,
}

/// torch's dtypes by their C ABI code (c10's `ScalarType`, in the order its header lists them;
/// the codes are stable across releases), as Python names them: for messages about a tensor
/// of a dtype the running torch's C shim gives no function for (torch 2.9 has no
/// `aoti_torch_dtype_float8_e8m0fnu`), so that the refusal names the type, not a number.
const TORCH_DTYPE_NAMES: [&str; 46] = [
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "bool",
    "qint8",
    "quint8",
    "qint32",
    "bfloat16",
    "quint4x2",
    "quint2x4",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "bits8",
    "bits16",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e5m2fnuz",
    "float8_e4m3fnuz",
    "uint16",
    "uint32",
    "uint64",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "uint5",
    "uint6",
    "uint7",
    "int1",
    "int2",
    "int3",
    "int4",
    "int5",
    "int6",
    "int7",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
];

/// `torch.float8_e8m0fnu (f8E8M0FNU)` for torch dtype `code`: its Python name, and the customop
/// element type of that name if there is one; `torch dtype code N` for a code this table has
/// not.
pub(crate) fn torch_dtype_name(code: i32) -> String {
    let Some(name) = usize::try_from(code)
        .ok()
        .and_then(|i| TORCH_DTYPE_NAMES.get(i))
    else {
        return format!("torch dtype code {code}");
    };
    match crate::ElementType::ALL
        .iter()
        .find(|e| e.numpy_name() == *name)
    {
        Some(e) => format!("torch.{name} ({e})"),
        None => format!("torch.{name}"),
    }
}

/// `RTLD_NOLOAD` (glibc): open only a library that is already loaded.
const RTLD_NOLOAD: c_int = 4;

impl Api {
    /// Resolves the functions from `libtorch_cpu` at `path`, which must already be loaded
    /// (`import torch` loads it): this never loads a second torch.
    pub(crate) fn resolve(path: &str) -> Result<Api, String> {
        // SAFETY: with RTLD_NOLOAD, dlopen only returns a handle to a library the process
        // already loaded and initialised; no initialiser runs.
        let lib = unsafe {
            libloading::os::unix::Library::open(
                Some(path),
                libloading::os::unix::RTLD_NOW | RTLD_NOLOAD,
            )
        }
        .map_err(|e| format!("{path} is not loaded in this process (import torch first): {e}"))?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: each symbol is declared above with the signature torch's headers
                // give it (aoti_torch/c/shim.h of 2.9; stable/c/shim.h of 2.10 for the string,
                // list and parallel functions, looked up only from 2.10 on).
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| {
                    format!("{path} has no `{}` (torch 2.9 to 2.15 have): {e}", $name)
                })?
            };
        }
        let dtype_fns: [(&[u8], crate::ElementType); 19] = [
            (b"aoti_torch_dtype_bool\0", crate::ElementType::Bool),
            (b"aoti_torch_dtype_int8\0", crate::ElementType::I8),
            (b"aoti_torch_dtype_int16\0", crate::ElementType::I16),
            (b"aoti_torch_dtype_int32\0", crate::ElementType::I32),
            (b"aoti_torch_dtype_int64\0", crate::ElementType::I64),
            (b"aoti_torch_dtype_uint8\0", crate::ElementType::U8),
            (b"aoti_torch_dtype_uint16\0", crate::ElementType::U16),
            (b"aoti_torch_dtype_uint32\0", crate::ElementType::U32),
            (b"aoti_torch_dtype_uint64\0", crate::ElementType::U64),
            (b"aoti_torch_dtype_float32\0", crate::ElementType::F32),
            (b"aoti_torch_dtype_float64\0", crate::ElementType::F64),
            (b"aoti_torch_dtype_float16\0", crate::ElementType::F16),
            (b"aoti_torch_dtype_bfloat16\0", crate::ElementType::BF16),
            (b"aoti_torch_dtype_complex64\0", crate::ElementType::C64),
            (b"aoti_torch_dtype_complex128\0", crate::ElementType::C128),
            (
                b"aoti_torch_dtype_float8_e4m3fn\0",
                crate::ElementType::F8E4M3FN,
            ),
            (
                b"aoti_torch_dtype_float8_e5m2\0",
                crate::ElementType::F8E5M2,
            ),
            (
                b"aoti_torch_dtype_float8_e4m3fnuz\0",
                crate::ElementType::F8E4M3FNUZ,
            ),
            (
                b"aoti_torch_dtype_float8_e5m2fnuz\0",
                crate::ElementType::F8E5M2FNUZ,
            ),
        ];
        let mut dtypes = Vec::with_capacity(dtype_fns.len());
        for (name, element) in dtype_fns {
            // SAFETY: `int32_t aoti_torch_dtype_*(void)`, as the header declares them.
            let f: unsafe extern "C" fn() -> i32 = *unsafe { lib.get(name) }
                .map_err(|e| format!("{path} has no dtype function for {element}: {e}"))?;
            // SAFETY: the function takes nothing and returns a constant.
            dtypes.push((unsafe { f() }, element));
        }
        // Types a newer torch has (2.9 has no float8_e8m0fnu): without one, an op on that type
        // is refused by name (`torch has no dtype for ...`).
        // torch's `float4_e2m1fn_x2` is a pair of f4E2M1FN values a byte, low nibble first
        // (its header), XLA's packing: it carries `f4E2M1FN` with half the last dimension.
        let newer: [(&[u8], crate::ElementType); 2] = [
            (
                b"aoti_torch_dtype_float8_e8m0fnu\0",
                crate::ElementType::F8E8M0FNU,
            ),
            (
                b"aoti_torch_dtype_float4_e2m1fn_x2\0",
                crate::ElementType::F4E2M1FN,
            ),
        ];
        for (name, element) in newer {
            // SAFETY: `int32_t aoti_torch_dtype_*(void)`, as the header declares it, if the
            // library has it.
            if let Ok(f) = unsafe { lib.get::<unsafe extern "C" fn() -> i32>(name) } {
                // SAFETY: the function takes nothing and returns a constant.
                dtypes.push((unsafe { (*f)() }, element));
            }
        }
        let abi_fn: unsafe extern "C" fn() -> u64 = sym!("aoti_torch_abi_version");
        // SAFETY: `uint64_t aoti_torch_abi_version(void)`, a constant.
        let abi = unsafe { abi_fn() };
        let version = ((abi >> 56) & 0xFF, (abi >> 48) & 0xFF);
        if !(NATIVE_TORCH.0..NATIVE_TORCH.1).contains(&version) {
            return Err(format!(
                "{path} is torch {}.{}; customop's native kernels support torch >= {}.{}, < {}.{}",
                version.0,
                version.1,
                NATIVE_TORCH.0.0,
                NATIVE_TORCH.0.1,
                NATIVE_TORCH.1.0,
                NATIVE_TORCH.1.1
            ));
        }
        // Strings and lists reach a kernel from torch 2.10 on.
        let direct = if version >= (2, 10) {
            Some(Direct {
                string_length: sym!("torch_string_length"),
                string_c_str: sym!("torch_string_c_str"),
                delete_string: sym!("torch_delete_string"),
                list_size: sym!("torch_list_size"),
                list_get_item: sym!("torch_list_get_item"),
                delete_list: sym!("torch_delete_list"),
                // SAFETY: both declared in crate::parallel as stable/c/shim.h (2.10+) gives them.
                pool: unsafe {
                    lib.get(b"torch_parallel_for\0")
                        .and_then(|p| Ok((*p, *lib.get(b"torch_get_num_threads\0")?)))
                }
                .ok(),
            })
        } else {
            None
        };
        let cpu_fn: unsafe extern "C" fn() -> i32 = sym!("aoti_torch_device_type_cpu");
        let meta_fn: unsafe extern "C" fn() -> i32 = sym!("aoti_torch_device_type_meta");
        Ok(Api {
            library_init_impl: sym!("aoti_torch_library_init_impl"),
            library_impl: sym!("aoti_torch_library_impl"),
            library_init_fragment: sym!("aoti_torch_library_init_fragment"),
            library_def: sym!("aoti_torch_library_def"),
            delete_library_object: sym!("aoti_torch_delete_library_object"),
            delete_tensor_object: sym!("aoti_torch_delete_tensor_object"),
            get_data_ptr: sym!("aoti_torch_get_data_ptr"),
            get_dim: sym!("aoti_torch_get_dim"),
            get_sizes: sym!("aoti_torch_get_sizes"),
            get_dtype: sym!("aoti_torch_get_dtype"),
            is_contiguous: sym!("aoti_torch_is_contiguous"),
            empty_strided: sym!("aoti_torch_empty_strided"),
            copy_: sym!("aoti_torch_copy_"),
            check: sym!("aoti_torch_check"),
            direct,
            dtypes,
            // SAFETY: `int32_t aoti_torch_device_type_cpu(void)`, a constant.
            cpu: unsafe { cpu_fn() },
            // SAFETY: `int32_t aoti_torch_device_type_meta(void)`, a constant.
            meta: unsafe { meta_fn() },
            _lib: lib,
        })
    }

    /// The customop element type of torch dtype `code`.
    pub(crate) fn element_of(&self, code: i32) -> Option<crate::ElementType> {
        self.dtypes.iter().find(|d| d.0 == code).map(|d| d.1)
    }

    /// torch's dtype code of `element`.
    pub(crate) fn dtype_of(&self, element: crate::ElementType) -> Option<i32> {
        self.dtypes.iter().find(|d| d.1 == element).map(|d| d.0)
    }

    /// The dtype torch holds a tensor of `element` in: its own, or for a packed sub-byte type
    /// `uint8` bytes (`float4_e2m1fn_x2` for `f4E2M1FN` where torch has it).
    pub(crate) fn carrier_of(&self, element: crate::ElementType) -> Option<i32> {
        self.dtype_of(element).or_else(|| {
            element
                .is_packed()
                .then(|| self.dtype_of(crate::ElementType::U8))
                .flatten()
        })
    }
}
