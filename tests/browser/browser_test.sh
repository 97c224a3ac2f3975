#!/usr/bin/env bash
# The browser test (CTest label `browser`): builds the synthetic study's database, writes its
# report, serves it with `batchlab ui` on a free port of 127.0.0.1, and runs browser_test.js in
# headless chromium against both, and on the report of a wide study (9 batch sizes × 3 rank
# counts). Screenshots land in OUT_DIR (under the build tree).
# Usage: browser_test.sh BATCHLAB MAKE_STUDY_DB WEB_MODULES OUT_DIR
set -euo pipefail
batchlab=$1 make_db=$2 modules=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
ui_pid=
cleanup() {
  [ -n "$ui_pid" ] && kill "$ui_pid" 2>/dev/null && wait "$ui_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium missing: run bash scripts/install-deps.sh"
[ -d "$modules/playwright-core" ] || fail "$modules/playwright-core missing: run bash scripts/install-web-deps.sh"
export BATCHLAB_WEB_MODULES=$modules

"$make_db" write "$work/study.db" "$work/metrics"
"$batchlab" --db "$work/study.db" report --sweep synthetic --out "$work/report" --resamples 200
"$make_db" wide "$work/wide.db" "$work/wide-metrics"
"$batchlab" --db "$work/wide.db" report --sweep wide --out "$work/wide" --resamples 200 > /dev/null

"$batchlab" --db "$work/study.db" ui --port 0 --min-refresh 0 --resamples 200 > "$work/ui.log" 2>&1 &
ui_pid=$!
url=
for _ in $(seq 100); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$work/ui.log" || true)
  [ -n "$url" ] && break
  kill -0 "$ui_pid" 2>/dev/null || fail "batchlab ui exited: $(cat "$work/ui.log")"
  sleep 0.1
done
[ -n "$url" ] || fail "batchlab ui printed no address: $(cat "$work/ui.log")"

rm -rf "$out" && mkdir -p "$out"
node "$here/browser_test.js" "$work/report" "$work/wide" "${url}sweeps/synthetic" "$out" \
  "$make_db" advance "$work/study.db" "$work/metrics"
echo "screenshots: $out/{report,wide,live}.png and one per chart: $out/{report,wide}-CHART.png"
