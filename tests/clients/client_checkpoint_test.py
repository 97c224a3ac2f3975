"""The client's checkpoints without torch (pickle): a run interrupted between steps, preempted by
the `preempt` file or a signal, and resumed in a new attempt folder (resume.json naming the
earlier ones, as the orchestrator writes it) continues exactly: the same loss and LR at every
step as a run never interrupted, seq continuing after the checkpoint line, no step twice. Bad
checkpoints fall back with the reasons in the `resume` line; a write that fails on a real
file-size limit leaves the previous checkpoint; `keep` and `at_steps`; two ranks (threads) agree
on a checkpoint when one rank's shard is corrupt.

The program's "training" depends on its state, on Python's random generator and on the LR, so a
wrong restore of any of them changes the losses."""
import io
import json
import os
import random
import re
import resource
import signal
import threading
import unittest
from contextlib import redirect_stderr

from client_test_support import TempDirTest
import batchlab
from batchlab import checkpoint, protocol
from batchlab.config import RunConfig
from batchlab.lr import LrSchedule


class FakeClock:
    """Two ticks a step: rank 0 looks for the preempt file at every step (every 0.1 s)."""

    def __init__(self, tick=0.06):
        self.now, self.tick = 100.0, tick

    def __call__(self):
        self.now += self.tick
        return self.now


BASE = {"run_id": "r1", "batch_size": 8, "budget": {"steps": 30}, "eval": {"every_steps": 4},
        "lr": {"base": 0.05, "base_batch_size": 8, "rule": "none", "warmup_steps": 5,
               "schedule": "cosine"},
        "gns": {"every_steps": 0}, "checkpoint": {"every_steps": 5, "every_seconds": 0}}


class Attempts:
    """Attempt folders of one run, as the orchestrator lays them out."""

    count = 0

    def __init__(self, test, config=None):
        self.test, self.config, self.dirs = test, dict(BASE, **(config or {})), []
        Attempts.count += 1
        self.name = f"run-{Attempts.count}"

    def new(self, config=None, **launch):
        n = len(self.dirs) + 1
        folder = self.test.path(f"{self.name}/attempt-{n}")
        os.makedirs(folder)
        cfg = dict(self.config, **(config or {}))
        cfg.update(attempt=n, metrics_path=os.path.join(folder, protocol.METRICS_FILE))
        with open(os.path.join(folder, protocol.CONFIG_FILE), "w") as f:
            json.dump(cfg, f)
        if self.dirs:
            earlier = [{"attempt": k + 1, "dir": d}
                       for k, d in reversed(list(enumerate(self.dirs)))]
            with open(os.path.join(folder, protocol.RESUME_FILE), "w") as f:
                json.dump({"attempts": earlier}, f)
        self.dirs.append(folder)
        return folder

    def lines(self, n):
        with open(os.path.join(self.dirs[n - 1], protocol.METRICS_FILE)) as f:
            return [json.loads(l) for l in f]


def load_run(folder, rank=0, world=1, values=None):
    cfg = RunConfig.load(os.path.join(folder, protocol.CONFIG_FILE),
                         launch=batchlab.config.Launch(rank=rank, world_size=world))
    return batchlab.Run(cfg, clock=FakeClock(), values=values)


def train(folder, stop_after=None, during=None, rank=0, world=1, values=None, state_size=0,
          resume=True):
    """One attempt. stop_after: leave the loop after that step (a kill between steps: no
    checkpoint, no end line). during(step, run): called inside each step. Returns the run, the
    step it resumed from and the exit code (None when stopped)."""
    run = load_run(folder, rank, world, values)
    state = {"w": 3.0, "blob": b"x" * state_size}
    run.on_checkpoint(lambda: dict(state))
    got = run.resume() if resume else None
    if got is not None:
        state.update(got)
    resumed = run.step
    try:
        for step in run.steps(train_samples=64):  # 8 steps per epoch
            noise = random.random()
            state["w"] -= run.lr(step) * (state["w"] + noise - 0.5)
            if during is not None:
                during(step, run)
            if run.log_step(state["w"] ** 2 + 1.0, noise=noise):
                run.log_eval(test_loss=abs(state["w"]))
            if step == stop_after:
                run._finished = True  # killed: no end line (and no warning at exit)
                return run, resumed, None
    except SystemExit as e:
        return run, resumed, e.code
    return run, resumed, run.finish(exit=False)


