"""The resolved run config (docs/protocol.md) and where this process sits in the job.

    path, argv = config_path(sys.argv, os.environ)   # --config F (removed from argv) or BATCHLAB_CONFIG
    cfg = RunConfig.load(path, launch=Launch.from_env(os.environ))
    cfg.batch_size, cfg.local_batch_size, cfg.micro_batch_size, cfg.lr["rule"], cfg.params

Every field a built-in runner reads keeps its meaning here; a missing optional field takes the
runner's default (docs/runner.md), so a hand-written config needs only `batch_size` and a
`budget`. Errors are ConfigError, whose message names the JSON path and the fix (exit code 2).
"""

import json
import os
import math

from . import protocol

CONFIG_ENV = "BATCHLAB_CONFIG"

TARGET_METRICS = (protocol.METRIC_TEST_ACCURACY, protocol.METRIC_TEST_LOSS, protocol.METRIC_LOSS)
TARGET_OPS = (">=", "<=", ">", "<")
_MAX_SPEC_INTEGER = (1 << 53) - 1  # base/spec_bounds.h kMaxSpecInteger

# The runner's defaults (docs/runner.md) for the fields the client uses.
_LR_DEFAULTS = {"base": 0.1, "base_batch_size": 256, "rule": "none", "warmup_steps": 0,
                "warmup_epochs": 0.0, "schedule": "constant", "milestones": [], "gamma": 0.1,
                "power": 1.0, "final_lr_fraction": 0.0}


class ConfigError(ValueError):
    """A bad config or bad use of it; the message names the JSON path and the fix (exit 2)."""


def config_path(argv, environ):
    """The config path and argv without `--config F`/`--config=F` and `--validate`.

    Returns (path, remaining_argv, validate). The flag wins over the BATCHLAB_CONFIG variable.
    """
    rest, path, validate = [argv[0]] if argv else [], None, False
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--config":
            if i + 1 >= len(argv):
                raise ConfigError("--config: missing the path of the resolved config")
            path = argv[i + 1]
            i += 2
            continue
        if a.startswith("--config="):
            path = a[len("--config="):]
        elif a == "--validate":
            validate = True
        else:
            rest.append(a)
        i += 1
    if path is None:
        path = environ.get(CONFIG_ENV)
    if not path:
        raise ConfigError("--config: no run config; batchlab passes --config FILE and "
                          f"{CONFIG_ENV}=FILE to every rank (run the program through a "
                          "batchlab sweep, or pass --config yourself)")
    return path, rest, validate


def _env_int(environ, names, default):
    for n in names:
        v = environ.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                raise ConfigError(f"environment: {n}={v!r} is not an integer") from None
    return default


class Launch:
    """Rank, world size and local rank from the launcher's environment: batchlab's (RANK,
    WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, as torchrun sets them), else OpenMPI's or
    Slurm's; None where no launcher said (a single process)."""

    def __init__(self, rank=0, world_size=None, local_rank=0, local_world_size=None):
        self.rank = rank
        self.world_size = world_size
        self.local_rank = local_rank
        self.local_world_size = local_world_size

    @classmethod
    def from_env(cls, environ):
        return cls(
            rank=_env_int(environ, ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"), 0),
            world_size=_env_int(environ, ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                          "SLURM_NTASKS"), None),
            local_rank=_env_int(environ, ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "SLURM_LOCALID"), 0),
            local_world_size=_env_int(environ, ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"),
                                      None))


def _int(obj, key, default, minimum, path):
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{path}: {json.dumps(v)} must be an integer")
    if v < minimum:
        raise ConfigError(f"{path}: {v} must be >= {minimum}")
    return v


def _num(obj, key, default, path, minimum=None, exclusive=False):
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{path}: {json.dumps(v)} must be a finite number")
    if minimum is not None and (v <= minimum if exclusive else v < minimum):
        raise ConfigError(f"{path}: {v} must be {'>' if exclusive else '>='} {minimum}")
    return float(v)


def _int_list(obj, key, path):
    v = obj.get(key, [])
    if not isinstance(v, list):
        raise ConfigError(f"{path}: {json.dumps(v)} must be a list of steps, e.g. [100, 200]")
    for i, item in enumerate(v):
        _int({key: item}, key, None, 1, f"{path}[{i}]")
    return v


