#!/usr/bin/env bash
# Installs the external checkers profkit-export's tests use, idempotently:
#   * DuckDB in the Python venv $PROFKIT_EXPORT_DEPS/venv (reads the Parquet tables, runs
#     docs/fleet.md's queries), and wasmtime (the perf.data tests record its jitdump);
#   * opentelemetry-proto in the same venv: the official generated classes of OTLP profiles
#     (scripts/export/otlp_check.py decodes the .otlp.pb / .otlp.json outputs with them);
#   * pyspark in the same venv (the fleet test runs docs/fleet.md's queries in Spark's local
#     mode; Java 17+ must be on PATH: .ci/run installs default-jdk-headless);
#   * the npm package pprof-format in $PROFKIT_EXPORT_DEPS/npm (decodes the pprof output).
# PROFKIT_EXPORT_DEPS defaults to target/export-deps in the workspace, the directory the
# other export checks (scripts/ci/install-export-deps.sh) share. The tests look there; with
# PROFKIT_REQUIRE_EXTERNAL=1 a missing checker fails the test instead of skipping it.
# Usage: bash scripts/ci/install-export-py.sh   (from anywhere; ~10 s when already installed)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps="${PROFKIT_EXPORT_DEPS:-$root/target/export-deps}"
venv="$deps/venv"
node_dir="$deps/npm"
DUCKDB_VERSION="${DUCKDB_VERSION:-1.4.4}"
WASMTIME_VERSION="${WASMTIME_VERSION:-50.0.1}"
PPROF_FORMAT_VERSION="${PPROF_FORMAT_VERSION:-2.3.2}"
# 1.45.2 ships opentelemetry-proto v1.11.0's profiles.v1development (the version profkit
# generates its types from); it works with the protobuf the venv already has.
OTEL_PROTO_VERSION="${OTEL_PROTO_VERSION:-1.45.2}"
PYSPARK_VERSION="${PYSPARK_VERSION:-4.1.1}"

mkdir -p "$deps"
if ! "$venv/bin/python" -c "import duckdb" 2>/dev/null; then
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "duckdb==$DUCKDB_VERSION"
fi
"$venv/bin/python" -c "import duckdb; print('duckdb', duckdb.__version__)"
if ! "$venv/bin/python" -c "import wasmtime" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "wasmtime==$WASMTIME_VERSION"
fi
"$venv/bin/python" -c "import wasmtime; print('wasmtime', '$WASMTIME_VERSION')"
if ! "$venv/bin/python" -c "from opentelemetry.proto.profiles.v1development import profiles_pb2" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "opentelemetry-proto==$OTEL_PROTO_VERSION"
fi
"$venv/bin/python" -c "from opentelemetry.proto.profiles.v1development import profiles_pb2; print('opentelemetry-proto', '$OTEL_PROTO_VERSION')"
if ! "$venv/bin/python" -c "import pyspark" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyspark==$PYSPARK_VERSION"
fi
"$venv/bin/python" -c "import pyspark; print('pyspark', pyspark.__version__)"

if command -v npm >/dev/null 2>&1; then
    if [ ! -f "$node_dir/node_modules/pprof-format/package.json" ]; then
        mkdir -p "$node_dir"
        npm install --silent --no-audit --no-fund --prefix "$node_dir" "pprof-format@$PPROF_FORMAT_VERSION"
    fi
    node -e "console.log('pprof-format', require('$node_dir/node_modules/pprof-format/package.json').version)"
else
    echo "install-export-py: npm not found; the pprof-format check will be skipped" >&2
fi
