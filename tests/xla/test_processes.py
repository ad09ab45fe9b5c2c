"""Several processes: two processes on this machine join one JAX program (`jax.distributed`
with a local coordinator, 2 CPU devices each, gloo collectives for XLA's CPU client), and run
customop ops on the 4 devices of a mesh that spans both: a partitioned op (`example::row_scale`,
its rows and its weights split by one factor) and the seed op, whose external is replicated.
Each process's handlers run on its own devices' rows only (the kernels' probe counters), and
the result, gathered across processes, equals the same program run by one process on 4
devices, and numpy.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_processes.py
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import unittest

import numpy as np

PATH = os.environ["CUSTOMOP_KERNELS"]

# One program, run by each process: `PROCESSES` processes of `LOCAL` devices each.
PROGRAM = textwrap.dedent("""
    import ctypes, json, os, sys
    n_proc, pid, port, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    local = 4 // n_proc
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=%d" % local
    import jax
    if n_proc > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address="127.0.0.1:" + port,
                                   num_processes=n_proc, process_id=pid)
    import numpy as np
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from jax.experimental import multihost_utils
    from customop.xla import Library

    lib = Library(path)
    lib.register()
    probe = {n: getattr(lib.cdll, "example_probe_" + n) for n in ("calls", "rows", "max_rows", "reset")}
    for f in probe.values():
        f.restype = ctypes.c_int64
    mesh = Mesh(np.array(jax.devices()), ("x",))
    x = np.arange(32, dtype=np.float32).reshape(8, 4) * 0.37 - 3.0
    w = np.arange(8, dtype=np.float32) + 0.5
    packed = np.frombuffer(lib.pack("my_lib::Blob", {"gain": 1.5, "bias": -2, "seed": 7,
                                                     "tag": list(b"two processes!!!")}), np.uint8)
    # Each process makes only its own devices' shards (the callback is asked for those).
    rows = NamedSharding(mesh, P("x", None))
    xs = jax.make_array_from_callback(x.shape, rows, lambda i: x[i])
    ws = jax.make_array_from_callback(w.shape, NamedSharding(mesh, P("x")), lambda i: w[i])
    blob = jax.make_array_from_callback(packed.shape, NamedSharding(mesh, P()), lambda i: packed[i])
    seed_op = lib.sharded("my_custom_library::custom_op_external", mesh, {"rows": "x"})
    row_scale = lib.sharded("example::row_scale", mesh, {"rows": "x"})

    @jax.jit
    def model(x, w, blob):
        scaled = row_scale(x, w)
        return scaled, seed_op(blob, jnp.sin(scaled)) + jnp.int8(1)

    probe["reset"]()
    scaled, seeded = model(xs, ws, blob)
    scaled, seeded = (multihost_utils.process_allgather(a, tiled=True) if n_proc > 1 else a
                      for a in (scaled, seeded))
    # Every device's calls have run before the probe is read (dispatch is asynchronous).
    scaled, seeded = jax.block_until_ready((scaled, seeded))
    print(json.dumps({"pid": pid, "devices": len(jax.devices()),
                      "local": len(jax.local_devices()),
                      "probe": [probe[n]() for n in ("calls", "rows", "max_rows")],
                      "scaled": np.asarray(scaled).tolist(),
                      "seeded": np.asarray(seeded).tolist()}))
""")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(n_proc):
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM, str(n_proc), str(pid), port, PATH],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for pid in range(n_proc)]
    out = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=300)
        finally:
            p.kill()
        if p.returncode != 0:
            raise AssertionError("process failed (%d):\n%s" % (p.returncode, stderr[-3000:]))
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


class SeveralProcesses(unittest.TestCase):
    def test_two_processes_equal_one_process_and_numpy(self):
        two = run(2)
        (one,) = run(1)
        x = np.arange(32, dtype=np.float32).reshape(8, 4) * 0.37 - 3.0
        w = np.arange(8, dtype=np.float32) + 0.5
        scaled = x * w[:, None]
        row = np.sin(scaled.astype(np.float64)).astype(np.float32).sum(axis=1)
        seeded = np.clip(np.round(np.float32(1.5) * row) - 2, -128, 127).astype(np.int8) + 1
        self.assertEqual((one["devices"], one["local"]), (4, 4))
        np.testing.assert_allclose(np.asarray(one["scaled"], np.float32), scaled, rtol=1e-6)
        self.assertEqual(one["seeded"], seeded.tolist())
        for p in two:
            # The mesh spans both processes; each has 2 of its 4 devices.
            self.assertEqual((p["devices"], p["local"]), (4, 2), p["pid"])
            # The same results, gathered, in every process.
            self.assertEqual(p["scaled"], one["scaled"], p["pid"])
            self.assertEqual(p["seeded"], one["seeded"], p["pid"])
            # Each process ran the two ops' handlers on its 2 devices only, 2 rows each:
            # 4 calls, 8 rows (one process alone: 8 calls, 16 rows).
            self.assertEqual(p["probe"], [4, 8, 2], p["pid"])
        self.assertEqual(one["probe"], [8, 16, 2])


if __name__ == "__main__":
    unittest.main()
