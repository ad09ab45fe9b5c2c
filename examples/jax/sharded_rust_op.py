"""A JAX program running Rust custom ops on 4 devices, each device's handler on its shard.

The ops' partition rules come from the kernel cdylib's manifest: `Library.sharded` wraps each
op in `jax.shard_map` as its rule says, so no hand-written specs are needed. The kernels'
probe counters show that each device ran the handler once, on its rows.

Run (from the repository root, with the test venv):
    cargo build -p customop-example-kernels --target-dir target/kernels
    target/xla-venv/bin/python examples/jax/sharded_rust_op.py target/kernels/debug/libcustomop_example_kernels.so
"""

import ctypes
import os
import sys

# Four virtual CPU devices: must be asked for before jax is imported.
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402
from customop.xla import Library  # noqa: E402


def probes(path):
    lib = ctypes.CDLL(path)
    out = {}
    for name in ("calls", "rows", "max_rows", "min_rows", "reset"):
        fn = getattr(lib, "example_probe_" + name)
        fn.restype = ctypes.c_int64
        out[name] = fn
    return out


def main(path):
    lib = Library(path)
    lib.register()
    probe = probes(path)
    mesh = Mesh(np.array(jax.devices()[:4]), ("x",))
    print("partition rule of the seed op:", lib.partition("my_custom_library::custom_op_external"))

    blob = {"gain": 1.5, "bias": -2, "seed": 7, "tag": list(b"sharded-from-jax")}
    packed = np.frombuffer(lib.pack("my_lib::Blob", blob), dtype=np.uint8)
    seed_op = lib.sharded("my_custom_library::custom_op_external", mesh, {"rows": "x"})

    @jax.jit
    def model(x, blob_bytes):
        return seed_op(blob_bytes, jnp.sin(x)) + jnp.int8(1)

    x = (np.arange(32, dtype=np.float32).reshape(8, 4) * 0.37 - 3.0)
    x_dev = jax.device_put(x, NamedSharding(mesh, P("x", None)))
    probe["reset"]()
    got = np.asarray(model(x_dev, packed))
    row = np.sin(x.astype(np.float64)).astype(np.float32).sum(axis=1)
    want = np.clip(np.round(np.float32(1.5) * row) - 2, -128, 127).astype(np.int8) + np.int8(1)
    print("seed op on 4 devices:", got, "expected:", want)
    assert np.array_equal(got, want), (got, want)
    seen = [probe[n]() for n in ("calls", "rows", "max_rows", "min_rows")]
    print("handler calls, rows, most and fewest rows per call:", seen)
    assert seen == [4, 8, 2, 2], seen

    # Two inputs sharing the factor: w arrives whole and is split like x's rows.
    row_scale = lib.sharded("example::row_scale", mesh, {"rows": "x"})
    w = np.arange(8, dtype=np.float32) + 0.5
    probe["reset"]()
    got = np.asarray(jax.jit(row_scale)(x_dev, w))
    assert np.allclose(got, x * w[:, None]), got
    assert [probe[n]() for n in ("calls", "max_rows")] == [4, 2]

    # Attributes, a descriptor among them, pass as keyword arguments.
    cfg = lib.pack("example::NormCfg", {"scale": 2.0, "shift": 0.5, "mode": "ScaleShift"})
    rms = lib.sharded("example::rms_norm", mesh, {"rows": "x"}, eps=np.float32(1e-3), cfg=cfg)
    got = np.asarray(jax.jit(rms)(x_dev))
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-3) * 2.0 + 0.5
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()

    # The same op unpartitioned: XLA gathers, and each device's handler sees all 8 rows.
    whole = jax.shard_map(lambda x: lib.call("example::rms_norm", x, eps=np.float32(1e-3), cfg=cfg),
                          mesh=mesh, in_specs=P(), out_specs=P())
    probe["reset"]()
    np.asarray(jax.jit(whole)(x))
    assert [probe[n]() for n in ("calls", "max_rows")] == [4, 8]
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