def steps_of(lines):
    return [l for l in lines if l["kind"] == protocol.LINE_STEP]


class CheckpointTestCase(TempDirTest):
    def setUp(self):
        super().setUp()
        random.seed(7)

    def reference(self, config=None):
        """The uninterrupted run's lines (in a folder of its own), random seeded as setUp."""
        random.seed(7)
        ref = Attempts(self, config)
        _, _, code = train(ref.new())
        self.assertEqual(code, 0)
        random.seed(7)  # the next run starts from the same generator state
        return ref.lines(1)

    def assert_continues(self, lines, reference, from_step):
        """The resumed attempt's step lines: from_step + 1 .. the end, each equal (bit for bit)
        to the reference's, with strictly increasing seq."""
        got = steps_of(lines)
        want = [l for l in steps_of(reference) if l["step"] > from_step]
        self.assertEqual([l["step"] for l in got], [l["step"] for l in want])
        for g, w in zip(got, want):
            for key in ("loss", "lr", "noise", "samples", "epoch"):
                self.assertEqual(g[key], w[key], (key, g["step"]))
        seqs = [l["seq"] for l in lines]
        self.assertEqual(seqs, sorted(set(seqs)))


class ResumeTest(CheckpointTestCase):
    def test_killed_between_steps_resumes_from_the_last_checkpoint_exactly(self):
        reference = self.reference()
        run = Attempts(self)
        first, _, code = train(run.new(), stop_after=13)  # checkpoints after 5 and 10
        self.assertIsNone(code)
        ckpts = [l for l in run.lines(1) if l["kind"] == protocol.LINE_CHECKPOINT]
        self.assertEqual([c["step"] for c in ckpts], [5, 10])
        self.assertGreater(ckpts[-1]["checkpoint_bytes"], 100)
        # The first attempt's lines equal the reference up to where it stopped.
        self.assert_continues(run.lines(1), [l for l in reference if l.get("step", 0) <= 13], 0)

        second, resumed, code = train(run.new())
        self.assertEqual((resumed, code, second.resumed_step), (10, 0, 10))
        lines = run.lines(2)
        self.assertEqual(lines[0]["kind"], protocol.LINE_RESUME)
        self.assertEqual(lines[0], {
            "seq": ckpts[-1]["seq"] + 1, "kind": "resume", "step": 10, "from_attempt": 1,
            "file": os.path.join(run.dirs[0], "checkpoints", "step-00000010.rank-0.ckpt"),
            "rejected": []})
        self.assertEqual(lines[1]["kind"], protocol.LINE_START)
        self.assert_continues(lines, reference, 10)
        # Evaluations continue on the same cadence, the end line counts the whole run.
        self.assertEqual([l["step"] for l in lines if l["kind"] == "eval"],
                         [12, 16, 20, 24, 28, 30])
        end = lines[-1]
        self.assertEqual((end["kind"], end["outcome"], end["steps"]), ("end", "completed", 30))
        self.assertEqual(end["final_loss"], reference[-1]["final_loss"])
        # The clock continues from the checkpoint's seconds.
        self.assertGreater(end["seconds"], second._resume_elapsed)
        self.assertGreater(second._resume_elapsed, 0)

    def test_data_position_and_lr_continue(self):
        run = Attempts(self)
        train(run.new(), stop_after=12)
        resumed = load_run(run.new())
        resumed.on_checkpoint(lambda: {})
        self.assertEqual(resumed.data_position, (0, 0))
        self.assertIsNotNone(resumed.resume())
        self.assertEqual(resumed.step, 10)
        self.assertEqual(resumed.data_position, (1, 2))  # 8 steps per epoch: epoch 1, batch 2
        self.assertEqual(tuple(resumed.data_position), (1, 2))
        schedule = LrSchedule(resumed.cfg.lr, 8, 30)
        self.assertEqual(next(iter(resumed.steps(train_samples=64))), 11)
        self.assertEqual(resumed.lr(11), schedule.at(10))
        resumed._finished = True

    def test_the_first_loss_of_the_first_attempt_still_decides_divergence(self):
        # Losses: 1.0 at step 1, then 2.0; the resumed attempt's step 12 logs 10.5 x the FIRST
        # attempt's first loss: diverged, though the resumed attempt's own first loss is 2.0.
        run = Attempts(self)

        def attempt(folder, stop_after=None):
            r = load_run(folder)
            r.on_checkpoint(lambda: {})
            r.resume()
            for step in r.steps():
                r.log_step(1.0 if step == 1 else 10.5 if step == 12 else 2.0)
                if step == stop_after:
                    return r
            return r
        attempt(run.new(), stop_after=11)._finished = True
        second = attempt(run.new())
        self.assertEqual((second.step, second.outcome), (12, "diverged"))
        second.finish(exit=False)

    def test_a_first_attempt_and_a_folder_without_checkpoints_start_at_step_0(self):
        run = Attempts(self)
        first, resumed, code = train(run.new(), stop_after=3)  # before the first checkpoint
        self.assertEqual(resumed, 0)
        self.assertEqual(first.resumed_step, 0)
        second, resumed, code = train(run.new())
        self.assertEqual((resumed, code), (0, 0))
        lines = run.lines(2)
        self.assertEqual(lines[0]["kind"], "start")  # no resume line: nothing was rejected
        self.assertEqual(lines[0]["seq"], 0)

    def test_every_samples_and_every_seconds_set_the_cadence(self):
        # 8 samples a step; the fake clock makes each step 0.12 s of training (two readings;
        # no evaluations, which read it too).
        for section in ({"every_samples": 40, "every_seconds": 0},
                        {"every_seconds": 0.5}):
            with self.subTest(**section):
                run = Attempts(self, {"budget": {"steps": 22}, "eval": {"every_steps": 0},
                                      "checkpoint": section})
                train(run.new())
                steps = [l["step"] for l in run.lines(1) if l["kind"] == "checkpoint"]
                self.assertEqual(steps, [5, 10, 15, 20])

    def test_a_batch_schedule_resumes_exactly_with_its_samples_and_data_position(self):
        # Batches 8 (steps 1-5, 40 samples), 16 (steps 6-9, 104), then 32; a checkpoint every
        # 64 samples: after steps 7 (72), 10 (136), 12 (200), ...
        config = {"batch_schedule": {"at_samples": [40, 100], "batch_sizes": [16, 32]},
                  "checkpoint": {"every_samples": 64, "every_seconds": 0}}
        reference = self.reference(config)
        self.assertEqual([l["samples"] for l in steps_of(reference)][:11],
                         [8, 16, 24, 32, 40, 56, 72, 88, 104, 136, 168])
        run = Attempts(self, config)
        train(run.new(), stop_after=11)
        self.assertEqual([l["step"] for l in run.lines(1) if l["kind"] == "checkpoint"], [7, 10])
        resumed = load_run(run.new())
        resumed.on_checkpoint(lambda: {})
        resumed.resume()
        # Shard 64 rows: steps 1-6 read 56 rows; step 7's 16 start epoch 1 (3 batches of 16);
        # step 10's 32 start epoch 2; step 11's 32 still fit.
        self.assertEqual((resumed.step, resumed.data_position), (10, (2, 1)))
        self.assertEqual(resumed.data_position.rows, 32)
        self.assertEqual((resumed.batch_size, resumed.local_batch_size), (32, 32))
        resumed._finished = True
        random.seed(7)
        second, resumed_from, code = train(run.new())
        self.assertEqual((resumed_from, code), (10, 0))
        self.assert_continues(run.lines(3), reference, 10)
        self.assertEqual(run.lines(3)[-1]["samples"], reference[-1]["samples"])

    def test_a_bad_checkpoint_section_is_a_config_error(self):
        for section, path in (({"keep": 0}, "checkpoint.keep"),
                              ({"at_steps": [3, "x"]}, "checkpoint.at_steps[1]"),
                              ({"every_seconds": -1}, "checkpoint.every_seconds")):
            with self.subTest(path=path):
                with self.assertRaisesRegex(batchlab.ConfigError, re.escape(path)):
                    RunConfig(dict(BASE, checkpoint=section))

    def test_resume_after_steps_began_is_refused(self):
        run = load_run(Attempts(self).new())
        next(iter(run.steps()))
        with self.assertRaises(RuntimeError):
            run.resume()
        run._finished = True


