"""fake_program.py (the client without torch) as the program of a real study: `batchlab sweep
run` launches it through mpirun, ingests what the client wrote, and records each outcome as the
built-in runner's; a crashing run is failed and the study goes on."""
import os
import unittest

from client_test_support import HERE, PYTHON, StudyTest


class ClientStudyTest(StudyTest):
    def test_outcomes_metrics_and_a_crash(self):
        spec = self.write_spec({
            "name": "fake",
            "base": {
                "program": {"command": [PYTHON, os.path.join(HERE, "fake_program.py")],
                            "validate": True},
                "params": {"accuracy_per_step": 0.01, "crash_at": 0, "train_samples": 3200},
                "budget": {"epochs": 1}, "eval": {"every_steps": 10},
                "target": {"metric": "test_accuracy", "op": ">=", "value": 0.3},
                "gns": {"every_steps": 0}},
            # 32: target met at step 30 (exit 3); 64: crashes at step 7 (exit 1);
            # 128: 25 steps per epoch, accuracy 0.25 < 0.3 (exit 5).
            "zip": [{"batch_size": [32, 64, 128], "params.crash_at": [0, 7, 0]}],
            "seeds": [1]})
        self.batchlab("sweep", "run", spec, "--slots", "2", expect=None)
        rows = self.query("SELECT batch_size, state, outcome, steps, target_step, exit_code "
                          "FROM run_summary ORDER BY batch_size")
        self.assertEqual([r[:2] for r in rows],
                         [(32, "target_reached"), (64, "failed"), (128, "budget_exhausted")])
        self.assertEqual(rows[0][2:5], ("target_reached", 30, 30))
        self.assertEqual(rows[2][3], 25)
        # Every line the client wrote was ingested once, with its own metrics.
        metrics = dict(self.query(
            "SELECT name, count(*) FROM run_metrics m JOIN run_summary s USING (run_id) "
            "WHERE s.batch_size = 32 GROUP BY name"))
        self.assertEqual(metrics["loss"], 30)
        self.assertEqual(metrics["custom_metric"], 30)
        self.assertEqual(metrics["test_accuracy"], 3)
        self.assertEqual(metrics["lr"], 30)
        crashed = self.query("SELECT count(*) FROM run_metrics m JOIN run_summary s "
                             "USING (run_id) WHERE s.batch_size = 64 AND name = 'loss'")
        self.assertEqual(crashed[0][0], 6)  # steps 1-6 were logged before the crash
        # The user's params are part of the run and filterable.
        listed = self.batchlab("results", "list", "--sweep", "fake", "--where",
                               "params.crash_at=7", "--format", "csv").stdout
        self.assertEqual(len(listed.strip().splitlines()), 2, listed)

    def test_a_bad_config_is_rejected_before_anything_runs(self):
        spec = self.write_spec({
            "name": "fake-bad",
            "base": {"program": {"command": [PYTHON, os.path.join(HERE, "fake_program.py")],
                                 "validate": True},
                     "params": {}, "budget": {"steps": 5}, "batch_size": 30,
                     "accumulation": 4}})
        done = self.batchlab("sweep", "run", spec, expect=2)
        self.assertIn("batch_size", done.stderr)


if __name__ == "__main__":
    unittest.main()