def _obj(config, key, path=None):
    v = config.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ConfigError(f"{path or key}: must be a JSON object, got {json.dumps(v)}")
    return v


def _dump(v):
    """A JSON value as nlohmann::json::dump() writes it in the runner's messages."""
    return json.dumps(v, separators=(",", ":"))


def _positive_ints(v, path):
    """config_check.cc's IntArray(name, 1): the runner's messages, word for word."""
    if not isinstance(v, list):
        raise ConfigError(f"{path}: {_dump(v)} is not an array of integers")
    for i, item in enumerate(v):
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise ConfigError(f"{path}[{i}]: {_dump(item)} is not a positive integer")
        if item > _MAX_SPEC_INTEGER:
            raise ConfigError(f"{path}[{i}]: {_dump(item)} is out of range: must be >= 1 and "
                              f"<= {_MAX_SPEC_INTEGER}")
    return list(v)


def _edit_distance(a, b):
    """base/closest_name.h EditDistance: optimal string alignment, case-insensitive."""
    a, b = a.lower(), b.lower()
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _did_you_mean(word, candidates):
    """base/closest_name.h DidYouMean: "; did you mean 'NAME'?" or ""."""
    if not word:
        return ""
    limit = 1 if len(word) <= 4 else 2 if len(word) <= 8 else 3
    best, best_distance = None, limit + 1
    for c in candidates:
        if c == word or len(c) > len(word) + limit or len(word) > len(c) + limit:
            continue
        d = _edit_distance(word, c)
        if d < best_distance:
            best, best_distance = c, d
    if best is None and len(word) >= 3:
        best = next((c for c in candidates if len(c) > len(word) and c.startswith(word)), None)
    return f"; did you mean '{best}'?" if best else ""


def _batch_schedule(raw, world_size, accumulation):
    """`batch_schedule` (docs/spec.md, "Batch-size schedules"): None when absent (a constant
    batch), else {"at_samples": [...], "batch_sizes": [...]}, checked with batchlab-runner's
    messages (base/config_check.cc for the declared types, runner/config/run_config.cc
    CheckBatchSchedule for the rest)."""
    if "batch_schedule" not in raw:
        return None
    s = raw["batch_schedule"]
    if not isinstance(s, dict):
        raise ConfigError(f"batch_schedule: {_dump(s)} is not an object")
    for key in ("at_samples", "batch_sizes"):
        if key not in s:
            raise ConfigError(f"batch_schedule.{key}: missing; batch_schedule needs at_samples, "
                              "batch_sizes")
    names = ["at_samples", "batch_sizes"]
    for key in sorted(s):  # the runner's JSON objects keep their keys sorted
        if key not in names:
            raise ConfigError(f"batch_schedule.{key}: unknown field; allowed here: at_samples, "
                              f"batch_sizes{_did_you_mean(key, names)}")
        _positive_ints(s[key], f"batch_schedule.{key}")
    at, sizes = list(s["at_samples"]), list(s["batch_sizes"])
    if not at and not sizes:
        return None
    if len(at) != len(sizes):
        raise ConfigError(f"batch_schedule.batch_sizes: {len(sizes)} batch sizes for {len(at)} "
                          "switch points (at_samples); give one batch size per switch")
    unit = world_size * accumulation
    for i in range(len(at)):
        where = f"[{i}]"
        if i > 0 and at[i] <= at[i - 1]:
            raise ConfigError(f"batch_schedule.at_samples{where}: {at[i]} is not above the switch "
                              f"before it ({at[i - 1]}); the switch points must increase in "
                              "samples")
        if sizes[i] % unit:
            raise ConfigError(f"batch_schedule.batch_sizes{where}: {sizes[i]} is not divisible by "
                              f"world_size x accumulation = {world_size} x {accumulation}; "
                              f"choose a multiple of {unit}")
    comm = raw.get("comm")
    sync = comm.get("sync", "allreduce") if isinstance(comm, dict) else "allreduce"
    if sync != "allreduce":
        raise ConfigError(f'batch_schedule: comm.sync "{sync}" trains at one batch size; a batch '
                          'schedule needs "allreduce"')
    return {"at_samples": at, "batch_sizes": sizes}


