"""The client's batch-size schedule against the C++ one, value for value.

ArithmeticParityTest: many random schedules through tests/clients/batch_schedule_print.cc, which
is base/run_values.cc itself: every step's batch, samples before and segment, the samples after
a step, the steps for a number of samples, the largest batch and the total steps of budgets in
steps, samples and epochs must be identical. Malformed `batch_schedule` values must get the
runner's declared-field message (base/config_check.cc through the same tool).
RunnerMessagesTest: the runner's CheckBatchSchedule messages (runner/config/run_config.cc), word for
word; against batchlab-runner --validate itself when BATCHLAB_RUNNER_BIN is a runner that knows
batch_schedule.
DataCursorTest: the data position under a schedule against a step-by-step copy of the runner's
sampler (runner/data/shard_sampler.cc).
"""
import json
import os
import random
import subprocess
import unittest

from client_test_support import REPO, TempDirTest, env_path, program_env
from batchlab.batch_schedule import BatchSchedule, data_cursor, total_steps
from batchlab.config import ConfigError, Launch, RunConfig


def random_schedule(rng):
    first = rng.choice([1, 2, 3, 8, 64, 96, 250, 4096])
    k = rng.choice([0, 1, 1, 2, 3, 5])
    span = rng.choice([10, 1000, 100000, 10 ** 7])
    at = sorted(rng.sample(range(1, span + 1), k))
    sizes = [rng.choice([1, 2, 5, 8, 64, 100, 256, 1000, 8192]) for _ in at]
    return first, at, sizes


def arithmetic_cases(n=300, seed=11):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        first, at, sizes = random_schedule(rng)
        s = BatchSchedule(first, at, sizes)
        # Steps around every switch and far past the last, samples around every switch point.
        around = set(range(0, 6))
        for a in at:
            step = s.steps_for(a)
            around.update(range(max(step - 2, 0), step + 3))
        around.update(rng.randrange(0, 10 ** 6) for _ in range(5))
        samples = {0, 1, -3}
        for a in at:
            samples.update((a - 1, a, a + 1))
        samples.update(rng.randrange(0, 10 ** 9) for _ in range(5))
        budgets = []
        for _ in range(4):
            b = {}
            if rng.random() < 0.5:
                b["steps"] = rng.choice([1, 7, 100, 10 ** 5])
            if rng.random() < 0.5:
                b["samples"] = rng.choice([1, 999, 60000, 10 ** 8])
            if rng.random() < 0.5:
                b["epochs"] = rng.choice([0.01, 0.5, 1, 2.5, 90])
            budgets.append(b)
        out.append({"first_batch": first, "at_samples": at, "batch_sizes": sizes,
                    "steps": sorted(around), "samples": sorted(samples), "budgets": budgets,
                    "epoch_samples": rng.choice([0, 1, 999, 60000, 1281167])})
    return out


# Malformed (and two well-formed) batch_schedule values: the declared-field checks.
CHECK_VALUES = [
    None, [], 3, "x", {}, {"at_samples": [100]}, {"batch_sizes": [8]},
    {"at_samples": 100, "batch_sizes": [8]}, {"at_samples": [100], "batch_sizes": "8"},
    {"at_samples": [100, 0], "batch_sizes": [8, 8]}, {"at_samples": [-1], "batch_sizes": [8]},
    {"at_samples": [1.5], "batch_sizes": [8]}, {"at_samples": [100], "batch_sizes": [8.0]},
    {"at_samples": [100], "batch_sizes": [True]}, {"at_samples": [100], "batch_sizes": [None]},
    {"at_samples": [100], "batch_sizes": ["8"]}, {"at_samples": [2 ** 60], "batch_sizes": [8]},
    {"at_samples": [100], "batch_sizes": [8], "at_sample": 1},
    {"at_samples": [100], "batch_sizes": [8], "zzz": 1},
    {"at_samples": [100], "batch_sizes": [8], "batch": 1},
    {"at_samples": [100], "batch_sizes": [8]}, {"at_samples": [], "batch_sizes": []},
]


def client_error(raw, world=1):
    try:
        RunConfig(raw, Launch(world_size=world))
    except ConfigError as e:
        return str(e)
    return ""


class ArithmeticParityTest(unittest.TestCase):
    def run_print(self, cases):
        binary = env_path("BATCHLAB_BATCH_SCHEDULE_PRINT")
        done = subprocess.run([binary], input=json.dumps(cases), capture_output=True, text=True,
                              check=True)
        out = json.loads(done.stdout)
        self.assertEqual(len(out), len(cases))
        return out

    def test_every_value_matches_the_runner(self):
        cases = arithmetic_cases()
        switching = 0
        for case, want in zip(cases, self.run_print(cases)):
            s = BatchSchedule(case["first_batch"], case["at_samples"], case["batch_sizes"])
            got = {"at": [list(s.at(step)) for step in case["steps"]],
                   "samples_after": [s.samples_after(step) for step in case["steps"]],
                   "steps_for": [s.steps_for(n) for n in case["samples"]],
                   "largest": s.largest_batch(),
                   "total_steps": [total_steps(s, b.get("steps", 0), b.get("epochs", 0),
                                               b.get("samples", 0), case["epoch_samples"])
                                   for b in case["budgets"]]}
            with self.subTest(case={k: case[k] for k in ("first_batch", "at_samples",
                                                         "batch_sizes")}):
                self.assertEqual(got, want)
            switching += any(p[2] > 0 for p in want["at"])
        self.assertGreater(switching, 100)  # the cases do switch batches

    def test_the_declared_field_messages_match_the_runner(self):
        want = self.run_print([{"check": v} for v in CHECK_VALUES])
        for value, w in zip(CHECK_VALUES, want):
            with self.subTest(value=value):
                got = client_error({"batch_size": 8, "budget": {"steps": 1},
                                    "batch_schedule": value})
                if w["error"]:
                    self.assertEqual(got, w["error"])
                else:
                    self.assertEqual(got, "")  # these two pass the runner's other checks too
        self.assertEqual(sum(1 for w in want if not w["error"]), 2)


