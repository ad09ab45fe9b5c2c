"""A JAX program calling a Rust custom op through customop's Python helper.

The Rust side is the example kernel cdylib (`cargo build -p customop-example-kernels`); no
Rust model code is involved: JAX builds the program, `jax.ffi.ffi_call` emits the custom call,
and XLA runs the handler that `#[custom_op]` generated.

Run (from the repository root, with the test venv):
    cargo build -p customop-example-kernels --target-dir target/kernels
    target/xla-venv/bin/python examples/jax/call_rust_op.py target/kernels/debug/libcustomop_example_kernels.so
"""

import sys

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from customop.xla import Library  # noqa: E402


def main(path):
    lib = Library(path)
    lib.register()  # every op of the manifest, as typed-FFI targets on CPU
    print("ops:", ", ".join(op.schema_string for op in lib.entries()))

    blob = {"gain": 1.5, "bias": -2, "seed": 7, "tag": list(b"from-jax-python!")}
    packed = np.frombuffer(lib.pack("my_lib::Blob", blob), dtype=np.uint8)
    assert packed.shape == (56,)

    seed_op = jax.ffi.ffi_call(
        lib.target("my_custom_library::custom_op_external"),
        jax.ShapeDtypeStruct((3,), jnp.int8),
        has_side_effect=True,
    )

    @jax.jit
    def model(x, blob_bytes):
        y = seed_op(blob_bytes, jnp.sin(x))
        return y + jnp.int8(1)

    x = np.arange(9, dtype=np.float32).reshape(3, 3) * 0.4 - 1.0
    got = np.asarray(model(x, packed))
    # The same arithmetic in numpy, independently of Rust.
    row = np.sin(x.astype(np.float64)).astype(np.float32).sum(axis=1)
    want = np.clip(np.round(np.float32(1.5) * row) - 2, -128, 127).astype(np.int8) + np.int8(1)
    print("result:", got, "expected:", want)
    assert np.array_equal(got, want), (got, want)

    # Bytes for another layout are refused by the Rust handler, with a message.
    bad = packed.copy()
    bad[16] ^= 0xFF  # the fingerprint
    try:
        model(x, bad).block_until_ready()
    except Exception as e:  # jax raises JaxRuntimeError
        assert "fingerprint mismatch" in str(e), e
        print("bad bytes refused:", str(e).splitlines()[0][:120])
    else:
        raise AssertionError("the handler accepted bytes with a wrong fingerprint")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