class Branch:
    """`branch` (written by the orchestrator for a branch study's branch, docs/spec.md): the
    trunk's run id and the trunk step whose checkpoint this run starts from."""

    def __init__(self, trunk_run_id, at_step, trunk_batch_size, multiplier):
        self.trunk_run_id, self.at_step = trunk_run_id, at_step
        self.trunk_batch_size, self.multiplier = trunk_batch_size, multiplier


def _branch(raw):
    """The config's `branch` object, checked; None for a run that is not a branch."""
    b = raw.get("branch")
    if b is None:
        return None
    b = _obj(raw, "branch")
    trunk = b.get("trunk_run_id")
    if not isinstance(trunk, str) or not trunk:
        raise ConfigError(f"branch.trunk_run_id: {json.dumps(trunk)} must be the trunk's run id "
                          "(the orchestrator writes the branch object; remove it from the spec)")
    return Branch(trunk, _int(b, "at_step", None, 1, "branch.at_step"),
                  _int(b, "trunk_batch_size", 1, 1, "branch.trunk_batch_size"),
                  _num(b, "multiplier", 1, "branch.multiplier", 0, True))


class RunConfig:
    """The fields of a resolved config the protocol gives meaning to, checked, with derived sizes.

    `raw` is the whole JSON object (model, data, optimizer and anything else the program reads).
    """

    def __init__(self, raw, launch=None):
        if not isinstance(raw, dict):
            raise ConfigError("config: must be a JSON object")
        launch = launch or Launch()
        self.raw = raw
        self.run_id = raw.get("run_id", "")
        self.sweep = raw.get("sweep", "")
        self.attempt = _int(raw, "attempt", 1, 1, "attempt")
        self.seed = _int(raw, "seed", 1, 0, "seed")
        self.nodes = _int(raw, "nodes", 1, 1, "nodes")
        self.ranks_per_node = _int(raw, "ranks_per_node", 1, 1, "ranks_per_node")
        self.world_size = self.nodes * self.ranks_per_node
        if "world_size" in raw and _int(raw, "world_size", 1, 1, "world_size") != self.world_size:
            raise ConfigError(f"world_size: {raw['world_size']} must equal nodes x ranks_per_node"
                              f" = {self.world_size}")
        if launch.world_size is not None and launch.world_size != self.world_size:
            raise ConfigError(f"world_size: the config asks for {self.world_size} ranks but the "
                              f"launcher started {launch.world_size}; run with "
                              f"{self.world_size} ranks")
        self.rank = launch.rank
        self.local_rank = launch.local_rank
        self.local_world_size = (launch.local_world_size if launch.local_world_size is not None
                                 else self.ranks_per_node)
        if "batch_size" not in raw:
            raise ConfigError('batch_size: missing; set the global batch size, e.g. '
                              '"batch_size": 64')
        self.batch_size = _int(raw, "batch_size", None, 1, "batch_size")
        self.accumulation = _int(raw, "accumulation", 1, 1, "accumulation")
        per = self.world_size * self.accumulation
        if self.batch_size % per:
            raise ConfigError(f"batch_size: {self.batch_size} is not divisible by world_size x "
                              f"accumulation = {self.world_size} x {self.accumulation}; choose a "
                              f"multiple of {per}")
        self.local_batch_size = self.batch_size // self.world_size
        self.micro_batch_size = self.local_batch_size // self.accumulation
        for key, want in (("local_batch_size", self.local_batch_size),
                          ("micro_batch_size", self.micro_batch_size)):
            if key in raw and raw[key] != want:
                raise ConfigError(f"{key}: {raw[key]} must equal {want}")

        self.batch_schedule = _batch_schedule(raw, self.world_size, self.accumulation)

        lr = dict(_LR_DEFAULTS)
        lr.update(_obj(raw, "lr"))
        self.lr = lr

        b = _obj(raw, "budget")
        self.budget_epochs = _num(b, "epochs", 0, "budget.epochs", 0) if "epochs" in b else 0.0
        self.budget_steps = _int(b, "steps", 0, 1, "budget.steps") if "steps" in b else 0
        self.budget_samples = _int(b, "samples", 0, 1, "budget.samples") if "samples" in b else 0
        self.budget_seconds = _num(b, "seconds", 0, "budget.seconds", 0) if "seconds" in b else 0.0
        self.mode = raw.get("mode", "train")
        if self.mode == "train" and not (self.budget_epochs or self.budget_steps or
                                         self.budget_samples or self.budget_seconds):
            raise ConfigError("budget: no limit set; give at least one of epochs, steps, "
                              'samples, seconds, e.g. "budget": {"epochs": 1}')

        e = _obj(raw, "eval")
        self.eval_every_steps = _int(e, "every_steps", 0, 0, "eval.every_steps")
        self.eval_subset = _int(e, "subset", 0, 0, "eval.subset")

        t = raw.get("target")
        self.target = None
        if t is not None:
            t = _obj(raw, "target")
            if not all(k in t for k in ("metric", "op", "value")):
                raise ConfigError('target.metric: a target needs metric, op and value, e.g. '
                                  '{"metric": "test_accuracy", "op": ">=", "value": 0.85} '
                                  '(or target: null for none)')
            if t["metric"] not in TARGET_METRICS:
                raise ConfigError(f"target.metric: {json.dumps(t['metric'])} is not one of: "
                                  + ", ".join(TARGET_METRICS))
            if t["op"] not in TARGET_OPS:
                raise ConfigError(f"target.op: {json.dumps(t['op'])} is not one of: "
                                  + ", ".join(TARGET_OPS))
            self.target = Target(t["metric"], t["op"], _num(t, "value", None, "target.value"))

        self.gns_every_steps = _int(_obj(raw, "gns"), "every_steps", 1, 0, "gns.every_steps")
        self.divergence_factor = _num(raw, "divergence_factor", 10, "divergence_factor", 1, True)
        self.threads = _int(raw, "threads", 1, 1, "threads")
        c = _obj(raw, "checkpoint")
        self.checkpoint = Checkpointing(
            every_steps=_int(c, "every_steps", 0, 0, "checkpoint.every_steps"),
            every_samples=_int(c, "every_samples", 0, 0, "checkpoint.every_samples"),
            every_seconds=_num(c, "every_seconds", 60.0, "checkpoint.every_seconds", 0),
            keep=_int(c, "keep", 2, 1, "checkpoint.keep"),
            at_steps=_int_list(c, "at_steps", "checkpoint.at_steps"))
        self.branch = _branch(raw)
        self.metrics_path = raw.get("metrics_path", "")
        # The config file's folder (load); None: no stop or preempt file, no checkpoints.
        self.attempt_dir = None
        self.stop_path = None
        params = raw.get("params", {})
        if not isinstance(params, dict):
            raise ConfigError(f"params: must be a JSON object, got {json.dumps(params)}")
        self.params = params

    @classmethod
    def load(cls, path, launch=None):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ConfigError(f'--config: cannot open "{path}" ({e.strerror}); pass an existing '
                              "JSON file") from None
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise ConfigError(f'--config: "{path}" is not valid JSON: {e}') from None
        cfg = cls(raw, launch)
        # The attempt folder (docs/protocol.md): the orchestrator's stop, prune_at and preempt
        # files, resume.json and checkpoints/ live beside the config file.
        cfg.attempt_dir = os.path.dirname(os.path.abspath(path))
        cfg.stop_path = os.path.join(cfg.attempt_dir, protocol.STOP_FILE)
        return cfg


class Checkpointing:
    """`checkpoint` (docs/protocol.md, Checkpoints): after any step where every_steps,
    every_samples or every_seconds (of training; default 60) passed since the last checkpoint,
    and at every step of at_steps; the newest `keep` per rank are kept, and at_steps for good.
    0 turns an interval off."""

    def __init__(self, every_steps=0, every_samples=0, every_seconds=60.0, keep=2, at_steps=()):
        self.every_steps, self.every_samples = every_steps, every_samples
        self.every_seconds, self.keep = every_seconds, keep
        self.at_steps = frozenset(at_steps)


class Target:
    """`target`: the run stops once `metric op value` holds (the runner's TargetConfig::Met)."""

    def __init__(self, metric, op, value):
        self.metric, self.op, self.value = metric, op, value

    def met(self, observed):
        if self.op == ">=":
            return observed >= self.value
        if self.op == "<=":
            return observed <= self.value
        if self.op == ">":
            return observed > self.value
        return observed < self.value
