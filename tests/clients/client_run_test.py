"""The client's protocol without torch: config, metric lines, decisions, exit codes.

In-process tests drive a Run with a fake clock; subprocess tests run tests/clients/
fake_program.py (standard library only) as batchlab would, and check its exit code and file.
"""
import argparse
import json
import os
import subprocess
import sys
import unittest

from client_test_support import PYTHON, HERE, TempDirTest, program_env
import batchlab
from batchlab.config import ConfigError, Launch, RunConfig
from batchlab.lr import LrSchedule

FAKE = os.path.join(HERE, "fake_program.py")


class FakeClock:
    def __init__(self, tick=0.0):
        self.now, self.tick = 100.0, tick

    def __call__(self):
        self.now += self.tick
        return self.now


def make_run(test, clock=None, **overrides):
    config = {"batch_size": 64, "budget": {"steps": 30}, "eval": {"every_steps": 10},
              "lr": {"base": 0.1, "base_batch_size": 32, "rule": "linear", "warmup_steps": 5,
                     "schedule": "cosine"},
              "gns": {"every_steps": 0}, "metrics_path": test.path("metrics.jsonl")}
    config.update(overrides)
    return batchlab.Run(RunConfig(config), clock=clock or FakeClock(0.01))


class MetricLinesTest(TempDirTest):
    def test_a_run_writes_start_steps_evals_end_with_increasing_seq(self):
        run = make_run(self)
        evals = []
        for step in run.steps(train_samples=1000):
            run.log_step(2.0 / step, tokens=step * 10)
            if run.should_eval():
                evals.append(step)
                run.log_eval(test_accuracy=0.1 * step / 10, test_loss=1.0 / step)
        self.assertEqual(run.finish(exit=False), 0)
        lines = self.read_lines()
        self.assertEqual([l["seq"] for l in lines], list(range(len(lines))))
        self.assertEqual(list(lines[0])[:2], ["seq", "kind"])
        kinds = [l["kind"] for l in lines]
        self.assertEqual(kinds[0], "start")
        self.assertEqual(kinds[-1], "end")
        self.assertEqual(kinds.count("step"), 30)
        self.assertEqual(evals, [10, 20, 30])
        start = lines[0]
        self.assertEqual((start["batch_size"], start["local_batch_size"], start["total_steps"],
                          start["steps_per_epoch"]), (64, 64, 30, 15))
        steps = [l for l in lines if l["kind"] == "step"]
        schedule = LrSchedule(run.cfg.lr, 64, 30)
        self.assertEqual([l["lr"] for l in steps], [schedule.at(i) for i in range(30)])
        self.assertEqual(steps[15]["epoch"], 1)  # step 16 is the first of the second epoch
        self.assertEqual(steps[3]["samples"], 4 * 64)
        self.assertEqual(steps[3]["tokens"], 40)
        end = lines[-1]
        self.assertEqual((end["outcome"], end["steps"], end["samples"]), ("completed", 30, 1920))
        self.assertIsNone(end["target_step"])
        self.assertAlmostEqual(end["final_test_accuracy"], 0.3)
        self.assertAlmostEqual(end["final_loss"], 2.0 / 30)

    def test_non_finite_values_are_written_as_null(self):
        run = make_run(self)
        for _ in run.steps():
            run.log_step(float("nan"))
        run.finish(exit=False)
        lines = self.read_lines()
        self.assertIsNone(lines[1]["loss"])
        self.assertEqual(lines[-1]["outcome"], "diverged")
        self.assertEqual(lines[-1]["steps"], 1)
        self.assertNotIn("eval", [l["kind"] for l in lines])  # no evaluation after divergence

    def test_other_ranks_write_nothing(self):
        config = {"batch_size": 64, "nodes": 2, "budget": {"steps": 3},
                  "metrics_path": self.path("metrics.jsonl")}
        run = batchlab.Run(RunConfig(config, Launch(rank=1, world_size=2)))
        for _ in run.steps():
            run.log_step(1.0)
        self.assertEqual(run.finish(exit=False), 0)
        self.assertFalse(os.path.exists(self.path("metrics.jsonl")))

    def test_a_step_without_log_step_is_an_error(self):
        run = make_run(self)
        with self.assertRaisesRegex(RuntimeError, "log_step"):
            for _ in run.steps():
                pass

    def test_log_noise_puts_a_programs_own_measurement_on_the_step_line(self):
        run = make_run(self, gns={"every_steps": 2}, budget={"steps": 4},
                       lr={"base": 0.1, "base_batch_size": 64})
        for step in run.steps():
            if run.measuring:
                run.log_noise(32, 3.5 + step, 1.25 * step)
            run.log_step(1.0)
        run.finish(exit=False)
        steps = [l for l in self.read_lines() if l["kind"] == "step"]
        self.assertNotIn("gns_b_small", steps[0])
        self.assertEqual([(l["gns_b_small"], l["gns_b_big"], l["gns_sq_small"], l["gns_sq_big"])
                          for l in steps[1::2]], [(32, 64, 5.5, 2.5), (32, 64, 7.5, 5.0)])
        run = make_run(self, metrics_path=self.path("other.jsonl"))
        with self.assertRaisesRegex(ValueError, "b_small < the batch 64"):
            run.log_noise(64, 1.0, 1.0)


