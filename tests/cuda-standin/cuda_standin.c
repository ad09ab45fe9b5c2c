/*
 * cuda_standin.c - a stand-in for the NVIDIA CUDA driver library (libcuda).
 *
 * Purpose: host-side tests of a runtime that dlopen()s libcuda and resolves
 * driver entry points with dlsym().  Build this file as a shared library and
 * point the runtime at it instead of the real libcuda.so.1.
 *
 * What it models:
 *  - There is no GPU.  A "device pointer" (CUdeviceptr) is a host address, so
 *    every copy is a memcpy.  There is one device; the driver version is 13000.
 *  - Contexts: the current context is (CUcontext)0xC0C0 unless another one was
 *    pushed with cuCtxPushCurrent_v2 (a small per-thread stack).  A non-null
 *    stream is its own context (cuStreamGetCtx returns the stream pointer), so
 *    a test can use two streams as two contexts; the null stream belongs to the
 *    current context.
 *  - Modules: cuModuleLoadData accepts a fatbin (magic 0xBA55ED50, size 16 +
 *    the u64 at offset 8), an ELF image (size unknown: 0) or PTX text (size:
 *    strlen).  cuModuleGetFunction notes whether the name occurs in the image
 *    bytes; with CUDA_STANDIN_STRICT_NAMES=1 a missing name is an error.
 *  - Launches: arguments must come only through `extra` as one packed buffer
 *    (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE / _END); nothing is executed.
 *  - Failure injection: CUDA_STANDIN_FAIL="fn:code[,fn:code...]" (read at every
 *    call) makes the named entry point return `code` without doing anything.
 *  - Recording: every successful call (except pure queries) and every
 *    injected failure appends one line to an in-memory log, read with
 *    cuda_standin_log() and cleared with cuda_standin_reset().  Calls rejected
 *    for bad arguments return their error code and log nothing.
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -shared -fPIC \
 *           -o libcuda_standin.so cuda_standin.c -lpthread
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

#define EXPORT __attribute__((visibility("default")))

enum { SUCCESS = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_IMAGE = 200,
       INVALID_CONTEXT = 201, INVALID_HANDLE = 400, NOT_FOUND = 500 };

#define DEFAULT_CTX ((CUcontext)(uintptr_t)0xC0C0)
#define MAX_MODULES 256
#define MAX_FUNCTIONS 1024
#define FUNCTION_BASE 0x10000u /* function handles never equal module handles */
#define CTX_STACK_DEPTH 64

/* ---- error names ------------------------------------------------------- */

static const struct { CUresult code; const char *name, *text; } errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image for the device"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* ---- shared state (guarded by `lock`) ---------------------------------- */

typedef struct {
    int used;
    const unsigned char *image;
    unsigned long long size; /* 0 = unknown */
    CUcontext ctx;
} Module;
typedef struct {
    int used, module, found; /* module: its handle value (index + 1) */
    char *name;
} Function;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Module modules[MAX_MODULES];
static Function functions[MAX_FUNCTIONS];
static char empty_log[1] = "";
static char *log_buf = empty_log;
static size_t log_len, log_cap;

static _Thread_local CUcontext ctx_stack[CTX_STACK_DEPTH];
static _Thread_local int ctx_depth;

static CUcontext current_ctx(void) {
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : DEFAULT_CTX;
}

static unsigned long long ptr_val(const void *p) {
    return (unsigned long long)(uintptr_t)p;
}

/* Append one line to the log; caller holds `lock`.  Outgrown buffers are
 * deliberately kept (never freed), so a pointer returned earlier by
 * cuda_standin_log() stays readable, if stale. */
