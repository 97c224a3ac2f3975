#!/usr/bin/env bash
# Installs web/node_modules from the npm registry at the versions pinned in web/package-lock.json:
# Vega, Vega-Lite and vega-embed (their build/*.min.js are inlined into report.html by
# analysis/report/report_html.cc, so a report opens offline as one file) and playwright-core (drives
# Debian's chromium in tests/browser).
#   bash scripts/install-web-deps.sh          # all of it with `npm ci` (the test command)
#   bash scripts/install-web-deps.sh report   # only the report's three packages, with curl: each
#                                             # tarball checked against the lockfile's sha512
#                                             # (the quickstart: no Node.js, no npm, whose Debian
#                                             # package alone pulls in 387 packages)
# Idempotent: skips when node_modules already matches the lockfile.
set -euo pipefail
cd "$(dirname "$0")/../web"
profile=${1:-all}
case "$profile" in
  all|report) ;;
  *) echo "install-web-deps: unknown profile '$profile' (use: all, report)" >&2; exit 2 ;;
esac
stamp=node_modules/.package-lock.json  # written by npm at the end of every install
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ] && [ "$stamp" -nt package.json ]; then
  echo "install-web-deps: web/node_modules matches web/package-lock.json"
  exit 0
fi

if [ "$profile" = all ]; then
  echo "install-web-deps: npm ci in web/ (versions pinned by web/package-lock.json)"
  # Engine warnings (vega-lite's build tooling asks for a newer node) do not matter: the browser
  # runs the prebuilt bundles and playwright-core needs node >= 18.
  npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
  exit 0
fi

# The report's packages: their tarballs from the registry, each checked against the lockfile's
# integrity (sha512), unpacked as npm would (a tarball's package/ is the module's folder).
bundles_stamp=node_modules/.report-bundles
if [ -f "$bundles_stamp" ] && [ "$bundles_stamp" -nt package-lock.json ]; then
  echo "install-web-deps: the report's packages match web/package-lock.json"
  exit 0
fi
# One field of a package's entry in the lockfile (npm writes it 2-space indented, one field a line).
lock_field() {  # NAME FIELD
  sed -n "/^    \"node_modules\/$1\": {/,/^    }/p" package-lock.json |
    sed -n "s/^      \"$2\": \"\(.*\)\",\{0,1\}$/\1/p" | head -n 1
}
registry=${npm_config_registry:-https://registry.npmjs.org}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in vega vega-lite vega-embed; do
  version=$(lock_field "$name" version)
  integrity=$(lock_field "$name" integrity)
  if [ -z "$version" ] || [ "${integrity#sha512-}" = "$integrity" ]; then
    echo "install-web-deps: web/package-lock.json has no version or sha512 integrity for $name;" \
         "run 'npm install' in web/ to rewrite it, or use: bash scripts/install-web-deps.sh all" >&2
    exit 1
  fi
  url="${registry%/}/$name/-/$name-$version.tgz"
  curl -fsSL --retry 3 -o "$tmp/$name.tgz" "$url" ||
    { echo "install-web-deps: could not download $url" >&2; exit 1; }
  want=$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
  got=$(sha512sum "$tmp/$name.tgz" | cut -d' ' -f1)
  if [ "$want" != "$got" ]; then
    echo "install-web-deps: $url does not match web/package-lock.json's sha512; not installed" >&2
    exit 1
  fi
  rm -rf "node_modules/$name"
  mkdir -p "node_modules/$name"
  tar -xzf "$tmp/$name.tgz" -C "node_modules/$name" --strip-components=1 --no-same-owner
  echo "install-web-deps: $name $version (sha512 checked)"
done
touch "$bundles_stamp"
