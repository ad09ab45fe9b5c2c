"""The seed model in PyTorch: `x = sin(x); y = custom_op_external(external, x); y + 1`, with
`external` a 56-byte `my_lib::Blob` registered as a buffer. The op is the Rust kernel of the
example cdylib, registered as `torch.ops.my_custom_library.custom_op_external` by
`customop.torch.load`. The program runs eagerly on CPU (the Rust kernel through its handler),
is exported with torch.export + torch_xla, annotated by `customop.torch.export` (its external
argument carries `customop.external`), and run on XLA CPU with the Rust handler.

Run (from the repository root, after `bash scripts/setup.sh`):
    cargo build -p customop-example-kernels --target-dir target/kernels
    target/xla-venv/bin/python examples/torch/seed.py target/kernels/debug/libcustomop_example_kernels.so

With `--json`, prints only the results, for the Rust test that compares them with the Rust
builder's.
"""

import json
import os
import sys

os.environ.setdefault("PJRT_DEVICE", "CPU")  # torch_xla's device: the CPU

import torch  # noqa: E402

import customop.torch as ct  # noqa: E402


class Seed(torch.nn.Module):
    """The seed model, its external a registered buffer."""

    def __init__(self, blob):
        super().__init__()
        self.register_buffer("external", blob)

    def forward(self, x):
        x = torch.sin(x)
        y = torch.ops.my_custom_library.custom_op_external(self.external, x)
        return y + 1


class SeedWithInput(torch.nn.Module):
    """The same model, its external a forward input."""

    def forward(self, x, external):
        x = torch.sin(x)
        return torch.ops.my_custom_library.custom_op_external(external, x) + 1


def main(path, as_json, bytecode_version=None):
    lib = ct.load(path)
    blob = lib.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 42,
                                     "tag": b"customop seed!!!"})
    x = torch.arange(9, dtype=torch.float32).reshape(3, 3) * 0.5

    model = Seed(blob)
    eager = model(x)
    exported = ct.export(torch.export.export(model, (x,)), lib)
    on_xla = exported.run(x)

    with_input = ct.export(torch.export.export(SeedWithInput(), (x, blob)), lib)
    on_xla_input = with_input.run(x, blob)

    if as_json:
        print(json.dumps({
            "eager": eager.tolist(),
            "buffer": on_xla.tolist(),
            "input": on_xla_input.tolist(),
            "externals": [[e.index, e.name, e.descriptor, e.size] for e in exported.externals],
            "externals_input": [[e.index, e.name, e.descriptor, e.size]
                                for e in with_input.externals],
            "text": exported.text,
            "text_input": with_input.text,
            "bytecode": (exported.bytecode_for(bytecode_version) if bytecode_version
                         else exported.bytecode).hex(),
        }))
        return
    print(exported.text)
    print("externals:", exported.externals)
    print("eager  =", eager.tolist())
    print("on XLA =", on_xla.tolist(), "(buffer)")
    print("on XLA =", on_xla_input.tolist(), "(forward input)")
    assert eager.tolist() == on_xla.tolist() == on_xla_input.tolist()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json" and not a.startswith("--bytecode-version=")]
    versions = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--bytecode-version=")]
    if len(args) != 1:
        sys.exit("usage: seed.py [--json [--bytecode-version=X.Y.Z]] path/to/libkernels.so")
    main(args[0], "--json" in sys.argv[1:], versions[0] if versions else None)