static void log_line_locked(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t need = log_len + (size_t)n + 2; /* line + '\n' + NUL */
    if (need > log_cap) {
        size_t cap = log_cap ? log_cap : 4096;
        while (cap < need) cap *= 2;
        char *grown = calloc(cap, 1);
        if (!grown) return;
        memcpy(grown, log_buf, log_len);
        log_buf = grown; /* the old buffer is intentionally leaked */
        log_cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(log_buf + log_len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    log_len += (size_t)n;
    log_buf[log_len++] = '\n';
    log_buf[log_len] = '\0';
}

#define LOG(...)                                                               \
    do {                                                                       \
        pthread_mutex_lock(&lock);                                             \
        log_line_locked(__VA_ARGS__);                                          \
        pthread_mutex_unlock(&lock);                                           \
    } while (0)

/* ---- failure injection ------------------------------------------------- */

/* Does the entry `seg` (length len) name function `fn`?  "cuFoo" also
 * matches "cuFoo_v2". */
static int names_fn(const char *seg, size_t len, const char *fn) {
    size_t fl = strlen(fn);
    if (len == fl && memcmp(seg, fn, len) == 0) return 1;
    return fl > 3 && strcmp(fn + fl - 3, "_v2") == 0 && len == fl - 3 &&
           memcmp(seg, fn, len) == 0;
}

/* If CUDA_STANDIN_FAIL names `fn`, log the failure, store the code in *code
 * and return 1. */
static int injected(const char *fn, CUresult *code) {
    const char *spec = getenv("CUDA_STANDIN_FAIL");
    if (!spec) return 0;
    const char *p = spec;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        const char *start = p;
        while (*p && *p != ':' && *p != ',') p++;
        size_t len = (size_t)(p - start);
        while (len > 0 && start[len - 1] == ' ') len--;
        if (*p != ':') continue; /* malformed entry without a code: ignored */
        p++;
        char *end;
        long v = strtol(p, &end, 10);
        int ok = end != p;
        p = end;
        while (*p && *p != ',') p++;
        if (ok && len > 0 && names_fn(start, len, fn)) {
            *code = (CUresult)v;
            LOG("fail %s %d", fn, *code);
            return 1;
        }
    }
    return 0;
}

#define INJECT(fn)                                                             \
    do {                                                                       \
        CUresult injected_code;                                                \
        if (injected(fn, &injected_code))                                      \
            return injected_code;                                              \
    } while (0)

/* ---- initialisation and queries ---------------------------------------- */

EXPORT CUresult cuInit(unsigned int flags) {
    INJECT("cuInit");
    if (flags != 0) return INVALID_VALUE;
    LOG("init flags=%u", flags);
    return SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
    INJECT("cuDriverGetVersion");
    if (!v) return INVALID_VALUE;
    *v = 13000;
    return SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n) {
    INJECT("cuDeviceGetCount");
    if (!n) return INVALID_VALUE;
    *n = 1;
    return SUCCESS;
}

static CUresult error_lookup(CUresult e, const char **s, int text) {
    if (!s) return INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if (errors[i].code == e) {
            *s = text ? errors[i].text : errors[i].name;
            return SUCCESS;
        }
    }
    *s = NULL;
    return INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
    INJECT("cuGetErrorName");
    return error_lookup(e, s, 0);
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
    INJECT("cuGetErrorString");
    return error_lookup(e, s, 1);
}

/* ---- contexts and streams ---------------------------------------------- */

EXPORT CUresult cuCtxGetCurrent(CUcontext *c) {
    INJECT("cuCtxGetCurrent");
    if (!c) return INVALID_VALUE;
    *c = current_ctx();
    return SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c) {
    INJECT("cuCtxPushCurrent_v2");
    if (!c || ctx_depth >= CTX_STACK_DEPTH) return INVALID_VALUE;
    ctx_stack[ctx_depth++] = c;
    return SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c) {
    INJECT("cuCtxPopCurrent_v2");
    if (ctx_depth == 0)
        return INVALID_CONTEXT; /* the default context cannot be popped */
    CUcontext top = ctx_stack[--ctx_depth];
    if (c) *c = top;
    return SUCCESS;
}

EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *c) {
    INJECT("cuStreamGetCtx");
    if (!c) return INVALID_VALUE;
    *c = s ? (CUcontext)s : current_ctx();
    return SUCCESS;
}

/* ---- modules and functions --------------------------------------------- */

static Module *module_locked(CUmodule m) {
    uintptr_t h = (uintptr_t)m;
    if (h < 1 || h > MAX_MODULES || !modules[h - 1].used) return NULL;
    return &modules[h - 1];
}

EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    INJECT("cuModuleLoadData");
    if (!m) return INVALID_VALUE;
    if (!image) return INVALID_IMAGE;
    const unsigned char *b = image;
    const char *kind;
    unsigned long long size = 0;
    /* Compare byte by byte so a short PTX string is never over-read. */
    if (b[0] == 0x50 && b[1] == 0xED && b[2] == 0x55 && b[3] == 0xBA) {
        kind = "fatbin";
        for (int i = 7; i >= 0; i--)
            size = (size << 8) | b[8 + i];
        size += 16;
    } else if (b[0] == 0x7F && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') {
        kind = "elf";
    } else {
        const char *t = image;
        while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r') t++;
        if (strncmp(t, "//", 2) != 0 && strncmp(t, ".version", 8) != 0)
            return INVALID_IMAGE;
        kind = "ptx";
        size = strlen(image);
    }
    CUcontext ctx = current_ctx();
    pthread_mutex_lock(&lock);
    int idx = -1;
    for (int i = 0; i < MAX_MODULES && idx < 0; i++)
        if (!modules[i].used) idx = i;
    if (idx < 0) {
        pthread_mutex_unlock(&lock);
        return OUT_OF_MEMORY;
    }
    modules[idx] = (Module){1, b, size, ctx};
    log_line_locked("load ctx=0x%llx kind=%s bytes=%llu module=%d",
                    ptr_val(ctx), kind, size, idx + 1);
    pthread_mutex_unlock(&lock);
    *m = (CUmodule)(uintptr_t)(idx + 1);
    return SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
    INJECT("cuModuleUnload");
    pthread_mutex_lock(&lock);
    Module *mod = module_locked(m);
    if (!mod) {
        pthread_mutex_unlock(&lock);
        return INVALID_HANDLE;
    }
    int h = (int)(uintptr_t)m;
    mod->used = 0;
    for (int i = 0; i < MAX_FUNCTIONS; i++) {
        if (functions[i].used && functions[i].module == h) {
            free(functions[i].name);
            functions[i] = (Function){0, 0, 0, NULL};
        }
    }
    log_line_locked("unload module=%d", h);
    pthread_mutex_unlock(&lock);
    return SUCCESS;
}

