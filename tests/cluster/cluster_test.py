#!/usr/bin/env python3
"""Every multi-node path of batchlab across the hosts of the virtual cluster (scripts/cluster/,
started by the CTest fixture): one script, one cluster start, many checks, each printing its
figures. Sections (run all, or name some on the command line):

  cluster   sinfo shows N idle nodes; hosts have distinct hostnames and addresses
  preflight a run with more nodes than the partition exits 2 naming `nodes`; nothing submitted
  runner    the built-in runner on 2 and 3 hosts (--backend slurm): every rank's host and address
            (place.rank<r>.json) distinct and inside the job's allocation; the losses of every
            deterministic sync mode bit for bit those of the same world size on one host; the
            asynchronous modes complete across hosts; 2 ranks per node on 2 nodes: local ranks
            0,1 on each host, 0 GPUs, device cpu (the GPU pinning path, with no GPU)
  warm      warm workers under Slurm: three runs of one 2-host shape packed into one allocation,
            each rank on its own host, losses bit for bit those of the cold runs
  program   a user program (mpirun and srun launches, 2 and 3 hosts, all four at once): ranks on
            distinct hosts, MASTER_ADDR the allocation's first host, every rank met rank 0
            there, MASTER_PORTs distinct across the concurrent runs
  ddp       examples/pytorch-ddp (torch DDP over gloo) on 2 and 3 hosts, MASTER_ADDR = first host
  alphabeta the inter-host links shaped with tc tbf; alpha and beta fitted by `analyze scaling`
            from 2-host runs at two model sizes; the ring model's time for 3 hosts against the
            measured 3-host run
  orchestrator_kill  kill -9 of `sweep run` during a 3-host run: the rerun scancels the orphan
            job, resumes from the checkpoint, and leaves no process on any host
  host_dies  every process of a host killed mid-run of a 3-host run with slurm.elastic
            {min_nodes 2}: the run fails over, its next attempt takes the 2 hosts left (the
            pending 3-node job lowered to the 2 idle nodes after pending_seconds) and resumes the 3-rank checkpoint at
            2 ranks; the resume line names the step and from_world_size 3; the losses of the
            steps both attempts trained agree (the same global batches); the attempts table
            records K = 3 then 2 and `analyze target` counts each step's rank-seconds at its K;
            no process is left; the host comes back
  link_down  a host's link taken down mid-run: the run fails within the communicator timeout,
            is retried on the remaining hosts; once the link is back nothing is left on any host
  never_up  a cluster whose host never comes up: start.sh fails and leaves nothing behind

Environment (set by tests/cluster/CMakeLists.txt): BATCHLAB_BIN, BATCHLAB_RUNNER, REPO,
BATCHLAB_CLUSTER_STATE, BATCHLAB_CLUSTER_PREFIX, WORK (a scratch folder on the shared
filesystem).
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

REPO = os.environ["REPO"]
BIN = os.environ["BATCHLAB_BIN"]
RUNNER = os.environ["BATCHLAB_RUNNER"]
STATE = os.environ["BATCHLAB_CLUSTER_STATE"]
PREFIX = os.environ.get("BATCHLAB_CLUSTER_PREFIX", "blc")
WORK = os.environ["WORK"]
ON = os.path.join(REPO, "scripts", "cluster", "on.sh")
PYTHON = "/usr/bin/python3"
ENV_PROGRAM = os.path.join(REPO, "tests", "orchestrator", "end_to_end", "programs",
                           "env_program.py")
DDP_EXAMPLE = os.path.join(REPO, "examples", "pytorch-ddp", "train.py")
N = int(open(os.path.join(STATE, "size")).read())

failures = []


def check(ok, what):
    print(("  ok   " if ok else "  FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def on(host, *argv, timeout=600, **kw):
    env = dict(os.environ, BATCHLAB_CLUSTER_STATE=STATE, BATCHLAB_CLUSTER_PREFIX=PREFIX)
    env.update(kw.pop("env", {}))
    return subprocess.run(["bash", ON, str(host), *argv], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=WORK, **kw)


def host_name(h):
    return f"{PREFIX}-head" if h == "head" else f"{PREFIX}{h}"


def sweep_argv(spec, name, slots, workers="fresh", runner=RUNNER):
    path = os.path.join(WORK, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return [BIN, "--db", os.path.join(WORK, name + ".db"), "sweep", "run", path, "--backend",
            "slurm", "--runs-dir", os.path.join(WORK, "runs-" + name), "--runner", runner,
            "--slots", str(slots), "--workers", workers]


def sweep(spec, name, slots, workers="fresh", env=None):
    t = time.time()
    r = on("head", *sweep_argv(spec, name, slots, workers), env=env or {})
    print(f"  sweep {name}: exit {r.returncode} in {time.time() - t:.1f} s", flush=True)
    if r.returncode != 0:
        print(r.stderr[-3000:])
    return r


def attempts(name):
    """run id -> its latest attempt folder."""
    out = {}
    for d in sorted(glob.glob(os.path.join(WORK, "runs-" + name, "*", "*", "attempt-*"))):
        run = os.path.basename(os.path.dirname(d))
        n = int(os.path.basename(d).split("-")[1])
        if run not in out or n > int(os.path.basename(out[run]).split("-")[1]):
            out[run] = d
    return out


def read_json(path):
    with open(path) as f:
        return json.load(f)


def lines(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.endswith("\n")]
    except OSError:
        return []


def losses(attempt_dir):
    """step -> the loss text exactly as rank 0 wrote it (bit for bit: shortest round trip)."""
    out = {}
    with open(os.path.join(attempt_dir, "metrics.jsonl")) as f:
        for raw in f:
            line = json.loads(raw)
            if line.get("kind") == "step":
                out[line["step"]] = repr(float(line["loss"]))
    return out


def job_hosts(attempt_dir):
    """The hosts Slurm gave the attempt's job (scontrol show hostnames of its NodeList)."""
    launch = read_json(os.path.join(attempt_dir, "launch.json"))
    job = on("head", "scontrol", "show", "job", "-o", str(launch["job_id"])).stdout
    m = re.search(r"(?:^| )NodeList=(\S+)", job)
    if not m:
        return []
    return on("head", "scontrol", "show", "hostnames", m.group(1)).stdout.split()


