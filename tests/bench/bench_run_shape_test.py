#!/usr/bin/python3
"""Smoke test of bench/run (CTest bench_run_quick_shape): `bench/run --quick` on the cheap
programs (results, analysis) exits 0 and every program printed well-formed rows. It asserts the
shape of the output only, never a timing (speed is measured in bench/, not asserted in tests)."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    build = sys.argv[sys.argv.index("--build") + 1]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "run"), "--quick",
                               "--build", build, "--only", "^(results|analysis)$", "--json-out",
                               out], capture_output=True, text=True)
        print(done.stdout[-4000:], done.stderr[-2000:])
        assert done.returncode == 0, f"bench/run --quick exited {done.returncode}"
        with open(out) as f:
            result = json.load(f)
    programs = result["programs"]
    assert set(programs) == {"results", "analysis"}, programs.keys()
    for name, info in programs.items():
        assert not info["problems"], (name, info["problems"])
        assert info["rows"], f"{name} printed no rows"
        for row in info["rows"]:
            assert isinstance(row["row"], str) and row["row"], row
            assert isinstance(row["value"], (int, float)) and not isinstance(row["value"], bool)
            assert isinstance(row["unit"], str), row
            if row.get("baseline") is not None:
                assert isinstance(row["baseline_name"], str), row
    # The table bench/run prints names every figure.
    for info in programs.values():
        for row in info["rows"]:
            assert row["row"] in done.stdout, row["row"]
    assert "goals hold" in done.stdout
    print("bench/run --quick: output well-formed")


if __name__ == "__main__":
    main()
