/* A minimal hand-written XLA FFI handler (typed FFI, custom call API version 4), used by the
 * builder's tests to run programs with a custom call before customop's own handlers exist, and
 * as the floor that generated handlers are measured against.
 *
 * Target `customop_test.scale`: operands (tensor<Nxui8> descriptor, tensor<...xf32> x), result
 * y of x's shape: y = 2 * x + payload[0], where payload[0] is the descriptor's first payload
 * byte (offset 24, after the wire-format header). No checks: this is the floor, not an example.
 */
#include <stdint.h>
#include "probe.h"

XLA_FFI_Error* customop_test_scale(XLA_FFI_CallFrame* frame) {
  if (customop_test_answer_probe(frame)) return 0;
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return 0;
  XLA_FFI_Buffer* desc = (XLA_FFI_Buffer*)frame->args.args[0];
  XLA_FFI_Buffer* x = (XLA_FFI_Buffer*)frame->args.args[1];
  XLA_FFI_Buffer* y = (XLA_FFI_Buffer*)frame->rets.rets[0];
  int64_t n = 1;
  for (int64_t i = 0; i < x->rank; i++) n *= x->dims[i];
  float add = (float)((const uint8_t*)desc->data)[24];
  const float* in = (const float*)x->data;
  float* out = (float*)y->data;
  for (int64_t i = 0; i < n; i++) out[i] = 2.0f * in[i] + add;
  return 0;
}

/* Target `customop_test.count`: a side effect only (no results used): counts its calls. */
static int64_t calls = 0;

XLA_FFI_Error* customop_test_count(XLA_FFI_CallFrame* frame) {
  if (customop_test_answer_probe(frame)) return 0;
  if (frame->stage == XLA_FFI_ExecutionStage_EXECUTE) calls++;
  return 0;
}

int64_t customop_test_count_calls(void) { return calls; }