class DecisionsTest(TempDirTest):
    def run_losses(self, losses, **overrides):
        run = make_run(self, **overrides)
        for step in run.steps():
            run.log_step(losses(step))
            if run.should_eval():
                run.log_eval(test_accuracy=0.02 * step, test_loss=1.0)
        return run, run.finish(exit=False)

    def test_divergence_factor_times_the_initial_loss(self):
        run, code = self.run_losses(lambda s: 1.0 if s < 7 else 10.5, divergence_factor=10)
        self.assertEqual((code, run.step, run.outcome), (4, 7, "diverged"))
        run, code = self.run_losses(lambda s: 1.0 if s < 7 else 9.5, divergence_factor=10)
        self.assertEqual((code, run.step), (0, 30))

    def test_test_accuracy_target_stops_at_the_evaluation_that_meets_it(self):
        run, code = self.run_losses(
            lambda s: 1.0, target={"metric": "test_accuracy", "op": ">=", "value": 0.35})
        self.assertEqual((code, run.step), (3, 20))  # 0.2 at 10, 0.4 at 20
        end = self.read_lines()[-1]
        self.assertEqual((end["target_step"], end["target_samples"]), (20, 1280))

    def test_loss_target_then_a_final_evaluation(self):
        run, code = self.run_losses(lambda s: 1.0 / s,
                                    target={"metric": "loss", "op": "<", "value": 0.07})
        self.assertEqual((code, run.step), (3, 15))
        kinds = [(l["kind"], l.get("step")) for l in self.read_lines()]
        self.assertEqual(kinds[-2], ("eval", 15))  # the final evaluation of the last step

    def test_budget_exhausted_when_the_target_is_never_met(self):
        run, code = self.run_losses(
            lambda s: 1.0, target={"metric": "test_accuracy", "op": ">=", "value": 0.99})
        self.assertEqual((code, run.outcome, run.step), (5, "budget_exhausted", 30))

    def test_the_stop_file_ends_the_run_as_pruned_without_a_final_evaluation(self):
        run = make_run(self, target={"metric": "test_accuracy", "op": ">=", "value": 0.99})
        run.cfg.stop_path = self.path("stop")
        for step in run.steps():
            if step == 5:
                with open(self.path("stop"), "w") as f:
                    f.write('{"reason": "pruned"}\n')
            run.log_step(1.0)
            if run.should_eval():
                run.log_eval(test_accuracy=0.1, test_loss=1.0)
        # Rank 0 looks at most every 0.1 s: the fake clock ticks 0.01 s per reading.
        self.assertTrue(5 <= run.step <= 16, run.step)
        self.assertEqual((run.finish(exit=False), run.outcome), (6, "pruned"))
        lines = self.read_lines()
        self.assertEqual((lines[-1]["outcome"], lines[-1]["steps"]), ("pruned", run.step))
        self.assertNotEqual(lines[-2]["kind"], "eval")

    def test_the_prune_at_bound_ends_the_run_one_step_after_the_evaluation_past_it(self):
        # Evaluations every 10 steps: at 10 the bound is 11 < 25, at 20 it is 21, at 30 it is 31.
        for content, outcome, steps in (('{"stop_from_step": 25}', "pruned", 31),
                                        ('{"stop_from_step": 21}', "pruned", 21),
                                        ("25", "budget_exhausted", 30)):  # not an object: ignored
            with self.subTest(content=content):
                run = make_run(self, target={"metric": "test_accuracy", "op": ">=", "value": 0.99},
                               budget={"steps": 40 if outcome == "pruned" else 30})
                run.cfg.stop_path = self.path("stop")
                with open(self.path("prune_at"), "w") as f:
                    f.write(content + "\n")
                for _ in run.steps():
                    run.log_step(1.0)
                    if run.should_eval():
                        run.log_eval(test_accuracy=0.1, test_loss=1.0)
                self.assertEqual((run.outcome, run.step), (outcome, steps))

    def test_seconds_budget(self):
        run = make_run(self, clock=FakeClock(0.5), budget={"seconds": 4}, lr={"base": 0.1})
        for _ in run.steps():
            run.log_step(1.0)
        self.assertEqual(run.total_steps, 0)
        # The clock ticks 0.5 s per reading and is read twice per step.
        self.assertEqual((run.finish(exit=False), run.step), (0, 4))

    def test_an_epochs_budget_needs_the_dataset_size(self):
        run = make_run(self, budget={"epochs": 1})
        with self.assertRaises(SystemExit) as e:
            run.start()
        self.assertEqual(e.exception.code, 2)


