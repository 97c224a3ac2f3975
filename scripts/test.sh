#!/usr/bin/env bash
# README command 2: set up, build, and run the whole test suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 900 "$@"