def places(attempt_dir):
    return [read_json(p) for p in sorted(glob.glob(os.path.join(attempt_dir, "place.rank*.json")))]


def stray_processes():
    """Processes in any host's namespace other than the anchor and the Slurm daemons."""
    out = []
    for h in ["head"] + list(range(1, N + 1)):
        ns = f"{PREFIX}-{h}"
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split()
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            exe = os.path.basename(argv[0].decode(errors="replace"))
            if exe in ("sleep", "slurmd", "slurmctld") or b"slurmscriptd" in argv[0]:
                continue  # the anchor and the daemons (slurmscriptd: slurmctld's helper)
            out.append(f"{host_name(h)}:{pid}:{' '.join(a.decode(errors='replace') for a in argv if a)[:80]}")
    return out


def queue_empty():
    return on("head", "squeue", "-h").stdout.strip() == ""


BASE = {
    "data": {"name": "fashion-mnist", "samples": 1920, "test_samples": 480},
    "model": {"name": "mlp", "hidden": [32]},
    "optimizer": {"name": "sgd"},
    "lr": {"base": 0.05, "rule": "none"},
    "batch_size": 60,
    "budget": {"steps": 12},
    "eval": {"every_steps": 6},
    "gns": {"every_steps": 0},
    "comm": {"backend": "mpi", "sync_every": 4, "backup_workers": 1},
    "threads": 1,
}
# The virtual hosts share this machine's cores (each says it has 4): no binding to cores.
LAUNCH = {"mpirun_args": ["--bind-to", "none"]}


def section_cluster():
    st = on("head", "sinfo", "-h", "-o", "%D %T").stdout.split()
    check(st == [str(N), "idle"], f"sinfo: {N} idle nodes (got {' '.join(st)})")
    names = [on(h, "hostname").stdout.strip() for h in range(1, N + 1)]
    addrs = [on(h, "ip", "-4", "-o", "addr", "show", "eth0").stdout.split()[3].split("/")[0]
             for h in range(1, N + 1)]
    print(f"  hosts: {', '.join(f'{n} {a}' for n, a in zip(names, addrs))}")
    check(len(set(names)) == N and len(set(addrs)) == N, "hosts have distinct names and addresses")
    port = re.search(r"^SlurmdPort=(\d+)", open(os.path.join(STATE, "slurm.conf")).read(), re.M)
    reach = on(1, "bash", "-c", f"exec 3<>/dev/tcp/{host_name(N)}/{port.group(1)}")
    check(reach.returncode == 0, f"{host_name(1)} reaches {host_name(N)}'s slurmd by name over the "
                                 f"bridge (TCP port {port.group(1)})")
    root = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    subnet = addrs[0].rsplit(".", 1)[0] + "."
    check(subnet not in root, f"no {subnet}x address outside the cluster's namespaces")


def section_preflight():
    spec = dict(name="preflight", base=dict(BASE, nodes=N + 1), launch=LAUNCH)
    r = on("head", *sweep_argv(spec, "preflight", 4))
    print("  " + r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "  (no message)")
    check(r.returncode == 2, f"nodes {N + 1} on a {N}-node partition: exit 2 (got {r.returncode})")
    check("nodes: run " in r.stderr and f"partition '{PREFIX}' has {N}" in r.stderr
          and f"lower `nodes` to at most {N}" in r.stderr, "the message names `nodes` and the fix")
    check(not os.path.exists(os.path.join(WORK, "preflight.db")), "nothing recorded or submitted")


def check_places(run, d, nodes, per_node):
    ps = places(d)
    world = nodes * per_node
    hosts = sorted({p["host"] for p in ps})
    addrs = sorted({a for p in ps for a in p["addresses"]})
    allocation = job_hosts(d)
    ok = (len(ps) == world and len(hosts) == nodes and set(hosts) <= set(allocation)
          and len(addrs) == nodes)
    per_host = {}
    for p in ps:
        per_host.setdefault(p["host"], []).append(p["local_rank"])
    ok = ok and all(sorted(v) == list(range(per_node)) for v in per_host.values())
    check(ok, f"{run[:8]} nodes={nodes} x {per_node}: ranks on {', '.join(hosts)} "
              f"({', '.join(addrs)}), allocation {','.join(allocation)}")
    return ps


