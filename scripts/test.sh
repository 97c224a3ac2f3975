#!/usr/bin/env bash
# README command 2: set up, build, and run the whole test suite through CTest. Arguments go to
# ctest (a subset of tests). BATCHLAB_SANITIZE=1 adds the sanitizer and fuzzing pass afterwards
# (scripts/sanitize.sh; not on by default: see docs/security.md, "Sanitizers and fuzzing").
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
if [ "${BATCHLAB_SANITIZE:-0}" = 1 ]; then
  bash scripts/sanitize.sh || rc=$?
fi
exit "$rc"
