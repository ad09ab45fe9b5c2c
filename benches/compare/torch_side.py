"""The torch_xla side of the comparison: the same chain of N custom calls, each taking the
56-byte buffer (int8, as torch_xla's docs pass opaque bytes), defined as a torch.library
custom op whose XLA implementation is `stablehlo_custom_call`; timed over `torch.export.export`
plus `exported_program_to_stablehlo(...).get_stablehlo_text()`. Run by compare.py with a Python
that has torch and torch_xla (2.9.0).

Also, with `--schemas MANIFEST_JSON`: parses every op's schema string with
`torch._C.parse_schema` (the check that customop's schema strings are real FunctionSchemas).
"""
import json
import os
import resource
import sys
import time

os.environ.setdefault("PJRT_DEVICE", "CPU")
import torch  # noqa: E402
import torch_xla  # noqa: E402,F401
from torch_xla.experimental.stablehlo_custom_call import stablehlo_custom_call  # noqa: E402
from torch_xla.stablehlo import exported_program_to_stablehlo  # noqa: E402
if sys.argv[1] == "--schemas":
    manifest = json.load(open(sys.argv[2]))
    for op in manifest["ops"]:
        torch._C.parse_schema(op["schema_string"])
    print(json.dumps({"parsed": len(manifest["ops"])}))
    sys.exit(0)
n = int(sys.argv[1])

@torch.library.custom_op("customop_bench::passthrough", mutates_args=())
def passthrough(blob: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return stablehlo_custom_call([blob, x], "example.passthrough", [x.shape], [x.dtype])

@passthrough.register_fake
def _(blob, x):
    return torch.empty_like(x)

class M(torch.nn.Module):
    def forward(self, x, blob):
        for _ in range(n):
            x = passthrough(blob, x)
        return x + 1

x = torch.zeros(3, 3)
blob = torch.zeros(56, dtype=torch.int8)
t = time.perf_counter()
ep = torch.export.export(M(), (x, blob))
text = exported_program_to_stablehlo(ep).get_stablehlo_text("forward")
secs = time.perf_counter() - t
print(json.dumps({"seconds": secs, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "custom_calls": text.count("custom_call")}))
