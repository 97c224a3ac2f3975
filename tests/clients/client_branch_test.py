"""User programs as a branch study's trunk and branches, and batch schedules over the client's
rows (run.batches), without torch or a sweep (the attempt folders laid out as the orchestrator
does; tests/clients/user_branch_e2e_test.py runs the same through `batchlab sweep run`):

  - a branch at k = 1 with the trunk's seed and LR continues the trunk bit for bit (its state,
    its rows, its random generator); at k = 2 it reads exactly the rows the trunk would have
    read next, two steps' worth per step; with another seed the same rows in another order;
  - a schedule run (B0, then 2 x B0 from the branch point's samples) equals trunk-then-branch
    bit for bit, and resumes across the switch exactly;
  - refusals: a missing or corrupt trunk checkpoint exits 1 listing each file tried and why; a
    trunk that registers no state and a branch that loads none exit 2 naming what to add.

The program's "training" depends on its state, on the rows it reads, on Python's random
generator and on the LR, so a wrong restore of any of them changes the losses."""
import contextlib
import io
import json
import os
import random
import unittest

from client_test_support import TempDirTest
import batchlab
from batchlab import protocol
from batchlab.config import RunConfig
from client_checkpoint_test import FakeClock, on_ranks

N = 64                                # training rows
DATA = [random.Random(3).uniform(-1, 1) for _ in range(N)]
B0, AT = 8, 10                        # the trunk's batch; the branch point (step)
TRUNK = {"run_id": "trunk", "seed": 1, "batch_size": B0, "budget": {"steps": 30},
         "eval": {"every_steps": 0}, "gns": {"every_steps": 0},
         "lr": {"base": 0.05, "base_batch_size": B0, "rule": "sqrt", "warmup_steps": 3},
         "checkpoint": {"every_seconds": 0, "at_steps": [AT]}}


def branch_config(k, seed=1, delta=64, run_id=None):
    """What orchestrator/spec/branch_study.cc writes for a branch at trunk step AT."""
    c = json.loads(json.dumps(TRUNK))
    c.update(run_id=run_id or f"branch-k{k}-s{seed}", seed=seed, batch_size=k * B0,
             budget={"samples": delta}, checkpoint={"every_seconds": 0, "at_steps": []},
             branch={"trunk_run_id": "trunk", "at_step": AT, "at_samples": AT * B0,
                     "trunk_batch_size": B0, "multiplier": k})
    c["lr"].update(base=0.05, base_batch_size=B0, warmup_steps=0)
    return c


def attempt_folder(test, name, config, trunk_dirs=None, world=1):
    folder = test.path(name)
    os.makedirs(folder)
    config = dict(config, attempt=1, metrics_path=os.path.join(folder, protocol.METRICS_FILE),
                  nodes=world)
    with open(os.path.join(folder, protocol.CONFIG_FILE), "w") as f:
        json.dump(config, f)
    if trunk_dirs is not None:
        with open(os.path.join(folder, protocol.BRANCH_FROM_FILE), "w") as f:
            json.dump({"trunk_dirs": trunk_dirs}, f)
    return folder


def train(folder, rank=0, world=1, values=None, stop_after=None, register=True, resume=True):
    """One attempt of the program; returns (run, exit code or None when stopped, rows read)."""
    cfg = RunConfig.load(os.path.join(folder, protocol.CONFIG_FILE),
                         launch=batchlab.config.Launch(rank=rank, world_size=world))
    run = batchlab.Run(cfg, clock=FakeClock(), values=values)
    random.seed(100 + run.seed)  # the program seeds its generator from the run's seed
    state = {"w": 3.0}
    if register:
        run.on_checkpoint(lambda: dict(state))
    read = []
    try:
        got = run.resume() if resume else None
        if got is not None:
            state.update(got)
        rows = run.batches(N)
        for step in run.steps(train_samples=N):
            idx = next(rows)
            read.append(idx)
            noise = random.random()
            x = sum(DATA[i] for i in idx) / len(idx)
            state["w"] -= run.lr(step) * (state["w"] + x + 0.1 * noise)
            run.log_step(state["w"] ** 2 + 1.0)
            if step == stop_after:
                run._finished = True  # killed after this step
                return run, None, read
    except SystemExit as e:
        return run, e.code, read
    return run, run.finish(exit=False), read


def step_lines(folder):
    with open(os.path.join(folder, protocol.METRICS_FILE)) as f:
        return [l for l in map(json.loads, f) if l["kind"] == protocol.LINE_STEP]


