// rms_norm over the last dimension and its backward, for f32, f64, bf16 and f16: one block a
// row, accumulated in double as the CPU kernel does (src/any_rank.rs), each result rounded once
// to the element type.
//   y    = x * r,                          r = 1 / sqrt(mean(x^2) + eps)
//   d_x  = r * d_y - r^3 * x * mean(x * d_y)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define BLOCK 256

__device__ double to_d(float v) { return v; }
__device__ double to_d(double v) { return v; }
__device__ double to_d(__half v) { return (double)__half2float(v); }
__device__ double to_d(__nv_bfloat16 v) { return (double)__bfloat162float(v); }

template <class T> __device__ T from_d(double v);
template <> __device__ float from_d<float>(double v) { return (float)v; }
template <> __device__ double from_d<double>(double v) { return v; }
template <> __device__ __half from_d<__half>(double v) { return __double2half(v); }
template <> __device__ __nv_bfloat16 from_d<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}

// The sum of every thread's `v` in the block, seen by all of them.
__device__ double block_sum(double v) {
  __shared__ double s[BLOCK];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int k = BLOCK / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  double total = s[0];
  __syncthreads();
  return total;
}

// 1 / sqrt(mean(row^2) + eps) of a row of `cols` elements (cols >= 1).
template <class T> __device__ double inv_rms(const T* row, int64_t cols, float eps) {
  double ss = 0.0;
  for (int64_t j = threadIdx.x; j < cols; j += BLOCK) {
    double v = to_d(row[j]);
    ss += v * v;
  }
  ss = block_sum(ss);
  return 1.0 / sqrt(ss / (double)cols + (double)eps);
}

template <class T> __device__ void forward(const T* x, T* y, int64_t cols, float eps) {
  const T* row = x + (int64_t)blockIdx.x * cols;
  T* out = y + (int64_t)blockIdx.x * cols;
  double r = inv_rms(row, cols, eps);
  for (int64_t j = threadIdx.x; j < cols; j += BLOCK) out[j] = from_d<T>(to_d(row[j]) * r);
}

template <class T>
__device__ void backward(const T* x, const T* dy, T* dx, int64_t cols, float eps) {
  int64_t at = (int64_t)blockIdx.x * cols;
  double r = inv_rms(x + at, cols, eps);
  double dot = 0.0;
  for (int64_t j = threadIdx.x; j < cols; j += BLOCK) dot += to_d(x[at + j]) * to_d(dy[at + j]);
  dot = block_sum(dot) / (double)cols;
  double r3_dot = r * r * r * dot;
  for (int64_t j = threadIdx.x; j < cols; j += BLOCK)
    dx[at + j] = from_d<T>(r * to_d(dy[at + j]) - r3_dot * to_d(x[at + j]));
}

#define INSTANTIATE(T, NAME)                                                                  \
  extern "C" __global__ void __launch_bounds__(BLOCK)                                         \
      customop_rms_norm_##NAME(const T* x, T* y, int64_t cols, float eps) {                   \
    forward<T>(x, y, cols, eps);                                                              \
  }                                                                                           \
  extern "C" __global__ void __launch_bounds__(BLOCK) customop_rms_norm_bwd_##NAME(           \
      const T* x, const T* dy, T* dx, int64_t cols, float eps) {                              \
    backward<T>(x, dy, dx, cols, eps);                                                        \
  }

INSTANTIATE(float, f32)
INSTANTIATE(double, f64)
INSTANTIATE(__nv_bfloat16, bf16)
INSTANTIATE(__half, f16)
