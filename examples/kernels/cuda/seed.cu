// The seed op's CUDA kernel: y[i] = saturate_i8(round(gain * sum_j x[i, j]) + bias), one
// thread a row, summing in the CPU kernel's order (so both give the same bytes).
#include <stdint.h>

extern "C" __global__ void customop_seed_rows(const float* x, int8_t* y, int64_t rows,
                                              int64_t cols, float gain, int32_t bias) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  float sum = 0.0f;
  for (int64_t j = 0; j < cols; ++j) sum += x[i * cols + j];
  // Rust's f32::round rounds half away from zero, as roundf does.
  int64_t v = (int64_t)roundf(gain * sum) + bias;
  y[i] = (int8_t)(v < -128 ? -128 : (v > 127 ? 127 : v));
}
