#!/usr/bin/env bash
# Cost per iJIT LOAD vs profkit-jitdump's writer (docs/BENCHMARKS.md, "JIT Profiling API").
# BENCH_SCALE=0.1 for a quick run.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target-jitapi}"
cargo bench -p profkit-jitapi --bench load
