#!/usr/bin/python3
"""The cost of the client's gradient-noise DDP hook (clients/python/batchlab/ddp.py), measured
against the same DDP step without it, in the same run:

    python3 bench/client/gns_hook_bench.py [--ranks 2] [--steps 40] [--rounds 5] [--width 16]

Starts `--ranks` gloo processes. Each holds two identical DDP replicas of the example's
ResNet-style CNN (examples/pytorch-ddp): `plain` with DDP's built-in allreduce, `hooked` with
batchlab's hook measuring on every step (the worst case: gns.every_steps = 1). Rounds alternate
`--steps` steps of each; a step is zero_grad, forward, backward (the allreduce), optimizer step,
and for `hooked` also reading the norms (what log_step does). Rank 0 prints one JSON line with
the median wall-clock step times and hook_ratio = hooked / plain (the issue's bound: <= 1.05),
and the same for the CPU time of the rank's process (all its threads; steadier than wall time on
a loaded machine). It also times the whole client step (run.backward + run.log_step, which adds
one 3-float allreduce) as client_ratio.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "clients", "python"))
sys.path.insert(0, os.path.join(REPO, "examples", "pytorch-ddp"))


def worker(args):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import batchlab
    from batchlab.config import Launch, RunConfig
    from train_plain import ResNet

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = args.batch // world
    torch.manual_seed(0)
    x = torch.rand(local, 1, 28, 28)
    y = torch.randint(0, 10, (local,))

    def replica():
        torch.manual_seed(1)
        model = DDP(ResNet(args.width))
        return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    cfg = RunConfig({"batch_size": args.batch, "nodes": world, "budget": {"steps": 10**9},
                     "gns": {"every_steps": 1}}, Launch.from_env(os.environ))
    run = batchlab.Run(cfg)
    plain, plain_opt = replica()
    hooked, hooked_opt = replica()
    run.watch(hooked)
    client, client_opt = replica()

    def step_plain():
        plain_opt.zero_grad()
        F.cross_entropy(plain(x), y).backward()
        plain_opt.step()

    def step_hooked():
        hooked_opt.zero_grad()
        F.cross_entropy(hooked(x), y).backward()
        hooked_opt.step()
        taken = run._probe.take()
        assert taken is not None and taken[0] > 0 and taken[1] > 0

    client_steps = run.steps()

    def step_client():
        next(client_steps)
        client_opt.zero_grad()
        loss = run.backward(client, F.cross_entropy, x, y)
        client_opt.step()
        run.log_step(loss)

    cpu = {"plain": 0.0, "hooked": 0.0, "client": 0.0}

    def timed(name, fn):
        dist.barrier()
        out = []
        c = time.process_time()
        for _ in range(args.steps):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
        cpu[name] += time.process_time() - c
        return out

    times = {"plain": [], "hooked": [], "client": []}
    for fn in (step_plain, step_hooked, step_client):  # warm up
        for _ in range(3):
            fn()
    for r in range(args.rounds):
        order = [("plain", step_plain), ("hooked", step_hooked), ("client", step_client)]
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            times[name] += timed(name, fn)
    # Every rank's median, averaged (a step ends when the slowest rank's allreduce does).
    n = args.steps * args.rounds
    names = ("plain", "hooked", "client")
    med = torch.tensor([statistics.median(times[k]) for k in names] +
                       [cpu[k] / n for k in names], dtype=torch.float64)
    dist.all_reduce(med)
    med /= world
    if rank == 0:
        plain_s, hooked_s, client_s, plain_c, hooked_c, client_c = med.tolist()
        print(json.dumps({"ranks": world, "batch": args.batch, "width": args.width,
                          "steps_per_variant": args.steps * args.rounds,
                          "plain_step_ms": round(plain_s * 1e3, 3),
                          "hooked_step_ms": round(hooked_s * 1e3, 3),
                          "client_step_ms": round(client_s * 1e3, 3),
                          "hook_ratio": round(hooked_s / plain_s, 4),
                          "client_ratio": round(client_s / plain_s, 4),
                          "plain_cpu_ms": round(plain_c * 1e3, 3),
                          "hooked_cpu_ms": round(hooked_c * 1e3, 3),
                          "hook_cpu_ratio": round(hooked_c / plain_c, 4),
                          "client_cpu_ratio": round(client_c / plain_c, 4)}), flush=True)
    os._exit(0)  # not the interpreter's shutdown: see Run.finish (gloo + Python hook at exit)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128, help="global batch")
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--steps", type=int, default=30, help="steps per variant per round")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    procs = []
    for rank in range(args.ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.ranks), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", *sys.argv[1:]],
                                      env=env))
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    main()
