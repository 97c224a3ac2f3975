#!/usr/bin/env bash
# The GPU checks in one command (docs/gpu.md): builds batchlab-runner against this machine's CUDA
# LibTorch (PyTorch's own, from `python3 -c "import torch"`) with NCCL, then runs
#   - the NCCL allreduce of a device buffer in place, and of a host buffer staged through the GPU
#     (bench/runner/allreduce_bench), with its check that every element is the mean;
#   - scripts/gpu/runner_vs_pytorch.py: MLP/CNN/LM throughput against PyTorch in fp32, bf16 and
#     fp16, fp16 loss scaling exercised, exact resume on the device, the LM critical-batch grid.
#
#   bash scripts/gpu/check.sh [OUT_DIR]          # default build-gpu/results
#
# Needs: a CUDA GPU, python3 with a CUDA torch, cmake, ninja, a C++17 compiler, and the headers
# of nlohmann-json, fmt, CLI11, zlib and Open MPI. Where those are not installed (a node with no
# package access), BATCHLAB_GPU_DEBS=DIR names a folder of the Debian packages (.deb) to unpack
# into build-gpu/deps and use from there (scripts/gpu/fetch-debs.sh makes it on a Debian
# machine). BATCHLAB_FASHION_MNIST (default /usr/share/datasets/fashion-mnist) and
# BATCHLAB_CORPUS (a text file; default: the Python standard library as the runner reads it) name
# the data; BATCHLAB_GPU_ONLY (allreduce,speed,fp16,resume,study) and BATCHLAB_GPU_CASES
# (mlp,cnn,lm,lm-large) pick parts. Exit 1 if a check fails; throughput is reported, not judged.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build-gpu/results}
mkdir -p "$out"
log() { echo "[gpu/check $(date +%T)] $*"; }

python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" ||
  { echo "scripts/gpu/check.sh: python3's torch sees no CUDA device" >&2; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"

prefix_path=$(python3 -c "import torch; print(torch.utils.cmake_prefix_path)")
cmake_extra=()
if [ -n "${BATCHLAB_GPU_DEBS:-}" ]; then
  deps=$PWD/build-gpu/deps
  if [ ! -d "$deps/usr" ]; then
    log "unpacking $(ls "$BATCHLAB_GPU_DEBS"/*.deb | wc -l) packages into $deps"
    mkdir -p "$deps"
    for f in "$BATCHLAB_GPU_DEBS"/*.deb; do dpkg -x "$f" "$deps"; done
  fi
  # zlib1g-dev's libz.so points at /lib/...: point it at the unpacked library instead.
  ln -sf "$(ls "$deps"/lib/x86_64-linux-gnu/libz.so.1.* | head -1)" "$deps/usr/lib/x86_64-linux-gnu/libz.so"
  # Open MPI relocated: OPAL_PREFIX makes its wrappers, mpirun and plugins look under $deps.
  # Only the build and the runner's processes see these libraries (not python3's torch).
  export OPAL_PREFIX=$deps/usr
  export BATCHLAB_RUNNER_LIBS=$deps/usr/lib/x86_64-linux-gnu:$deps/usr/lib/x86_64-linux-gnu/openmpi/lib
  mkdir -p "$deps/bin"
  ln -sf "$deps/usr/bin/mpicc.openmpi" "$deps/bin/mpicc"
  ln -sf "$deps/usr/bin/mpirun.openmpi" "$deps/bin/mpirun"
  export PATH=$deps/bin:$deps/usr/bin:$PATH
  prefix_path="$prefix_path;$deps/usr"
  cmake_extra+=(-DMPI_C_COMPILER="$deps/usr/bin/mpicc.openmpi"
                -DZLIB_INCLUDE_DIR="$deps/usr/include"
                -DZLIB_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/libz.so")
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# NCCL and the CUDA runtime: PyTorch's own (its wheels' nvidia/* folders), else the toolkit's.
read -r nccl_inc nccl_lib cudart_lib cuda_inc < <(python3 - <<'EOF'
import glob, os, site, torch
roots = site.getsitepackages() + [os.path.dirname(os.path.dirname(torch.__file__))]
def find(patterns):
    for r in roots:
        for p in patterns:
            hits = sorted(glob.glob(os.path.join(r, p), recursive=True))
            if hits:
                return hits[0]
    return ""
nccl_h = find(["nvidia/**/include/nccl.h"]) or (glob.glob("/usr/local/cuda/include/nccl.h") or [""])[0]
nccl_so = find(["nvidia/**/lib/libnccl.so*"]) or (glob.glob("/usr/local/cuda/lib64/libnccl.so*") or [""])[0]
cudart = find(["nvidia/**/lib/libcudart.so*"]) or (glob.glob("/usr/local/cuda/lib64/libcudart.so*") or [""])[0]
rt_h = (glob.glob("/usr/local/cuda/include/cuda_runtime_api.h") or [find(["nvidia/**/include/cuda_runtime_api.h"])])[0]
print(os.path.dirname(nccl_h) or "-", nccl_so or "-", cudart or "-", os.path.dirname(rt_h) or "-")
EOF
)
log "nccl: $nccl_inc $nccl_lib; cudart: $cudart_lib; cuda headers: $cuda_inc"

