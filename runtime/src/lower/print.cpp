// Prints an MLIR operation through a buffered stream that hands the text to Rust in 1 MiB
// chunks. MLIR's C API (mlirOperationPrint) prints through an unbuffered stream: one callback
// per token, which was a quarter of the lowering's instructions for a 10,000-op module.
#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/IR/Operation.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

namespace {

class ChunkedStream final : public llvm::raw_ostream {
 public:
  ChunkedStream(void (*append)(const char *, size_t, void *), void *data)
      : append_(append), data_(data) {
    SetBufferSize(1 << 20);
  }
  ~ChunkedStream() override { flush(); }

 private:
  void write_impl(const char *ptr, size_t size) override {
    append_(ptr, size, data_);
    pos_ += size;
  }
  uint64_t current_pos() const override { return pos_; }

  void (*append_)(const char *, size_t, void *);
  void *data_;
  uint64_t pos_ = 0;
};

}  // namespace

extern "C" void customop_print_operation(MlirOperation op,
                                         void (*append)(const char *, size_t, void *),
                                         void *data) {
  ChunkedStream os(append, data);
  unwrap(op)->print(os);
}
