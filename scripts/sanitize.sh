#!/usr/bin/env bash
# The sanitizer and fuzzing pass of the test command (scripts/test.sh runs it after the normal
# suite; docs/security.md): builds everything outside runner/ with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (CMakePresets.json, preset asan-ubsan, tree build-asan/), runs the
# test suite there (minus the Slurm and LibTorch end-to-end tests), then runs each libFuzzer
# target for FUZZ_SECONDS (default 25) from its seed corpus. A crash input is kept in
# fuzz/regressions/<target>/ (commit it: tests/fuzz replays it in every build) and fails the pass.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${FUZZ_SECONDS:-25}
t0=$(date +%s)
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake --preset asan-ubsan "${launcher[@]}" >/dev/null
cmake --build --preset asan-ubsan
t1=$(date +%s)
ctest --preset asan-ubsan
t2=$(date +%s)
status=0
for target in spec metrics_line; do
  work=$(mktemp -d)
  seeds=(fuzz/corpus/$target)
  if [ "$target" = spec ]; then seeds+=(sweeps tests/orchestrator/hostile_specs); fi
  mkdir -p fuzz/regressions/$target
  echo "sanitize: fuzzing $target for ${fuzz_seconds} s"
  if ! build-asan/fuzz/${target}_fuzzer -max_total_time="$fuzz_seconds" -timeout=20 \
      -rss_limit_mb=2048 -print_final_stats=1 -dict=fuzz/$target.dict \
      -artifact_prefix=fuzz/regressions/$target/ "$work" "${seeds[@]}" 2>"$work.log"; then
    tail -n 40 "$work.log" >&2
    echo "sanitize: ${target}_fuzzer found a crash; the input is in fuzz/regressions/$target/" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work.log" | tr '\n' ' '
    echo
  fi
  rm -rf "$work" "$work.log"
done
t3=$(date +%s)
echo "sanitize: build $((t1 - t0)) s, tests $((t2 - t1)) s, fuzzing $((t3 - t2)) s, total $((t3 - t0)) s"
exit $status