with_libs() { LD_LIBRARY_PATH=${BATCHLAB_RUNNER_LIBS:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
log "configure + build (runner only, CUDA LibTorch)"
with_libs cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DBATCHLAB_RUNNER_ONLY=ON \
  -DBATCHLAB_WITH_GLOO=OFF -DBATCHLAB_WERROR=OFF -DCMAKE_PREFIX_PATH="$prefix_path" \
  -DBATCHLAB_NCCL_INCLUDE_DIR="$nccl_inc" -DBATCHLAB_NCCL_LIBRARY="$nccl_lib" \
  -DBATCHLAB_CUDART_LIBRARY="$cudart_lib" -DBATCHLAB_CUDA_INCLUDE_DIR="$cuda_inc" \
  "${cmake_extra[@]}" > "$out/configure.log" 2>&1 || { tail -40 "$out/configure.log"; exit 1; }
grep -E "NCCL backend|Found Torch|Found MPI" "$out/configure.log" || true
with_libs cmake --build build-gpu -j "$(nproc)" --target batchlab-runner allreduce_bench > "$out/build.log" 2>&1 ||
  { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
log "built"

rc=0
log "NCCL allreduce: device buffers in place, then host buffers staged"
only=${BATCHLAB_GPU_ONLY:-allreduce,speed,fp16,resume,study}
for device in cuda cpu; do
  [[ ",$only," == *,allreduce,* ]] || break
  with_libs timeout 120 build-gpu/bench/runner/allreduce_bench --backend nccl --device "$device" \
    --max-mib 256 --reps 9 2>&1 | tee "$out/allreduce-$device.txt" || rc=1
done

fm=${BATCHLAB_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
corpus=${BATCHLAB_CORPUS:-}
if [ -z "$corpus" ]; then
  corpus=$out/corpus.txt
  python3 - "$corpus" <<'EOF'
# The runner's default corpus (runner/data/text_file.cc): the standard library's .py files
# in byte order of their paths, the first 6,000,000 bytes.
import os, sys, sysconfig
root = sysconfig.get_paths()["stdlib"]
skip = {"dist-packages", "site-packages", "test", "tests", "idle_test", "distutils", "lib2to3",
        "venv", "ensurepip", "idlelib", "tkinter", "turtledemo"}
rels = []
for dp, dns, fns in os.walk(root):
    parts = [] if dp == root else os.path.relpath(dp, root).split("/")
    if any(p in skip for p in parts) or (parts and parts[0].startswith("config-")):
        dns[:] = []
        continue
    rels += [os.path.relpath(os.path.join(dp, f), root) for f in fns if f.endswith(".py")]
out = b""
for r in sorted(rels, key=str.encode):
    out += open(os.path.join(root, r), "rb").read()
    if len(out) >= 6000000:
        break
open(sys.argv[1], "wb").write(out[:6000000])
EOF
fi
log "runner vs PyTorch, fp16 loss scaling, resume, LM study"
PYTHONUNBUFFERED=1 python3 scripts/gpu/runner_vs_pytorch.py --runner build-gpu/runner/batchlab-runner \
  --fashion-mnist "$fm" --corpus "$corpus" --out "$out" --only "$only" \
  ${BATCHLAB_GPU_CASES:+--cases "$BATCHLAB_GPU_CASES"} ${BATCHLAB_GPU_QUICK:+--quick} || rc=1
log "done (exit $rc); results in $out/results.jsonl"
exit "$rc"
