"""Shared helpers of the client's tests: the client on sys.path, temp folders, a config file."""
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CLIENT = os.path.join(REPO, "clients", "python")
PYTHON = "/usr/bin/python3"  # Debian's python3, where python3-torch lives
sys.path.insert(0, CLIENT)


def env_path(name):
    """A path the CTest registration passes in the environment; skips the test without it."""
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(f"{name} is not set (run through ctest)")
    return value


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="batchlab-client-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write_config(self, config, name="config.json"):
        path = self.path(name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(config, f)
        return path

    def read_lines(self, name="metrics.jsonl"):
        with open(self.path(name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]


def program_env(extra=None):
    """The environment for a child program: no launcher variables from this process."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "BATCHLAB_CONFIG")
           and not k.startswith("OMPI_")}
    env.update(extra or {})
    return env