class PreemptTest(CheckpointTestCase):
    def test_the_preempt_file_checkpoints_after_the_step_and_exits_7(self):
        reference = self.reference()
        run = Attempts(self)

        def touch(step, r):
            if step == 7:
                open(os.path.join(run.dirs[0], protocol.PREEMPT_FILE), "w").close()
        first, _, code = train(run.new(), during=touch)
        self.assertEqual(code, 7)
        self.assertEqual(protocol.OUTCOME_CODES["preempted"], 7)
        self.assertEqual((first.step, first.preempted), (7, True))
        lines = run.lines(1)
        self.assertEqual([l["kind"] for l in lines[-2:]], ["step", "checkpoint"])
        self.assertEqual(lines[-1]["step"], 7)
        self.assertNotIn("end", [l["kind"] for l in lines])
        self.assertTrue(os.path.exists(os.path.join(
            run.dirs[0], "checkpoints", "step-00000007.rank-0.ckpt")))

        second, resumed, code = train(run.new())
        self.assertEqual((resumed, code), (7, 0))
        self.assertEqual(run.lines(2)[0]["seq"], lines[-1]["seq"] + 1)
        self.assert_continues(run.lines(2), reference, 7)

    def test_sigusr2_and_sigterm_inside_steps_preempt_and_outside_keep_their_handler(self):
        for signum in (signal.SIGUSR2, signal.SIGTERM):
            with self.subTest(signal=signum.name):
                self.assertIn(int(signum), protocol.PREEMPT_SIGNALS)
                before = signal.getsignal(signum)
                run = Attempts(self)
                run.config = dict(run.config, run_id=f"r-{signum.name}")

                def send(step, r):
                    if step == 3:
                        os.kill(os.getpid(), signum)
                first, _, code = train(run.new(), during=send)
                self.assertEqual((code, first.step), (7, 3))
                self.assertEqual(signal.getsignal(signum), before)
                second, resumed, code = train(run.new())
                self.assertEqual((resumed, code), (3, 0))

    def test_a_preempt_at_the_last_step_just_finishes(self):
        run = Attempts(self, {"budget": {"steps": 6}})

        def touch(step, r):
            if step == 6:
                open(os.path.join(run.dirs[0], protocol.PREEMPT_FILE), "w").close()
        _, _, code = train(run.new(), during=touch)
        self.assertEqual(code, 0)
        self.assertEqual(run.lines(1)[-1]["kind"], "end")

    def test_preempted_without_on_checkpoint_exits_7_with_no_checkpoint(self):
        run = Attempts(self)
        folder = run.new()
        r = load_run(folder)
        with self.assertRaises(SystemExit) as exit_:
            for step in r.steps():
                if step == 2:
                    open(os.path.join(folder, protocol.PREEMPT_FILE), "w").close()
                r.log_step(1.0)
        self.assertEqual(exit_.exception.code, 7)
        self.assertFalse(os.path.exists(os.path.join(folder, "checkpoints")))


