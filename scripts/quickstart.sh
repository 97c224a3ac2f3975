#!/usr/bin/env bash
# README command 1: set up, build, and run the quickstart study end to end; it ends with the
# critical batch size (95% interval), B_simple, the time-compute frontier, a recommended batch
# size and rank count, and the path of the report. Leaves batchlab.db (SQLite), runs/ and
# reports/quickstart/ in the repository root. Re-running resumes (finished runs are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the study needs: the CLI and the built-in runner with their libraries (35 unity-build
# steps; no test or benchmark binary), on every core; the test command (scripts/test.sh) builds
# everything.
build_start=$(date +%s)
BATCHLAB_DEPS=quickstart bash scripts/build.sh batchlab batchlab-runner
echo "quickstart build (packages included): $(( $(date +%s) - build_start )) s"
export PATH="$PWD/build/cli:$PWD/build/runner:$PATH"
start=$(date +%s)
# --new-version: a batchlab.db from an older quickstart spec keeps its runs as an older version.
batchlab --db batchlab.db sweep run sweeps/quickstart.json --new-version
echo
batchlab --db batchlab.db analyze pareto --sweep quickstart
echo
batchlab --db batchlab.db report --sweep quickstart --out reports/quickstart
echo "quickstart study: $(( $(date +%s) - start )) s after the build"