def section_runner():
    # Two sweeps at once (two orchestrators on one cluster): the deterministic sync modes on
    # K ranks on one host and on K hosts, and the asynchronous modes plus 2 x 2 ranks.
    same = dict(name="xhost", base=BASE,
                zip=[{"nodes": [1, 2, 1, 3], "ranks_per_node": [2, 1, 3, 1]}],
                axes={"comm.sync": ["allreduce", "lag", "local_sgd"]},
                resources={"retries": 0}, slurm={"time_limit_minutes": 10}, launch=LAUNCH)
    more = dict(name="xhost_more", base=BASE,
                zip=[{"nodes": [N, N, 2], "ranks_per_node": [1, 1, 2],
                      "comm.sync": ["async_ps", "backup", "allreduce"]}],
                resources={"retries": 0}, slurm={"time_limit_minutes": 10}, launch=LAUNCH)
    t = time.time()
    env = dict(os.environ, BATCHLAB_CLUSTER_STATE=STATE, BATCHLAB_CLUSTER_PREFIX=PREFIX)
    procs = [subprocess.Popen(["bash", ON, "head", *sweep_argv(s, s["name"], 8)], cwd=WORK,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for s in (same, more)]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    print(f"  two sweeps at once: {time.time() - t:.1f} s")
    for s, p, e in zip((same, more), procs, errs):
        check(p.returncode == 0, f"sweep {s['name']}: exit 0 (got {p.returncode})")
        if p.returncode != 0:
            print(e[-3000:])
    by_config = {}
    for name in ("xhost", "xhost_more"):
        for run, d in attempts(name).items():
            c = read_json(os.path.join(d, "config.json"))
            nodes, per_node, sync = c["nodes"], c["ranks_per_node"], c["comm"]["sync"]
            ps = check_places(run, d, nodes, per_node)
            by_config[(nodes, per_node, sync)] = d
            if per_node == 2 and nodes == 2:
                check(all(p["gpus"] == 0 and p["device"] == "cpu" for p in ps),
                      "GPU slots per node: 0 GPUs on every host, every rank on device cpu "
                      f"(local ranks per host {sorted((p['host'], p['local_rank']) for p in ps)})")
    for k in (2, 3):
        for sync in ("allreduce", "lag", "local_sgd"):
            one, many = by_config.get((1, k, sync)), by_config.get((k, 1, sync))
            if not check(one is not None and many is not None, f"{sync} K={k} ran on 1 and {k} hosts"):
                continue
            a, b = losses(one), losses(many)
            check(len(a) == BASE["budget"]["steps"] and a == b,
                  f"{sync} K={k}: {len(b)} losses on {k} hosts (TCP) bit for bit those on one host "
                  f"(shared memory); last {b.get(max(b) if b else 0)}")
    for sync in ("async_ps", "backup"):
        d = by_config.get((N, 1, sync))
        end = [l for l in lines(os.path.join(d, "metrics.jsonl")) if l.get("kind") == "end"] if d else []
        check(bool(end), f"{sync} on {N} hosts: ended {end[0]['outcome'] if end else 'never'}")


def section_warm():
    spec = dict(name="warm", base=dict(BASE, nodes=2, ranks_per_node=1),
                axes={"lr.base": [0.05, 0.1, 0.2]},
                resources={"retries": 0, "timeout_seconds": 120},
                slurm={"time_limit_minutes": 10}, launch=LAUNCH)
    r = sweep(spec, "warm", 2, workers="reuse")
    check(r.returncode == 0, "warm sweep: exit 0")
    runs = attempts("warm")
    jobs = {read_json(os.path.join(d, "launch.json")).get("job_id") for d in runs.values()}
    check(len(runs) == 3 and len(jobs) == 1,
          f"3 runs packed into {len(jobs)} allocation(s) of 2 hosts (job {', '.join(map(str, jobs))})")
    # The cold job of the same config (section runner's 2-host allreduce run; the run ids differ
    # only because the sweep's name is part of them).
    def key(d):
        c = read_json(os.path.join(d, "config.json"))
        return (c["nodes"], c["ranks_per_node"], c["comm"]["sync"], c["lr"]["base"])
    cold = {key(d): d for d in attempts("xhost").values()}
    compared = 0
    for run, d in runs.items():
        check_places(run, d, 2, 1)
        if key(d) in cold:
            compared += 1
            a, b = losses(d), losses(cold[key(d)])
            check(len(a) == BASE["budget"]["steps"] and a == b,
                  f"{run[:8]} warm (packed): {len(a)} losses bit for bit the cold job's")
    if cold:
        check(compared == 1, f"{compared} warm run(s) compared with the same config's cold run")


def section_program():
    spec = dict(name="program", base={"batch_size": 60, "ranks_per_node": 1,
                                      "program": {"command": [PYTHON, ENV_PROGRAM]},
                                      "params": {"sleep": 3}},
                axes={"program.launch": ["mpirun", "torchrun"], "nodes": [2, N]},
                resources={"retries": 0}, slurm={"time_limit_minutes": 5}, launch=LAUNCH)
    r = sweep(spec, "program", 2 * (2 + N))
    check(r.returncode == 0, "user-program sweep: exit 0")
    ports, spans = [], []
    for run, d in attempts("program").items():
        c = read_json(os.path.join(d, "config.json"))
        ranks = [read_json(p) for p in sorted(glob.glob(os.path.join(d, "rank*.json")))]
        hosts = job_hosts(d)
        seen = sorted({x.get("host") for x in ranks})
        addr = {x["MASTER_ADDR"] for x in ranks}
        met = [x["met"] for x in ranks if x["RANK"] == "0"]
        check(len(ranks) == c["nodes"] and len(seen) == c["nodes"] and hosts and
              addr == {hosts[0]} and met == [list(range(c["nodes"]))],
              f"{c['program']['launch']} on {c['nodes']} hosts: ranks on {', '.join(seen)}, "
              f"MASTER_ADDR {', '.join(addr)} (first host {hosts[0] if hosts else '?'}), rank 0 met "
              f"{met[0] if met else []}")
        ports += list({x["MASTER_PORT"] for x in ranks})
        launch = read_json(os.path.join(d, "launch.json"))
        job = on("head", "scontrol", "show", "job", "-o", str(launch["job_id"])).stdout
        s = re.search(r"StartTime=(\S+)", job).group(1)
        e = re.search(r"EndTime=(\S+)", job).group(1)
        spans.append((s, e, hosts[0] if hosts else ""))
    overlap = sum(1 for i, a in enumerate(spans) for b in spans[i + 1:]
                  if a[0] < b[1] and b[0] < a[1] and a[2] == b[2])
    check(len(ports) == 4 and len(set(ports)) == 4,
          f"MASTER_PORTs {', '.join(ports)}: distinct; {overlap} pair(s) of runs shared their first "
          f"host at the same time")
    check(overlap >= 1, "at least two runs were on the same first host at once")


def section_ddp():
    r = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True)
    if not check(r.returncode == 0, f"{PYTHON} imports torch (python3-torch)"):
        return
    spec = dict(name="ddp", base={
        "program": {"command": [PYTHON, DDP_EXAMPLE, "--train-samples", "1920",
                                "--test-samples", "480"], "launch": "torchrun"},
        "params": {"width": 4}, "optimizer": {"name": "momentum", "momentum": 0.9},
        "lr": {"base": 0.02, "base_batch_size": 60, "rule": "none"}, "batch_size": 60,
        "ranks_per_node": 1, "budget": {"steps": 8}, "eval": {"every_steps": 4},
        "gns": {"every_steps": 4}, "threads": 1},
        axes={"nodes": [2, N], "program.launch": ["torchrun", "mpirun"]},
        launch=dict(LAUNCH, env={"PYTHONPATH": os.path.join(REPO, "clients", "python"),
                                 "OMP_NUM_THREADS": "1"}),
        resources={"retries": 0}, slurm={"time_limit_minutes": 10})
    r = sweep(spec, "ddp", 12)
    check(r.returncode == 0, "PyTorch DDP example sweep: exit 0")
    for run, d in attempts("ddp").items():
        c = read_json(os.path.join(d, "config.json"))
        hosts = job_hosts(d)
        end = [l for l in lines(os.path.join(d, "metrics.jsonl")) if l.get("kind") == "end"]
        step = [l for l in lines(os.path.join(d, "metrics.jsonl")) if l.get("kind") == "step"]
        check(bool(end) and len(hosts) == c["nodes"],
              f"DDP ({c['program']['launch']}) on {c['nodes']} hosts {','.join(hosts)} (MASTER_ADDR "
              f"{hosts[0] if hosts else '?'}): {len(step)} steps, final loss "
              f"{step[-1]['loss'] if step else '?'}, {end[0]['outcome'] if end else 'no end line'}")


