"""Elastic resume in the Python client (docs/protocol.md, "Elastic resume"): a run preempted at 2
ranks goes on at 4, is preempted again and finishes at 1 rank — real gloo processes, two tiny
MLPs (SGD with momentum; AdamW), gradient accumulation 2, the rows of every step from
run.batches(N) across an epoch boundary. The steps before the first change equal the
uninterrupted 2-rank run's bit for bit; every later step's loss equals it within the order of
the reductions (the largest relative difference is printed and bounded at 1e-5). The `resume`
lines name the rank count that wrote the checkpoint."""
import json
import os
import subprocess
import unittest

import client_ddp_test
from client_test_support import PYTHON, TempDirTest, program_env

BOUND = 1e-5  # float32 losses: one or two ulps is ~1e-7; a wrong row or state is ~1e-2


@unittest.skipIf(client_ddp_test.torch is None, "needs python3-torch")
class ElasticResumeTest(TempDirTest):
    def start(self, config, n, world, earlier=(), name=None):
        """Attempt n of the run at `world` ranks (one gloo process per rank), resuming from the
        attempts `earlier` (resume.json, newest first); returns (folder, processes)."""
        folder = self.path(name or f"attempt-{n}")
        os.makedirs(folder)
        if earlier:
            with open(os.path.join(folder, "resume.json"), "w") as f:
                json.dump({"attempts": [{"attempt": a, "dir": self.path(f"attempt-{a}")}
                                        for a in earlier]}, f)
        path = os.path.join(folder, "config.json")
        with open(path, "w") as f:
            json.dump(dict(config, attempt=n, nodes=world,
                           metrics_path=os.path.join(folder, "metrics.jsonl")), f)
        port = str(client_ddp_test.free_port())
        procs = [subprocess.Popen(
            [PYTHON, client_ddp_test.PROGRAM, "--config", path], text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=program_env({"RANK": str(r), "WORLD_SIZE": str(world), "LOCAL_RANK": str(r),
                             "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
                             "MASTER_PORT": port, "OMP_NUM_THREADS": "1"}))
            for r in range(world)]
        return folder, procs

    def finish(self, started, code):
        """The attempt's exit codes (each must be `code`) and its metric lines."""
        folder, procs = started
        errors = [p.communicate(timeout=120)[1] for p in procs]
        got = [(p.returncode, err) for p, err in zip(procs, errors)]
        self.assertEqual([c for c, _ in got], [code] * len(procs), got)
        return self.read_lines(os.path.join(folder, "metrics.jsonl"))

    def test_2_to_4_to_1_ranks_continues_the_2_rank_run(self):
        config = {"run_id": "elastic", "seed": 5, "batch_size": 16, "accumulation": 2,
                  "budget": {"steps": 12}, "eval": {"every_steps": 0},
                  "lr": {"base": 0.1, "base_batch_size": 16, "rule": "none",
                         "warmup_steps": 2, "schedule": "cosine"},
                  "gns": {"every_steps": 0}, "checkpoint": {"every_steps": 0, "every_seconds": 0},
                  # 96 rows: 6 steps an epoch, so the run crosses an epoch boundary at 4 ranks.
                  "params": {"mode": "elastic", "train_samples": 96, "out": self.path("out"),
                             "preempt_at": {"1": 4, "2": 8}}}
        # The uninterrupted run beside the first attempt (the same 2 ranks, no preemption).
        uninterrupted = self.start(dict(config, params=dict(config["params"], preempt_at={})),
                                   1, 2, name="uninterrupted")
        first = self.finish(self.start(config, 1, 2), 7)
        reference = self.finish(uninterrupted, 0)
        lines = (first + self.finish(self.start(config, 2, 4, [1]), 7)
                 + self.finish(self.start(config, 3, 1, [2, 1]), 0))
        resumes = [(l["step"], l.get("from_world_size")) for l in lines if l["kind"] == "resume"]
        self.assertEqual(resumes, [(4, 2), (8, 4)])
        steps = [l for l in lines if l["kind"] == "step"]
        want = [l for l in reference if l["kind"] == "step"]
        self.assertEqual([l["step"] for l in steps], list(range(1, 13)))
        self.assertEqual([l["epoch"] for l in steps], [l["epoch"] for l in want])
        self.assertEqual([l["lr"] for l in steps], [l["lr"] for l in want])
        for metric in ("loss", "loss_adamw"):
            # Before the first change: the same run at the same K, bit for bit.
            self.assertEqual([l[metric] for l in steps[:4]], [l[metric] for l in want[:4]])
            for span, (lo, hi) in (("2 -> 4 (steps 5-8)", (4, 8)),
                                   ("4 -> 1 (steps 9-12)", (8, 12))):
                worst = max(abs(a[metric] - b[metric]) / abs(b[metric])
                            for a, b in zip(steps[lo:hi], want[lo:hi]))
                print(f"client elastic resume, {metric}, {span}: largest relative difference "
                      f"to the uninterrupted 2-rank run {worst:.2g}")
                self.assertLess(worst, BOUND, (metric, span))
        # The run trained: a wrong restore (fresh weights, other rows) would not be this close.
        self.assertLess(steps[-1]["loss"], steps[0]["loss"])


if __name__ == "__main__":
    unittest.main()
