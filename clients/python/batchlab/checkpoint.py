"""The client's checkpoint files (docs/protocol.md, "Checkpoints"; docs/byo-program.md): one file
per rank after the same step, written atomically with a checksum, read back only when every
check passes. Run (run.py) decides when; this module knows the bytes, the folder and the files.

    bytes  0..7    magic b"BLPYCKP\\x01"
           8..15   header length H (little-endian uint64)
           16..    header: JSON {"format", "run_id", "config_hash", "step", "rank",
                   "world_size", "serializer": "torch" | "pickle", "payload_bytes"}
                   (format 2: the data cursor is global and the config hash leaves the split
                   out, so a checkpoint of K ranks goes on at K' — read_shard; format 1 still
                   loads at one rank, where its order is format 2's)
           ...     payload: {"client": the client's own state, "user": the program's state},
                   serialized with torch.save when the program uses torch, else pickle
           last 32 SHA-256 of every byte before it

    n = write_file(path, header, {"client": {...}, "user": state})   # or raises OSError
    header, payload = read_file(path, expect)                         # or raises Rejected
    path, header, payload = read_shard(folder, step, rank, world_size, expect)  # K -> K'

A payload is a pickle: loading one runs whatever it names. The client reads only the shards of
the attempt folders the orchestrator listed in resume.json, after the checks; the checksum
catches accidents (a truncated or corrupt file), not forgery (docs/security.md).
"""

import hashlib
import io
import json
import os
import pickle
import re
import struct
import sys

from . import protocol

FORMAT = 2
# How a run is split: not part of a format-2 config hash (the runner's list, docs/protocol.md).
SPLIT_FIELDS = ("nodes", "ranks_per_node", "world_size", "local_batch_size", "micro_batch_size")
MAGIC = b"BLPYCKP\x01"
_DIGEST = 32
_NAME = re.compile(r"^step-(\d{8,})\.rank-(\d+)\.ckpt$")


class Rejected(Exception):
    """Why a checkpoint file cannot be used; the message is the reason a `resume` line gives."""


def config_hash(raw, fmt=FORMAT):
    """The config a checkpoint belongs to: SHA-256 (16 hex digits) of the resolved config
    without the fields that differ between attempts of one run (attempt, metrics_path) or that
    change nothing it computes (run_id is checked on its own; the checkpoint section), and from
    format 2 on without how the run is split (SPLIT_FIELDS: it goes on at another K)."""
    drop = ("run_id", "attempt", "metrics_path", "checkpoint") + \
        (SPLIT_FIELDS if fmt >= 2 else ())
    kept = {k: v for k, v in raw.items() if k not in drop}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def step_of(name, rank=None):
    """The step of a checkpoint file name (of `rank`'s shard, when given), else None."""
    m = _NAME.match(name)
    if m is None or (rank is not None and int(m.group(2)) != rank):
        return None
    return int(m.group(1))


def serialize(payload):
    """(serializer, bytes): torch.save when the program has imported torch (tensors keep their
    storage and device), else pickle."""
    torch = sys.modules.get("torch")
    out = io.BytesIO()
    if torch is not None:
        torch.save(payload, out)
        return "torch", out.getvalue()
    pickle.dump(payload, out, protocol=pickle.HIGHEST_PROTOCOL)
    return "pickle", out.getvalue()


def deserialize(serializer, data, map_location=None):
    if serializer == "torch":
        import torch  # a program that wrote with torch reads with torch
        return torch.load(io.BytesIO(data), map_location=map_location)
    if serializer == "pickle":
        return pickle.loads(data)
    raise Rejected(f"an unknown serializer {serializer!r}")


