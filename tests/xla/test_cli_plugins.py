"""The `customop` command line's plugins and compile cache: `customop plugin list` names every
plugin customop knows with what it reads, `path`, `verify` and `install` (a named plugin or the
default; a wrong wheel refused), `customop run --plugin`, and `customop cache path | clear` with
the cache filled, served, a corrupt entry compiled again, two processes compiling into it at
once, a folder others can write refused by name, and `clear` removing the cache's own files
only. Run once (with jax 0.12's venv): none of it depends on the jax version.

Run: CUSTOMOP_CLI=target/debug/customop CUSTOMOP_SEED_MODULE=target/seed.mlir \\
     CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so PYTHONPATH=python \\
     target/xla-venv/bin/python -m unittest tests/xla/test_cli_plugins.py
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import BLOB, CLI, PATH, SEED, X, _json, _npy, cli  # noqa: E402

RESULT = "result[0]: 3xi8=[3, 5, -2]"


def cache_entries(folder):
    """The compile cache's entries in `folder` (`<sha256>.pjrt`; its key, `.customop-key`, is
    not one)."""
    return sorted(e for e in os.listdir(folder) if re.fullmatch(r"[0-9a-f]{64}\.pjrt", e))


class Plugin(unittest.TestCase):
    def test_list_path_verify_and_install(self):
        code, stdout, err = cli("plugin", "list")
        self.assertEqual(code, 0, err)
        lines = stdout.strip().splitlines()
        self.assertRegex(lines[0], r"^\* lammps-jax-pjrt-cpu==0\.11\.2 +PJRT 0\.115 +StableHLO "
                         r"0\.9\.0 to 1\.20\.0 +XLA FFI 0\.4 +installed: ")
        self.assertRegex(lines[1], r"^  fastatomstruct-xla-cpu==2026\.6\.23 +PJRT 0\.106 +"
                         r"StableHLO 0\.9\.0 to 1\.16\.1 +XLA FFI 0\.3 +installed: ")
        self.assertRegex(lines[2], r"^  xla-cpu-pjrt==0\.0\.1 +PJRT 0\.81 +StableHLO 0\.9\.0 to "
                         r"1\.13\.3 +XLA FFI 0\.2 +installed: ")
        code, stdout, err = cli("plugin", "verify")
        self.assertEqual(code, 0, err)
        self.assertIn("pjrt_c_api_cpu_plugin.so: sha256 ad1309ac", stdout)
        code, stdout, err = cli("plugin", "verify", "xla-cpu-pjrt")
        self.assertEqual(code, 0, err)
        self.assertIn("xla_cpu_pjrt.so: sha256 88c3f28c", stdout)
        code, _, err = cli("plugin", "verify", "xla-cpu-pjrt==9")
        self.assertEqual(code, 5, err)
        self.assertIn("`xla-cpu-pjrt==9` is not a plugin customop knows; it knows "
                      "lammps-jax-pjrt-cpu==0.11.2, fastatomstruct-xla-cpu==2026.6.23, "
                      "xla-cpu-pjrt==0.0.1", err)
        empty = tempfile.mkdtemp()
        code, stdout, _ = cli("plugin", "path", env={"CUSTOMOP_CACHE": empty})
        self.assertEqual(stdout.strip(), os.path.join(
            empty, "pjrt-lammps-jax-pjrt-cpu-0.11.2", "pjrt_c_api_cpu_plugin.so")
            + " (not installed: `customop plugin install`)")
        code, stdout, _ = cli("plugin", "path", "xla-cpu-pjrt", env={"CUSTOMOP_CACHE": empty})
        self.assertTrue(stdout.startswith(os.path.join(empty, "pjrt-cpu-0.0.1",
                                                       "xla_cpu_pjrt.so")), stdout)
        code, _, err = cli("plugin", "verify", env={"CUSTOMOP_CACHE": empty})
        self.assertEqual(code, 5, err)
        self.assertIn("not installed", err)
        bogus = os.path.join(empty, "lammps_jax_pjrt_cpu-0.11.2-py3-none-manylinux_2_27_x86_64.whl")
        with open(bogus, "wb") as f:
            f.write(b"PK\x05\x06" + bytes(18))
        code, _, err = cli("plugin", "install", "--wheel", bogus, env={"CUSTOMOP_CACHE": empty})
        self.assertEqual(code, 5, err)
        self.assertIn("not the pinned 1319390d", err)
        # Downloaded by pip without its dependencies (from pip's cache after the set-up's
        # download), checked, installed: then a runner finds it there.
        code, stdout, err = cli("plugin", "install", env={"CUSTOMOP_CACHE": empty,
                                                          "CUSTOMOP_PYTHON": sys.executable})
        self.assertEqual(code, 0, err)
        self.assertIn("lammps-jax-pjrt-cpu==0.11.2, sha256 ad1309ac", stdout)
        code, stdout, err = cli("plugin", "verify", env={"CUSTOMOP_CACHE": empty})
        self.assertEqual(code, 0, err)
        code, stdout, err = cli("plugin", "install", env={"CUSTOMOP_CACHE": empty})
        self.assertIn("already installed", stdout)
        code, stdout, err = cli("run", SEED, "--ops", PATH, "--input", _npy(X), "--external",
                                "external=" + _json(BLOB), env={"CUSTOMOP_CACHE": empty})
        self.assertEqual((code, stdout.strip()), (0, "result[0]: 3xi8=[3, 5, -2]"), err)
        # A plugin that is not installed there is named, with how to install it.
        code, _, err = cli("run", SEED, "--ops", PATH, "--input", _npy(X), "--external",
                           "external=" + _json(BLOB), "--plugin", "xla-cpu-pjrt",
                           env={"CUSTOMOP_CACHE": empty})
        self.assertEqual(code, 5, err)
        self.assertIn("pjrt-cpu-0.0.1/xla_cpu_pjrt.so", err)


class Cache(unittest.TestCase):
    def test_the_compile_cache_fills_serves_and_clears(self):
        """The first run of a program compiles it and keeps the executable; the next loads it
        (and gives the same result); `customop cache clear` empties the folder."""
        folder = tempfile.mkdtemp()
        env = {"CUSTOMOP_COMPILE_CACHE": folder}
        code, stdout, err = cli("cache", "path", env=env)
        self.assertEqual((code, stdout.strip()), (0, folder), err)
        args = ["run", SEED, "--ops", PATH, "--input", _npy(X), "--external",
                "external=" + _json(BLOB)]
        for plugin in [None, "xla-cpu-pjrt"]:
            extra = ["--plugin", plugin] if plugin else []
            code, stdout, err = cli(*args, *extra, env=env)
            self.assertEqual((code, stdout.strip()), (0, "result[0]: 3xi8=[3, 5, -2]"), err)
        # Made private, with its key.
        self.assertEqual(os.stat(folder).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(os.path.join(folder, ".customop-key")).st_mode & 0o777, 0o600)
        entries = cache_entries(folder)
        self.assertEqual(len(entries), 2, entries)   # one a plugin
        stamp = {e: os.stat(os.path.join(folder, e)).st_mtime_ns for e in entries}
        code, stdout, err = cli(*args, env=env)
        self.assertEqual((code, stdout.strip()), (0, "result[0]: 3xi8=[3, 5, -2]"), err)
        # Served, not written again.
        self.assertEqual({e: os.stat(os.path.join(folder, e)).st_mtime_ns for e in entries},
                         stamp)
        # A corrupt entry is compiled again and replaced, never run.
        victim = os.path.join(folder, entries[0])
        with open(victim, "r+b") as f:
            f.seek(-1, 2)
            last = f.read(1)
            f.seek(-1, 2)
            f.write(bytes([last[0] ^ 0xFF]))
        for plugin in [None, "xla-cpu-pjrt"]:
            extra = ["--plugin", plugin] if plugin else []
            code, stdout, err = cli(*args, *extra, env=env)
            self.assertEqual((code, stdout.strip()), (0, "result[0]: 3xi8=[3, 5, -2]"), err)
        # The corrupt entry was replaced by a whole one; the other left as it was.
        self.assertNotEqual(os.stat(victim).st_mtime_ns, stamp[entries[0]])
        self.assertEqual(os.stat(os.path.join(folder, entries[1])).st_mtime_ns,
                         stamp[entries[1]])
        code, stdout, err = cli("cache", "clear", env=env)
        self.assertEqual((code, stdout.strip()),
                         (0, "%s: 2 compiled executables removed" % folder), err)
        self.assertEqual(os.listdir(folder), [".customop-key"])
        code, _, err = cli("cache", "clear", env={"CUSTOMOP_COMPILE_CACHE": "off"})
        self.assertEqual(code, 3, err)
        self.assertIn("the compile cache is off (CUSTOMOP_COMPILE_CACHE=off)", err)

    def test_two_processes_compiling_into_an_empty_cache_at_once(self):
        """Both run the program, each writing the entry through a file of its own; the entry
        left is whole, and serves a third run."""
        folder = tempfile.mkdtemp()
        env = {**os.environ, "CUSTOMOP_COMPILE_CACHE": folder}
        args = [CLI, "run", SEED, "--ops", PATH, "--input", _npy(X), "--external",
                "external=" + _json(BLOB)]
        runs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(2)]
        for p in runs:
            out, err = p.communicate(timeout=300)
            self.assertEqual((p.returncode, out.strip()), (0, RESULT), err)
        (entry,) = cache_entries(folder)
        self.assertEqual([e for e in os.listdir(folder) if e.endswith(".tmp")], [])
        written = os.stat(os.path.join(folder, entry)).st_mtime_ns
        code, stdout, err = cli(*args[1:], env={"CUSTOMOP_COMPILE_CACHE": folder})
        self.assertEqual((code, stdout.strip()), (0, RESULT), err)
        self.assertEqual(os.stat(os.path.join(folder, entry)).st_mtime_ns, written)

    def test_a_folder_others_can_write_is_named_and_not_used(self):
        """Its executables are machine code: a folder others can write (as /tmp is) is named
        on stderr, the program compiled without it, nothing written to it."""
        folder = tempfile.mkdtemp()
        os.chmod(folder, 0o777)
        args = ["run", SEED, "--ops", PATH, "--input", _npy(X), "--external",
                "external=" + _json(BLOB)]
        code, stdout, err = cli(*args, env={"CUSTOMOP_COMPILE_CACHE": folder})
        self.assertEqual((code, stdout.strip()), (0, RESULT), err)
        # (Its group may be this user's alone, which may write it: others may not.)
        self.assertRegex(err, r"customop: the compile cache %s is not used: %s can be written "
                         r"by (its group|others) \(mode 777; `chmod go-w " % (
                             re.escape(folder), re.escape(os.path.realpath(folder))))
        self.assertEqual(os.listdir(folder), [])

    def test_clear_removes_only_the_caches_own_files(self):
        """`CUSTOMOP_COMPILE_CACHE=/tmp` must not cost a user their `/tmp/*.tmp`: files named
        like the cache's but not of its names stay."""
        folder = tempfile.mkdtemp()
        theirs = ["notes.tmp", "draft.pjrt", ".x.tmp", "A" * 64 + ".pjrt"]
        for name in theirs:
            with open(os.path.join(folder, name), "w") as f:
                f.write("keep me")
        args = ["run", SEED, "--ops", PATH, "--input", _npy(X), "--external",
                "external=" + _json(BLOB)]
        env = {"CUSTOMOP_COMPILE_CACHE": folder}
        self.assertEqual(cli(*args, env=env)[0], 0)
        self.assertEqual(len(cache_entries(folder)), 1)
        code, stdout, err = cli("cache", "clear", env=env)
        self.assertEqual((code, stdout.strip()),
                         (0, "%s: 1 compiled executables removed" % folder), err)
        self.assertEqual(sorted(os.listdir(folder)), sorted(theirs + [".customop-key"]))


if __name__ == "__main__":
    unittest.main()