static int contains(const unsigned char *hay, unsigned long long n,
                    const char *needle) {
    size_t k = strlen(needle);
    if (k == 0 || k > n) return k == 0;
    for (unsigned long long i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return 1;
    return 0;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m,
                                    const char *name) {
    INJECT("cuModuleGetFunction");
    if (!f || !name) return INVALID_VALUE;
    const char *strict_env = getenv("CUDA_STANDIN_STRICT_NAMES");
    int strict = strict_env && strcmp(strict_env, "1") == 0;
    pthread_mutex_lock(&lock);
    CUresult rc = SUCCESS;
    Module *mod = module_locked(m);
    int h = (int)(uintptr_t)m, idx = -1;
    /* An image of unknown size (ELF) cannot be searched: found=0, and
     * strict mode does not reject it. */
    int found = mod && mod->size > 0 && contains(mod->image, mod->size, name);
    if (!mod) {
        rc = INVALID_HANDLE;
    } else if (strict && mod->size > 0 && !found) {
        rc = NOT_FOUND;
    } else {
        /* The same name in the same module gets the same handle. */
        for (int i = 0; i < MAX_FUNCTIONS && idx < 0; i++)
            if (functions[i].used && functions[i].module == h &&
                strcmp(functions[i].name, name) == 0)
                idx = i;
        for (int i = 0; i < MAX_FUNCTIONS && idx < 0; i++) {
            if (!functions[i].used) {
                size_t len = strlen(name) + 1;
                char *copy = malloc(len);
                if (!copy) break;
                memcpy(copy, name, len);
                functions[i] = (Function){1, h, found, copy};
                idx = i;
            }
        }
        if (idx < 0) rc = OUT_OF_MEMORY;
    }
    if (rc == SUCCESS) {
        log_line_locked("function module=%d name=%s found=%d", h, name, found);
        *f = (CUfunction)(uintptr_t)(FUNCTION_BASE + (unsigned)idx);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* ---- launches ---------------------------------------------------------- */

#define CU_LAUNCH_PARAM_END ((void *)0)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)1)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)2)

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridX,
                               unsigned int gridY, unsigned int gridZ,
                               unsigned int blockX, unsigned int blockY,
                               unsigned int blockZ, unsigned int sharedMemBytes,
                               CUstream s, void **kernelParams, void **extra) {
    INJECT("cuLaunchKernel");
    if (kernelParams || !extra || !gridX || !gridY || !gridZ || !blockX ||
        !blockY || !blockZ)
        return INVALID_VALUE;
    const unsigned char *buf = NULL;
    const size_t *size_ptr = NULL;
    int have_buf = 0, i = 0;
    for (; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            buf = extra[i + 1];
            have_buf = 1;
        } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
            size_ptr = extra[i + 1];
        } else {
            return INVALID_VALUE; /* unknown key */
        }
    }
    if (i >= 64 || !have_buf || !size_ptr || (!buf && *size_ptr > 0))
        return INVALID_VALUE;
    size_t n = *size_ptr;
    char *hex = malloc(2 * n + 1);
    if (!hex) return OUT_OF_MEMORY;
    static const char digits[] = "0123456789abcdef";
    for (size_t k = 0; k < n; k++) {
        hex[2 * k] = digits[buf[k] >> 4];
        hex[2 * k + 1] = digits[buf[k] & 15];
    }
    hex[2 * n] = '\0';
    pthread_mutex_lock(&lock);
    uintptr_t h = (uintptr_t)f;
    CUresult rc = INVALID_VALUE;
    if (h >= FUNCTION_BASE && h < FUNCTION_BASE + MAX_FUNCTIONS &&
        functions[h - FUNCTION_BASE].used) {
        const Function *fn = &functions[h - FUNCTION_BASE];
        log_line_locked("launch name=%s module=%d grid=%u,%u,%u block=%u,%u,%u "
                        "shared=%u stream=0x%llx args=%s",
                        fn->name, fn->module, gridX, gridY, gridZ, blockX,
                        blockY, blockZ, sharedMemBytes, ptr_val(s), hex);
        rc = SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    free(hex);
    return rc;
}

/* ---- memory copies and synchronisation --------------------------------- */

/* A copy between "device" and host memory: both are host addresses. */
static CUresult copy(const char *kind, const char *key, void *dst,
                     const void *src, size_t n, CUstream s) {
    if (n > 0 && (!dst || !src)) return INVALID_VALUE;
    if (n > 0) memcpy(dst, src, n);
    LOG("%s stream=0x%llx %s=0x%llx bytes=%zu", kind, ptr_val(s), key,
        ptr_val(kind[0] == 'd' ? src : dst), n);
    return SUCCESS;
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n,
                                     CUstream s) {
    INJECT("cuMemcpyDtoHAsync_v2");
    return copy("dtoh", "src", dst, (const void *)(uintptr_t)src, n, s);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n,
                                     CUstream s) {
    INJECT("cuMemcpyHtoDAsync_v2");
    return copy("htod", "dst", (void *)(uintptr_t)dst, src, n, s);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                     CUstream s) {
    INJECT("cuMemcpyDtoDAsync_v2");
    if (n > 0 && (!dst || !src)) return INVALID_VALUE;
    if (n > 0) memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    LOG("dtod stream=0x%llx dst=0x%llx src=0x%llx bytes=%zu", ptr_val(s),
        (unsigned long long)dst, (unsigned long long)src, n);
    return SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    INJECT("cuMemcpyDtoH_v2");
    return copy("dtoh", "src", dst, (const void *)(uintptr_t)src, n, NULL);
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
    INJECT("cuStreamSynchronize");
    LOG("sync stream=0x%llx", ptr_val(s));
    return SUCCESS;
}

/* ---- test hooks -------------------------------------------------------- */

/* The whole log, one line per call.  The buffer belongs to the library; its
 * content is current until the next call that logs (or a reset). */
EXPORT const char *cuda_standin_log(void) {
    pthread_mutex_lock(&lock);
    const char *p = log_buf;
    pthread_mutex_unlock(&lock);
    return p;
}

/* Clear the log; loaded modules and functions stay loaded. */
EXPORT void cuda_standin_reset(void) {
    pthread_mutex_lock(&lock);
    log_len = 0;
    if (log_cap) log_buf[0] = '\0';
    pthread_mutex_unlock(&lock);
}
