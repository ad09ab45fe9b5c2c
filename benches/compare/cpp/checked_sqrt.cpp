// The floor for any custom op called through torch.ops: example::checked_sqrt's work
// (y = sqrt(x), refusing a negative input) as a C++ extension op, TORCH_LIBRARY with a CPU
// kernel, built against the running torch's headers by benches/compare/torch_cpp.py.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>

namespace {

at::Tensor checked_sqrt(const at::Tensor& x) {
  TORCH_CHECK(x.scalar_type() == at::kFloat, "cppref::checked_sqrt takes f32, got ",
              x.scalar_type());
  at::Tensor in = x.contiguous();
  at::Tensor out = at::empty_like(in);
  const float* src = in.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  for (int64_t i = 0; i < in.numel(); i++) {
    TORCH_CHECK(src[i] >= 0.0f, "negative input ", src[i]);
    dst[i] = std::sqrt(src[i]);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY(cppref, m) { m.def("checked_sqrt(Tensor x) -> Tensor"); }

TORCH_LIBRARY_IMPL(cppref, CPU, m) { m.impl("checked_sqrt", checked_sqrt); }
