#!/usr/bin/python3
"""A small PyTorch DDP program for the tests of user programs as branch-study trunks and
branches and of batch schedules (user_branch_e2e_test.py): an MLP on a fixed synthetic
classification set, AdamW, the rows of every step from run.batches() (so it follows a
batch_schedule and continues a trunk's data), its state through run.resumable(), the gradient
noise through run.backward(). Everything a branch needs comes from the client; the program has
no branch code of its own. params.preempt_at: in attempt 1, rank 0 sends itself SIGUSR2 in that
step (the run checkpoints after it and exits 7; the next attempt resumes)."""
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "clients", "python"))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import batchlab  # noqa: E402

N, TEST, D, CLASSES = 512, 256, 10, 4


def data():
    g = torch.Generator().manual_seed(0)
    teacher = torch.randn(D, CLASSES, generator=g)
    x = torch.randn(N + TEST, D, generator=g)
    y = (x @ teacher + 0.5 * torch.randn(N + TEST, CLASSES, generator=g)).argmax(1)
    return x[:N], y[:N], x[N:], y[N:]


def main():
    run = batchlab.init()
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    train_x, train_y, test_x, test_y = data()
    torch.manual_seed(run.seed)
    net = torch.nn.Sequential(torch.nn.Linear(D, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                              torch.nn.Linear(32, CLASSES))
    model = DistributedDataParallel(net)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr(1), weight_decay=0.01)
    if not run.params.get("no_state"):
        run.resumable(model=model, optimizer=opt)  # checkpoints, resumes and branch starts
    rows = run.batches(N)
    for step in run.steps(N, opt):
        if step == run.params.get("preempt_at") and run.rank == 0 and run.cfg.attempt == 1:
            os.kill(os.getpid(), signal.SIGUSR2)
        idx = torch.tensor(next(rows))
        opt.zero_grad()
        loss = run.backward(model, F.cross_entropy, train_x[idx], train_y[idx])
        opt.step()
        if run.log_step(loss):
            model.eval()
            with torch.no_grad():
                test_loss = F.cross_entropy(model(test_x), test_y).item()
            model.train()
            run.log_eval(test_loss=test_loss)
    run.finish()


if __name__ == "__main__":
    main()
