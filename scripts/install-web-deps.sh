#!/usr/bin/env bash
# Installs web/node_modules from the npm registry at the versions pinned in web/package-lock.json:
# Vega, Vega-Lite and vega-embed (their build/*.min.js are inlined into report.html by
# analysis/report/report_html.cc, so a report opens offline as one file) and playwright-core (drives
# Debian's chromium in tests/browser). Idempotent: skips `npm ci` when node_modules is newer than
# the lockfile.
set -euo pipefail
cd "$(dirname "$0")/../web"
stamp=node_modules/.package-lock.json  # written by npm at the end of every install
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ] && [ "$stamp" -nt package.json ]; then
  echo "install-web-deps: web/node_modules matches web/package-lock.json"
  exit 0
fi
echo "install-web-deps: npm ci in web/ (versions pinned by web/package-lock.json)"
# Engine warnings (vega-lite's build tooling asks for a newer node) do not matter: the browser
# runs the prebuilt bundles and playwright-core needs node >= 18.
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
