"""Calls one function of customop's Python helper (python/customop) with JSON arguments.

Request on stdin: {"module": "schema", "function": "...", "args": [...]}: a module of the
package (`customop.schema`), or `tests.<name>` for a test helper next to this file
(`tests.manifest_helpers` is manifest_helpers.py).
Arguments and results that are bytes travel as {"hex": "..."}.
Answer on stdout: {"ok": true, "result": ...} or {"ok": false, "error": "..."}.
"""

import importlib
import json
import os
import sys


def decode(v):
    if isinstance(v, dict) and set(v) == {"hex"}:
        return bytes.fromhex(v["hex"])
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        return {k: decode(x) for k, x in v.items()}
    return v


def encode(v):
    if isinstance(v, (bytes, bytearray)):
        return {"hex": bytes(v).hex()}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return {k: encode(x) for k, x in v.items()}
    return v


def main():
    req = json.load(sys.stdin)
    try:
        module = req["module"]
        if module.startswith("tests."):
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            mod = importlib.import_module(module[len("tests."):])
        else:
            mod = importlib.import_module("customop." + module)
        result = getattr(mod, req["function"])(*decode(req["args"]))
        answer = {"ok": True, "result": encode(result)}
    except Exception as e:
        answer = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
