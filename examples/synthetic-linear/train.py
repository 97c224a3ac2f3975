#!/usr/bin/python3
"""Linear regression with Gaussian noise, whose gradient noise scale is known in closed form: the
Python twin of the runner's synthetic-linear task (runner/data/synthetic_linear.cc,
docs/runner.md), for checking the client's noise measurement against the truth.

  x ~ N(0, I_d),  y = w* . x + sigma e,  e ~ N(0, 1),  |w*| = 1
  model: Linear(d -> 1) with a bias, per-sample loss 0.5 (w . x + b - y)^2
  with delta = w - w*:  |G|^2 = |delta|^2 + b^2
                        tr(Sigma) = d (|delta|^2 + b^2 + sigma^2) + |delta|^2 + |delta|^2 + sigma^2
                        B_simple = tr(Sigma) / |G|^2          (McCandlish et al. 2018)

Every measured step also logs the truth at the current weights (gns_true_sq, gns_true_trace,
gns_true_b_simple), as the runner does. Parameters (the spec's `params`): features (16), noise
(1.0), samples (16384), data_seed (1234). Runs under DDP (gloo) with several ranks.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "clients", "python"))
import batchlab  # noqa: E402  (PYTHONPATH or pip install ./clients/python work too)


def make_data(d, n, noise, seed):
    g = torch.Generator().manual_seed(seed)  # the data seed: every run sees the same data
    w_star = torch.randn(d, generator=g, dtype=torch.float64)
    w_star /= w_star.norm()
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = x @ w_star + noise * torch.randn(n, generator=g, dtype=torch.float64)
    return w_star, x.float(), y.float().unsqueeze(1)


def truth(model, w_star, noise):
    """The population |G|^2, tr(Sigma) and B_simple at the model's current weights."""
    delta = model.weight.detach().double().reshape(-1) - w_star
    b = float(model.bias.detach()[0])
    d, dsq, s2 = delta.numel(), float(delta.square().sum()), noise * noise
    g2 = dsq + b * b
    trace = d * (dsq + b * b + s2) + dsq + dsq + s2
    return {"gns_true_sq": g2, "gns_true_trace": trace, "gns_true_b_simple": trace / g2}


def main():
    run = batchlab.init()
    p = run.params
    d, noise = p.get("features", 16), p.get("noise", 1.0)
    w_star, x, y = make_data(d, p.get("samples", 16384), noise, p.get("data_seed", 1234))
    torch.set_num_threads(1)
    if run.world_size > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(run.seed)
    net = torch.nn.Linear(d, 1)
    model = DDP(net) if run.world_size > 1 else net
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = lambda out, target: 0.5 * torch.nn.functional.mse_loss(out, target)  # noqa: E731
    g = torch.Generator().manual_seed(run.seed * 1000 + run.rank)
    shard = torch.arange(run.rank, len(x), run.world_size)
    for step in run.steps(len(x), opt):
        rows = shard[torch.randint(len(shard), (run.local_batch_size,), generator=g)]
        opt.zero_grad()
        extra = truth(net, w_star, noise) if run.measuring else {}  # at the measured weights
        loss = run.backward(model, loss_fn, x[rows], y[rows])
        opt.step()
        if run.log_step(loss, **extra):
            with torch.no_grad():
                run.log_eval(test_loss=float(loss_fn(model(x[:2048]), y[:2048])))
    run.finish()


if __name__ == "__main__":
    main()
