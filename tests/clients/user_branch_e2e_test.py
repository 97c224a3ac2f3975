"""User programs as a branch study's trunk and branches, and batch schedules in user programs,
end to end: tests/clients/branch_program.py (PyTorch DDP, 2 ranks, gloo, mpirun ->
batchlab-rank) through `batchlab sweep run` and `batchlab analyze cbs`.

  user program branches  a trunk (B0 = 16, 24 steps) and branches at its step 8 at k = 1, 2, 4
                         (seeds 1 and 2, 128 samples each): the branch at k = 1 with the trunk's
                         seed continues the trunk bit for bit (losses of steps 9-16: model,
                         AdamW state, rows, dropout's generator); `analyze cbs` gives the point
                         with every k; a trunk whose program registers no state exits 2 naming
                         run.resumable, and its branches fail without starting.
  user program schedule  the schedule run (16 until 128 samples, then 32), preempted after a
                         step past the switch and resumed, equals the trunk's first 8 steps then
                         the k = 2 branch's 4, bit for bit."""
import glob
import json
import os
import unittest

from client_test_support import HERE, PYTHON, StudyTest

PROGRAM = os.path.join(HERE, "branch_program.py")
AT, B0 = 8, 16


def base(**extra):
    b = {"program": {"command": [PYTHON, PROGRAM], "launch": "mpirun", "validate": False},
         "batch_size": B0, "nodes": 2,
         "lr": {"base": 0.01, "base_batch_size": B0, "rule": "sqrt", "warmup_steps": 2},
         "budget": {"steps": 24}, "eval": {"every_steps": 4}, "gns": {"every_steps": 2},
         "checkpoint": {"every_seconds": 0}}
    b.update(extra)
    return b


BRANCH = {"at_steps": [AT], "multipliers": [1, 2, 4], "lr_rule": "sqrt", "delta_samples": 128,
          "seeds": [1, 2]}


class UserProgramBranchTest(StudyTest):
    def losses(self, where):
        """{run: [(step, loss)]} of the runs matching a SQL condition on r.config_json."""
        rows = self.query(
            "SELECT m.step, m.value FROM run_metrics m JOIN runs r ON r.id = m.run_id "
            f"WHERE {where} AND m.name = 'loss' ORDER BY m.seq")
        return rows

    def test_user_program_branches_and_schedule(self):
        spec = self.write_spec({"name": "user-branch", "base": base(), "branch": BRANCH,
                                "seeds": [1], "resources": {"retries": 0}})
        self.batchlab("sweep", "run", spec, "--slots", "4", "--runs-dir", self.path("runs"),
                      timeout=500)
        states = self.query("SELECT state, count(*) FROM runs GROUP BY state")
        self.assertEqual(dict(states).get("failed"), None, states)
        self.assertEqual(sum(n for _, n in states), 7)
        trunk = self.losses("json_extract(r.config_json, '$.branch') IS NULL")
        self.assertEqual([s for s, _ in trunk], list(range(1, 25)))
        k1 = self.losses("json_extract(r.config_json, '$.branch.multiplier') = 1 AND "
                         "json_extract(r.config_json, '$.seed') = 1")
        self.assertEqual(k1, [(s - AT, v) for s, v in trunk[AT:AT + 8]])
        k1_other_seed = self.losses("json_extract(r.config_json, '$.branch.multiplier') = 1 "
                                    "AND json_extract(r.config_json, '$.seed') = 2")
        if k1_other_seed:  # (not pruned) the same rows in another order: another loss
            self.assertNotEqual(k1_other_seed[0][1], trunk[AT][1])
        branch_from = glob.glob(os.path.join(self.path("runs"), "**", "branch_from.json"),
                                recursive=True)
        self.assertGreaterEqual(len(branch_from), 2)

        cbs = self.batchlab_json("analyze", "cbs", "--sweep", "user-branch")
        points = cbs["cbs"]["points"]
        self.assertEqual(len(points), 1, cbs)
        self.assertEqual((points[0]["at_step"], points[0]["samples_seen"]), (AT, AT * B0))
        self.assertGreaterEqual(len(points[0]["branches"]), 2)
        self.assertIn("b_crit", points[0])

        # The schedule run: the trunk's batch until the branch point's samples, then 2 x B0.
        k2 = self.losses("json_extract(r.config_json, '$.branch.multiplier') = 2 AND "
                         "json_extract(r.config_json, '$.seed') = 1")
        self.assertEqual([s for s, _ in k2], [1, 2, 3, 4])
        # Preempted (SIGUSR2 to rank 0) in step 10, after the switch at step 9: every rank
        # checkpoints after the same step, exits 7, and the next attempt resumes there.
        spec = self.write_spec({"name": "user-schedule", "base": base(
            budget={"samples": AT * B0 + 128}, params={"preempt_at": AT + 2},
            batch_schedule={"at_samples": [AT * B0], "batch_sizes": [2 * B0]}),
            "seeds": [1], "resources": {"retries": 0}}, "schedule.json")
        self.batchlab("sweep", "run", spec, "--slots", "4", "--runs-dir", self.path("runs"),
                      timeout=300)
        where = "json_extract(r.config_json, '$.batch_schedule') IS NOT NULL"
        self.assertEqual(self.query(f"SELECT r.state, r.attempt FROM runs r WHERE {where}"),
                         [("completed", 2)])
        resumed = self.query("SELECT e.message FROM events e JOIN runs r ON r.run_key = "
                             f"e.run_key WHERE {where} AND e.kind = 'resume'")
        self.assertEqual(len(resumed), 1, resumed)
        sched = self.losses(where)
        self.assertEqual(sched, trunk[:AT] + [(s + AT, v) for s, v in k2])

    def test_a_trunk_that_registers_no_state_exits_2(self):
        spec = self.write_spec({"name": "no-state", "base": base(params={"no_state": True}),
                                "branch": dict(BRANCH, multipliers=[1], seeds=[1]),
                                "seeds": [1], "resources": {"retries": 0}})
        done = self.batchlab("sweep", "run", spec, "--slots", "4", "--runs-dir",
                             self.path("runs"), expect=None, timeout=200)
        self.assertNotEqual(done.returncode, 0)
        states = dict(self.query(
            "SELECT json_extract(config_json, '$.branch') IS NULL, state FROM runs"))
        self.assertEqual(states, {1: "failed", 0: "failed"})
        logs = glob.glob(os.path.join(self.path("runs"), "**", "stderr.log"), recursive=True)
        text = ""
        for path in logs:
            with open(path, encoding="utf-8", errors="replace") as f:
                text += f.read()
        self.assertIn("checkpoint.at_steps: this run must keep checkpoints after steps [8]", text)
        self.assertIn("run.resumable(model=model, optimizer=optimizer)", text)


if __name__ == "__main__":
    unittest.main()