def write_file(path, header, data, opener=os.open):
    """Writes header + data (bytes) + checksum to `path` through a temporary file in the same
    folder: write, fsync, rename, fsync of the folder. Returns the bytes written. An OSError
    (a full disk) removes the temporary file and propagates: the files already there stay as
    they were. `opener` is os.open (tests pass one that fails)."""
    header = dict(header, format=FORMAT, payload_bytes=len(data))
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    prefix = MAGIC + struct.pack("<Q", len(head)) + head
    digest = hashlib.sha256(prefix)
    digest.update(data)
    tmp = path + ".tmp"
    fd = opener(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            for chunk in (prefix, data, digest.digest()):
                view = memoryview(chunk)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(os.path.dirname(path) or ".")
    return len(prefix) + len(data) + _DIGEST


def _fsync_dir(folder):
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_file(path, expect, map_location=None):
    """Reads and checks `path`: size, magic, header, format version, then each field of
    `expect` (run_id; config: the resolved config whose hash the file must have, at the file's
    format, None: any — a branch reads its trunk's; step, rank, world_size: each None or absent
    means any), the checksum, and the payload. `expect["resume_world_size"]`: the rank count
    reading it, which a format-1 file must have been written by.
    Returns (header, payload); raises Rejected naming the first check that failed."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise Rejected(f"unreadable ({e.strerror})") from None
    if len(blob) < len(MAGIC) + 8 + _DIGEST:
        raise Rejected(f"truncated ({len(blob)} bytes)")
    if blob[:len(MAGIC)] != MAGIC:
        raise Rejected("not a batchlab client checkpoint (bad magic)")
    (size,) = struct.unpack("<Q", blob[8:16])
    if 16 + size + _DIGEST > len(blob):
        raise Rejected(f"truncated ({len(blob)} bytes)")
    try:
        header = json.loads(blob[16:16 + size].decode("utf-8"))
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise Rejected("corrupt (its header is not a JSON object)")
    fmt = header.get("format")
    if not isinstance(fmt, int) or fmt > FORMAT:
        raise Rejected(f"a newer format ({fmt!r}; this client reads {FORMAT})")
    payload_bytes = header.get("payload_bytes")
    if not isinstance(payload_bytes, int) or 16 + size + payload_bytes + _DIGEST != len(blob):
        raise Rejected(f"truncated ({len(blob)} bytes, its header says "
                       f"{16 + size + (payload_bytes or 0) + _DIGEST})")
    if header.get("run_id") != expect["run_id"]:
        raise Rejected(f"another run's (run id {header.get('run_id')!r})")
    reader = expect.get("resume_world_size")
    if fmt < 2 and reader is not None and header.get("world_size") != reader:
        raise Rejected(f"it was written by {header.get('world_size')!r} ranks in client format "
                       "1, which resumes only at the rank count that wrote it (elastic resume "
                       "needs format 2)")
    if expect.get("config") is not None:
        want = config_hash(expect["config"], fmt)
        if header.get("config_hash") != want:
            raise Rejected(f"written under another config (hash "
                           f"{header.get('config_hash')!r}, this run's is {want!r})")
    if hashlib.sha256(blob[:-_DIGEST]).digest() != blob[-_DIGEST:]:
        raise Rejected("corrupt (checksum mismatch)")
    for key in ("step", "rank", "world_size"):
        if expect.get(key) is not None and header.get(key) != expect[key]:
            raise Rejected(f"its {key} is {header.get(key)!r}, not {expect[key]!r}")
    data = blob[16 + size:-_DIGEST]
    try:
        payload = deserialize(header.get("serializer"), data, map_location)
    except Rejected:
        raise
    except Exception as e:  # noqa: BLE001 - any failure to load means: not usable
        raise Rejected(f"unreadable payload ({type(e).__name__}: {e})") from None
    if not isinstance(payload, dict) or "client" not in payload or "user" not in payload:
        raise Rejected("unreadable payload (not the client's {client, user})")
    return header, payload


def read_shard(folder, step, rank, world_size, expect, map_location=None):
    """The shard rank `rank` of a `world_size`-rank run loads from the checkpoint at `step` in
    `folder` (its checkpoints folder), written by K ranks — K' = world_size may differ
    (docs/protocol.md, "Elastic resume"): the model, optimizer and client state are the same
    in every shard, so rank r' reads its own rank's shard when r' < K and rank r' mod K's
    otherwise (rank 0's shard says K). `expect`: read_file's, less step, rank and world_size.
    Format 1 (a data cursor of this rank's own shard) loads only at the K that wrote it and,
    above one rank, not at all: its rows were dealt per rank (Rejected says so).
    Returns (path, header, payload); raises Rejected."""
    def shard(r):
        return os.path.join(folder, protocol.checkpoint_file_name(step, r))

    expect = dict(expect, step=step, rank=None, world_size=None, resume_world_size=world_size)
    path = shard(rank)
    if not os.path.exists(path):  # fewer ranks wrote it: rank 0's shard says how many
        path = shard(0)
    header, payload = read_file(path, expect, map_location)
    k = header.get("world_size")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise Rejected(f"its world_size is {k!r}")
    if rank < k and header.get("rank") != rank:
        raise Rejected(f"rank {rank}'s shard of it is missing (it was written by {k} ranks)")
    if rank >= k and header.get("rank") != rank % k:
        path = shard(rank % k)
        header, payload = read_file(path, expect, map_location)
        if header.get("world_size") != k:
            raise Rejected("its shards disagree on the world size")
    if header.get("rank") != (rank if rank < k else rank % k):
        raise Rejected(f"its rank is {header.get('rank')!r}, not {rank % k}")
    if header.get("format", 1) < 2 and k > 1:
        raise Rejected(f"it is of client format 1 written by {k} ranks (each rank's own data "
                       "order), which this client does not continue; run it again")
    return path, header, payload


def fresh_rng(seed, rank, step):
    """The generators' seed of a rank the checkpoint had none for (a K-rank checkpoint read at
    K' > K): a stream of (seed, rank, step) of its own, which no other rank draws from."""
    text = f"batchlab-elastic:{seed}:{rank}:{step}".encode("utf-8")
    return {"fresh": int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1}


def earlier_attempts(attempt_dir):
    """resume.json of the attempt folder: [(attempt, dir)], newest first; [] without one.
    A file that is not {"attempts": [...]} is reported on stderr and means: none."""
    path = os.path.join(attempt_dir, protocol.RESUME_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return []
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    items = doc.get("attempts") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        print(f"batchlab: {path} is not {{\"attempts\": [...]}}; starting from step 0",
              file=sys.stderr)
        return []
    out = []
    for a in items:
        if isinstance(a, dict) and isinstance(a.get("dir"), str) and a["dir"]:
            attempt = a.get("attempt", 0)
            out.append((attempt if isinstance(attempt, int) else 0, a["dir"]))
    return out


def trunk_dirs(attempt_dir):
    """branch_from.json of a branch's attempt folder: ([trunk attempt folders, newest first],
    [problems]): a missing or malformed file is a problem (the branch then has no folder)."""
    path = os.path.join(attempt_dir, protocol.BRANCH_FROM_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return [], [f"{path}: {e.strerror} (the orchestrator writes it for a branch run)"]
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    items = doc.get("trunk_dirs") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return [], [f"{path}: not {{\"trunk_dirs\": [...]}}"]
    dirs = [d for d in items if isinstance(d, str) and d]
    return dirs, ([] if dirs else [f"{path}: lists no trunk folder (the trunk never started?)"])


def candidates(earlier):
    """The checkpoints of earlier attempts as [(step, attempt)] from their rank-0 shard names,
    newest first: the highest step, then the latest attempt."""
    out = []
    for attempt, folder in earlier:
        try:
            names = os.listdir(os.path.join(folder, protocol.CHECKPOINT_DIR))
        except OSError:
            continue
        for name in names:
            step = step_of(name, rank=0)
            if step is not None and step > 0:
                out.append((step, attempt))
    return sorted(set(out), key=lambda c: (-c[0], -c[1]))


def prune(folder, rank, keep, at_steps):
    """Removes `rank`'s shards in `folder` beyond the newest `keep`; at_steps stay for good."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    steps = sorted((s for s in (step_of(n, rank) for n in names) if s is not None),
                   reverse=True)
    for step in steps[keep:]:
        if step in at_steps:
            continue
        try:
            os.unlink(os.path.join(folder, protocol.checkpoint_file_name(step, rank)))
        except OSError:
            pass


# --- random generators ---------------------------------------------------------------------

def rng_state():
    """The states of the generators the program has imported: Python's `random`, numpy's
    global one, torch's CPU one and (when CUDA is initialized) every CUDA device's."""
    import random
    state = {"python": random.getstate()}
    np = sys.modules.get("numpy")
    if np is not None and hasattr(np, "random"):
        state["numpy"] = np.random.get_state()
    torch = sys.modules.get("torch")
    if torch is not None:
        state["torch"] = torch.get_rng_state()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["torch_cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state):
    """Restores rng_state()'s generators, or seeds every imported one from fresh_rng()'s."""
    import random
    if "fresh" in state:
        seed = state["fresh"]
        random.seed(seed)
        np = sys.modules.get("numpy")
        if np is not None and hasattr(np, "random"):
            np.random.seed(seed % 2**32)
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.manual_seed(seed)  # CUDA's generators too
        return
    random.setstate(state["python"])
    if "numpy" in state:
        import numpy
        numpy.random.set_state(state["numpy"])
    if "torch" in state:
        import torch
        torch.set_rng_state(state["torch"])
        if "torch_cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["torch_cuda"])
