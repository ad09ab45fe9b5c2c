/* Shared by the hand-written test handlers: answers XLA's registration probe (the metadata
 * extension) with the API version, returning 1 when the call was the probe. */
#include "xla/ffi/api/c_api.h"

static int customop_test_answer_probe(XLA_FFI_CallFrame* frame) {
  for (XLA_FFI_InternalExtension* e = frame->extension_start; e != 0; e = e->next) {
    if (e->type == XLA_FFI_Extension_Metadata) {
      XLA_FFI_Metadata_Extension* m = (XLA_FFI_Metadata_Extension*)e;
      m->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
      m->metadata->api_version.minor_version = 1;
      return 1;
    }
  }
  return 0;
}
