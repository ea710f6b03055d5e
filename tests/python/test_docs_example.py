"""docs/python.md's example, run as written (from the repository root), so
it cannot rot; only its output folder /tmp/stories.tailor is moved into a
temporary folder."""

import contextlib
import io
import os
import re
import tempfile
import unittest

from tailor_test_util import REC, SOURCE, STORIES, need, main

DOC = os.path.join(SOURCE, "docs", "python.md")


def example_code():
    with open(DOC) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1, f"{DOC}: expected one python block, found {len(blocks)}"
    return blocks[0]


class DocsExample(unittest.TestCase):
    def test_example_runs(self):
        need(REC)
        need(STORIES)
        code = example_code()
        self.assertIn("/tmp/stories.tailor", code)
        with tempfile.TemporaryDirectory() as tmp:
            code = code.replace("/tmp/stories.tailor", os.path.join(tmp, "stories.tailor"))
            out = io.StringIO()
            cwd = os.getcwd()
            os.chdir(SOURCE)
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(code, DOC, "exec"), {"__name__": "docs_example"})
            finally:
                os.chdir(cwd)
        text = out.getvalue()
        # What the comments in the example say it prints.
        self.assertIn("Layer(name='linear_85.w_0', op='MatMul'", text)
        self.assertIn("(1, 40, 6625)", text)
        self.assertIn("(1, 3, 512)", text)
        self.assertRegex(text, r"tailor\.Error: .*budget")


if __name__ == "__main__":
    main()
