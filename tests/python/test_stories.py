"""The Python API end to end on stories260K (a llama2.c checkpoint): load →
profile → plan → compress → run, checked against the checkpoint's own header
(read here with numpy) and the `tailor` command's output."""

import math
import os
import re
import struct
import tempfile
import unittest

import numpy as np

import tailor
from tailor_test_util import STORIES, cli, cli_run, need, main

SCHEMES = ["int8", "int4"]


def header(path):
    """llama2.c's Config: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len."""
    with open(path, "rb") as f:
        return struct.unpack("<7i", f.read(28))


class Stories(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need(STORIES)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = tailor.load(STORIES)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_layers_follow_the_header(self):
        dim, hidden, n_layers, n_heads, n_kv, vocab, _ = header(STORIES)
        kv_dim = dim // n_heads * n_kv
        layers = self.model.layers()
        self.assertEqual(self.model.format, "llama2c")
        per_layer = [(dim, dim), (kv_dim, dim), (kv_dim, dim), (dim, dim), (hidden, dim),
                     (dim, hidden), (hidden, dim)]
        expected = [(abs(vocab), dim)] + per_layer * n_layers + ([] if vocab > 0 else [(abs(vocab), dim)])
        self.assertEqual([l.shape_out_in for l in layers], expected)
        self.assertTrue(all(l.op is None for l in layers))  # a checkpoint has no graph
        self.assertEqual([l.numel for l in layers], [a * b for a, b in expected])

    def test_profile_plan(self):
        events = []
        prof = tailor.profile(self.model, schemes=SCHEMES, progress=events.append)
        self.assertEqual(len(events), len(prof.layers))
        self.assertEqual(events[-1].done, events[-1].total)
        p = tailor.plan(prof, budget="4.5bpw", solver="greedy")
        numel = sum(l.numel for l in prof.layers)
        self.assertEqual(p.budget_bytes, prof.fixed_bytes + math.floor(4.5 * numel / 8))
        self.assertLessEqual(p.total_bytes, p.budget_bytes)
        self.assertEqual(p.solver, "greedy")
        self.assertEqual(set(p.choices), {l.name for l in prof.layers})
        self.assertEqual(p.total_bytes, prof.fixed_bytes + sum(
            prof.layer(n).candidate(c).bytes for n, c in p.choices.items()))

    def test_run_equals_the_command(self):
        ids = np.array([[1, 403, 407, 261, 9]], np.int64)
        out = tailor.run(self.model, {"input_ids": ids})  # KV-cache pasts fed empty
        ref = cli_run(STORIES, {"input_ids": ids})
        self.assertEqual(list(out), list(ref))
        for name in ref:
            np.testing.assert_array_equal(out[name], ref[name])
        self.assertEqual(out["logits"].shape, (1, 5, abs(header(STORIES)[5])))
        with self.assertRaises(tailor.Error) as e:
            tailor.run(self.model, {"input_ids": np.array([[1, 100000]], np.int64)})
        self.assertIn("input_ids", str(e.exception))
        with self.assertRaises(tailor.Error) as e:  # numpy has dtypes tailor lacks
            tailor.run(self.model, {"input_ids": ids.astype(np.complex64)})
        self.assertEqual(e.exception.source, "input 'input_ids'")
        self.assertIn("complex64", e.exception.message)
        with self.assertRaises(tailor.Error) as e:  # and tailor's run refuses the wrong one
            tailor.run(self.model, {"input_ids": ids.astype(np.int32)})
        self.assertIn("input_ids", str(e.exception))

    def test_compress_reports_what_the_command_prints(self):
        out = os.path.join(self.tmp.name, "py")
        events = []
        r = tailor.compress(STORIES, "50%", out, progress=events.append, schemes=SCHEMES,
                            sequences=2, length=16, cache=False)
        text = cli("compress", STORIES, "--budget", "50%", "--schemes", ",".join(SCHEMES),
                   "--sequences", 2, "--length", 16, "--no-cache", "-o",
                   os.path.join(self.tmp.name, "cli")).stdout
        self.assertEqual(r.kind, "llama")
        total = int(re.search(r"total ([\d,]+) of", text).group(1).replace(",", ""))
        self.assertEqual(r.total_bytes, total)
        self.assertEqual(r.damage_metric, "kl")
        m = re.search(r"predicted ([\d.e+-]+) \(.*measured ([\d.e+-]+) \(verification", text)
        self.assertEqual(f"{r.predicted_damage:.4g}", m.group(1))
        self.assertEqual(f"{r.measured_damage:.4g}", m.group(2))
        # The intervals over the inputs, and the written plan run whole on the
        # calibration sequences (the guard's figure), as printed.
        low, high = r.measured_damage_interval
        self.assertLessEqual(low, r.measured_damage)
        self.assertGreaterEqual(high, r.measured_damage)
        self.assertIn(f"(verification inputs, 95% {low:.4g}–{high:.4g})", text)
        w = re.search(r"run whole on the calibration inputs \(.*?\) ([\d.e+-]+) "
                      r"\(95% ([\d.e+-]+)–([\d.e+-]+)\)", text)
        self.assertEqual(f"{r.calibration_damage:.4g}", w.group(1))
        self.assertEqual([f"{x:.4g}" for x in r.calibration_damage_interval],
                         [w.group(2), w.group(3)])
        # The note on intervals past 2× either way, exactly when one is.
        wide = any(lo < 0.5 * x or hi > 2 * x for x, (lo, hi) in
                   [(r.measured_damage, r.measured_damage_interval),
                    (r.calibration_damage, r.calibration_damage_interval)])
        self.assertEqual("the draw of inputs alone moves a figure" in text, wide)
        kl = re.search(r"mean KL ([\d.]+) ± ([\d.]+) nats", text)
        self.assertEqual(f"{r.kld['mean_kl']:.5f}", kl.group(1))
        top1 = re.search(r"top-1 agreement: original ([\d.]+), compressed ([\d.]+)", text)
        self.assertEqual(r.metric["name"], "top-1 agreement")
        self.assertEqual(f"{r.metric['compressed']:.4f}", top1.group(2))
        self.assertEqual(set(r.files), {"model.onnx", "plan.json", "weights.safetensors"})
        self.assertTrue(events and all(isinstance(e.message, str) for e in events))
        # The compressed decoder runs from Python as the command runs it.
        ids = np.array([[1, 403, 407]], np.int64)
        path = os.path.join(out, "model.onnx")
        got = tailor.run(tailor.load(path), {"input_ids": ids})
        np.testing.assert_array_equal(got["logits"], cli_run(path, {"input_ids": ids})["logits"])


if __name__ == "__main__":
    main()