RING = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}


def shape_links(rate):
    for h in range(1, N + 1):
        if rate:
            r = on(h, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate,
                   "burst", "256kb", "latency", "50ms")
        else:
            r = on(h, "tc", "qdisc", "del", "dev", "eth0", "root")
        if rate and r.returncode != 0:
            return r.stderr
    return ""


def bench_across_hosts(rate):
    """bench/runner/allreduce_bench on one rank per host: the runner's fused allreduce beside raw
    MPI_Allreduce over the same (shaped) links, bus bandwidth per size."""
    bench = os.environ.get("ALLREDUCE_BENCH", "")
    if not bench:
        print("  allreduce_bench not built (BATCHLAB_BUILD_BENCH=OFF): skipped")
        return
    r = on("head", "salloc", "-N", str(N), "--ntasks-per-node=1", "mpirun", "--bind-to", "none",
           "--allow-run-as-root", "--mca", "btl", "self,vader,tcp", bench, "--max-mib", "4",
           "--reps", "5", timeout=300)
    table = [l for l in r.stdout.splitlines() if not l.startswith("{")]
    print("  allreduce_bench, %d hosts, links %s:\n    " % (N, rate) + "\n    ".join(table))
    rows = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    with open(os.path.join(WORK, "allreduce_bench.txt"), "w") as f:
        f.write(r.stdout)
    check(r.returncode == 0 and rows, f"allreduce_bench across {N} hosts: exit {r.returncode}, "
                                      f"{len(rows)} rows of fused vs raw MPI bus bandwidth")


