#!/usr/bin/python3
"""A training program without training, for the client's tests: the loss and the test accuracy
follow closed forms of the step, set by the config's `params`:

  loss(step)     = loss0 * decay^step    (NaN from step `nan_at`, x1000 from step `blowup_at`)
  accuracy(step) = min(1, accuracy_per_step * step)
  crash_at       = raise at that step (an ordinary Python crash: exit 1, no end line)
  rank_offset    = added to the loss of rank r times r (ranks disagree; the mean decides)

Only the standard library: the client must work without torch.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "clients", "python"))
import batchlab  # noqa: E402


def main():
    run = batchlab.init()
    p = run.params
    for step in run.steps(train_samples=p.get("train_samples", 6000)):
        if step == p.get("crash_at", 0):
            raise RuntimeError(f"fake crash at step {step}")
        loss = p.get("loss0", 2.0) * p.get("decay", 0.99) ** step
        loss += p.get("rank_offset", 0.0) * run.rank
        if p.get("nan_at", 0) and step >= p["nan_at"]:
            loss = math.nan
        if p.get("blowup_at", 0) and step >= p["blowup_at"]:
            loss *= 1000
        run.log_step(loss, custom_metric=step * 0.5)
        if run.should_eval():
            acc = min(1.0, p.get("accuracy_per_step", 0.01) * step)
            run.log_eval(test_accuracy=acc, test_loss=loss)
    run.finish()


if __name__ == "__main__":
    main()