class BranchTest(TempDirTest):
    def trunk(self, world=1):
        folder = attempt_folder(self, "trunk", TRUNK, world=world)
        return folder

    def test_a_branch_at_k_1_continues_the_trunk_bit_for_bit(self):
        trunk = self.trunk()
        _, code, trunk_rows = train(trunk)
        self.assertEqual(code, 0)
        self.assertTrue(os.path.exists(os.path.join(trunk, "checkpoints",
                                                    "step-00000010.rank-0.ckpt")))
        branch = attempt_folder(self, "k1", branch_config(1, delta=12 * B0), [trunk])
        run, code, rows = train(branch)
        self.assertEqual((code, run.step), (0, 12))
        got, want = step_lines(branch), step_lines(trunk)[AT:AT + 12]
        self.assertEqual([l["loss"] for l in got], [l["loss"] for l in want])
        self.assertEqual([l["lr"] for l in got], [l["lr"] for l in want])
        self.assertEqual(rows, trunk_rows[AT:AT + 12])
        # Its own counters: steps and samples from 0; the epochs are the data's.
        self.assertEqual([l["samples"] for l in got], [B0 * s for s in range(1, 13)])
        self.assertEqual([l["epoch"] for l in got], [l["epoch"] for l in want])

    def test_a_branch_at_k_2_reads_the_rows_the_trunk_read_next(self):
        trunk = self.trunk()
        _, _, trunk_rows = train(trunk)
        branch = attempt_folder(self, "k2", branch_config(2, delta=8 * B0), [trunk])
        run, code, rows = train(branch)
        self.assertEqual((code, run.step, run.local_batch_size), (0, 4, 2 * B0))
        # 64 rows = 8 trunk steps an epoch; the trunk stopped 2 steps into epoch 1: the branch's
        # first 3 steps are the trunk's steps 11-16, its 4th starts epoch 2 (steps 17-18).
        self.assertEqual(rows[:3], [trunk_rows[AT + 2 * i] + trunk_rows[AT + 2 * i + 1]
                                    for i in range(3)])
        self.assertEqual(rows[3], trunk_rows[16] + trunk_rows[17])
        self.assertEqual([l["epoch"] for l in step_lines(branch)], [1, 1, 1, 2])

    def test_a_branch_with_another_seed_reads_the_same_rows_in_another_order(self):
        trunk = self.trunk()
        _, _, trunk_rows = train(trunk)
        branch = attempt_folder(self, "s2", branch_config(1, seed=2, delta=6 * B0), [trunk])
        _, code, rows = train(branch)
        self.assertEqual(code, 0)
        self.assertNotEqual(rows, trunk_rows[AT:AT + 6])
        self.assertEqual(sorted(sum(rows, [])), sorted(sum(trunk_rows[AT:AT + 6], [])))
        self.assertNotEqual(step_lines(branch)[0]["loss"], step_lines(trunk)[AT]["loss"])

    def test_a_killed_branch_resumes_from_its_own_checkpoint_exactly(self):
        trunk = self.trunk()
        train(trunk)
        config = branch_config(2, seed=2, delta=6 * 2 * B0)
        config["checkpoint"] = {"every_steps": 2, "every_seconds": 0}
        whole = attempt_folder(self, "whole", config, [trunk])
        _, _, rows = train(whole)
        first = attempt_folder(self, "first", config, [trunk])
        train(first, stop_after=3)  # checkpoint after step 2
        second = attempt_folder(self, "second", config, [trunk])
        with open(os.path.join(second, protocol.RESUME_FILE), "w") as f:
            json.dump({"attempts": [{"attempt": 1, "dir": first}]}, f)
        run, code, resumed_rows = train(second)
        self.assertEqual((code, run.resumed_step), (0, 2))
        self.assertEqual(resumed_rows, rows[2:])
        self.assertEqual([l["loss"] for l in step_lines(second)],
                         [l["loss"] for l in step_lines(whole)[2:]])

    def test_a_schedule_equals_trunk_then_branch_and_resumes_across_the_switch(self):
        trunk = self.trunk()
        train(trunk)
        branch = attempt_folder(self, "k2", branch_config(2, delta=10 * 2 * B0), [trunk])
        train(branch)
        # The schedule's LR at 2 x B0 is the rule's (sqrt), as the branch's; no warmup after the
        # switch: the trunk's warmup is over by then.
        sched = dict(TRUNK, run_id="schedule", budget={"samples": AT * B0 + 10 * 2 * B0},
                     batch_schedule={"at_samples": [AT * B0], "batch_sizes": [2 * B0]},
                     checkpoint={"every_steps": 7, "every_seconds": 0})
        folder = attempt_folder(self, "schedule", sched)
        _, code, _ = train(folder)
        self.assertEqual(code, 0)
        got = step_lines(folder)
        want = step_lines(trunk)[:AT] + step_lines(branch)
        self.assertEqual(len(got), AT + 10)
        for key in ("loss", "lr", "epoch"):
            self.assertEqual([l[key] for l in got], [l[key] for l in want], key)
        # Killed after step 16 (checkpoint after 14, past the switch at 11): resumed exactly.
        again = attempt_folder(self, "schedule-2", sched)
        _, code, _ = train(again, stop_after=16)
        self.assertIsNone(code)
        resumed = attempt_folder(self, "schedule-3", sched)
        with open(os.path.join(resumed, protocol.RESUME_FILE), "w") as f:
            json.dump({"attempts": [{"attempt": 1, "dir": again}]}, f)
        run, code, _ = train(resumed)
        self.assertEqual((code, run.resumed_step), (0, 14))
        self.assertEqual([(l["step"], l["loss"]) for l in step_lines(resumed)],
                         [(l["step"], l["loss"]) for l in got[14:]])

    @staticmethod
    def two_ranks(folder):
        """train() on 2 ranks (threads sharing values), {rank: its result}."""
        return on_ranks(2, lambda r, values: train(folder, rank=r, world=2, values=values))

    def test_two_ranks_branch_at_k_1_continues_the_trunk(self):
        ranks = self.two_ranks
        trunk = attempt_folder(self, "trunk", dict(TRUNK, batch_size=16), world=2)
        t = ranks(trunk)
        c = branch_config(1, delta=5 * 16)
        c.update(batch_size=16)
        c["branch"]["trunk_batch_size"] = 16
        c["lr"]["base_batch_size"] = 16
        branch = attempt_folder(self, "k1", c, [trunk], world=2)
        b = ranks(branch)
        for r in (0, 1):
            self.assertEqual(b[r][1], 0)
            self.assertEqual(b[r][2], t[r][2][AT:AT + 5])

    def test_a_branch_at_another_rank_count_reads_the_trunks_rows_cut_by_rank(self):
        # branch.nodes (docs/spec.md): the trunk ran at 1 rank, its k = 2 branch runs at 2; each
        # branch rank reads the trunk's only shard (rank r mod 1) and its half of every global
        # batch, which is the two trunk steps the trunk would have read next.
        trunk = self.trunk()
        _, _, trunk_rows = train(trunk)
        branch = attempt_folder(self, "k2-2ranks", branch_config(2, delta=6 * B0), [trunk],
                                world=2)
        out = self.two_ranks(branch)
        self.assertEqual([out[r][1] for r in (0, 1)], [0, 0])
        for r in (0, 1):
            self.assertEqual(out[r][2], [trunk_rows[AT + 2 * i + r] for i in range(3)])

    def assert_exits(self, folder, code, *needles, **kwargs):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            _, got, _ = train(folder, **kwargs)
        self.assertEqual(got, code, err.getvalue())
        for needle in needles:
            self.assertIn(needle, err.getvalue())
        return err.getvalue()

    def test_a_missing_or_corrupt_trunk_checkpoint_exits_1_listing_each_file(self):
        trunk = self.trunk()
        train(trunk)
        shard = os.path.join(trunk, "checkpoints", "step-00000010.rank-0.ckpt")
        other = self.path("trunk-attempt-2")  # an attempt folder without checkpoints
        os.makedirs(other)
        with open(shard, "r+b") as f:
            f.seek(-40, os.SEEK_END)
            f.write(b"\0" * 8)
        folder = attempt_folder(self, "k1", branch_config(1), [other, trunk])
        self.assert_exits(folder, 1, "no usable checkpoint of trunk run trunk at step 10",
                          f"{other}/checkpoints/step-00000010.rank-0.ckpt: no such file",
                          f"{shard}: corrupt (checksum mismatch)")
        os.unlink(os.path.join(folder, protocol.BRANCH_FROM_FILE))
        self.assert_exits(folder, 1, "branch_from.json: No such file or directory")
        self.assertFalse(os.path.exists(os.path.join(folder, protocol.METRICS_FILE)))

    def test_a_trunk_state_that_does_not_fit_the_branch_exits_2(self):
        class Model:
            def __init__(self, width):
                self.width = width

            def state_dict(self):
                return {"width": self.width}

            def load_state_dict(self, d):
                if d["width"] != self.width:
                    raise RuntimeError(f"size mismatch: {d['width']} vs {self.width}\nmore")

        def program(folder, width):
            cfg = RunConfig.load(os.path.join(folder, protocol.CONFIG_FILE))
            run = batchlab.Run(cfg, clock=FakeClock())
            try:
                run.resumable(model=Model(width))
                for _ in run.steps(train_samples=N):
                    run.log_step(1.0)
            except SystemExit as e:
                return e.code
            return run.finish(exit=False)
        trunk = attempt_folder(self, "trunk", TRUNK)
        self.assertEqual(program(trunk, 8), 0)
        same = attempt_folder(self, "same", branch_config(1), [trunk])
        self.assertEqual(program(same, 8), 0)
        folder = attempt_folder(self, "k1", branch_config(1, run_id="wider"), [trunk])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(program(folder, 16), 2)
        self.assertIn("branch: trunk run trunk's checkpoint does not fit this run's model "
                      "(RuntimeError: size mismatch: 8 vs 16)", err.getvalue())

    def test_a_trunk_that_saves_nothing_and_a_branch_that_loads_nothing_exit_2(self):
        self.assert_exits(self.trunk(), 2, "checkpoint.at_steps", "run.resumable(model=model, "
                          "optimizer=optimizer)", register=False, resume=False)
        trunk = attempt_folder(self, "trunk-ok", TRUNK)
        train(trunk)
        folder = attempt_folder(self, "k1", branch_config(1), [trunk])
        self.assert_exits(folder, 2, "branch: this run starts from trunk run trunk's "
                          "checkpoint at step 10", "before run.steps()", resume=False)


if __name__ == "__main__":
    unittest.main()
