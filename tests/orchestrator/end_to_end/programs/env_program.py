#!/usr/bin/env python3
"""A user program at the orchestrator's seam (standard library only): what `batchlab-rank` gives
every rank, checked from the inside.

Each rank records its environment in <attempt dir>/rank<RANK>.json, the ranks meet over TCP at
MASTER_ADDR:MASTER_PORT the way torch.distributed's env:// rendezvous does (rank 0 listens,
the others connect), and rank 0 writes the protocol's metrics lines. `params.behave` selects a
misbehaviour: "crash" (exit 1, no end line), "raise" (an uncaught ValueError, exit 1), "hang" (never ends), "garbage" (binary and
malformed lines between valid ones), "bad_config" (exit 2 from --validate when params.depth < 0).
"""
import json
import os
import socket
import sys
import time


def arg(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def rendezvous(rank, world, addr, port):
    """All ranks meet at rank 0's listening socket; returns the ranks rank 0 saw."""
    if world == 1:
        return [0]
    if rank == 0:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((addr, port))
        srv.listen(world)
        seen = [0]
        for _ in range(world - 1):
            conn, _ = srv.accept()
            seen.append(int(conn.recv(16).decode()))
            conn.close()
        srv.close()
        return sorted(seen)
    deadline = time.time() + 60
    while True:
        try:
            with socket.create_connection((addr, port), timeout=5) as c:
                c.sendall(str(rank).encode())
            return []
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def main():
    config_path = arg("--config")
    config = json.load(open(config_path))
    params = config.get("params", {})
    if "--validate" in sys.argv:
        if params.get("depth", 0) < 0:
            print("params.depth: must be >= 0 (got %s)" % params["depth"], file=sys.stderr)
            return 2
        return 0
    env = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                          "MASTER_ADDR", "MASTER_PORT", "BATCHLAB_CONFIG")}
    env["config_arg"] = config_path
    env["cwd"] = os.getcwd()
    env["argv"] = sys.argv[1:]
    env["host"] = socket.gethostname()
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    attempt_dir = os.path.dirname(config["metrics_path"])
    env["met"] = rendezvous(rank, world, env["MASTER_ADDR"], int(env["MASTER_PORT"]))
    with open(os.path.join(attempt_dir, "rank%d.json" % rank), "w") as f:
        json.dump(env, f)
    behave = params.get("behave", "")
    if behave == "crash":
        sys.exit(1)
    if behave == "raise":  # an uncaught exception: Python prints its traceback, exits 1
        raise ValueError("params.behave asked this program to raise")
    if behave == "hang":
        time.sleep(3600)
    time.sleep(float(params.get("sleep", 0)))
    if rank != 0:
        return 0
    with open(config["metrics_path"], "wb") as out:
        seq = [0]

        def line(obj):
            obj = dict({"seq": seq[0]}, **obj)
            seq[0] += 1
            out.write((json.dumps(obj) + "\n").encode())
            out.flush()

        line({"kind": "start", "world_size": world, "batch_size": config["batch_size"],
              "parameters": 7})
        if behave == "garbage":
            out.write(b"\x00\xff\xfe not json at all\n{\"seq\": \n")
        steps = 3
        for s in range(1, steps + 1):
            line({"kind": "step", "step": s, "samples": s * config["batch_size"],
                  "loss": 1.0 / s + params.get("depth", 0) * 0.001})
        line({"kind": "end", "outcome": "completed", "steps": steps,
              "samples": steps * config["batch_size"], "seconds": 0.1, "target_step": None,
              "target_samples": None, "target_seconds": None, "final_test_loss": None,
              "final_test_accuracy": None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
