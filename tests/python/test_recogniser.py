"""The Python API end to end on the PP-OCRv4 recogniser: load → profile →
plan → compress → run, each checked against a value derived independently
(numpy from the ONNX weights, the `tailor` command, onnxruntime)."""

import json
import math
import os
import shutil
import tempfile
import threading
import time
import unittest

import numpy as np

import tailor
from tailor_test_util import REC, SOURCE, cli, cli_error, cli_run, need, ort_unavailable, run_ort, main

SCHEMES = ["int8", "int4"]


def f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float64)


def int8_reference(w):
    """DESIGN.md's int8 on W [out, in]: s_o = f16(max|W_o|/127) (1 for a zero
    row), q = clamp(round_half_away(W/s), ±127); (rel_error, bytes)."""
    w = w.astype(np.float64)
    m = np.abs(w).max(axis=1)
    s = np.where(m == 0, 1.0, f16(m / 127.0))
    x = w / s[:, None]
    q = np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), -127, 127)
    err = np.linalg.norm(w - q * s[:, None]) / np.linalg.norm(w)
    return err, w.size + 2 * w.shape[0]


def onnx_weights(path):
    """Every initializer and Constant value of the ONNX file, by name (onnx's reader)."""
    try:
        import onnx
    except ImportError:
        raise unittest.SkipTest("python3-onnx not installed (scripts/install-deps.sh)")
    from onnx import numpy_helper
    g = onnx.load(path).graph
    out = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    out[n.output[0]] = numpy_helper.to_array(a.t)
    return out


