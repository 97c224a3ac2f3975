#!/usr/bin/env bash
# Installs the Debian packages batchlab needs (idempotent) and builds into build/, on every core.
#   bash scripts/build.sh                              # everything (the test command needs it all)
#   bash scripts/build.sh batchlab batchlab-runner     # only these targets (the quickstart's)
# BATCHLAB_DEPS=quickstart installs only the quickstart's packages (scripts/install-deps.sh); the
# test binaries are then left out of the configure where GoogleTest is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${BATCHLAB_DEPS:-all}
deps_start=$(date +%s)
bash scripts/install-deps.sh "$profile"
echo "build.sh: packages checked/installed in $(( $(date +%s) - deps_start )) s"
launcher=()
if command -v ccache >/dev/null; then
  # Paths below the checkout's parent hash as relative ones, so git worktrees share the cache;
  # the sloppiness lets ccache cache the precompiled headers' users (CMake's -include cmake_pch.hxx).
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
parts=()
if [ "$profile" = quickstart ] && [ ! -f /usr/include/gtest/gtest.h ]; then
  parts=(-DBATCHLAB_BUILD_TESTS=OFF)
elif [ "$profile" = all ]; then
  parts=(-DBATCHLAB_BUILD_TESTS=ON)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${parts[@]}"
targets=()
if [ $# -gt 0 ]; then targets=(--target "$@"); fi
cmake --build build -j "$(nproc)" "${targets[@]}"