class BadCheckpointTest(CheckpointTestCase):
    def interrupted(self, keep=10):
        run = Attempts(self, {"checkpoint": {"every_steps": 5, "keep": keep}})
        train(run.new(), stop_after=27)  # checkpoints 5, 10, 15, 20, 25
        return run

    def shard(self, run, step):
        return os.path.join(run.dirs[0], "checkpoints", f"step-{step:08d}.rank-0.ckpt")

    def test_each_bad_file_falls_back_to_the_previous_valid_one_with_its_reason(self):
        run = self.interrupted()
        # 25: truncated; 20: one byte flipped in the payload; 15: another run's; 10: a newer
        # format. 5 is valid.
        with open(self.shard(run, 25), "r+b") as f:
            f.truncate(os.path.getsize(self.shard(run, 25)) - 100)
        with open(self.shard(run, 20), "r+b") as f:
            f.seek(os.path.getsize(self.shard(run, 20)) - 200)
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 1]))
        rewrite_header(self.shard(run, 15), run_id="someone-else")
        rewrite_header(self.shard(run, 10), format=checkpoint.FORMAT + 1)
        reference = self.reference({"checkpoint": {"every_steps": 5, "keep": 10}})
        second, resumed, code = train(run.new())
        self.assertEqual((resumed, code), (5, 0))
        line = run.lines(2)[0]
        self.assertEqual((line["kind"], line["step"], line["from_attempt"]), ("resume", 5, 1))
        reasons = [(os.path.basename(r["file"]), r["reason"].split(" (")[0])
                   for r in line["rejected"]]
        self.assertEqual(reasons, [("step-00000025.rank-0.ckpt", "truncated"),
                                   ("step-00000020.rank-0.ckpt", "corrupt"),
                                   ("step-00000015.rank-0.ckpt", "another run's"),
                                   ("step-00000010.rank-0.ckpt", "a newer format")])
        self.assert_continues(run.lines(2), reference, 5)

    def test_a_write_cut_short_leaves_a_tmp_file_that_is_no_candidate(self):
        # A kill in the middle of the step-25 write leaves only its temporary file (the rename
        # is the last step): the attempt resumes from 20 and rejects nothing.
        run = self.interrupted(keep=2)
        final = self.shard(run, 25)
        with open(final, "rb") as f:
            half = f.read()[:3000]
        os.unlink(final)
        with open(final + ".tmp", "wb") as f:
            f.write(half)
        second, resumed, code = train(run.new())
        self.assertEqual((resumed, code), (20, 0))
        self.assertEqual(run.lines(2)[0]["rejected"], [])

    def test_a_file_that_fails_a_check_is_never_unpickled(self):
        # A payload whose unpickling creates a file: with a wrong checksum or another run's id
        # it is rejected before pickle sees it; with every check passing it is unpickled (and
        # runs: the trust docs/security.md states).
        class Trap:
            def __reduce__(self):
                return (open, (marker, "w"))
        marker = self.path("unpickled")
        folder = self.path("trap")
        os.makedirs(folder)
        path = os.path.join(folder, "step-00000005.rank-0.ckpt")
        expect = {"run_id": "r1", "config_hash": "h", "step": 5, "rank": 0, "world_size": 1}
        _, data = checkpoint.serialize({"client": {}, "user": Trap()})
        header = dict(expect, serializer="pickle")
        for bad, reason in (({"run_id": "r2"}, "another run's"),
                            (None, "corrupt (checksum mismatch)")):
            checkpoint.write_file(path, dict(header, **(bad or {})), data)
            if bad is None:
                with open(path, "r+b") as f:
                    f.seek(-40, 2)
                    f.write(b"!")
            with self.assertRaises(checkpoint.Rejected) as rejected:
                checkpoint.read_file(path, expect)
            self.assertTrue(str(rejected.exception).startswith(reason), rejected.exception)
            self.assertFalse(os.path.exists(marker))
        checkpoint.write_file(path, header, data)
        checkpoint.read_file(path, expect)
        self.assertTrue(os.path.exists(marker))

    def test_another_config_is_refused_and_nothing_valid_means_step_0(self):
        run = self.interrupted(keep=2)
        self.assertEqual(sorted(os.listdir(os.path.join(run.dirs[0], "checkpoints"))),
                         ["step-00000020.rank-0.ckpt", "step-00000025.rank-0.ckpt"])
        second, resumed, code = train(run.new({"lr": dict(BASE["lr"], base=0.06)}))
        self.assertEqual((resumed, code), (0, 0))
        line = run.lines(2)[0]
        self.assertEqual((line["seq"], line["kind"], line["step"]), (0, "resume", 0))
        self.assertNotIn("from_attempt", line)
        self.assertEqual(len(line["rejected"]), 2)
        for r in line["rejected"]:
            self.assertTrue(r["reason"].startswith("written under another config"), r)
        self.assertEqual(steps_of(run.lines(2))[0]["step"], 1)

    def test_the_checkpoint_section_and_attempt_are_not_part_of_the_config_hash(self):
        a = dict(BASE, attempt=1, metrics_path="/a/metrics.jsonl")
        b = dict(BASE, attempt=3, metrics_path="/b/metrics.jsonl", checkpoint={"keep": 9})
        self.assertEqual(checkpoint.config_hash(a), checkpoint.config_hash(b))
        self.assertNotEqual(checkpoint.config_hash(a),
                            checkpoint.config_hash(dict(a, batch_size=16)))
        # Format 2 leaves the split out (a checkpoint goes on at another K); format 1 did not.
        split = dict(a, nodes=4, ranks_per_node=2, world_size=8)
        self.assertEqual(checkpoint.config_hash(a), checkpoint.config_hash(split))
        self.assertNotEqual(checkpoint.config_hash(a, 1), checkpoint.config_hash(split, 1))

    def test_a_format_1_checkpoint_loads_at_its_one_rank_only(self):
        # Client format 1: the same bytes but a config hash over the split. At one rank its
        # data cursor is format 2's (the order was the global order), so it resumes exactly.
        reference = self.reference()
        run = self.interrupted(keep=1)
        path = os.path.join(run.dirs[0], "checkpoints", "step-00000025.rank-0.ckpt")
        rewrite_header(path, format=1, config_hash=checkpoint.config_hash(
            load_run(run.dirs[0]).config, 1))
        second, resumed, code = train(run.new())
        self.assertEqual((resumed, code), (25, 0))
        self.assertEqual([l["loss"] for l in steps_of(run.lines(2))],
                         [l["loss"] for l in steps_of(reference)][25:])
        # At two ranks it is refused with the reason (and the run starts over).
        third = run.new({"nodes": 2, "batch_size": 16})
        with open(os.path.join(third, protocol.RESUME_FILE), "w") as f:
            json.dump({"attempts": [{"attempt": 1, "dir": run.dirs[0]}]}, f)
        results = TwoRankTest.run_ranks(self, third)
        self.assertEqual([results[r][1] for r in (0, 1)], [0, 0])
        self.assertEqual(run.lines(3)[0]["rejected"], [{"file": path, "reason": (
            "it was written by 1 ranks in client format 1, which resumes only at the rank "
            "count that wrote it (elastic resume needs format 2)")}])

    def test_a_write_past_a_real_file_size_limit_keeps_the_previous_checkpoint(self):
        # RLIMIT_FSIZE makes the kernel refuse the write (EFBIG), as a full disk would
        # (ENOSPC): the 10th step's checkpoint (40 KB) cannot be written, the 5th stays, no
        # temporary file is left, the checkpoint line says so, and the run goes on.
        run = Attempts(self)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        def limit(step, r):
            if step == 6:
                resource.setrlimit(resource.RLIMIT_FSIZE, (16384, hard))
            if step == 11:
                resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        try:
            first, _, code = train(run.new(), during=limit, stop_after=14, state_size=40000)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            signal.signal(signal.SIGXFSZ, old_handler)
        ckpts = [l for l in run.lines(1) if l["kind"] == "checkpoint"]
        self.assertEqual([c["step"] for c in ckpts], [5, 10])
        self.assertNotIn("error", ckpts[0])
        self.assertIn("File too large", ckpts[1]["error"])
        self.assertEqual(ckpts[1]["checkpoint_bytes"], 0)
        self.assertEqual(sorted(os.listdir(os.path.join(run.dirs[0], "checkpoints"))),
                         ["step-00000005.rank-0.ckpt"])
        self.assertEqual(first.step, 14)  # it went on
        second, resumed, code = train(run.new(), state_size=40000)
        self.assertEqual((resumed, code), (5, 0))

    def test_keep_removes_older_shards_but_never_at_steps(self):
        run = Attempts(self, {"checkpoint": {"every_steps": 2, "keep": 2, "at_steps": [3, 7]}})
        train(run.new(), stop_after=17)
        # As the runner: an at_steps checkpoint restarts the interval (3, 5, 7, 9, ..., 15).
        names = sorted(os.listdir(os.path.join(run.dirs[0], "checkpoints")))
        self.assertEqual(names, ["step-00000003.rank-0.ckpt", "step-00000007.rank-0.ckpt",
                                 "step-00000013.rank-0.ckpt", "step-00000015.rank-0.ckpt"])


