#!/usr/bin/env bash
# The installed tree needs no source tree (issue 36): `cmake --install` into a prefix outside the
# clone, then a small Fashion-MNIST study run from that prefix as a non-root user (nobody), with no
# build folder on PATH and the report written from the installed charting library; then the .deb
# that `cpack` makes from the same tree, unpacked into a scratch root, runs the same way.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/batchlab-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/P" > "$work/install.log" || fail "cmake --install: $(cat "$work/install.log")"
for f in bin/batchlab bin/batchlab-runner bin/batchlab-rank lib/python3/dist-packages/batchlab/__init__.py \
         share/batchlab/spec.schema.json share/batchlab/sweeps/quickstart.json \
         share/batchlab/web/node_modules/vega-lite/build/vega-lite.min.js share/doc/batchlab/spec.md; do
  [ -e "$work/P/$f" ] || fail "the installed tree has no $f"
done

# The study as a user without root and without the clone: nobody, HOME and the study in a scratch
# folder, PATH = the prefix's bin and the system's.
cat > "$work/small.json" <<'SPEC'
{
  "name": "installed",
  "base": {
    "data": {"name": "fashion-mnist", "samples": 2000, "test_samples": 500},
    "model": {"name": "mlp", "hidden": [32]},
    "optimizer": {"name": "momentum", "momentum": 0.9},
    "lr": {"base": 0.05, "base_batch_size": 64, "rule": "linear"},
    "budget": {"epochs": 1},
    "eval": {"every_steps": 10},
    "target": {"metric": "test_accuracy", "op": ">=", "value": 0.5},
    "threads": 1
  },
  "axes": {"batch_size": [64, 128]},
  "seeds": [1]
}
SPEC
run_as_user() {  # PREFIX STUDY_DIR: the study from PREFIX/bin as nobody
  local prefix=$1 dir=$2
  mkdir -p "$dir" && cp "$work/small.json" "$dir/" && chown -R nobody:nogroup "$dir"
  setpriv --reuid=nobody --regid=nogroup --clear-groups \
    env -i HOME="$dir" PATH="$prefix/bin:/usr/bin:/bin" PYTHONPATH="$prefix/lib/python3/dist-packages" \
    bash -c '
      set -euo pipefail
      cd "$1"
      [ "$(id -u)" != 0 ] || { echo "still root"; exit 1; }
      case "$(command -v batchlab)" in "$2"/bin/batchlab) ;; *) echo "batchlab is $(command -v batchlab)"; exit 1;; esac
      batchlab --db study.db sweep run small.json
      batchlab --db study.db analyze target --sweep installed
      batchlab --db study.db report --sweep installed --out report
      grep -q "vega-lite" report/report.html
      /usr/bin/python3 -c "import batchlab, sys; assert batchlab.__file__.startswith(sys.argv[1]), batchlab.__file__" "$2"
    ' _ "$dir" "$prefix" || fail "the study from $prefix as nobody failed"
}
run_as_user "$work/P" "$work/user"
echo "installed tree: the study ran as nobody from $work/P"

# The .deb: cpack packs the same install rules; unpacked into a scratch root, it runs the same way.
(cd "$build" && cpack -G DEB -B "$work/deb" > "$work/cpack.log" 2>&1) || fail "cpack: $(tail -20 "$work/cpack.log")"
deb=$(ls "$work"/deb/*.deb | head -n 1)
[ -n "$deb" ] || fail "cpack made no .deb"
dpkg-deb --field "$deb" Package Depends
dpkg-deb -x "$deb" "$work/root"
run_as_user "$work/root/usr" "$work/user-deb"
echo "deb: $(basename "$deb") unpacked and the study ran as nobody from $work/root/usr"
