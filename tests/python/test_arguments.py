"""Arguments of the wrong type or range: a tailor.Error with one line naming
the argument (not pybind11's cast message, not a TypeError), raised before
any work; budget=None is no budget "None". On stories260K (a fixture)."""

import os
import tempfile
import unittest

import numpy as np

import tailor
from tailor_test_util import STORIES, main


class Arguments(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = tailor.load(STORIES)
        cls.profile = tailor.profile(cls.model, schemes=["int8"])
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def refused(self, call, source, needle):
        with self.assertRaises(tailor.Error) as e:
            call()
        text = str(e.exception)
        self.assertEqual(e.exception.source, source, text)
        self.assertTrue(text.startswith(source + ": "), text)
        self.assertIn(needle, text)
        self.assertNotIn("\n", text)
        self.assertNotIn("incompatible function arguments", text)
        self.assertNotIn("Unable to cast", text)
        return text

    def test_plan(self):
        p = self.profile
        self.refused(lambda: tailor.plan(p, threads="4"), "threads",
                     "expected an integer, got str '4'")
        self.refused(lambda: tailor.plan(p, solver=None), "solver", "expected a string, got NoneType")
        self.refused(lambda: tailor.plan(p, seed=2**70), "seed",
                     f"{2**70} is outside 0..{2**64 - 1}")
        self.refused(lambda: tailor.plan(p, seed=-1), "seed", "is outside 0..")
        self.refused(lambda: tailor.plan(p, budget=None), "budget", "got NoneType None")
        self.refused(lambda: tailor.plan(p, time_limit="1"), "time_limit", "expected a number")
        self.refused(lambda: tailor.plan("profile.json"), "profile", "expected a tailor.Profile")
        # A byte count may be an integer; the same plan as its string.
        dense = self.profile.dense_bytes
        self.assertEqual(tailor.plan(p, budget=dense // 2).choices,
                         tailor.plan(p, budget=str(dense // 2)).choices)

    def test_profile_and_run(self):
        m = self.model
        self.refused(lambda: tailor.profile(m, threads=1.5), "threads", "got float 1.5")
        self.refused(lambda: tailor.profile(m, min_params=True), "min_params", "got bool True")
        self.refused(lambda: tailor.profile(m, cache="yes"), "cache", "expected True or False")
        self.refused(lambda: tailor.profile(m, schemes=[1]), "schemes", "expected a list of strings")
        self.refused(lambda: tailor.profile(m, calib=3), "calib", "expected a path")
        self.refused(lambda: tailor.profile(STORIES), "model", "expected a tailor.Model")
        self.refused(lambda: tailor.profile(m, progress=5), "progress", "expected a callable")
        ids = {"input_ids": np.array([[1, 403]], np.int64)}
        self.refused(lambda: tailor.run(m, ids, threads=2**40), "threads",
                     f"{2**40} is outside -2147483648..2147483647")
        self.refused(lambda: tailor.run(m, ids, passes=None), "passes", "expected a string")
        self.refused(lambda: tailor.run(m, [1, 2]), "feeds", "expected a dict")
        self.refused(lambda: tailor.load(None), "path", "expected a path")
        # numpy integers are integers.
        self.assertEqual(tailor.run(m, ids, threads=np.int64(1))["logits"].shape, (1, 2, 512))

    def test_compress(self):
        out = os.path.join(self.tmp.name, "out")
        go = lambda **kw: tailor.compress(STORIES, kw.pop("budget", "50%"), out, **kw)
        self.refused(lambda: go(threads="4"), "threads", "expected an integer, got str '4'")
        self.refused(lambda: go(solver=None), "solver", "expected a string, got NoneType")
        self.refused(lambda: go(seed=2**70), "seed", "is outside 0..")
        self.refused(lambda: go(budget=None), "budget", "got NoneType None")
        self.refused(lambda: go(report=1), "report", "expected True or False, got int 1")
        self.refused(lambda: go(image_mean=[1, 2]), "image_mean", "expected 3 numbers")
        self.refused(lambda: go(sequences=2**31), "sequences", "is outside")
        self.refused(lambda: go(guard="no"), "guard", "expected True or False, got str 'no'")
        self.refused(lambda: go(gguf=1), "gguf", "expected True or False, got int 1")
        # The options reach compress: its own refusals, met before any work.
        self.refused(lambda: go(tokenizer="tok.bin"), "--tokenizer", "applies only with --gguf")
        self.refused(lambda: go(gguf=True, tokenizer="/no/such/tok.bin"), "/no/such/tok.bin",
                     "cannot open")
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    main()
