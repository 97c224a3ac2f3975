"""Rank 0's metrics stream (docs/protocol.md): one JSON object per line, `seq` first and strictly
increasing from 0, then `kind` and the line's fields; flushed per line so batchlab ingests a
running job. Non-finite numbers are written as null (as the runner's JSON library does).

    out = MetricsWriter.open(cfg.metrics_path)      # "" = nowhere (tests, --validate)
    out.write({"kind": "step", "step": 1, "loss": 2.3})   # {"seq":0,"kind":"step",...}\\n
"""

import json
import math
import os


def _finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class MetricsWriter:
    """Writes lines to a file (or nowhere when `path` is empty or None)."""

    def __init__(self, file):
        self._file = file
        self.next_seq = 0

    @classmethod
    def open(cls, path):
        if not path:
            return cls(None)
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        return cls(open(path, "w", encoding="utf-8"))  # truncates, like the runner

    def write(self, fields):
        line = {"seq": self.next_seq}
        self.next_seq += 1
        for k, v in fields.items():
            line[k] = _finite(v)
        if self._file is None:
            return
        self._file.write(json.dumps(line, separators=(",", ":"), allow_nan=False) + "\n")
        self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None
