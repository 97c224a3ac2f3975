#!/usr/bin/env bash
# Installs the Debian packages batchlab needs (idempotent) and builds into build/, on every core.
#   bash scripts/build.sh                              # everything (the test command needs it all)
#   bash scripts/build.sh batchlab batchlab-runner     # only these targets (the quickstart's)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
launcher=()
if command -v ccache >/dev/null; then
  # Paths below the checkout's parent hash as relative ones, so git worktrees share the cache.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
targets=()
if [ $# -gt 0 ]; then targets=(--target "$@"); fi
cmake --build build -j "$(nproc)" "${targets[@]}"
