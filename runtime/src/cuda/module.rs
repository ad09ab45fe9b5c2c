//! Device code embedded in a kernel library ([`Image`]), its kernels ([`Kernel`]), and the
//! modules loaded from it: once per image and device context, for the process's life.

use super::driver::{Driver, DriverError};
use core::ffi::{CStr, c_void};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Device code compiled at build time and embedded in the library: a fatbin (machine code for
/// each architecture it was built for), a cubin or PTX text. Made by [`cuda_image!`](crate::cuda_image).
#[derive(Debug)]
pub struct Image {
    name: &'static str,
    bytes: &'static [u8],
}

/// A fatbin starts with this magic (little-endian), then a version, the header's size and the
/// size of what follows.
const FATBIN_MAGIC: u32 = 0xBA55_ED50;

impl Image {
    /// `bytes`, named `name` in errors. Use [`cuda_image!`](crate::cuda_image), which embeds a
    /// file aligned as the driver reads it.
    pub const fn new(name: &'static str, bytes: &'static [u8]) -> Image {
        Image { name, bytes }
    }

    /// The name errors give it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The embedded bytes.
    pub fn bytes(&self) -> &'static [u8] {
        self.bytes
    }

    /// What kind of image it is, if it is one the driver loads whole: `cuModuleLoadData`
    /// reads a fatbin and a cubin up to the sizes their headers give and PTX up to its NUL,
    /// so anything else (or a truncated header) would be read past its end.
    pub fn kind(&self) -> Result<&'static str, String> {
        let b = self.bytes;
        let word = |at: usize, n: usize| b.get(at..at + n);
        if word(0, 4).is_some_and(|m| m == FATBIN_MAGIC.to_le_bytes()) {
            let size = word(8, 8)
                .map(|s| u64::from_le_bytes(s.try_into().unwrap_or([0xff; 8])))
                .unwrap_or(u64::MAX);
            let whole = usize::try_from(size)
                .ok()
                .and_then(|s| s.checked_add(16))
                .is_some_and(|end| end <= b.len());
            return if whole {
                Ok("fatbin")
            } else {
                Err(format!(
                    "CUDA image `{}` is a truncated fatbin ({} bytes)",
                    self.name,
                    b.len()
                ))
            };
        }
        if b.starts_with(b"\x7fELF") {
            return Ok("cubin");
        }
        if b.contains(&0) && (b.starts_with(b"//") || b.starts_with(b".version")) {
            return Ok("ptx");
        }
        Err(format!(
            "CUDA image `{}` ({} bytes) is not a fatbin, a cubin or NUL-terminated PTX",
            self.name,
            b.len()
        ))
    }
}

/// One kernel of an [`Image`]: its (unmangled, `extern "C"`) name.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    image: &'static Image,
    name: &'static CStr,
}

impl Kernel {
    /// The kernel `name` (its `extern "C"` symbol) in `image`.
    pub const fn new(image: &'static Image, name: &'static CStr) -> Kernel {
        Kernel { image, name }
    }

    /// The image it is in.
    pub fn image(&self) -> &'static Image {
        self.image
    }

    /// Its name.
    pub fn name(&self) -> &'static CStr {
        self.name
    }
}

/// Why a kernel could not be had: a bad image, or the driver's error.
pub(crate) enum LoadError {
    Image(String),
    Driver(DriverError),
}

/// Loaded modules by (context, image) and functions by (module, name), as addresses.
#[derive(Default)]
struct Loaded {
    modules: HashMap<(usize, usize), usize>,
    functions: HashMap<(usize, usize), usize>,
}

fn loaded() -> &'static Mutex<Loaded> {
    static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
    LOADED.get_or_init(Default::default)
}

/// The function of `kernel` in context `ctx`, its module loaded there on first use.
pub(crate) fn function(
    driver: &Driver,
    ctx: *mut c_void,
    kernel: &Kernel,
) -> Result<*mut c_void, LoadError> {
    let image = kernel.image;
    let key = (ctx as usize, image as *const Image as usize);
    let mut table = loaded().lock().unwrap_or_else(|e| e.into_inner());
    let module = match table.modules.get(&key) {
        Some(&m) => m as *mut c_void,
        None => {
            image.kind().map_err(LoadError::Image)?;
            if !(image.bytes.as_ptr() as usize).is_multiple_of(8) {
                return Err(LoadError::Image(format!(
                    "CUDA image `{}` is not 8-byte aligned (embed it with cuda_image!)",
                    image.name
                )));
            }
            // SAFETY: the image is `'static` and whole (its kind checked the sizes its header
            // gives against the bytes), so the module may keep pointing at it.
            let m = unsafe { driver.load_module(ctx, image.bytes.as_ptr().cast()) }
                .map_err(LoadError::Driver)?;
            table.modules.insert(key, m as usize);
            m
        }
    };
    let fkey = (module as usize, kernel.name.as_ptr() as usize);
    if let Some(&f) = table.functions.get(&fkey) {
        return Ok(f as *mut c_void);
    }
    let f = driver
        .function(module, kernel.name)
        .map_err(LoadError::Driver)?;
    table.functions.insert(fkey, f as usize);
    Ok(f)
}

/// Embeds a device image (a `.fatbin`, `.cubin` or NUL-terminated `.ptx` file, usually built
/// into `OUT_DIR` by the crate's build script) as a `&'static` [`Image`](crate::cuda::Image),
/// aligned to 8 bytes as the driver reads it.
///
/// ```text
/// static SEED: customop::cuda::Image =
///     customop::cuda_image!("seed", concat!(env!("OUT_DIR"), "/seed.fatbin"));
/// ```
#[macro_export]
macro_rules! cuda_image {
    ($name:expr, $path:expr $(,)?) => {{
        #[repr(C, align(8))]
        struct __Aligned<B: ?Sized>(B);
        static __BYTES: &__Aligned<[u8]> = &__Aligned(*::core::include_bytes!($path));
        $crate::cuda::Image::new($name, &__BYTES.0)
    }};
}
