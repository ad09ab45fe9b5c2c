"""customop's XLA conformance harness.

Reads one JSON request on stdin and writes one JSON answer on stdout. A request:

    {"module": "<StableHLO text>",
     "action": "verify" | "compile" | "run",
     "inputs": [{"dtype": "float32", "shape": [3, 3], "hex": "<little-endian bytes>"}],
     "ffi": {"library": "/path/libkernels.so",
             "targets": [{"name": "target", "symbol": "handler_symbol"}]}}

The answer is {"ok": true, "outputs": [...same form as inputs...]} or
{"ok": false, "stage": "parse" | "verify" | "load" | "register" | "compile" | "execute",
 "error": "<message>"}.

Parsing and verification use jaxlib's MLIR (the dialects jax registers, StableHLO among them);
compilation and execution use jaxlib's XLA CPU client. Nothing here knows about customop's Rust
code: it is the independent judge of what the Rust side emits.
"""

import ctypes
import json
import sys


def _fail(stage, error):
    return {"ok": False, "stage": stage, "error": str(error)}


def parse_and_verify(text):
    """Parse `text` with jaxlib's MLIR and verify it. Returns None, or an error answer."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    ctx = mlir.make_ir_context()
    diagnostics = []

    def handler(d):
        diagnostics.append(str(d))
        for note in d.notes:
            diagnostics.append("  note: " + str(note))
        return True

    ctx.attach_diagnostic_handler(handler)
    with ctx:
        try:
            module = ir.Module.parse(text)
        except Exception as e:  # jaxlib raises MLIRError with the diagnostics inside
            return _fail("parse", "\n".join([str(e)] + diagnostics))
        try:
            ok = module.operation.verify()
        except Exception as e:
            return _fail("verify", "\n".join([str(e)] + diagnostics))
        if not ok:
            return _fail("verify", "\n".join(diagnostics) or "verification failed")
    return None


_LOADED = {}


def register_ffi(spec):
    """Load a cdylib and register its handlers as typed-FFI targets on CPU."""
    import jax
    import jax.extend.backend

    library = spec["library"]
    try:
        lib = _LOADED.get(library) or ctypes.CDLL(library)
    except OSError as e:
        return _fail("load", e)
    _LOADED[library] = lib
    if "targets" not in spec:
        # A customop cdylib: register every op of its manifest (customop's Python package,
        # installed into the venv by scripts/setup.sh).
        from customop.xla import Library

        try:
            Library(library).register()
        except Exception as e:
            return _fail("register", e)
        return None
    for target in spec.get("targets", []):
        try:
            fn = getattr(lib, target["symbol"])
        except AttributeError as e:
            return _fail("load", e)
        try:
            jax.ffi.register_ffi_target(
                target["name"], jax.ffi.pycapsule(fn), platform="cpu", api_version=1
            )
        except Exception as e:
            return _fail("register", e)
    return None


def _to_numpy(spec):
    import numpy as np

    try:
        dtype = np.dtype(spec["dtype"])
    except TypeError:
        import ml_dtypes   # bfloat16, float8_e4m3fn, float8_e5m2: jax's own dtypes

        dtype = np.dtype(getattr(ml_dtypes, spec["dtype"]))
    data = bytes.fromhex(spec["hex"])
    return np.frombuffer(data, dtype=dtype).reshape(spec["shape"]).copy()


def _from_numpy(array):
    import numpy as np

    a = np.asarray(array)
    # ascontiguousarray makes a 0-d array 1-d: keep scalars rank 0.
    a = np.ascontiguousarray(a) if a.ndim else a.copy()
    return {
        "dtype": str(a.dtype),
        "shape": list(a.shape),
        "hex": a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes().hex(),
    }


def compile_text(text):
    import jax
    import jax.extend.backend

    backend = jax.extend.backend.get_backend("cpu")
    device = backend.local_devices()[0]
    return backend, device, backend.compile_and_load(text, [device])


def call_probes(probes):
    """Calls each `int64_t symbol(void)` named in `probes` (handler-side counters)."""
    out = []
    for p in probes:
        lib = _LOADED.get(p["library"]) or ctypes.CDLL(p["library"])
        _LOADED[p["library"]] = lib
        fn = getattr(lib, p["symbol"])
        fn.restype = ctypes.c_int64
        out.append(int(fn()))
    return out


def handle(request):
    text = request["module"]
    if "module_hex" in request:
        text = bytes.fromhex(request["module_hex"])
    action = request.get("action", "run")
    err = parse_and_verify(text)
    if err is not None or action == "verify":
        return err or {"ok": True, "outputs": []}
    if request.get("ffi"):
        err = register_ffi(request["ffi"])
        if err is not None:
            return err
    if request.get("mesh"):
        return run_sharded(text, request)
    try:
        backend, device, exe = compile_text(text)
    except Exception as e:
        return _fail("compile", e)
    if action == "compile":
        return {"ok": True, "outputs": []}
    import jax

    runs = request.get("runs", [request.get("inputs", [])])
    results = []
    for inputs in runs:
        try:
            args = [jax.device_put(_to_numpy(i), device) for i in inputs]
            outs = exe.execute(args)
            results.append({"ok": True, "outputs": [_from_numpy(o) for o in outs]})
        except Exception as e:
            results.append(_fail("execute", e))
    if "runs" in request:
        return {"ok": True, "runs": results, "probes": call_probes(request.get("probes", []))}
    return results[0]


def _mesh_devices(request):
    n = 1
    for _, size in request.get("mesh") or []:
        n *= size
    return n


def compile_sharded(text, request):
    """Compiles for SPMD over the request's mesh (Shardy), one partition per device."""
    import jax
    import jax.extend.backend
    import jaxlib

    n = _mesh_devices(request)
    backend = jax.extend.backend.get_backend("cpu")
    devices = backend.local_devices()[:n]
    opts = jaxlib._jax.CompileOptions()
    opts.num_replicas = 1
    opts.num_partitions = n
    opts.executable_build_options.use_spmd_partitioning = True
    opts.executable_build_options.use_shardy_partitioner = True
    return devices, backend.compile_and_load(text, devices, opts)


