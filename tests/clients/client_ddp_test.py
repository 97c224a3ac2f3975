"""The client with torch: stop decisions agree across 2 gloo ranks; the DDP hook's and the
one-rank half-batch gradient-noise fields equal norms computed independently."""
import json
import os
import signal
import socket
import subprocess
import unittest

from client_test_support import PYTHON, HERE, TempDirTest, program_env

PROGRAM = os.path.join(HERE, "ddp_program.py")

try:
    import torch
except ImportError:  # pragma: no cover - install-deps.sh installs python3-torch
    torch = None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipIf(torch is None, "needs python3-torch")
class TwoRankTest(TempDirTest):
    def launch(self, config, world=2, results=True, folder=None, cores=None):
        folder = folder or self.dir
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "config.json")
        with open(path, "w") as f:
            json.dump(dict(config, metrics_path=os.path.join(folder, "metrics.jsonl"),
                           nodes=world), f)
        port = str(free_port())
        procs = []
        for rank in range(world):
            env = program_env({"RANK": str(rank), "WORLD_SIZE": str(world),
                               "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(world),
                               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
                               "OMP_NUM_THREADS": "1"})
            # cores: rank r bound to cores[r], as mpirun binds ranks to cores.
            pin = (lambda c=cores[rank]: os.sched_setaffinity(0, {c})) if cores else None
            procs.append(subprocess.Popen([PYTHON, PROGRAM, "--config", path], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True, preexec_fn=pin))
        codes = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            codes.append((p.returncode, err))
        if not results:
            return codes, None
        results = []
        for rank in range(world):
            with open(self.path("out") + f".rank{rank}") as f:
                results.append(json.load(f))
        return codes, results

    def test_ranks_agree_on_divergence_from_the_mean_loss(self):
        # From step 6 rank 1's loss is 20x: the mean (10.5) exceeds 10 x the initial loss, so
        # both ranks stop at step 6, although rank 0's own loss never changed.
        codes, results = self.launch({
            "batch_size": 8, "budget": {"steps": 40}, "eval": {"every_steps": 5},
            "params": {"mode": "decisions", "loss_scale": [1.0, 20.0], "skew_at": 6,
                       "accuracy_per_step": [0.0, 0.0], "out": self.path("out")}})
        self.assertEqual([c for c, _ in codes], [4, 4], codes)
        self.assertEqual([r["step"] for r in results], [6, 6])
        end = self.read_lines()[-1]
        self.assertEqual((end["outcome"], end["steps"]), ("diverged", 6))

    def test_ranks_agree_on_the_target_from_rank0s_evaluation(self):
        # Rank 1 alone would meet accuracy 0.5 at step 10, rank 0 at step 25: rank 0's value
        # is the one logged and decided on.
        codes, results = self.launch({
            "batch_size": 8, "budget": {"steps": 40}, "eval": {"every_steps": 5},
            "target": {"metric": "test_accuracy", "op": ">=", "value": 0.5},
            "params": {"mode": "decisions", "loss_scale": [1.0, 1.0],
                       "accuracy_per_step": [0.02, 0.05], "out": self.path("out")}})
        self.assertEqual([c for c, _ in codes], [3, 3], codes)
        self.assertEqual([r["step"] for r in results], [25, 25])

    def test_a_signal_to_one_rank_preempts_every_rank_after_the_same_step(self):
        # Rank 1 alone gets SIGUSR2 (then, in a second run, SIGTERM) in step 4: the flag rides
        # in log_step's mean, so both ranks write their step-4 shard and exit 7; the next
        # attempt resumes both from it.
        for signum in (signal.SIGUSR2, signal.SIGTERM):
            with self.subTest(signal=signum.name):
                config = {"run_id": f"p-{signum.name}", "batch_size": 8, "budget": {"steps": 9},
                          "checkpoint": {"every_steps": 0, "every_seconds": 0},
                          "params": {"mode": "preempt", "signal_at": 4, "signal_rank": 1,
                                     "signal": int(signum), "out": self.path("out")}}
                first = self.path(f"{signum.name}-1")
                codes, _ = self.launch(config, results=False, folder=first)
                self.assertEqual([c for c, _ in codes], [7, 7], codes)
                self.assertEqual(sorted(os.listdir(os.path.join(first, "checkpoints"))),
                                 ["step-00000004.rank-0.ckpt", "step-00000004.rank-1.ckpt"])
                lines = self.read_lines(os.path.join(first, "metrics.jsonl"))
                self.assertEqual([(l["kind"], l.get("step")) for l in lines[-2:]],
                                 [("step", 4), ("checkpoint", 4)])
                second = self.path(f"{signum.name}-2")
                os.makedirs(second)
                with open(os.path.join(second, "resume.json"), "w") as f:
                    json.dump({"attempts": [{"attempt": 1, "dir": first}]}, f)
                codes, results = self.launch(dict(config, attempt=2), folder=second)
                self.assertEqual([c for c, _ in codes], [0, 0], codes)
                self.assertEqual([r["reference"]["resumed"] for r in results],
                                 [{"rank": 0, "step": 4}, {"rank": 1, "step": 4}])
                lines = self.read_lines(os.path.join(second, "metrics.jsonl"))
                self.assertEqual((lines[0]["kind"], lines[0]["step"]), ("resume", 4))
                steps = [l for l in lines if l["kind"] == "step"]
                self.assertEqual([l["step"] for l in steps], [5, 6, 7, 8, 9])
                self.assertEqual(steps[0]["loss"], 5.5)  # the mean of rank + step over 2 ranks

    @unittest.skipIf(len(os.sched_getaffinity(0)) < 2, "needs 2 cores to bind one per rank")
    def test_cpus_are_every_ranks_cores_not_rank_0s(self):
        # Two ranks bound to a core each (mpirun's default for 2 ranks) recorded cpus = 1, rank
        # 0's own affinity, and the analysis called the run oversubscribed (2 ranks on 1 core).
        # The step line's cpus is the union of the ranks' cores on rank 0's host.
        cores = sorted(os.sched_getaffinity(0))[:2]
        codes, _ = self.launch({
            "run_id": "cpus", "batch_size": 8, "budget": {"steps": 3},
            "params": {"mode": "decisions", "loss_scale": [1.0, 1.0],
                       "accuracy_per_step": [0.1, 0.1], "out": self.path("out")}},
            cores=cores)
        self.assertEqual([c for c, _ in codes], [0, 0], codes)
        steps = [l for l in self.read_lines() if l["kind"] == "step"]
        self.assertEqual(steps[0]["cpus"], 2, steps[0])
        self.assertNotIn("cpus", steps[1])  # once, on the attempt's first step line

    def test_log_eval_on_rank_0_only_is_named_and_exits_2_not_a_hang(self):
        # The original script's pattern: rank 0 alone evaluates. Rank 0 waited in log_eval's
        # broadcast for rank 1, which waited in the next step's allreduce: a silent hang (no
        # default timeout). Now rank 0 waits at most comm.timeout_seconds for rank 1 to reach
        # log_eval, names it, and exits 2 (not retried); rank 1, left in its allreduce, is
        # ended by the launcher (mpirun or torchrun) as any rank whose peer exited.
        folder = self.path("eval0")
        os.makedirs(folder)
        path = os.path.join(folder, "config.json")
        with open(path, "w") as f:
            json.dump({"run_id": "eval0", "batch_size": 8, "budget": {"steps": 9}, "nodes": 2,
                       "eval": {"every_steps": 3}, "comm": {"timeout_seconds": 2},
                       "metrics_path": os.path.join(folder, "metrics.jsonl"),
                       "params": {"mode": "eval_on_rank0", "out": self.path("out")}}, f)
        port = str(free_port())
        procs = [subprocess.Popen(
            [PYTHON, PROGRAM, "--config", path],
            env=program_env({"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
                             "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                             "MASTER_PORT": port, "OMP_NUM_THREADS": "1"}),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in range(2)]
        try:
            _, err = procs[0].communicate(timeout=120)  # bounded: 2 s, not forever
        finally:
            procs[1].kill()
            procs[1].communicate()
        self.assertEqual(procs[0].returncode, 2, err)
        self.assertIn("batchlab[rank 0]: rank 0 waits in log_eval at step 3; rank 1 has not "
                      "called it (within comm.timeout_seconds = 2 s) — every rank must call "
                      "log_eval", err)
        lines = self.read_lines(os.path.join(folder, "metrics.jsonl"))
        self.assertEqual([l["kind"] for l in lines], ["start", "step", "step", "step"])

    def test_a_target_metric_never_logged_exits_2_on_every_rank(self):
        # A test_loss target for a program that logs only accuracy was found at the first
        # evaluation as a traceback (exit 1), and the orchestrator retried it: a config error
        # retried is a run wasted twice. Now every rank exits 2 there, the field named.
        codes, _ = self.launch({
            "run_id": "no-metric", "batch_size": 8, "budget": {"steps": 9},
            "eval": {"every_steps": 3},
            "target": {"metric": "test_loss", "op": "<=", "value": 0.1},
            "params": {"mode": "decisions", "loss_scale": [1.0, 1.0],
                       "accuracy_per_step": [0.02, 0.02], "out": self.path("out")}},
            results=False)
        self.assertEqual([c for c, _ in codes], [2, 2], codes)
        for rank, (_, err) in enumerate(codes):
            self.assertIn(f"batchlab[rank {rank}]: target.metric is 'test_loss' but log_eval "
                          f"got only ['test_accuracy']; pass test_loss=...", err)

    def test_hook_fields_equal_independent_norms(self):
        codes, results = self.launch({
            # accumulation 2: DDP synchronizes the second micro-batch only (no_sync), and the
            # hook sees the whole local batch's gradient.
            "batch_size": 16, "accumulation": 2, "budget": {"steps": 6},
            "gns": {"every_steps": 2},
            "lr": {"base": 0.05, "warmup_steps": 2, "base_batch_size": 8, "rule": "linear"},
            "params": {"mode": "gns", "out": self.path("out")}})
        self.assertEqual([c for c, _ in codes], [0, 0], codes)
        steps = {l["step"]: l for l in self.read_lines() if l["kind"] == "step"}
        self.assertEqual(len(steps), 6)
        measured = [s for s, l in steps.items() if "gns_sq_big" in l]
        self.assertEqual(measured, [2, 4, 6])
        for s in measured:
            line = steps[s]
            refs = [r["reference"]["steps"][s - 1] for r in results]
            mean_local = sum(r["local_sq"] for r in refs) / 2
            self.assertEqual((line["gns_b_small"], line["gns_b_big"]), (8, 16))
            self.assertAlmostEqual(line["gns_sq_small"] / mean_local, 1.0, places=5)
            self.assertAlmostEqual(line["gns_sq_big"] / refs[0]["global_sq"], 1.0, places=5)
            self.assertGreater(line["gns_sq_small"], line["gns_sq_big"])
        for r in results:
            self.assertLess(r["reference"]["max_param_diff"], 1e-5)
        # The hook times the allreduce on every step, as the runner does (issue 26): the α–β
        # fit and the scaling section need comm_seconds from users' programs too.
        for s, line in steps.items():
            with self.subTest(step=s):
                self.assertIn("comm_seconds", line)
                self.assertGreater(line["comm_seconds"], 0)
                self.assertLess(line["comm_seconds"], line["step_seconds"])


@unittest.skipIf(torch is None, "needs python3-torch")
class CommTimingTest(unittest.TestCase):
    def test_overlapping_buckets_count_once(self):
        from batchlab.ddp import NoiseProbe
        now = [0.0]
        probe = NoiseProbe(run=None, clock=lambda: now[0])
        self.assertIsNone(probe.take_comm())  # nothing synchronized: no comm_seconds
        probe.launched()          # bucket 0 at t=0
        now[0] = 1.0
        probe.launched()          # bucket 1 at t=1, overlapping
        now[0] = 3.0
        probe.completed()         # t=3
        now[0] = 4.0
        probe.completed()         # t=4: in flight 0..4
        now[0] = 10.0
        probe.launched()          # an idle gap, then bucket 2 for 0.5 s
        now[0] = 10.5
        probe.completed()
        self.assertAlmostEqual(probe.take_comm(), 4.5)
        self.assertIsNone(probe.take_comm())  # reset for the next step


@unittest.skipIf(torch is None, "needs python3-torch")
class OneRankTest(TempDirTest):
    def make_run(self, accumulation):
        import batchlab
        from batchlab.config import RunConfig
        return batchlab.Run(RunConfig({"batch_size": 12, "accumulation": accumulation,
                                       "budget": {"steps": 2}, "gns": {"every_steps": 1}}))

    def test_half_batches_give_the_same_update_and_the_noise_fields(self):
        torch.manual_seed(0)
        x, y = torch.randn(12, 5), torch.randn(12, 1)
        loss_fn = torch.nn.functional.mse_loss
        for accumulation, parts in ((1, 2), (3, 3)):
            with self.subTest(accumulation=accumulation):
                torch.manual_seed(3)
                model = torch.nn.Linear(5, 1)
                ref = torch.nn.Linear(5, 1)
                ref.load_state_dict(model.state_dict())
                loss_fn(ref(x), y).backward()
                micro_sq = []
                for i in range(parts):
                    part = torch.nn.Linear(5, 1)
                    part.load_state_dict(model.state_dict())
                    n = 12 // parts
                    loss_fn(part(x[i * n:(i + 1) * n]), y[i * n:(i + 1) * n]).backward()
                    micro_sq.append(sum(float((q.grad ** 2).sum()) for q in part.parameters()))
                run = self.make_run(accumulation)
                next(run.steps())
                loss = run.backward(model, loss_fn, x, y)
                self.assertAlmostEqual(float(loss), float(loss_fn(ref(x), y)), places=5)
                for a, b in zip(model.parameters(), ref.parameters()):
                    self.assertTrue(torch.allclose(a.grad, b.grad, atol=1e-6))
                gns = run._gns
                full_sq = sum(float((q.grad ** 2).sum()) for q in ref.parameters())
                self.assertEqual((gns["b_small"], gns["b_big"]), (12 // parts, 12))
                self.assertAlmostEqual(gns["sq_small"] / (sum(micro_sq) / parts), 1, places=5)
                self.assertAlmostEqual(gns["sq_big"] / full_sq, 1, places=5)

    def test_a_batch_schedule_measures_at_the_steps_batch(self):
        import batchlab
        from batchlab.config import RunConfig
        run = batchlab.Run(RunConfig({"batch_size": 12, "budget": {"steps": 2},
                                      "gns": {"every_steps": 1}, "batch_schedule":
                                      {"at_samples": [12], "batch_sizes": [24]}}))
        model, loss_fn = torch.nn.Linear(5, 1), torch.nn.functional.mse_loss
        got = []
        for step in run.steps():
            n = run.local_batch_size
            x, y = torch.randn(n, 5), torch.randn(n, 1)
            run.backward(model, loss_fn, x, y)
            got.append((run.batch_size, run._gns["b_small"], run._gns["b_big"]))
            run.log_step(1.0)
        run._finished = True
        self.assertEqual(got, [(12, 6, 12), (24, 12, 24)])


if __name__ == "__main__":
    unittest.main()
