#!/usr/bin/env bash
# README command 2: set up, build, and run the whole test suite through CTest. Arguments go to
# ctest (a subset of tests). The whole suite (no arguments) is followed by the sanitizer and
# fuzzing pass, scripts/sanitize.sh (docs/security.md, "Sanitizers and fuzzing");
# BATCHLAB_SANITIZE=0 skips it, BATCHLAB_SANITIZE=1 runs it after a subset too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
rm -rf build/fault-injection
rc=0
ctest --test-dir build --output-on-failure --timeout 900 "$@" || rc=$?
# The fault-injection figures (tests labelled `fault`, docs/security.md), one line per test.
if compgen -G "build/fault-injection/*.txt" > /dev/null; then
  echo "fault injection:"
  cat build/fault-injection/*.txt | sed 's/^/  /'
fi
sanitize_default=1
if [ $# -gt 0 ]; then sanitize_default=0; fi
if [ "${BATCHLAB_SANITIZE:-$sanitize_default}" = 1 ]; then
  bash scripts/sanitize.sh || rc=$?
fi
exit "$rc"
