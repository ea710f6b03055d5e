"""Shared by tests/python/test_*.py: where the models and the tailor command
are (ctest's environment, python/CMakeLists.txt), the command and
onnxruntime (tools/ort/run.js) as references, and a main that tells ctest
"skipped" (exit 77) when every test skipped."""

import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

SOURCE = os.environ.get("TAILOR_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLI = os.environ.get("TAILOR_CLI", os.path.join(SOURCE, "build", "tailor"))
REC = os.path.join(SOURCE, "models", "ch_PP-OCRv4_rec_infer.onnx")
STORIES = os.path.join(SOURCE, "tests", "fixtures", "stories260K.bin")


def need(path):
    if not os.path.exists(path):
        raise unittest.SkipTest(f"{path} not fetched (scripts/fetch-models.sh)")
    return path


def cli(*args, check=True):
    """Runs the tailor command; returns the CompletedProcess (text)."""
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"tailor {' '.join(map(str, args))} failed: {r.stderr}")
    return r


def cli_error(*args):
    """The one-line message of a failing command (after "tailor: error: ")."""
    r = cli(*args, check=False)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    line = r.stderr.strip().splitlines()[-1]
    prefix = "tailor: error: "
    assert line.startswith(prefix), line
    return line[len(prefix):]


def cli_run(model, feeds):
    """`tailor run MODEL -i NAME=FILE.npy ... -o DIR`: outputs by name."""
    with tempfile.TemporaryDirectory() as d:
        args = []
        for name, a in feeds.items():
            np.save(os.path.join(d, name + ".npy"), a)
            args += ["-i", f"{name}={os.path.join(d, name + '.npy')}"]
        out = os.path.join(d, "out")
        r = cli("run", model, *args, "-o", out)
        result = {}
        for line in r.stdout.splitlines():
            if line.startswith("output ") and " -> " in line:
                name = line[len("output "):].split(":")[0]
                result[name] = np.load(line.split(" -> ")[1])
        return result


def ort_unavailable():
    node_ok = subprocess.run("command -v node", shell=True, capture_output=True).returncode == 0
    if not node_ok:
        return "onnxruntime reference skipped: node not found"
    if not os.path.exists(os.path.join(SOURCE, ".ort", "node_modules", "onnxruntime-node",
                                       "package.json")):
        return "onnxruntime reference skipped: onnxruntime-node not installed (scripts/install-ort.sh)"
    return ""


def run_ort(model, feeds):
    """onnxruntime's outputs (tools/ort/run.js) by name."""
    with tempfile.TemporaryDirectory() as d:
        args = []
        for name, a in feeds.items():
            np.save(os.path.join(d, name + ".npy"), a)
            args += ["--input", f"{name}={os.path.join(d, name + '.npy')}"]
        out = os.path.join(d, "out")
        r = subprocess.run(["node", os.path.join(SOURCE, "tools", "ort", "run.js"), model, *args,
                            "--output", out], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        result = {}
        for line in r.stdout.splitlines():
            if line.startswith("output "):
                name = line.split(" ")[1]
                safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
                result[name] = np.load(os.path.join(out, safe + ".npy"))
        return result


def main():
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped and len(result.skipped) >= result.testsRun:
        sys.exit(77)
    sys.exit(0)