class ThreadValues:
    """Two ranks as threads: mean and from_rank0 through a barrier (shared.py's contract)."""

    def __init__(self, world):
        self.world, self.barrier, self.slots = world, threading.Barrier(world), {}

    def for_rank(self, rank):
        outer = self

        class Values:
            def mean(self, values):
                return outer._exchange(rank, values, lambda all_: [
                    sum(v[i] for v in all_) / outer.world for i in range(len(values))])

            def from_rank0(self, values):
                return outer._exchange(rank, values, lambda all_: list(all_[0]))
        return Values()

    def _exchange(self, rank, values, combine):
        self.slots[rank] = [float(v) for v in values]
        self.barrier.wait()
        out = combine([self.slots[r] for r in range(self.world)])
        self.barrier.wait()
        return out


def on_ranks(world, fn):
    """fn(r, values_of_r) for every rank r on a thread of its own (sharing ThreadValues); waits
    up to 60 s for each; {rank: its result}."""
    values, results = ThreadValues(world), {}

    def one(r):
        results[r] = fn(r, values.for_rank(r))
    threads = [threading.Thread(target=one, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


class TwoRankTest(CheckpointTestCase):
    def run_ranks(self, folder, **kwargs):
        def rank(r, values):
            random.seed(7)  # each thread's draws interleave: the test checks steps, not losses
            return train(folder, rank=r, world=2, values=values, **kwargs)
        return on_ranks(2, rank)

    def test_one_ranks_bad_shard_makes_every_rank_fall_back(self):
        run = Attempts(self, {"batch_size": 16, "nodes": 2,
                              "checkpoint": {"every_steps": 5, "keep": 5}})
        self.run_ranks(run.new(), stop_after=12)
        names = sorted(os.listdir(os.path.join(run.dirs[0], "checkpoints")))
        self.assertEqual(names, [f"step-{s:08d}.rank-{r}.ckpt" for s in (5, 10) for r in (0, 1)])
        os.unlink(os.path.join(run.dirs[0], "checkpoints", "step-00000010.rank-1.ckpt"))
        results = self.run_ranks(run.new())
        self.assertEqual([results[r][1] for r in (0, 1)], [5, 5])
        self.assertEqual([results[r][2] for r in (0, 1)], [0, 0])
        line = run.lines(2)[0]
        self.assertEqual((line["kind"], line["step"]), ("resume", 5))
        self.assertEqual(line["rejected"], [{
            "file": os.path.join(run.dirs[0], "checkpoints", "step-00000010.rank-0.ckpt"),
            "reason": "another rank's shard of it is invalid (see stderr.log)"}])


    def test_a_two_rank_checkpoint_goes_on_at_one_rank_unless_the_sync_keeps_rank_state(self):
        # Elastic resume (the real 2 -> 4 -> 1 run with torch: client_elastic_resume_test.py):
        # written by 2 ranks, read at 1 from rank 0's shard; the resume line says from 2.
        run = Attempts(self, {"batch_size": 16, "nodes": 2, "checkpoint": {"every_steps": 5}})
        self.run_ranks(run.new(), stop_after=12)
        random.seed(7)
        resumed = load_run(run.new({"nodes": 1}))
        resumed.on_checkpoint(lambda: {})
        self.assertEqual(resumed.resume()["w"], self.shard_w(run.dirs[0], 10, 0))
        self.assertEqual((resumed.step, resumed.data_position), (10, (2, 2)))
        self.assertEqual(resumed.data_position.rows, 32)  # global rows: 2 batches of 16
        line = run.lines(2)[0]
        self.assertEqual((line["kind"], line["step"], line["from_world_size"]), ("resume", 10, 2))
        self.assertEqual(resumed._rng_pending["python"][1][:3],
                         self.shard_rng(run.dirs[0], 10, 0)[1][:3])  # rank 0's own generator
        resumed._finished = True
        # comm.sync modes whose ranks keep different states refuse: exit 2 naming nodes.
        run = Attempts(self, {"batch_size": 16, "nodes": 2, "checkpoint": {"every_steps": 5},
                              "comm": {"sync": "async_ps"}})
        self.run_ranks(run.new(), stop_after=12)
        with self.assertRaises(SystemExit) as exited, redirect_stderr(io.StringIO()) as err:
            load_run(run.new({"nodes": 1})).resume()
        self.assertEqual(exited.exception.code, 2)
        self.assertIn('nodes: the checkpoint at step 10 was written by 2 ranks and this run has '
                      '1; comm.sync "async_ps" keeps a different state on every rank that '
                      'cannot be re-sharded: resume at nodes = 2', err.getvalue())

    def shard_payload(self, folder, step, rank):
        path = os.path.join(folder, "checkpoints", protocol.checkpoint_file_name(step, rank))
        return checkpoint.read_file(path, {"run_id": "r1", "config": None})[1]

    def shard_w(self, folder, step, rank):
        return self.shard_payload(folder, step, rank)["user"]["w"]

    def shard_rng(self, folder, step, rank):
        return self.shard_payload(folder, step, rank)["client"]["rng"]["python"]


def rewrite_header(path, **fields):
    """Changes header fields of a checkpoint file and fixes its checksum and header length, so
    only the changed field can make it fail."""
    import hashlib
    import struct
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[8:16])
    header = json.loads(blob[16:16 + size])
    header.update(fields)
    head = json.dumps(header).encode()
    body = blob[:8] + struct.pack("<Q", len(head)) + head + blob[16 + size:-32]
    with open(path, "wb") as f:
        f.write(body + hashlib.sha256(body).digest())


if __name__ == "__main__":
    unittest.main()