def section_alphabeta():
    netem = on(1, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "50us")
    print(f"  tc netem (delay): {'available' if netem.returncode == 0 else 'not in this kernel: ' + netem.stderr.strip()}")
    if netem.returncode == 0:
        on(1, "tc", "qdisc", "del", "dev", "lo", "root")
    rate = os.environ.get("BATCHLAB_CLUSTER_RATE", "1gbit")
    err = shape_links(rate)
    if not check(err == "", f"every host's link shaped to {rate} (tc tbf)"):
        print(err)
        return
    try:
        base = dict(BASE, budget={"steps": 25}, eval={"every_steps": 25}, ranks_per_node=1)
        # The model is the ring allreduce's: Open MPI is told to use its ring (algorithm 4) for
        # every size (by default it picks others for some sizes and rank counts).
        launch = dict(LAUNCH, env=RING if os.environ.get("BATCHLAB_CLUSTER_RING", "1") == "1" else {})
        fit = dict(name="ab_fit", base=base, axes={"nodes": [2], "model.hidden": [[64], [256], [1024]]},
                   resources={"retries": 0}, slurm={"time_limit_minutes": 10}, launch=launch)
        three = dict(name="ab_three", base=dict(base, nodes=N, model={"name": "mlp", "hidden": [1024]}),
                     resources={"retries": 0}, slurm={"time_limit_minutes": 10}, launch=launch)
        # One run at a time (--slots N): the links carry one job's traffic.
        ok = sweep(fit, "ab_fit", N).returncode == 0 and sweep(three, "ab_three", N).returncode == 0
        check(ok, "alpha-beta sweeps: exit 0")
        bench_across_hosts(rate)
    finally:
        shape_links(None)
    a = on("head", BIN, "--db", os.path.join(WORK, "ab_fit.db"), "analyze", "scaling", "--sweep",
           "ab_fit", "--format", "json")
    m = on("head", BIN, "--db", os.path.join(WORK, "ab_three.db"), "analyze", "scaling", "--sweep",
           "ab_three", "--format", "json")
    try:
        ab = json.loads(a.stdout)["scaling"]["alpha_beta"]
        measured = json.loads(m.stdout)["scaling"]["runs"][0]
    except (ValueError, KeyError, IndexError) as e:
        check(False, f"analyze scaling gave alpha-beta and the 3-host timing ({e}): {a.stdout[:300]} {a.stderr[:300]} {m.stderr[:300]}")
        return
    if not check("alpha_seconds" in ab, f"alpha-beta fitted from 2-host runs: {ab}"):
        return
    d = list(attempts("ab_three").values())[0]
    params = [l for l in lines(os.path.join(d, "metrics.jsonl")) if l.get("kind") == "start"][0]["parameters"]
    k, nbytes = N, 4.0 * params
    alpha, beta = ab["alpha_seconds"], ab["beta_bytes_per_second"]
    projected = 2 * (k - 1) * alpha + 2 * (k - 1) / k * nbytes / beta
    got = measured["comm_seconds"]
    err = (projected - got) / got if got > 0 else float("inf")
    link = {"1gbit": 125e6, "10gbit": 1.25e9}.get(rate, 0)
    print(f"  link {rate}: fitted alpha {alpha * 1e6:.0f} us, beta {beta / 1e6:.1f} MB/s"
          f"{f' ({beta / link:.2f} x the shaped rate)' if link else ''}; {N} hosts, "
          f"{nbytes / 1e6:.2f} MB per allreduce: projected {projected * 1e3:.2f} ms, measured "
          f"{got * 1e3:.2f} ms per step, error {err * 100:+.0f}%; bus bandwidth measured "
          f"{measured['bus_bandwidth'] / 1e6:.1f} MB/s")
    with open(os.path.join(WORK, "alphabeta.txt"), "w") as f:
        json.dump({"rate": rate, "alpha_seconds": alpha, "beta_bytes_per_second": beta,
                   "hosts": k, "bytes": nbytes, "projected_seconds": projected,
                   "measured_seconds": got, "relative_error": err,
                   "bus_bandwidth": measured["bus_bandwidth"]}, f)
    check(abs(err) <= 1.0, f"projection within a factor 2 of the measured 3-host time ({err * 100:+.0f}%)")


def wait_for(pred, seconds, step=0.2):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def steps_written(name):
    for d in attempts(name).values():
        n = len([l for l in lines(os.path.join(d, "metrics.jsonl")) if l.get("kind") == "step"])
        if n:
            return (d, n)
    return None