class ConfigTest(TempDirTest):
    def test_errors_name_the_field(self):
        for config, field in (({"batch_size": 100, "nodes": 3, "budget": {"steps": 1}},
                               "batch_size"),
                              ({"batch_size": 8}, "budget"),
                              ({"batch_size": 8, "budget": {"steps": 0}}, "budget.steps"),
                              ({"batch_size": 8, "budget": {"steps": 1}, "params": [1]}, "params"),
                              ({"batch_size": 8, "budget": {"steps": 1},
                                "target": {"metric": "acc", "op": ">=", "value": 1}},
                               "target.metric")):
            with self.subTest(field=field):
                with self.assertRaisesRegex(ConfigError, "^" + field.replace(".", r"\.") + ":"):
                    RunConfig(config)

    def test_launcher_world_size_must_match(self):
        with self.assertRaisesRegex(ConfigError, "^world_size: the config asks for 1"):
            RunConfig({"batch_size": 8, "budget": {"steps": 1}}, Launch(world_size=2))

    def test_init_reads_flag_then_env_and_strips_the_flag(self):
        path = self.write_config({"batch_size": 8, "accumulation": 2, "budget": {"steps": 1},
                                  "params": {"depth": 18, "block-width": 4}})
        argv = ["train.py", "--epochs", "3", "--config", path]
        saved = sys.argv
        sys.argv = list(argv)
        try:
            args = argparse.Namespace(depth=10)
            run = batchlab.init(args, environ={})
            self.assertEqual(sys.argv, ["train.py", "--epochs", "3"])
        finally:
            sys.argv = saved
        self.assertEqual((run.batch_size, run.micro_batch_size, run.rank), (8, 4, 0))
        self.assertEqual((args.depth, args.block_width), (18, 4))
        run = batchlab.init(argv=["x"], environ={"BATCHLAB_CONFIG": path, "RANK": "0",
                                                 "WORLD_SIZE": "1"})
        self.assertEqual(run.params["depth"], 18)


class FakeProbe:
    """The DDP hook's state (ddp.NoiseProbe) as log_step reads it: a measurement every step."""

    def take_comm(self):
        return None

    def take(self):
        return (4.0, 1.0)


