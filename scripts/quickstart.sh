#!/usr/bin/env bash
# README command 1: set up, build, and run the quickstart study end to end.
# Leaves batchlab.db (SQLite) in the repository root and prints the runs with their outcomes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export PATH="$PWD/build/cli:$PWD/build/runner:$PATH"
batchlab --db batchlab.db sweep run sweeps/quickstart.json
batchlab --db batchlab.db results list --sweep quickstart
batchlab --db batchlab.db report --sweep quickstart --out reports/quickstart
