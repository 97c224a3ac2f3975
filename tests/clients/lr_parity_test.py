"""The client's learning rates and run length against the C++ runner's, value for value.

LrParityTest: many configs (every rule, schedule and warmup, a warmup from a fraction of the
scaled LR, odd batch sizes, and configs the runner rejects) through
tests/clients/lr_schedule_print.cc, which is base/lr_schedule.cc itself; the LRs must be
identical to the last bit and the error messages the same.
RunnerParityTest: the real batchlab-runner's start line (total_steps, steps_per_epoch) and the
`lr` of its step lines for budgets in steps, epochs and samples.
"""
import json
import os
import random
import subprocess
import unittest

from client_test_support import PYTHON, TempDirTest, env_path, program_env
from batchlab.config import ConfigError
from batchlab.lr import LrSchedule, llround, steps_per_epoch, total_steps

DEFAULTS = {"base": 0.1, "base_batch_size": 256, "rule": "none", "warmup_steps": 0,
            "warmup_epochs": 0.0, "schedule": "constant", "milestones": [], "gamma": 0.1,
            "power": 1.0, "final_lr_fraction": 0.0}


def cases(n=400, seed=7):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        lr = {"base": rng.choice([0.1, 0.05, 1e-3, 0.3, 1.7, 3]),
              "base_batch_size": rng.choice([32, 64, 100, 256, 1000]),
              "rule": rng.choice(["none", "linear", "sqrt"]),
              "schedule": rng.choice(["constant", "step", "cosine", "poly"])}
        total = rng.choice([0, 1, 7, 50, 313, 1000])
        spe = rng.choice([0, 1, 13, 97])
        warm = rng.random()
        if warm < 0.3:
            lr["warmup_steps"] = rng.choice([1, 5, 40, 400])
        elif warm < 0.55:
            lr["warmup_epochs"] = rng.choice([0.5, 1, 2.5, 0.04])
        if lr["schedule"] == "step":
            k = rng.choice([0, 1, 2, 4])
            lr["milestones"] = sorted(rng.sample(range(0, 600), k))
            lr["gamma"] = rng.choice([0.1, 0.5, 0.97])
        if lr["schedule"] in ("cosine", "poly"):
            lr["final_lr_fraction"] = rng.choice([0.0, 0.01, 0.5, 1.0, 1.5])
        if lr["schedule"] == "poly":
            lr["power"] = rng.choice([0.5, 1.0, 2.0, 3.3])
        if i % 50 == 0:
            lr["rule"] = "cubic"  # unknown: both must reject it
        if i % 3 == 0:  # a warmup from a fraction of the scaled LR (1.5: both must reject it)
            lr["warmup_start_fraction"] = [0, 0.0, 0.1, 0.37, 1, 1.5][(i // 3) % 6]
        out.append({"lr": lr, "batch_size": rng.choice([1, 8, 64, 96, 250, 4096]),
                    "total_steps": total, "steps_per_epoch": spe,
                    "steps": (total or 300) + 5})
    return out


class LrParityTest(unittest.TestCase):
    def test_every_lr_matches_the_runner_bit_for_bit(self):
        binary = env_path("BATCHLAB_LR_PRINT")
        all_cases = cases()
        done = subprocess.run([binary], input=json.dumps(all_cases), capture_output=True,
                              text=True, check=True)
        expected = json.loads(done.stdout)
        self.assertEqual(len(expected), len(all_cases))
        valid = errors = 0
        for case, want in zip(all_cases, expected):
            lr = dict(DEFAULTS, **case["lr"])
            with self.subTest(case=case):
                try:
                    s = LrSchedule(lr, case["batch_size"], case["total_steps"],
                                   case["steps_per_epoch"])
                    got = {"lr": [s.at(i) for i in range(case["steps"])]}
                except ConfigError as e:
                    got = {"error": str(e)}
                self.assertEqual(got, want)  # floats compare exactly
                valid += "lr" in want
                errors += "error" in want
        # The cases exercise both sides: many schedules built, several rejected.
        self.assertGreater(valid, 150)
        self.assertGreater(errors, 20)

    def test_llround_rounds_halves_away_from_zero(self):
        self.assertEqual([llround(x) for x in (0.5, 1.5, 2.5, -0.5, 0.49999999999999994, 2.4)],
                         [1, 2, 3, -1, 0, 2])

    def test_total_steps_takes_the_smallest_limit(self):
        # steps 100, epochs 2.5 x 30 = 75, samples 1000 / 64 -> 16 (rounded up)
        self.assertEqual(total_steps(100, 0, 0, 64, 30), 100)
        self.assertEqual(total_steps(100, 2.5, 0, 64, 30), 75)
        self.assertEqual(total_steps(100, 2.5, 1000, 64, 30), 16)
        self.assertEqual(total_steps(0, 0, 0, 64, 30), 0)  # seconds only
        self.assertEqual(total_steps(0, 0.001, 0, 64, 30), 1)  # at least one step
        with self.assertRaisesRegex(ConfigError, r"^budget\.epochs: .*train_samples"):
            total_steps(0, 1, 0, 64, 0)

    def test_steps_per_epoch_is_the_runners_shard_arithmetic(self):
        self.assertEqual(steps_per_epoch(60000, 1, 64), 937)
        self.assertEqual(steps_per_epoch(60001, 2, 32), 937)  # floor(60001 / 64)
        self.assertEqual(steps_per_epoch(1001, 4, 50), 5)  # floor(1001 / 200)
        with self.assertRaisesRegex(ConfigError, r"^batch_size: the global batch of 1200 \(300 "
                                    r"a rank\) is larger than the 1000 training samples"):
            steps_per_epoch(1000, 4, 300)


class RunnerParityTest(TempDirTest):
    """The real runner on a tiny synthetic task: what it logs is what the client computes."""

    def run_runner(self, budget, lr):
        runner = env_path("BATCHLAB_RUNNER_BIN")
        config = {"seed": 3, "batch_size": 48, "budget": budget, "lr": lr,
                  "data": {"name": "synthetic-linear", "features": 4, "samples": 1000,
                           "test_samples": 100},
                  "model": {"name": "logreg"}, "optimizer": {"name": "sgd"},
                  "gns": {"every_steps": 0}, "threads": 1,
                  "metrics_path": self.path("runner.jsonl")}
        path = self.write_config(config)
        subprocess.run([runner, "--config", path], check=True, env=program_env(),
                       capture_output=True)
        lines = self.read_lines("runner.jsonl")
        return lines[0], [l for l in lines if l["kind"] == "step"]

    def test_runner_start_line_and_lrs(self):
        # The warmup starts from a fifth of the scaled LR (the runner reads the field).
        lr = {"base": 0.01, "base_batch_size": 32, "rule": "sqrt", "warmup_epochs": 0.5,
              "warmup_start_fraction": 0.2, "schedule": "cosine", "final_lr_fraction": 0.1}
        for budget in ({"epochs": 1.5}, {"steps": 17, "epochs": 3}, {"samples": 1000}):
            with self.subTest(budget=budget):
                start, steps = self.run_runner(budget, lr)
                spe = steps_per_epoch(1000, 1, 48)
                total = total_steps(budget.get("steps", 0), budget.get("epochs", 0),
                                    budget.get("samples", 0), 48, spe)
                self.assertEqual(start["steps_per_epoch"], spe)
                self.assertEqual(start["total_steps"], total)
                self.assertEqual(len(steps), total)
                s = LrSchedule(dict(DEFAULTS, **lr), 48, total, spe)
                self.assertEqual([l["lr"] for l in steps], [s.at(l["step"] - 1) for l in steps])
                self.assertEqual(steps[0]["lr"], s.scaled * 0.2)


if __name__ == "__main__":
    unittest.main()
