#!/usr/bin/env bash
# Installs the Debian packages batchlab needs. Idempotent: safe to re-run.
#   bash scripts/install-deps.sh              # everything: build, run and the whole test suite
#   bash scripts/install-deps.sh quickstart   # only what the quickstart study needs: the build of
#                                             # `batchlab` and `batchlab-runner`, the data set, and
#                                             # the report's charting library (three tarballs, curl)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
profile=${1:-all}
case "$profile" in
  all|quickstart) ;;
  *) echo "install-deps: unknown profile '$profile' (use: all, quickstart)" >&2; exit 2 ;;
esac
# The quickstart's packages: the compiler and the libraries `batchlab` and `batchlab-runner` link,
# the data set, and curl (report.html inlines Vega-Lite: install-web-deps.sh report fetches its three
# tarballs from the npm registry, checked against web/package-lock.json; no Node.js needed).
packages=(
  build-essential cmake ninja-build pkg-config git sqlite3 zlib1g-dev
  ccache                     # compiler cache: build.sh and sanitize.sh use it when present
  libtorch-dev libgloo-dev
  libopenblas0-openmp        # LibTorch's BLAS: the reference libblas3 is ~15x slower on the MLP
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libsqlite3-dev
  libboost-dev libboost-filesystem-dev
  libfmt-dev libcli11-dev
  libcpp-httplib-dev         # `batchlab ui`: the live report server
  curl ca-certificates       # the report's charting library (install-web-deps.sh report), over https
  dataset-fashion-mnist
)
# The test command's further packages.
if [ "$profile" = all ]; then
  packages+=(
    libgtest-dev
    nodejs                     # npm ci in web/: playwright-core for the browser test (and Vega)
    chromium                   # the browser test (tests/browser) opens the report headless
    clang libclang-rt-14-dev   # the ASan/UBSan tree and the libFuzzer targets (scripts/sanitize.sh)
    slurm-wlm munge
    iproute2                   # scripts/cluster: network namespaces, veth, bridge, tc (label cluster)
    python3-torch                 # clients/python tests and examples/pytorch-ddp (never linked)
    python3-pip python3-setuptools  # `pip install --no-build-isolation ./clients/python` (tested offline)
    python3-optuna                # peer baseline for bench/ only
  )
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm ships inside some nodejs builds (e.g. NodeSource's); Debian's own nodejs needs its npm package.
if [ "$profile" = all ]; then
  command -v npm >/dev/null 2>&1 || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present ($profile)"
fi

# The report's charting library (Vega-Lite) and, for the test command, the browser test's driver
# (playwright-core), from the npm registry at the versions pinned in web/package-lock.json.
if [ "$profile" = all ]; then
  bash "$(dirname "$0")/install-web-deps.sh" all
else
  bash "$(dirname "$0")/install-web-deps.sh" report
fi