# A run slow enough to interrupt: rank 0 sleeps 20 ms every step (at least 8 s for 400 steps).
LONG = dict(BASE, budget={"steps": 400}, eval={"every_steps": 200},
            checkpoint={"every_steps": 20},
            comm=dict(BASE["comm"], straggler={"rank": 0, "delay_ms": 20, "probability": 1}))


def section_orchestrator_kill():
    spec = dict(name="okill", base=dict(LONG, nodes=N, ranks_per_node=1),
                resources={"retries": 1}, slurm={"time_limit_minutes": 10}, launch=LAUNCH)
    env = dict(os.environ, BATCHLAB_CLUSTER_STATE=STATE, BATCHLAB_CLUSTER_PREFIX=PREFIX)
    p = subprocess.Popen(["bash", ON, "head", *sweep_argv(spec, "okill", 4)], cwd=WORK, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = wait_for(lambda: (lambda s: s if s and s[1] >= 30 else None)(steps_written("okill")), 180)
    if not check(first is not None, "the 3-host run trained 30 steps"):
        p.kill()
        return
    p.send_signal(signal.SIGKILL)
    p.wait()
    job = read_json(os.path.join(first[0], "launch.json"))["job_id"]
    print(f"  orchestrator killed at step {first[1]}; job {job} left running on "
          f"{','.join(job_hosts(first[0]))}")
    t = time.time()
    r = on("head", *sweep_argv(spec, "okill", 4))
    check(r.returncode == 0, f"rerun: exit 0 in {time.time() - t:.1f} s (got {r.returncode})")
    state = on("head", "scontrol", "show", "job", "-o", str(job)).stdout
    job_state = re.search(r"JobState=(\S+)", state)
    check("JobState=CANCELLED" in state,
          f"the orphan job {job} was cancelled ({job_state.group(1) if job_state else '?'})")
    runs = attempts("okill")
    d = list(runs.values())[0]
    lines_ = lines(os.path.join(d, "metrics.jsonl"))
    resumed = [l for l in lines_ if l.get("kind") == "resume"]
    steps = [l["step"] for l in lines_ if l.get("kind") == "step"]
    check(os.path.basename(d).startswith("attempt-2") and resumed and steps and steps[-1] == 400,
          f"{os.path.basename(d)} resumed from step {resumed[0].get('step') if resumed else '?'} "
          f"and ended at step {steps[-1] if steps else '?'}")
    left = wait_for(lambda: stray_processes() == [] and queue_empty(), 30)
    check(bool(left), f"no process left on any host, queue empty ({stray_processes()[:3]})")


def section_host_dies():
    spec = dict(name="hostdies", base=dict(LONG, nodes=N, ranks_per_node=1),
                resources={"retries": 5, "retry_backoff_seconds": 2},
                slurm={"time_limit_minutes": 10,
                       "elastic": {"min_nodes": N - 1, "pending_seconds": 3}},
                launch=LAUNCH)
    env = dict(os.environ, BATCHLAB_CLUSTER_STATE=STATE, BATCHLAB_CLUSTER_PREFIX=PREFIX)
    p = subprocess.Popen(["bash", ON, "head", *sweep_argv(spec, "hostdies", 4)], cwd=WORK,
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = wait_for(lambda: (lambda s: s if s and s[1] >= 30 else None)(steps_written("hostdies")), 180)
    if not check(first is not None, f"the {N}-host run trained 30 steps"):
        p.kill()
        return
    hosts = job_hosts(first[0])
    victim = hosts[-1]
    h = int(victim[len(PREFIX):])
    anchor = int(open(os.path.join(STATE, "hosts", f"{h}.pid")).read())
    ns = f"{PREFIX}-{h}"
    killed_at = time.time()
    # The host dies: slurmd and every process in its namespace (its anchor stays: the host's
    # namespaces, so that it can come back).
    pids = [int(x) for x in subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                           text=True).stdout.split() if int(x) != anchor]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    print(f"  killed {len(pids)} processes of {victim} (slurmd included) at step {first[1]} of "
          f"the run on {','.join(hosts)}")
    failed = wait_for(lambda: os.path.exists(os.path.join(first[0], "..")) and
                      len(glob.glob(os.path.join(os.path.dirname(first[0]), "attempt-*"))) >= 2, 120)
    check(bool(failed), f"attempt 1 ended and a new attempt started {time.time() - killed_at:.1f} s "
                        "after the host died")
    try:
        _, err = p.communicate(timeout=400)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    check(p.returncode == 0, f"the sweep completed (exit {p.returncode}) {time.time() - killed_at:.1f} s "
                             "after the host died")
    if p.returncode != 0:
        print(err[-2000:])
    d = attempts("hostdies")
    d = list(d.values())[0] if d else None
    if d:
        final_hosts = sorted({pl["host"] for pl in places(d)})
        steps = [l["step"] for l in lines(os.path.join(d, "metrics.jsonl")) if l.get("kind") == "step"]
        check(victim not in final_hosts and len(final_hosts) == N - 1 and steps and steps[-1] == 400,
              f"{os.path.basename(d)} ran on {', '.join(final_hosts)} (not {victim}), ended at step "
              f"{steps[-1] if steps else '?'}")
        check_elastic(first[0], d)
    node = on("head", "sinfo", "-h", "-n", victim, "-o", "%T").stdout.strip()
    print(f"  {victim} in Slurm: {node}")
    left = wait_for(lambda: stray_processes() == [] and queue_empty(), 30)
    check(bool(left), f"no process left on any host, queue empty ({stray_processes()[:3]})")
    # The host comes back: slurmd again, the node resumed, idle.
    conf = os.path.join(STATE, "slurm.conf")
    on(h, "slurmd", "-f", conf, "-N", victim)
    on("head", "scontrol", "update", f"nodename={victim}", "state=resume")
    back = wait_for(lambda: on("head", "sinfo", "-h", "-n", victim, "-o", "%T").stdout.strip() == "idle", 60)
    check(bool(back), f"{victim} back: idle")


def check_elastic(first, last):
    """slurm.elastic after the host died: `first` (attempt 1, N ranks) and `last` (the attempt
    that finished, on N - 1 hosts) are one continuous run; rank-seconds counted per K."""
    argv = read_json(os.path.join(last, "launch.json"))["argv"]
    got = job_hosts(last)
    check(f"--nodes={N}" in argv and len(got) == N - 1,
          f"{os.path.basename(last)}: submitted for --nodes={N}, lowered while pending to the "
          f"{len(got)} idle hosts ({','.join(got)})")
    a, b = lines(os.path.join(first, "metrics.jsonl")), lines(os.path.join(last, "metrics.jsonl"))
    starts = [l.get("world_size") for l in (a[:3] + b[:3]) if l.get("kind") == "start"]
    resume = [l for l in b if l.get("kind") == "resume"]
    at = resume[0].get("step", 0) if resume else 0
    check(starts == [N, N - 1] and resume and resume[0].get("from_world_size") == N and at > 0,
          f"K {N} -> {N - 1}: start lines world_size {starts}; the resume line: step {at}, "
          f"from_world_size {resume[0].get('from_world_size') if resume else '?'}")
    # Continuous: attempt 1 trained past the checkpoint; the steps both trained saw the same
    # global batches, so their losses agree within the reduction order.
    loss_a = {l["step"]: l["loss"] for l in a if l.get("kind") == "step"}
    loss_b = {l["step"]: l["loss"] for l in b if l.get("kind") == "step"}
    both = sorted(set(loss_a) & set(loss_b))
    worst = max((abs(loss_a[s] - loss_b[s]) / abs(loss_a[s]) for s in both), default=float("inf"))
    check(both and both[0] == at + 1 and sorted(loss_b) == list(range(at + 1, 401)) and worst < 1e-5,
          f"steps {at + 1}..{both[-1] if both else '?'} at K={N - 1} against K={N}: largest "
          f"relative loss difference {worst:.2g} (< 1e-5)")
    db = os.path.join(WORK, "hostdies.db")
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT attempt, world_size, resumed_from, resumed_step FROM attempts "
                       "ORDER BY attempt").fetchall()
    con.close()
    ks = [r[1] for r in rows if r[1] is not None]
    check(ks and ks[0] == N and ks[-1] == N - 1 and rows[-1][3] == at,
          f"attempts table (attempt, world_size, resumed_from, resumed_step): {rows}")
    # Rank-seconds: steps up to the checkpoint at K = N (attempt 1's lines), after it at N - 1.
    # The target: the lowest loss after the change, so the hit lies in the K = N - 1 part.
    series = {s: v for s, v in loss_a.items() if s <= at}  # as the database holds the run
    series.update(loss_b)
    low = min(loss_b.values())
    hit = min(s for s, v in series.items() if v <= low)
    sec = {l["step"]: l["step_seconds"] for l in a if l.get("kind") == "step" and l["step"] <= at}
    sec.update({l["step"]: l["step_seconds"] for l in b if l.get("kind") == "step"})
    want = sum(v * (N if s <= at else N - 1) for s, v in sec.items() if s <= hit)
    r = on("head", BIN, "--db", db, "analyze", "target", "--sweep", "hostdies", "--target",
           f"loss<={low!r}", "--format", "json")
    got = None
    try:
        rows = json.loads(r.stdout)["target"]["runs"]
        got = rows[0]["rank_seconds"] if rows else None
    except (ValueError, KeyError, IndexError):
        print(r.stdout[-1500:], r.stderr[-1500:])
    check(got is not None and abs(got - want) <= 1e-9 * want,
          f"analyze target: loss <= {low:.4g} first at step {hit}; rank-seconds {got} = "
          f"steps 1..{at} x {N} + {at + 1}..{hit} x {N - 1} = {want:.6g} (all at {N - 1}: "
          f"{sum(v for s, v in sec.items() if s <= hit) * (N - 1):.6g})")