class Recogniser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need(REC)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = tailor.load(REC)
        cls.events = []
        cls.profile = tailor.profile(cls.model, schemes=SCHEMES, progress=cls.events.append)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_layers_match_the_onnx_file(self):
        inits = onnx_weights(REC)
        layers = {l.name: l for l in self.model.layers()}
        head = layers["linear_85.w_0"]
        self.assertEqual(head.op, "MatMul")
        self.assertEqual(head.shape, inits["linear_85.w_0"].shape)
        self.assertEqual(head.shape_out_in, (head.shape[1], head.shape[0]))  # MatMul B is [in, out]
        conv = layers["conv2d_10.w_0"]
        self.assertEqual(conv.op, "Conv")
        dims = inits["conv2d_10.w_0"].shape
        self.assertEqual(conv.shape_out_in, (dims[0], int(np.prod(dims[1:]))))
        for l in layers.values():
            self.assertEqual(l.numel, inits[l.name].size)

    def test_profile_candidates_are_the_definitions(self):
        w = onnx_weights(REC)["linear_85.w_0"]
        layer = self.profile.layer("linear_85.w_0")
        self.assertEqual(layer.labels, SCHEMES)
        err, nbytes = int8_reference(w.T)
        c = layer.candidate("int8")
        self.assertEqual(c.bytes, nbytes)
        self.assertAlmostEqual(c.rel_error, err, delta=1e-6 * err)
        self.assertIsNone(c.output_damage)
        self.assertEqual(layer.bytes.dtype, np.int64)
        np.testing.assert_array_equal(layer.bytes, [c.bytes for c in layer.candidates])
        self.assertTrue(np.isnan(layer.output_damage).all())

    def test_profile_equals_the_command(self):
        out = self.path("profile.json")
        cli("profile", REC, "--schemes", ",".join(SCHEMES), "-o", out)
        with open(out) as f:
            self.assertEqual(json.loads(self.profile.to_json()), json.load(f))

    def test_progress_called_per_layer(self):
        n = len(self.profile.layers)
        self.assertEqual(len(self.events), n)
        self.assertEqual([e.done for e in self.events], list(range(1, n + 1)))
        self.assertTrue(all(e.stage == "profile" and e.total == n for e in self.events))

    def test_output_damage_is_the_kl_of_the_swapped_model(self):
        import onnx
        from onnx import numpy_helper
        x = np.random.default_rng(5).uniform(-1, 1, (1, 3, 48, 320)).astype(np.float32)
        prof = tailor.profile(self.model, schemes=["int8"], layers="^linear_85\\.w_0$",
                              damage_inputs=[{"x": x}])
        self.assertEqual(prof.output_metric, "kl")
        d = prof.layer("linear_85.w_0").candidate("int8").output_damage
        self.assertIsNotNone(d)
        self.assertEqual(tailor.plan(prof, budget="90%").objective_name, "output")
        # By definition: the model with only this weight replaced by its int8
        # decode (numpy), both run; mean KL(P || Q) over the output rows.
        m = onnx.load(REC)
        w = onnx_weights(REC)["linear_85.w_0"].astype(np.float64).T  # [out, in]
        mx = np.abs(w).max(axis=1)
        s = np.where(mx == 0, 1.0, f16(mx / 127.0))
        q = np.clip(np.sign(w / s[:, None]) * np.floor(np.abs(w / s[:, None]) + 0.5), -127, 127)
        decoded = (q * s[:, None]).astype(np.float32).T  # back to MatMul's [in, out]
        new = numpy_helper.from_array(np.ascontiguousarray(decoded), "linear_85.w_0")
        for i, t in enumerate(m.graph.initializer):
            if t.name == "linear_85.w_0":
                m.graph.initializer[i].CopyFrom(new)
        for n in m.graph.node:
            if n.op_type == "Constant" and n.output[0] == "linear_85.w_0":
                n.attribute[0].t.CopyFrom(new)
        swapped = self.path("swapped.onnx")
        onnx.save(m, swapped)
        p = tailor.run(self.model, {"x": x}, passes="none")["softmax_11.tmp_0"].astype(np.float64)
        qq = tailor.run(tailor.load(swapped), {"x": x}, passes="none")["softmax_11.tmp_0"]
        qq = np.maximum(qq.astype(np.float64), 1e-30)
        kl = (p * (np.log(np.maximum(p, 1e-300)) - np.log(qq))).sum(axis=-1).mean()
        self.assertAlmostEqual(d, kl, delta=1e-3 * kl + 1e-9)

    def test_plan_objective_and_bytes(self):
        p = tailor.plan(self.profile, budget="30%")
        self.assertEqual(p.budget_bytes, math.floor(0.30 * self.profile.dense_bytes))
        total_numel = sum(l.numel for l in self.profile.layers)
        chosen = [self.profile.layer(name).candidate(label) for name, label in p.choices.items()]
        self.assertEqual(p.total_bytes, self.profile.fixed_bytes + sum(c.bytes for c in chosen))
        self.assertLessEqual(p.total_bytes, p.budget_bytes)
        expected = sum(l.numel / total_numel * l.candidate(p.choices[l.name]).rel_error ** 2
                       for l in self.profile.layers)
        self.assertEqual(p.objective_name, "numel")
        self.assertAlmostEqual(p.objective, expected, delta=1e-9 * expected)
        self.assertTrue(p.proven_optimal)
        # The same plan as `tailor plan` on the saved profile.
        self.profile.save(self.path("p.json"))
        cli("plan", self.path("p.json"), "--budget", "30%", "-o", self.path("plan.json"))
        with open(self.path("plan.json")) as f:
            ref = json.load(f)
        self.assertEqual(p.choices, {c["layer"]: c["label"] for c in ref["choices"]})
        self.assertEqual(p.total_bytes, ref["total_bytes"])

    def test_run_equals_the_command_and_onnxruntime(self):
        x = np.random.default_rng(7).uniform(-1, 1, (1, 3, 48, 320)).astype(np.float32)
        out = tailor.run(self.model, {"x": x})
        ref = cli_run(REC, {"x": x})
        self.assertEqual(list(out), list(ref))
        for name in ref:
            np.testing.assert_array_equal(out[name], ref[name])
        why = ort_unavailable()
        if why:
            print(why)
        else:
            for name, r in run_ort(REC, {"x": x}).items():
                self.assertLessEqual(np.abs(out[name] - r).max(), 1e-4 * np.abs(r).max())

    def test_run_outputs_are_tailors_buffers(self):
        x = np.zeros((1, 3, 48, 320), np.float32)
        a = tailor.run(self.model, {"x": x})["softmax_11.tmp_0"]
        self.assertFalse(a.flags.owndata)  # a view of tailor's tensor, no copy
        self.assertIsNotNone(a.base)
        self.assertTrue(a.flags.writeable)
        before = a.copy()
        tailor.run(self.model, {"x": np.ones_like(x)})  # must not reuse a's buffer
        np.testing.assert_array_equal(a, before)

    def test_run_releases_the_gil(self):
        x = np.random.default_rng(1).standard_normal((1, 3, 48, 320)).astype(np.float32)
        stamps, done = [], threading.Event()

        def work():
            for _ in range(3):
                tailor.run(self.model, {"x": x})
            done.set()

        t = threading.Thread(target=work)
        start = time.perf_counter()
        t.start()
        while not done.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)
        t.join()
        took = time.perf_counter() - start
        gaps = np.diff([start] + stamps)
        # With the GIL held through a run, this thread would stall for a whole run.
        self.assertLess(gaps.max(), 0.5 * took, (gaps.max(), took))

    def test_non_finite_damage_inputs_are_refused(self):
        x = np.zeros((1, 3, 48, 320), np.float32)
        x[0, 1, 2, 3] = np.nan
        with self.assertRaises(tailor.Error) as e:
            tailor.profile(self.model, schemes=["int8"], layers="^linear_85\\.w_0$",
                           damage_inputs=[{"x": x}])
        self.assertIn("'x' holds 1 non-finite value", str(e.exception))

    def test_damage_inputs_not_a_list_is_refused(self):
        with self.assertRaises(tailor.Error) as e:
            tailor.profile(self.model, schemes=["int8"], damage_inputs=5)
        self.assertEqual(e.exception.source, "damage_inputs")
        self.assertIn("expected a list of dicts", str(e.exception))

    def test_errors_carry_the_commands_message(self):
        missing = self.path("missing.onnx")
        with self.assertRaises(tailor.Error) as e:
            tailor.load(missing)
        self.assertEqual(str(e.exception), cli_error("inspect", missing))
        self.assertEqual(e.exception.source, missing)
        bad = np.zeros((1, 2, 48, 320), np.float32)
        with self.assertRaises(tailor.Error) as e:
            tailor.run(self.model, {"x": bad})
        np.save(self.path("bad.npy"), bad)
        # The command also names the .npy it read; the binding has none.
        self.assertEqual(f"{self.path('bad.npy')}: {e.exception}",
                         cli_error("run", REC, "-i", f"x={self.path('bad.npy')}"))
        self.profile.save(self.path("e.json"))
        with self.assertRaises(tailor.Error) as e:
            tailor.plan(self.profile, budget="lots")
        self.assertEqual(str(e.exception), cli_error("plan", self.path("e.json"), "--budget", "lots"))
        with self.assertRaises(tailor.Error) as e:
            tailor.plan(self.profile, budget="1%")
        self.assertIn("budget", str(e.exception))
        self.assertIsInstance(e.exception, Exception)

    def test_a_raising_callback_stops_the_call(self):
        def boom(event):
            raise ZeroDivisionError("from the callback")

        with self.assertRaises(ZeroDivisionError):
            tailor.profile(self.model, schemes=["int8"], progress=boom)
        out = self.path("aborted")
        with self.assertRaises(ZeroDivisionError):
            tailor.compress(REC, "30%", out, progress=boom, schemes=["int8"], objective="numel",
                            cache=False)
        self.assertFalse(os.path.exists(out))

    def test_compress(self):
        # Six of the OCR fixture lines keep it quick: the odd-numbered three verify.
        lines = self.path("lines")
        os.makedirs(lines)
        fixtures = os.path.join(SOURCE, "tests", "fixtures", "ocr")
        with open(os.path.join(fixtures, "labels.tsv")) as f:
            rows = f.read().splitlines()[:6]
        with open(os.path.join(lines, "labels.tsv"), "w") as f:
            f.write("\n".join(rows) + "\n")
        for row in rows:
            name = row.split("\t")[0]
            shutil.copy(os.path.join(fixtures, name), lines)
        events = []
        out = self.path("compressed")
        r = tailor.compress(REC, "30%", out, progress=events.append, schemes=SCHEMES,
                            objective="numel", cache=False, ocr_lines=lines)
        self.assertEqual(r.details["verification"]["inputs"], 3)
        self.assertEqual(r.kind, "onnx")
        self.assertEqual(r.total_bytes, r.plan.total_bytes)
        self.assertLessEqual(r.total_bytes, r.budget_bytes)
        self.assertEqual(r.budget_bytes, math.floor(0.30 * r.dense_bytes))
        self.assertEqual(r.metric["name"], "OCR character accuracy")
        self.assertEqual(r.metric["original"], 1.0)
        self.assertGreaterEqual(r.metric["compressed"], 0.9)
        self.assertEqual(r.damage_metric, "kl")
        self.assertTrue(math.isnan(r.predicted_damage))  # numel objective: no damage pass
        self.assertGreater(r.measured_damage, 0)
        with open(os.path.join(out, "plan.json")) as f:
            self.assertEqual(f.read(), r.plan.to_json())
        for name, size in r.files.items():
            self.assertEqual(os.path.getsize(os.path.join(out, name)), size)
        stages = {e.stage for e in events}
        self.assertTrue({"profile", "plan", "verify"} <= stages, stages)
        # The compressed model runs from Python; its output stays near the original's.
        x = np.random.default_rng(3).uniform(-1, 1, (1, 3, 48, 320)).astype(np.float32)
        y = tailor.run(self.model, {"x": x})["softmax_11.tmp_0"]
        yc = tailor.run(tailor.load(os.path.join(out, "model.onnx")), {"x": x})["softmax_11.tmp_0"]
        cos = float((y * yc).sum() / np.linalg.norm(y) / np.linalg.norm(yc))
        self.assertGreater(cos, 0.95)
        ref = cli_run(os.path.join(out, "model.onnx"), {"x": x})
        np.testing.assert_array_equal(yc, ref["softmax_11.tmp_0"])


if __name__ == "__main__":
    main()
