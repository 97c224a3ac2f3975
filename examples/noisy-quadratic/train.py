#!/usr/bin/python3
"""A batchlab user program on the noisy quadratic model (nqm.py; Zhang et al. 2019), whose
from-scratch critical batch, local critical batch over training and gradient noise scale are
known in closed form: the workload on which the three estimates are checked against their truths
(docs/methods.md §12; tests/clients/nqm_three_estimates_test.py). Standard library only, one rank.

The optimizer is the config's: `optimizer.name` sgd (heavy ball with momentum 0) or momentum
(`optimizer.momentum` = beta); params.precondition = p > 0 adds the fixed diagonal
preconditioner H^-p (an idealised Adam). Every step draws the batch's gradient noise as two
halves (so the step measures the noise scale, the "micro" source, when run.measuring) from the
run's seed; it logs the loss L(x) (exact: the model's population loss, so also `test_loss`) and
the truths gns_true_sq = |H x|^2 and gns_true_trace = c tr H at the measured parameters. Its
state (x, the momentum buffer) is checkpointed, so it resumes and is a branch study's trunk.
Params: dims (32), copies (16), noise c (0.1), init_scale (1.0), precondition (0).
"""
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, HERE)
import batchlab  # noqa: E402
from nqm import Nqm  # noqa: E402


def main():
    run = batchlab.init()
    p, opt = run.params, run.config.get("optimizer", {})
    beta = opt.get("momentum", 0.9) if opt.get("name") == "momentum" else 0.0
    if opt.get("name") not in ("sgd", "momentum"):
        batchlab.fail_config(batchlab.ConfigError(
            f"optimizer.name: {opt.get('name')!r} is not one this program has; use \"sgd\" or "
            "\"momentum\" (params.precondition for a diagonal preconditioner)"), run.rank)
    n = Nqm(p.get("dims", 32), p.get("copies", 16), p.get("noise", 0.1),
            p.get("init_scale", 1.0), beta, p.get("precondition", 0.0))
    # x_0 and the noise from Python's generator, seeded by the run's seed; the client saves and
    # restores it with the checkpoints (a branch with the trunk's seed continues its noise).
    rng = random
    rng.seed(run.seed)
    state = {"x": [rng.gauss(0.0, n.init_scale) for _ in n.h], "v": [0.0] * len(n.h)}
    run.on_checkpoint(lambda: state)
    loaded = run.resume()  # a new attempt's checkpoint, or a branch's trunk state
    if loaded is not None:
        state.update(x=loaded["x"], v=loaded["v"])
    x, v = state["x"], state["v"]
    for step in run.steps():
        lr, batch = run.lr(step), run.batch_size
        half = math.sqrt(2.0 * n.noise / batch)  # each half's noise sd per sqrt(h)
        sq_half = sq_big = 0.0
        for i, (h, pc) in enumerate(zip(n.h, n.p)):
            s = math.sqrt(h) * half
            ga, gb = h * x[i] + s * rng.gauss(0.0, 1.0), h * x[i] + s * rng.gauss(0.0, 1.0)
            g = 0.5 * (ga + gb)
            sq_half += 0.5 * (ga * ga + gb * gb)
            sq_big += g * g
            v[i] = beta * v[i] + g
        extra = {}
        if run.measuring and batch >= 2:
            run.log_noise(batch // 2, sq_half, sq_big)
            extra = {"gns_true_sq": n.true_sq(x), "gns_true_trace": n.true_trace()}
        for i, pc in enumerate(n.p):
            x[i] -= lr * pc * v[i]
        loss = n.loss(x)
        if run.log_step(loss, **extra):
            run.log_eval(test_loss=loss)
    run.finish()


if __name__ == "__main__":
    main()
