"""examples/gpt/train.py (the GPT-style byte-level LM) on one process with tiny settings, its
config written as the orchestrator writes a branch study's: the trunk trains, keeps its
checkpoint at the branch point, and a branch at k = 1 with the trunk's seed and LR continues it
bit for bit (AdamW's moments, the rows, dropout's generator); every spec in examples/gpt parses as the client reads it."""
import json
import os
import socket
import subprocess
import unittest

from client_test_support import CLIENT, PYTHON, REPO, TempDirTest, program_env

EXAMPLE = os.path.join(REPO, "examples", "gpt")
PARAMS = {"context": 16, "d_model": 16, "layers": 1, "heads": 2, "train_bytes": 20000,
          "test_windows": 16, "dropout": 0.1}
TRUNK = {"run_id": "trunk", "seed": 1, "batch_size": 8, "budget": {"steps": 8},
         "eval": {"every_steps": 4}, "gns": {"every_steps": 2}, "params": PARAMS,
         "lr": {"base": 0.003, "base_batch_size": 8, "rule": "sqrt", "warmup_steps": 2},
         "checkpoint": {"every_seconds": 0, "at_steps": [4]}}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GptExampleTest(TempDirTest):
    def train(self, name, config, trunk=None):
        folder = self.path(name)
        os.makedirs(folder)
        config = dict(config, attempt=1, metrics_path=os.path.join(folder, "metrics.jsonl"))
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f)
        if trunk:
            with open(os.path.join(folder, "branch_from.json"), "w") as f:
                json.dump({"trunk_dirs": [trunk]}, f)
        env = program_env({"PYTHONPATH": CLIENT, "OMP_NUM_THREADS": "1",
                           "MASTER_PORT": str(free_port())})
        done = subprocess.run([PYTHON, os.path.join(EXAMPLE, "train.py"), "--config",
                               os.path.join(folder, "config.json")], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(config["metrics_path"]) as f:
            lines = [json.loads(l) for l in f]
        return folder, [l for l in lines if l["kind"] == "step"], lines

    def branch(self, k):
        c = json.loads(json.dumps(TRUNK))
        c.update(run_id=f"k{k}", batch_size=8 * k, budget={"samples": 32},
                 checkpoint={"every_seconds": 0, "at_steps": []},
                 branch={"trunk_run_id": "trunk", "at_step": 4, "at_samples": 32,
                         "trunk_batch_size": 8, "multiplier": k})
        c["lr"]["warmup_steps"] = 0
        return c

    def test_trunk_and_branches(self):
        trunk, steps, lines = self.train("trunk", TRUNK)
        self.assertEqual([l["step"] for l in steps], list(range(1, 9)))
        self.assertTrue(all(l["tokens"] == l["samples"] * 16 for l in steps))
        self.assertIn("gns_sq_big", steps[1])
        self.assertEqual(lines[-1]["outcome"], "completed")
        self.assertLess(lines[-1]["final_loss"], steps[0]["loss"])
        _, k1, _ = self.train("k1", self.branch(1), trunk)
        self.assertEqual([l["loss"] for l in k1], [l["loss"] for l in steps[4:8]])

    def test_the_specs_parse(self):
        from batchlab.config import RunConfig
        names = sorted(n for n in os.listdir(EXAMPLE) if n.endswith(".json"))
        self.assertGreaterEqual(len(names), 4, names)  # cbs, crit_batch, lr_law, schedule
        for name in names:
            with open(os.path.join(EXAMPLE, name)) as f:
                spec = json.load(f)
            base = dict(spec["base"], batch_size=spec["base"].get("batch_size", 16))
            cfg = RunConfig(base)
            self.assertEqual(cfg.world_size, 2, name)
            self.assertEqual(spec["base"]["program"]["command"][-1], "train.py")


if __name__ == "__main__":
    unittest.main()
