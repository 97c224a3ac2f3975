#!/usr/bin/python3
"""A PyTorch program for the client's distributed tests, started once per rank with the
environment batchlab gives (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...). `params.mode`:

  decisions  the ranks see different losses and accuracies (rank r's loss is scaled by
             params.loss_scale[r] from step params.skew_at on; rank r's accuracy grows at
             params.accuracy_per_step[r]); every rank must still stop after the same step.
  gns        a linear model under DDP on fixed random data through run.backward; each rank also
             computes, without DDP, its local gradient and the full gradient of the global batch
             and writes those squared norms per step, so the test can check the gns_* fields.
  preempt    checkpoints {"rank": r, "step": s}; in attempt 1, rank params.signal_rank sends
             itself params.signal (a number) in step params.signal_at; a later attempt resumes
             and writes the state it got.
  eval_on_rank0  only rank 0 calls log_eval (a mistake: every rank must).
  elastic    two tiny MLPs under DDP on fixed random data, the rows of every step from
             run.batches(N), run.backward with the config's accumulation: one with SGD and
             momentum (its loss is `loss`), one with AdamW (its global mean loss is the metric
             `loss_adamw`); both checkpointed through run.resumable; in attempt a, rank 0 sends
             itself SIGUSR2 in step params.preempt_at[str(a)] (every rank checkpoints, exit 7).

Each rank writes {"step": ..., "outcome": ..., "reference": [...]} to params.out + ".rank<r>".
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "clients", "python"))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import batchlab  # noqa: E402


def decisions(run, p):
    r = run.rank
    for step in run.steps():
        loss = 1.0 * (p["loss_scale"][r] if step >= p.get("skew_at", 10**9) else 1.0)
        run.log_step(torch.tensor(loss))
        if run.should_eval():
            run.log_eval(test_accuracy=min(1.0, p["accuracy_per_step"][r] * step))
    return []


def gns(run, p):
    torch.manual_seed(0)
    d = 6
    w_star = torch.randn(d, 1)
    x_all = torch.randn(run.batch_size * 4, d)
    y_all = x_all @ w_star + 0.5 * torch.randn(run.batch_size * 4, 1)
    torch.manual_seed(1)
    net = torch.nn.Linear(d, 1)
    reference_net = torch.nn.Linear(d, 1)
    reference_net.load_state_dict(net.state_dict())
    model = DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ref_opt = torch.optim.SGD(reference_net.parameters(), lr=0.01)
    loss_fn = torch.nn.functional.mse_loss
    reference = []

    def sq_grad(xb, yb):
        reference_net.zero_grad()
        loss_fn(reference_net(xb), yb).backward()
        return sum(float((q.grad ** 2).sum()) for q in reference_net.parameters())

    for step in run.steps(optimizer=opt):
        rows = [(step - 1) % 4 * run.batch_size, ((step - 1) % 4 + 1) * run.batch_size]
        xg, yg = x_all[rows[0]:rows[1]], y_all[rows[0]:rows[1]]
        lo = run.rank * run.local_batch_size
        x, y = xg[lo:lo + run.local_batch_size], yg[lo:lo + run.local_batch_size]
        # The reference: this rank's local gradient and the global batch's gradient.
        local_sq = sq_grad(x, y)
        global_sq = sq_grad(xg, yg)
        for q in reference_net.parameters():
            q.grad = None
        loss_fn(reference_net(xg), yg).backward()
        for g in ref_opt.param_groups:
            g["lr"] = run.lr(step)
        ref_opt.step()
        reference.append({"step": step, "local_sq": local_sq, "global_sq": global_sq})
        opt.zero_grad()
        loss = run.backward(model, loss_fn, x, y)
        opt.step()
        run.log_step(loss)
    # DDP kept the replicas equal to the reference trained on the global batch.
    diff = max(float((a - b).abs().max()) for a, b in
               zip(net.parameters(), reference_net.parameters()))
    return {"steps": reference, "max_param_diff": diff}


def preempt(run, p):
    run.on_checkpoint(lambda: {"rank": run.rank, "step": run.step})
    state = run.resume()
    for step in run.steps():
        if step == p["signal_at"] and run.rank == p["signal_rank"] and run.cfg.attempt == 1:
            os.kill(os.getpid(), p["signal"])
        run.log_step(torch.tensor(float(run.rank + step)))
    return {"resumed": state}


def elastic(run, p):
    import torch.nn.functional as F
    torch.set_num_threads(1)
    n, d, classes = p["train_samples"], 6, 3
    gen = torch.Generator().manual_seed(0)
    x_all = torch.randn(n, d, generator=gen)
    y_all = (x_all @ torch.randn(d, classes, generator=gen)
             + 0.5 * torch.randn(n, classes, generator=gen)).argmax(1)

    def mlp():
        torch.manual_seed(1)
        return DistributedDataParallel(torch.nn.Sequential(
            torch.nn.Linear(d, 16), torch.nn.Tanh(), torch.nn.Linear(16, classes)))

    sgd_model, adamw_model = mlp(), mlp()
    sgd = torch.optim.SGD(sgd_model.parameters(), lr=0.1, momentum=0.9)
    adamw = torch.optim.AdamW(adamw_model.parameters(), lr=0.01, weight_decay=0.01)
    resumed = run.resumable(sgd_model=sgd_model, sgd=sgd, adamw_model=adamw_model, adamw=adamw)
    stop = p.get("preempt_at", {}).get(str(run.cfg.attempt))
    rows = run.batches(n)
    for step in run.steps(n, sgd):
        for group in adamw.param_groups:
            group["lr"] = run.lr(step) / 10
        idx = torch.tensor(next(rows))
        x, y = x_all[idx], y_all[idx]
        sgd.zero_grad()
        loss = run.backward(sgd_model, F.cross_entropy, x, y)
        sgd.step()
        adamw.zero_grad()
        loss_adamw = run.backward(adamw_model, F.cross_entropy, x, y)
        adamw.step()
        dist.all_reduce(loss_adamw)  # the global mean, as log_step takes the loss's
        if step == stop and run.rank == 0:
            os.kill(os.getpid(), signal.SIGUSR2)
        run.log_step(loss, loss_adamw=loss_adamw / run.world_size)
    return {"resumed_step": resumed}


def eval_on_rank0(run, p):
    # The pattern of many DDP scripts: only rank 0 evaluates (and calls log_eval).
    for step in run.steps():
        run.log_step(torch.tensor(1.0))
        if run.should_eval() and run.rank == 0:
            run.log_eval(test_accuracy=0.5)
    return []


def main():
    run = batchlab.init()
    dist.init_process_group("gloo")
    p = run.params
    reference = {"decisions": decisions, "gns": gns, "preempt": preempt,
                 "eval_on_rank0": eval_on_rank0, "elastic": elastic}[p["mode"]](run, p)
    with open(f"{p['out']}.rank{run.rank}", "w") as f:
        json.dump({"step": run.step, "outcome": run.outcome, "reference": reference}, f)
    run.finish()


if __name__ == "__main__":
    main()
