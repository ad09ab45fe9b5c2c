// The seed model's AOTInductor package run from C++, with no Python in the process: load the
// kernel cdylib, have it define its ops and register their native kernels in torch's
// dispatcher (customop_torch_register_all), then run the package; swap the external's blob by
// its name (AOTInductor's constant update) and run again; a blob of the wrong size is refused
// by the cdylib's check (customop_check_descriptor) before AOTInductor sees it.
//   g++ -std=c++17|c++20 -I<torch>/include -I<torch>/include/torch/csrc/api/include
//       run_seed.cpp -L<torch>/lib -ltorch_cpu -lc10 -ltorch -ldl -o run_seed
//   ./run_seed KERNELS_SO LIBTORCH_CPU_SO DIR   (DIR: what compile_seed.py wrote)
#include <ATen/ATen.h>
#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <unordered_map>
#include <vector>

static std::vector<char> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

static at::Tensor bytes(const std::vector<char>& b) {
  auto t = at::empty({static_cast<int64_t>(b.size())}, at::kByte);
  std::memcpy(t.data_ptr(), b.data(), b.size());
  return t;
}

static void show(const at::Tensor& y) {
  auto v = y.contiguous();
  std::printf("[");
  for (int64_t i = 0; i < v.numel(); ++i) {
    std::printf("%s%d", i ? ", " : "", static_cast<int>(v.data_ptr<int8_t>()[i]));
  }
  std::printf("]\n");
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s KERNELS_SO LIBTORCH_CPU_SO DIR\n", argv[0]);
    return 2;
  }
  void* so = dlopen(argv[1], RTLD_NOW);
  if (so == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  using RegisterAll = long long (*)(const char*, char*, size_t);
  auto register_all = reinterpret_cast<RegisterAll>(dlsym(so, "customop_torch_register_all"));
  if (register_all == nullptr) {
    std::fprintf(stderr, "the cdylib exports no customop_torch_register_all\n");
    return 1;
  }
  std::vector<char> message(1 << 16);
  if (register_all(argv[2], message.data(), message.size()) < 0) {
    std::fprintf(stderr, "register: %s\n", message.data());
    return 1;
  }
  using Check = int (*)(const char*, const uint8_t*, size_t, char*, size_t);
  auto check = reinterpret_cast<Check>(dlsym(so, "customop_check_descriptor"));
  if (check == nullptr) {
    std::fprintf(stderr, "the cdylib exports no customop_check_descriptor\n");
    return 1;
  }
  std::string dir = argv[3];
  auto x = at::from_blob(read(dir + "/x.bin").data(), {3, 3}, at::kFloat).clone();
  torch::inductor::AOTIModelPackageLoader loader(dir + "/seed.pt2");
  show(loader.run({x})[0]);
  // Another blob by the external's name (the buffer's), checked first: AOTInductor copies a
  // constant of another size as far as it goes, without a word.
  for (const char* file : {"/other.bin", "/short.bin"}) {
    at::Tensor blob = bytes(read(dir + file));
    if (check("my_lib::Blob", blob.data_ptr<uint8_t>(), blob.numel(), message.data(),
              message.size()) != 0) {
      std::printf("refused: %s\n", message.data());
      continue;
    }
    std::unordered_map<std::string, at::Tensor> swap{{"external", blob}};
    loader.update_constant_buffer(swap, false, false);
    show(loader.run({x})[0]);
  }
  return 0;
}