class BatchScheduleTest(TempDirTest):
    """A run with a batch_schedule: each step's batch, samples, LR and gns batches are the
    schedule's (runner/train/trainer.cc), the sizes a program reads change with the step."""

    SCHEDULE = {"at_samples": [200, 500], "batch_sizes": [128, 256]}

    def make(self, **overrides):
        return make_run(self, batch_schedule=self.SCHEDULE, **overrides)

    def test_each_step_trains_at_its_batch_with_its_lr_and_samples(self):
        run = self.make(budget={"samples": 2000}, nodes=2, checkpoint={"every_seconds": 0})
        run.cfg.rank, run.is_main = 0, True
        run._probe = FakeProbe()
        seen = []
        for step in run.steps(train_samples=1000):
            seen.append((step, run.batch_size, run.local_batch_size, run.micro_batch_size))
            run.log_step(1.0)
            if run.should_eval():
                run.log_eval(test_loss=0.5)
        run.finish(exit=False)
        # 64 x 4 = 256 >= 200: step 5 at 128; 256 + 2 x 128 = 512 >= 500: step 7 at 256;
        # 2000 samples: 512 + 6 x 256 = 2048 after step 12.
        batches = [64] * 4 + [128] * 2 + [256] * 6
        self.assertEqual([b for _, b, _, _ in seen], batches)
        self.assertEqual([(l, m) for _, b, l, m in seen], [(b // 2, b // 2) for b in batches])
        self.assertEqual([run.batch_size_at(s) for s in range(1, 13)], batches)
        lines = self.read_lines()
        start = lines[0]
        self.assertEqual((start["batch_size"], start["local_batch_size"], start["total_steps"],
                          start["steps_per_epoch"]), (64, 32, 12, 15))
        self.assertEqual(start["batch_schedule"], self.SCHEDULE)
        steps = [l for l in lines if l["kind"] == "step"]
        samples = [sum(batches[:k + 1]) for k in range(12)]
        self.assertEqual([l["samples"] for l in steps], samples)
        lr = {b: LrSchedule(run.cfg.lr, b, 12) for b in (64, 128, 256)}
        self.assertEqual([l["lr"] for l in steps], [lr[b].at(i) for i, b in enumerate(batches)])
        self.assertEqual([(l["gns_b_small"], l["gns_b_big"]) for l in steps],
                         [(b // 2, b) for b in batches])
        # 1000 rows an epoch: 4 x 64 + 2 x 128 = 512 rows, step 7 takes 256 more (768);
        # 1024 > 1000, so step 8 starts epoch 1 and step 11 epoch 2 (3 batches of 256 each).
        # data_position.rows counts the epoch's global rows (the same at every world size).
        self.assertEqual([l["epoch"] for l in steps], [0] * 7 + [1] * 3 + [2] * 2)
        self.assertEqual(run.data_position, (2, 2))
        self.assertEqual(run.data_position.rows, 512)
        evals = [l for l in lines if l["kind"] == "eval"]
        self.assertEqual([(l["step"], l["samples"]) for l in evals],
                         [(10, samples[9]), (12, 2048)])
        self.assertEqual((lines[-1]["steps"], lines[-1]["samples"]), (12, 2048))

    def test_an_epochs_budget_counts_samples(self):
        run = self.make(budget={"epochs": 1})
        run.start(train_samples=1000)
        # 1000 samples: 4 x 64 + 2 x 128 = 512, then 2 x 256 = 1024 >= 1000.
        self.assertEqual(run.total_steps, 8)
        self.assertEqual(run.samples_after(8), 1024)
        run._finished = True

    def test_a_batch_larger_than_the_training_set_exits_2(self):
        run = self.make(budget={"epochs": 1})
        with self.assertRaises(SystemExit) as e:
            run.start(train_samples=200)
        self.assertEqual(e.exception.code, 2)

    def test_a_target_and_checkpoints_count_the_schedules_samples(self):
        run = self.make(budget={"steps": 12}, target={"metric": "loss", "op": "<", "value": 0.5})
        for step in run.steps(train_samples=1000):
            run.log_step(1.0 if step < 7 else 0.4)
        run.finish(exit=False)
        end = self.read_lines()[-1]
        self.assertEqual((end["target_step"], end["target_samples"]), (7, 768))
        self.assertEqual(end["samples"], 768)

    def test_bad_schedules_exit_2_with_the_runners_message(self):
        for schedule, message in (
                ({"at_samples": [100, 50], "batch_sizes": [64, 128]},
                 "batch_schedule.at_samples[1]: 50 is not above the switch before it (100); "
                 "the switch points must increase in samples"),
                ({"at_samples": [100], "batch_sizes": [48]},
                 "batch_schedule.batch_sizes[0]: 48 is not divisible by world_size x "
                 "accumulation = 1 x 32; choose a multiple of 32"),
                ({"at_samples": [100]},
                 "batch_schedule.batch_sizes: missing; batch_schedule needs at_samples, "
                 "batch_sizes")):
            with self.subTest(message=message):
                config = {"batch_size": 64, "accumulation": 32, "budget": {"steps": 3},
                          "batch_schedule": schedule, "metrics_path": self.path("m.jsonl")}
                path = self.write_config(config)
                done = subprocess.run([PYTHON, FAKE, "--config", path], capture_output=True,
                                      text=True, env=program_env(), timeout=60)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertEqual(done.stderr, f"batchlab[rank 0]: {message}\n")
                self.assertFalse(os.path.exists(self.path("m.jsonl")))


class ProgramTest(TempDirTest):
    """fake_program.py as batchlab runs it: exit codes, files, messages."""

    def run_program(self, params, extra_args=(), **overrides):
        config = {"batch_size": 32, "budget": {"steps": 60}, "eval": {"every_steps": 10},
                  "target": {"metric": "test_accuracy", "op": ">=", "value": 0.25},
                  "params": params, "metrics_path": self.path("metrics.jsonl")}
        config.update(overrides)
        path = self.write_config(config)
        return subprocess.run([PYTHON, FAKE, "--config", path, *extra_args],
                              capture_output=True, text=True, env=program_env(), timeout=60)

    def lines(self):
        return self.read_lines() if os.path.exists(self.path("metrics.jsonl")) else []

    def test_exit_codes(self):
        for params, overrides, code, outcome in (
                ({}, {"target": None}, 0, "completed"),
                ({"accuracy_per_step": 0.01}, {}, 3, "target_reached"),
                ({"nan_at": 12}, {}, 4, "diverged"),
                ({"blowup_at": 12}, {}, 4, "diverged"),
                ({"accuracy_per_step": 0.001}, {}, 5, "budget_exhausted")):
            with self.subTest(outcome=outcome, params=params):
                done = self.run_program(params, **overrides)
                self.assertEqual(done.returncode, code, done.stderr)
                end = self.lines()[-1]
                self.assertEqual((end["kind"], end["outcome"]), ("end", outcome))

    def test_a_stop_file_beside_the_config_exits_6(self):
        with open(self.path("stop"), "w") as f:
            f.write('{"reason": "pruned"}\n')
        done = self.run_program({"accuracy_per_step": 0.001})
        self.assertEqual(done.returncode, 6, done.stderr)
        end = self.lines()[-1]
        self.assertEqual((end["outcome"], end["steps"]), ("pruned", 1))

    def test_a_crash_leaves_no_end_line(self):
        done = self.run_program({"crash_at": 15})
        self.assertEqual(done.returncode, 1)
        self.assertIn("fake crash at step 15", done.stderr)
        lines = self.lines()
        self.assertEqual(lines[-1]["kind"], "step")
        self.assertEqual(lines[-1]["step"], 14)
        self.assertNotIn("end", [l["kind"] for l in lines])

    def test_bad_config_exits_2_naming_the_field_and_writes_nothing(self):
        done = self.run_program({}, lr={"rule": "cubic"})
        self.assertEqual(done.returncode, 2)
        self.assertIn('batchlab[rank 0]: lr.rule: unknown rule "cubic"', done.stderr)
        self.assertEqual(self.lines(), [])

    def test_validate(self):
        done = self.run_program({}, extra_args=["--validate"])
        self.assertEqual((done.returncode, done.stderr), (0, ""))
        self.assertEqual(self.lines(), [])
        done = self.run_program({}, extra_args=["--validate"], batch_size=30, accumulation=4)
        self.assertEqual(done.returncode, 2)
        self.assertIn("batch_size: 30 is not divisible by world_size x accumulation", done.stderr)


if __name__ == "__main__":
    unittest.main()
