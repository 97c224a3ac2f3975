"""examples/pytorch-ddp: the batchlab version differs from the plain PyTorch script in at most 19
lines (added plus removed, as `diff` counts them), and its README and docs/byo-program.md show
that very diff."""
import difflib
import os
import unittest

from client_test_support import REPO

EXAMPLE = os.path.join(REPO, "examples", "pytorch-ddp")


def read(name):
    with open(os.path.join(EXAMPLE, name), encoding="utf-8") as f:
        return f.read().splitlines()


class ExampleDiffTest(unittest.TestCase):
    def diff(self):
        return list(difflib.unified_diff(read("train_plain.py"), read("train.py"),
                                         "train_plain.py", "train.py", lineterm="", n=0))

    def test_at_most_19_changed_lines(self):
        body = [l for l in self.diff() if not l.startswith(("---", "+++", "@@"))]
        added = [l for l in body if l.startswith("+")]
        removed = [l for l in body if l.startswith("-")]
        self.assertGreater(len(added), 0)
        self.assertLessEqual(len(added) + len(removed), 19, "\n".join(body))
        self.assertIn("+import batchlab", body)
        self.assertTrue(any("run.finish()" in l for l in added))
        self.assertTrue(any("run.resumable(" in l for l in added))  # checkpoints
        self.assertTrue(any("run.data_position" in l for l in added))
        # The run's seed, not the script's own: otherwise two seeds of a study train identically.
        self.assertTrue(any("run.seed" in l for l in added), "\n".join(body))

    def test_the_docs_show_the_diff(self):
        for doc in (os.path.join(EXAMPLE, "README.md"),
                    os.path.join(REPO, "docs", "byo-program.md")):
            with open(doc, encoding="utf-8") as f:
                text = f.read().splitlines()
            for line in self.diff():
                if line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
                    self.assertIn(line, text, doc)


if __name__ == "__main__":
    unittest.main()
