// A C++ program with no Python that calls a customop op by name through torch's dispatcher:
// it loads the kernel cdylib, defines the op's schema (as the cdylib gives it), has the cdylib
// register its native CPU and Meta kernels, then calls the op on CPU and Meta tensors and
// with an input the kernel refuses. Built and run by tests/torch/test_native.py:
//   g++ -std=c++17 -I<torch>/include -I<torch>/include/torch/csrc/api/include call_by_name.cpp \
//       -L<torch>/lib -ltorch_cpu -lc10 -ltorch -ldl
//   ./a.out KERNELS_SO LIBTORCH_CPU_SO
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <dlfcn.h>
#include <torch/library.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s KERNELS_SO LIBTORCH_CPU_SO\n", argv[0]);
    return 2;
  }
  void* so = dlopen(argv[1], RTLD_NOW);
  if (so == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  using NativeSchema = int (*)(const char*, const char*, char*, size_t);
  using Register = int (*)(const char*, const char*, const char*, char*, size_t);
  auto native_schema = reinterpret_cast<NativeSchema>(dlsym(so, "customop_torch_native_schema"));
  auto register_op = reinterpret_cast<Register>(dlsym(so, "customop_torch_register"));
  if (native_schema == nullptr || register_op == nullptr) {
    std::fprintf(stderr, "the cdylib exports no customop_torch_* functions\n");
    return 1;
  }
  const char* op = "example::checked_sqrt";
  char buf[4096];
  if (native_schema(op, op, buf, sizeof buf) != 0) {
    std::fprintf(stderr, "schema: %s\n", buf);
    return 1;
  }
  static torch::Library lib(torch::Library::FRAGMENT, "example", std::nullopt, __FILE__, __LINE__);
  lib.def(std::strstr(buf, "::") + 2);
  if (register_op(argv[2], op, op, buf, sizeof buf) != 0) {
    std::fprintf(stderr, "register: %s\n", buf);
    return 1;
  }
  auto sqrt = c10::Dispatcher::singleton()
                  .findSchemaOrThrow(op, "")
                  .typed<at::Tensor(const at::Tensor&)>();
  at::Tensor y = sqrt.call(at::full({2, 3}, 4.0));
  std::printf("cpu: shape [%lld, %lld], sum %g\n", static_cast<long long>(y.size(0)),
              static_cast<long long>(y.size(1)), y.sum().item<double>());
  at::Tensor m = sqrt.call(at::empty({5, 7}, at::TensorOptions().device(at::kMeta)));
  std::printf("meta: shape [%lld, %lld] on %s\n", static_cast<long long>(m.size(0)),
              static_cast<long long>(m.size(1)), m.device().str().c_str());
  try {
    sqrt.call(at::full({1}, -1.0));
    std::printf("refused: no\n");
  } catch (const c10::Error& e) {
    std::printf("refused: %s\n", e.what_without_backtrace());
  }
  return 0;
}
