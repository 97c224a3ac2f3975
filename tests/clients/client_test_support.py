"""Shared helpers of the client's tests: the client on sys.path, temp folders, a config file."""
import json
import sqlite3
import subprocess
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


class StudyTest(TempDirTest):
    """Runs the `batchlab` CLI (BATCHLAB_BIN) on a database in the test's folder, with the
    client importable by the programs it launches (PYTHONPATH)."""

    def setUp(self):
        super().setUp()
        self.bin = env_path("BATCHLAB_BIN")
        self.db = self.path("batchlab.db")

    def batchlab(self, *args, expect=0, timeout=600):
        env = program_env({"PYTHONPATH": CLIENT, "OMP_NUM_THREADS": "1",
                           "PYTHONDONTWRITEBYTECODE": "1"})
        done = subprocess.run([self.bin, "--db", self.db, *args], capture_output=True,
                              text=True, env=env, timeout=timeout, cwd=self.dir)
        if expect is not None:
            self.assertEqual(done.returncode, expect,
                             f"batchlab {' '.join(args)}\n{done.stdout}\n{done.stderr}")
        return done

    def batchlab_json(self, *args):
        return json.loads(self.batchlab(*args, "--format", "json").stdout)

    def write_spec(self, spec, name="spec.json"):
        return self.write_config(spec, name)

    def query(self, sql, *params):
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as db:
            return db.execute(sql, params).fetchall()
