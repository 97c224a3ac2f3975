#!/usr/bin/env bash
# README command 2: set up, build, and run the whole test suite through CTest. Arguments go to
# ctest (a subset of tests). The whole suite (no arguments) is accompanied by the sanitizer and
# fuzzing pass, scripts/sanitize.sh (docs/security.md, "Sanitizers and fuzzing"), which runs at
# the lowest CPU priority *beside* the suite: many tests wait (on Slurm, on a killed process, on a
# timeout) rather than compute, and the sanitizer's clang build and the fuzzers use those idle
# cycles instead of running after the suite (docs/benchmarks.md, "The test command").
# BATCHLAB_SANITIZE=0 skips it, BATCHLAB_SANITIZE=1 runs it after a subset too;
# BATCHLAB_SANITIZE_BESIDE=0 runs it after the suite instead of beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
rm -rf build/fault-injection
sanitize_default=1
if [ $# -gt 0 ]; then sanitize_default=0; fi
sanitize=${BATCHLAB_SANITIZE:-$sanitize_default}
beside=${BATCHLAB_SANITIZE_BESIDE:-1}
sanitize_pid=
sanitize_log=build/sanitize.log
if [ "$sanitize" = 1 ] && [ "$beside" = 1 ]; then
  # Its own session, and that session's autogroup at the lowest priority: the kernel shares the CPU
  # between autogroups first (sched_autogroup_enabled), and every sweep job runs in a session of
  # its own (setsid), so a plain `nice` would give the sanitizer an equal share against each job.
  setsid -w bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 bash scripts/sanitize.sh' \
    > "$sanitize_log" 2>&1 &
  sanitize_pid=$!
fi
rc=0
t0=$(date +%s)
# Unit tests side by side on every core; a test labelled as computing or timing runs alone
# (RUN_SERIAL: tests/CMakeLists.txt, BATCHLAB_ALONE_LABELS).
ctest --test-dir build --output-on-failure --timeout 900 --parallel "$(nproc)" "$@" || rc=$?
echo "test suite: $(( $(date +%s) - t0 )) s"
# The fault-injection figures (tests labelled `fault`, docs/security.md), one line per test.
if compgen -G "build/fault-injection/*.txt" > /dev/null; then
  echo "fault injection:"
  cat build/fault-injection/*.txt | sed 's/^/  /'
fi
if [ -n "$sanitize_pid" ]; then
  t1=$(date +%s)
  src=0
  wait "$sanitize_pid" || src=$?
  echo "sanitizer pass (beside the suite; waited $(( $(date +%s) - t1 )) s after it):"
  sed 's/^/  /' "$sanitize_log"
  [ "$src" = 0 ] || rc=$src
elif [ "$sanitize" = 1 ]; then
  bash scripts/sanitize.sh || rc=$?
fi
exit "$rc"