def section_link_down():
    # The victim's link goes down mid-run: its processes live on, cut off. The ranks on the other
    # host wait in a collective until comm.timeout_seconds (10 s here) ends them; Slurm marks the
    # host down; the run is retried on the remaining hosts. When the link comes back, Slurm
    # stops what was left on the host and it returns to service.
    spec = dict(name="linkdown", base=dict(LONG, nodes=2, ranks_per_node=1,
                                           comm=dict(LONG["comm"], timeout_seconds=10)),
                resources={"retries": 5, "retry_backoff_seconds": 2},
                slurm={"time_limit_minutes": 10}, launch=LAUNCH)
    env = dict(os.environ, BATCHLAB_CLUSTER_STATE=STATE, BATCHLAB_CLUSTER_PREFIX=PREFIX)
    p = subprocess.Popen(["bash", ON, "head", *sweep_argv(spec, "linkdown", 4)], cwd=WORK,
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = wait_for(lambda: (lambda s: s if s and s[1] >= 30 else None)(steps_written("linkdown")), 180)
    if not check(first is not None, "the 2-host run trained 30 steps"):
        p.kill()
        return
    hosts = job_hosts(first[0])
    victim = hosts[-1]
    ns = f"{PREFIX}-{victim[len(PREFIX):]}"
    down_at = time.time()
    subprocess.run(["ip", "-n", ns, "link", "set", "eth0", "down"], check=True)
    print(f"  {victim}'s link down at step {first[1]} of the run on {','.join(hosts)}")
    try:
        ended = wait_for(lambda: len(glob.glob(os.path.join(os.path.dirname(first[0]), "attempt-*"))) >= 2, 120)
        waited = time.time() - down_at
        check(bool(ended), f"attempt 1 failed and a new attempt started {waited:.1f} s after the link "
                           "went down (comm.timeout_seconds 10, SlurmdTimeout 10)")
        with open(os.path.join(first[0], "stderr.log"), errors="replace") as f:
            why = [l.strip() for l in f if "timed out after 10000 ms" in l]
        check(bool(why), f"a rank on the live host ended at the communicator timeout: "
                         f"{why[0] if why else 'no timeout in stderr.log'}")
        try:
            _, err = p.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        check(p.returncode == 0, f"the sweep completed (exit {p.returncode}) "
                                 f"{time.time() - down_at:.1f} s after the link went down")
        if p.returncode != 0:
            print(err[-2000:])
        d = list(attempts("linkdown").values())
        if d:
            final_hosts = sorted({pl["host"] for pl in places(d[0])})
            check(victim not in final_hosts and len(final_hosts) == 2,
                  f"{os.path.basename(d[0])} ran on {', '.join(final_hosts)} (not {victim})")
    finally:
        subprocess.run(["ip", "-n", ns, "link", "set", "eth0", "up"])
    up_at = time.time()
    on("head", "scontrol", "update", f"nodename={victim}", "state=resume")
    clean = wait_for(lambda: stray_processes() == [] and queue_empty(), 90, step=1)
    check(bool(clean), f"link back: no process left on any host {time.time() - up_at:.1f} s later, "
                       f"queue empty ({stray_processes()[:3]})")
    back = wait_for(lambda: on("head", "sinfo", "-h", "-n", victim, "-o", "%T").stdout.strip() == "idle", 60)
    check(bool(back), f"{victim} back: idle")


def section_never_up():
    state = os.path.join(WORK, "never-up")
    prefix = PREFIX[:4] + "x"
    env = dict(os.environ, BATCHLAB_CLUSTER_PREFIX=prefix, BATCHLAB_CLUSTER_NEVER_UP="2",
               BATCHLAB_CLUSTER_WAIT_SECONDS="4", BATCHLAB_CLUSTER_PORT="16937")
    t = time.time()
    r = subprocess.run(["bash", os.path.join(REPO, "scripts", "cluster", "start.sh"), "2", state],
                       capture_output=True, text=True, env=env, timeout=120)
    msg = [l for l in r.stderr.splitlines() if l.startswith("start.sh:")]
    check(r.returncode != 0 and any(f"{prefix}2" in l for l in msg),
          f"a host that never comes up: start.sh exit {r.returncode} in {time.time() - t:.1f} s: "
          f"{' / '.join(msg)}")
    left = [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                      text=True).stdout.split() if n.startswith(prefix + "-")]
    daemons = subprocess.run(["pgrep", "-f", state], capture_output=True, text=True).stdout.split()
    check(not left and not daemons, f"nothing left behind (namespaces {left}, processes {daemons})")


SECTIONS = {
    "cluster": section_cluster, "preflight": section_preflight, "runner": section_runner,
    "warm": section_warm, "program": section_program, "ddp": section_ddp,
    "alphabeta": section_alphabeta, "orchestrator_kill": section_orchestrator_kill,
    "host_dies": section_host_dies, "link_down": section_link_down, "never_up": section_never_up,
}


def main():
    wanted = sys.argv[1:] or list(SECTIONS)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    start = time.time()
    for name in wanted:
        t = time.time()
        print(f"[{name}]", flush=True)
        try:
            SECTIONS[name]()
        except Exception as e:  # a section that breaks is a failure, the others still run
            import traceback
            traceback.print_exc()
            check(False, f"{name}: {type(e).__name__}: {e}")
        print(f"  ({time.time() - t:.1f} s)", flush=True)
    print(f"cluster test: {len(failures)} failure(s) in {time.time() - start:.1f} s")
    for f in failures:
        print("  FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
