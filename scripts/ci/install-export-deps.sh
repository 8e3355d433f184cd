#!/usr/bin/env bash
# Installs the external checkers of profkit-export's Perfetto, speedscope and Chrome JSON
# tests, idempotently (a few seconds when everything is there):
#   * Python venv $PROFKIT_EXPORT_DEPS/venv: `perfetto` (ships Perfetto's generated
#     perfetto_trace_pb2; scripts/export/perfetto_decode.py decodes our traces with it),
#     `protobuf` (its runtime), `jsonschema` (validates speedscope files);
#   * npm packages in $PROFKIT_EXPORT_DEPS/npm: `speedscope` (the app and its
#     file-format-schema.json) and `puppeteer-core` (drives Chromium; it downloads no browser);
#   * Chromium from Debian (`chromium`), for scripts/export/speedscope_render.mjs.
# PROFKIT_EXPORT_DEPS defaults to target/export-deps in the workspace (shared with
# scripts/ci/install-export-py.sh). The tests look there; with PROFKIT_REQUIRE_EXTERNAL=1 a
# missing checker fails the test instead of skipping it.
# Usage: bash scripts/ci/install-export-deps.sh   (from anywhere)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps="${PROFKIT_EXPORT_DEPS:-$root/target/export-deps}"
venv="$deps/venv"
node_dir="$deps/npm"
PERFETTO_VERSION="${PERFETTO_VERSION:-0.59.1}"
PROTOBUF_VERSION="${PROTOBUF_VERSION:-7.36.2}"
JSONSCHEMA_VERSION="${JSONSCHEMA_VERSION:-4.26.0}"
SPEEDSCOPE_VERSION="${SPEEDSCOPE_VERSION:-1.25.0}"
PUPPETEER_CORE_VERSION="${PUPPETEER_CORE_VERSION:-24.43.1}"

mkdir -p "$deps"

# Python: the venv is shared, so install only what is missing.
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if ! "$venv/bin/python" -c "
import jsonschema
from perfetto.protos.perfetto.trace import perfetto_trace_pb2
" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "perfetto==$PERFETTO_VERSION" "protobuf==$PROTOBUF_VERSION" "jsonschema==$JSONSCHEMA_VERSION"
fi
"$venv/bin/python" -c "import jsonschema, perfetto, google.protobuf as p; print('perfetto + protobuf', p.__version__, '+ jsonschema', jsonschema.__version__)" 2>/dev/null ||
    "$venv/bin/python" -c "import jsonschema, google.protobuf as p; print('protobuf', p.__version__)"

# npm: saved into $node_dir/package.json (not --no-save), so installs of other packages into
# the same prefix keep these.
have_npm_pkg() {
    node -e "process.exit(require('$node_dir/node_modules/$1/package.json').version === '$2' ? 0 : 1)" 2>/dev/null
}
if ! have_npm_pkg speedscope "$SPEEDSCOPE_VERSION" || ! have_npm_pkg puppeteer-core "$PUPPETEER_CORE_VERSION"; then
    mkdir -p "$node_dir"
    PUPPETEER_SKIP_DOWNLOAD=1 npm install --silent --no-audit --no-fund --prefix "$node_dir" \
        "speedscope@$SPEEDSCOPE_VERSION" "puppeteer-core@$PUPPETEER_CORE_VERSION"
fi
echo "speedscope $SPEEDSCOPE_VERSION + puppeteer-core $PUPPETEER_CORE_VERSION in $node_dir"

# Chromium from Debian.
if ! [ -x /usr/bin/chromium ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
/usr/bin/chromium --version 2>/dev/null | head -1