# runner/config/run_config.cc CheckBatchSchedule, for configs the declared checks pass.
RUNNER_MESSAGES = [
    ({"batch_size": 8, "batch_schedule": {"at_samples": [100, 200], "batch_sizes": [16]}}, 1,
     "batch_schedule.batch_sizes: 1 batch sizes for 2 switch points (at_samples); give one batch "
     "size per switch"),
    ({"batch_size": 8, "batch_schedule": {"at_samples": [], "batch_sizes": [16]}}, 1,
     "batch_schedule.batch_sizes: 1 batch sizes for 0 switch points (at_samples); give one batch "
     "size per switch"),
    ({"batch_size": 8, "batch_schedule": {"at_samples": [100, 100], "batch_sizes": [16, 32]}}, 1,
     "batch_schedule.at_samples[1]: 100 is not above the switch before it (100); the switch "
     "points must increase in samples"),
    ({"batch_size": 8, "nodes": 2, "accumulation": 2,
      "batch_schedule": {"at_samples": [100, 200], "batch_sizes": [16, 18]}}, 2,
     "batch_schedule.batch_sizes[1]: 18 is not divisible by world_size x accumulation = 2 x 2; "
     "choose a multiple of 4"),
    ({"batch_size": 8, "comm": {"sync": "local_sgd"},
      "batch_schedule": {"at_samples": [100], "batch_sizes": [16]}}, 1,
     'batch_schedule: comm.sync "local_sgd" trains at one batch size; a batch schedule needs '
     '"allreduce"'),
]


class RunnerMessagesTest(TempDirTest):
    def test_the_client_says_what_the_runner_says(self):
        for raw, world, message in RUNNER_MESSAGES:
            with self.subTest(message=message):
                self.assertEqual(client_error(dict(raw, budget={"steps": 5}), world), message)

    def test_the_messages_are_still_the_runners(self):
        # The fixed parts of each message, as runner/config/run_config.cc spells them.
        with open(os.path.join(REPO, "runner", "config", "run_config.cc"), encoding="utf-8") as f:
            source = f.read()
        for fragment in ('" batch sizes for "', '" switch points (at_samples); give one batch '
                         'size per switch"', '" is not above the switch before it ("',
                         '"); the switch points must increase in samples"',
                         '" is not divisible by world_size x accumulation = "',
                         '"; choose a multiple of "', '"batch_schedule: comm.sync \\""',
                         '"\\" trains at one batch size; a batch schedule needs \\"allreduce\\""'):
            self.assertIn(fragment, source)

    def test_against_the_runner_itself(self):
        runner = env_path("BATCHLAB_RUNNER_BIN")
        probe = self.write_config({"batch_size": 8, "budget": {"steps": 1},
                                   "batch_schedule": {"at_samples": [100],
                                                      "batch_sizes": [16]}}, "probe.json")
        done = subprocess.run([runner, "--validate", "--config", probe], capture_output=True,
                              text=True, env=program_env())
        if "batch_schedule" in done.stderr and "unknown field" in done.stderr:
            self.skipTest("this batchlab-runner predates batch_schedule")
        for raw, world, message in RUNNER_MESSAGES:
            if world != 1:
                continue  # --validate runs one process
            with self.subTest(message=message):
                path = self.write_config(dict(raw, budget={"steps": 5}))
                done = subprocess.run([runner, "--validate", "--config", path],
                                      capture_output=True, text=True, env=program_env())
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn(message, done.stderr)


class DataCursorTest(unittest.TestCase):
    def test_data_cursor_is_the_runners_sampler(self):
        rng = random.Random(5)
        for _ in range(200):
            world = rng.choice([1, 2, 3, 4])
            first = world * rng.randint(1, 20)
            at = sorted(rng.sample(range(1, 3000), rng.randint(0, 4)))
            sizes = [world * rng.randint(1, 30) for _ in at]
            s = BatchSchedule(first, at, sizes)
            shard = rng.randint(s.largest_batch() // world, 400)
            epoch = rows = batches = seen = 0
            for step in range(1, 300):
                batch = first
                for a, b in zip(at, sizes):
                    batch = b if seen >= a else batch
                local = batch // world
                if rows + local > shard:  # ShardSampler::Next: the next epoch
                    epoch, rows, batches = epoch + 1, 0, 0
                rows, batches, seen = rows + local, batches + 1, seen + batch
                self.assertEqual(data_cursor(s, world, shard, step), (epoch, batches, rows),
                                 (first, at, sizes, world, shard, step))

    def test_the_documented_example(self):
        s = BatchSchedule(64, [1000], [256])
        self.assertEqual((s.at(16).batch, s.at(16).samples_before), (64, 960))
        self.assertEqual(tuple(s.at(17)), (256, 1024, 1))
        self.assertEqual(s.steps_for(1024), 16)
        self.assertEqual(s.steps_for(1025), 17)
        self.assertEqual(total_steps(s, budget_epochs=1, epoch_samples=6000), 36)  # 1024 + 20x256


if __name__ == "__main__":
    unittest.main()
