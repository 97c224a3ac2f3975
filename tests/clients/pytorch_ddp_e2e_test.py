"""examples/pytorch-ddp end to end, as a user runs it: its critical-batch spec scaled down
(fewer rows, a lower target) with 1 and 2 ranks, the 2-rank runs under both launch modes ->
`batchlab sweep run` -> `results list` -> `analyze target|crit|gns` -> `report`."""
import json
import os
import unittest

from client_test_support import REPO, StudyTest

EXAMPLE = os.path.join(REPO, "examples", "pytorch-ddp")


class PytorchDdpStudyTest(StudyTest):
    def test_the_example_study(self):
        with open(os.path.join(EXAMPLE, "crit_batch.json"), encoding="utf-8") as f:
            spec = json.load(f)
        base = spec["base"]
        self.assertEqual(base["program"]["command"], ["/usr/bin/python3", "train.py"])
        # Scaled down: 6000 training rows, 500 held out, 70 % test accuracy within 2 epochs.
        base["program"]["command"] = ["/usr/bin/python3", os.path.join(EXAMPLE, "train.py"),
                                      "--train-samples", "6000", "--test-samples", "500"]
        base["program"]["workdir"] = EXAMPLE
        base["budget"] = {"epochs": 2}
        base["eval"] = {"every_steps": 10}
        base["target"]["value"] = 0.7
        base["gns"] = {"every_steps": 5}
        spec["name"] = "ddp-e2e"
        spec["axes"] = {"batch_size": [32, 64, 128]}
        spec["zip"] = None
        del spec["zip"]
        spec_1 = self.write_spec(spec, "one_rank.json")
        # The same study's 2-rank runs, once per launch mode.
        two = json.loads(json.dumps(spec))
        two["axes"] = {"batch_size": [64], "program.launch": ["mpirun", "torchrun"]}
        two["base"]["nodes"] = 2
        two["name"] = "ddp-e2e-2"
        spec_2 = self.write_spec(two, "two_ranks.json")
        self.batchlab("sweep", "run", spec_1, "--slots", "2")
        self.batchlab("sweep", "run", spec_2, "--slots", "2")

        runs = self.batchlab_json("results", "list", "--sweep", "ddp-e2e")
        print(runs)
        for name in ("ddp-e2e", "ddp-e2e-2"):
            rows = self.query("SELECT batch_size, world_size, state, target_step FROM "
                              "run_summary WHERE sweep = ?", name)
            for batch, world, state, target_step in rows:
                with self.subTest(sweep=name, batch_size=batch):
                    self.assertEqual(state, "target_reached")
                    self.assertGreater(target_step, 0)
        two_rank = self.query("SELECT count(*) FROM run_summary WHERE world_size = 2")
        self.assertEqual(two_rank[0][0], 2)

        target = self.batchlab_json("analyze", "target", "--sweep", "ddp-e2e")
        crit = self.batchlab_json("analyze", "crit", "--sweep", "ddp-e2e", "--resamples", "200")
        gns = self.batchlab_json("analyze", "gns", "--sweep", "ddp-e2e", "--resamples", "200")
        print(json.dumps(target)[:2000], json.dumps(crit)[:2000], json.dumps(gns)[:2000])
        self.assertIn("b_crit", crit["crit"], crit)
        self.assertGreater(crit["crit"]["b_crit"]["value"], 0)
        for r in gns["gns"]["runs"]:
            self.assertGreater(r["b_simple"]["value"], 0, r)
        gns2 = self.batchlab_json("analyze", "gns", "--sweep", "ddp-e2e-2", "--resamples", "200")
        for r in gns2["gns"]["runs"]:
            self.assertEqual(r["world_size"], 2)
            self.assertGreater(r["b_simple"]["value"], 0, r)

        self.batchlab("report", "--sweep", "ddp-e2e", "--out", self.path("report"))
        with open(self.path("report/report.md"), encoding="utf-8") as f:
            report = f.read()
        self.assertIn("ddp-e2e", report)
        self.assertIn("width", report)  # the user's params label the runs


if __name__ == "__main__":
    unittest.main()
