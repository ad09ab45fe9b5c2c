"""torch.compile's caches and customop ops (customop/torch/cache_key.py): a warm cache is
replayed for the same ops and the same customop, and compiled again for others. Each run is a
process of its own, on one cache folder.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     target/torch-venv/bin/python -m unittest tests/torch/test_compile_cache.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest


class CompileCacheKey(unittest.TestCase):
    """torch.compile's caches key an op by its name alone: customop adds the loaded manifests
    and its own source to `torch.compiler.config.cache_key_tag`, so a warm cache is replayed
    for the same ops and customop, and not for others (a rebuilt library, another customop)."""

    SCRIPT = r"""
import os, sys, json
import torch
import customop.torch as ct
from customop.torch import cache_key
if sys.argv[1] == "other":
    cache_key._SOURCE = "another customop"
lib = ct.load(os.environ["CUSTOMOP_KERNELS"],
              native=os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1")
f = torch.compile(lambda x: torch.ops.example.checked_sqrt(x * 2.0).sum(), fullgraph=True)
x = torch.tensor([1.0, 4.0, 9.0], requires_grad=True)
try:  # (the entry is saved once the backward is compiled; running it refuses)
    f(x).backward()
    sys.exit("no refusal")
except ct.NoGradientError:
    pass
from torch._dynamo.utils import counters
print(json.dumps({"tag": torch.compiler.config.cache_key_tag,
                  "hit": counters["aot_autograd"]["autograd_cache_hit"],
                  "miss": counters["aot_autograd"]["autograd_cache_miss"]}))
"""

    def run_one(self, cache_dir, which):
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir,
                   TORCH_COMPILE_CACHE_KEY_TAG="team-tag", TORCHINDUCTOR_FX_GRAPH_CACHE="1",
                   TORCHINDUCTOR_AUTOGRAD_CACHE="1")
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(self.SCRIPT)
        try:
            out = subprocess.run([sys.executable, f.name, which], env=env, capture_output=True,
                                 text=True, timeout=600)
        finally:
            os.unlink(f.name)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        return json.loads(out.stdout.strip().splitlines()[-1])

    def test_warm_cache_only_for_the_same_ops_and_customop(self):
        with tempfile.TemporaryDirectory() as cache_dir:
            first = self.run_one(cache_dir, "same")
            again = self.run_one(cache_dir, "same")
            other = self.run_one(cache_dir, "other")
        # The user's own tag is kept in front of customop's part.
        self.assertRegex(first["tag"], r"^team-tag\|customop:[0-9a-f]{16}$")
        self.assertEqual(again["tag"], first["tag"])
        self.assertNotEqual(other["tag"], first["tag"])
        self.assertEqual((first["hit"], first["miss"]), (0, 1))
        self.assertEqual((again["hit"], again["miss"]), (1, 0))
        self.assertEqual((other["hit"], other["miss"]), (0, 1))


if __name__ == "__main__":
    unittest.main()