def _partition_spec(spec):
    from jax.sharding import PartitionSpec as P

    return P(*[None if not axes else (axes[0] if len(axes) == 1 else tuple(axes)) for axes in spec])


def run_sharded(text, request):
    """Runs each input set on the mesh: inputs placed by their `spec`, outputs assembled from
    their shards by `output_specs`, with every shard's shape reported. Each input set is
    executed `repeat` times (default 1), each execution's wall time in `seconds`; with
    `warmup_probes`, one untimed execution comes first and those functions are called after it
    (to reset handler-side counters). `probes` are read after the last run."""
    import time
    import numpy as np
    import jax
    from jax.sharding import Mesh, NamedSharding

    names = [a for a, _ in request["mesh"]]
    sizes = [s for _, s in request["mesh"]]
    try:
        devices, exe = compile_sharded(text, request)
    except Exception as e:
        return _fail("compile", e)
    mesh = Mesh(np.array(devices).reshape(sizes), tuple(names))
    results = []
    for inputs in request["runs"]:
        try:
            args = [jax.device_put(_to_numpy(i), NamedSharding(mesh, _partition_spec(i.get("spec") or [[] for _ in i["shape"]])))
                    for i in inputs]
            seconds = []
            if request.get("warmup_probes"):
                for shards in exe.execute_sharded(args).disassemble_into_single_device_arrays():
                    for shard in shards:
                        shard.block_until_ready()
                call_probes(request["warmup_probes"])
            for _ in range(max(1, int(request.get("repeat", 1)))):
                start = time.perf_counter()
                out = exe.execute_sharded(args)
                per_output = out.disassemble_into_single_device_arrays()
                for shards in per_output:
                    for shard in shards:
                        shard.block_until_ready()
                seconds.append(time.perf_counter() - start)
            outputs, shard_shapes = [], []
            for k, shards in enumerate(per_output):
                spec = request["output_specs"][k]
                local = np.asarray(shards[0])
                glob = np.zeros([d * _parts(spec[i], names, sizes) for i, d in enumerate(local.shape)], local.dtype)
                for dev, shard in enumerate(shards):
                    coords = np.unravel_index(dev, sizes)
                    index = tuple(
                        slice(c * d, (c + 1) * d) for c, d in
                        ((_block(spec[i], names, sizes, coords), d) for i, d in enumerate(local.shape)))
                    glob[index] = np.asarray(shard)
                outputs.append(_from_numpy(glob))
                shard_shapes.append([list(np.asarray(s).shape) for s in shards])
            results.append({"ok": True, "outputs": outputs, "shard_shapes": shard_shapes,
                            "seconds": seconds})
        except Exception as e:
            results.append(_fail("execute", e))
    return {"ok": True, "runs": results, "probes": call_probes(request.get("probes", []))}


def _parts(axes, names, sizes):
    n = 1
    for a in axes:
        n *= sizes[names.index(a)]
    return n


def _block(axes, names, sizes, coords):
    b = 0
    for a in axes:
        i = names.index(a)
        b = b * sizes[i] + int(coords[i])
    return b


def main():
    request = json.load(sys.stdin)
    if request.get("mesh"):
        # Virtual CPU devices must be asked for before jax is imported.
        import os

        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_force_host_platform_device_count=%d" % _mesh_devices(request))
    # Keep 64-bit inputs 64-bit: without this, jax.device_put turns float64/int64 into 32 bits.
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        answer = handle(request)
    except Exception as e:  # an answer, not a Python traceback, whatever goes wrong
        import traceback

        answer = _fail("harness", "".join(traceback.format_exception(e)))
    json.dump(answer, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
