#!/usr/bin/env bash
# wasmtime (PyPI wheel, Config.profiler = "vtune") reporting through Intel's stub into our
# collector, under perf record -k 1; then perf inject --jit + perf report.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LIB="$("$ROOT/scripts/jitapi/build.sh" | head -1)"
WORK="${WORK:-$(mktemp -d)}"
cd "$WORK"
python3 -m venv venv >/dev/null && ./venv/bin/pip -q install wasmtime
cat > fib.py <<'PY'
from wasmtime import Config, Engine, Store, Module, Instance
cfg = Config()
cfg.profiler = "vtune"
engine = Engine(cfg)
store = Store(engine)
module = Module(engine, """(module
  (func $fib (export "fib") (param i32) (result i32)
    local.get 0 i32.const 2 i32.lt_s
    if (result i32) local.get 0
    else local.get 0 i32.const 1 i32.sub call $fib
         local.get 0 i32.const 2 i32.sub call $fib i32.add end))""")
fib = Instance(store, module, []).exports(store)["fib"]
print("fib(30) =", fib(store, 30))
PY
INTEL_JIT_PROFILER64="$LIB" PROFKIT_JITDUMP_DIR="$WORK" \
  perf record -q -k 1 -e cpu-clock -o perf.data ./venv/bin/python fib.py
ls -l jit-*.dump
perf inject --jit -i perf.data -o perf.jit.data
perf report -i perf.jit.data --stdio --sort sym 2>/dev/null | grep -E 'fib|wasm' | head -10
