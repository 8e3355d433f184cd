#!/usr/bin/env bash
# jitdump read benchmark: profkit-jitdump vs linux-perf-data's JitDumpReader, same process,
# same bytes (crates/jitdump/benches/read.rs). Results are recorded in docs/BENCHMARKS.md.
#
#   scripts/bench/jitdump.sh                 # prints the tables, also saved to the log below
#
# Environment:
#   CARGO_TARGET_DIR      build directory (default: target); the generated ~200 MB dump is kept
#                         in $CARGO_TARGET_DIR/bench-data/ and reused
#   PROFKIT_BENCH_DIR     where the generated dump lives instead
#   PROFKIT_BENCH_MB      size of the generated dump in MiB (default 200)
#   PROFKIT_BENCH_ROUNDS  alternating rounds per contender (default 20)
#   BENCH_LOG             where to tee the output (default: $CARGO_TARGET_DIR/bench-jitdump.log)
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
log="${BENCH_LOG:-$target/bench-jitdump.log}"
mkdir -p "$(dirname "$log")"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(rustc --version)"
  echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
} | tee "$log"
cargo bench -p profkit-jitdump --bench read 2>&1 | tee -a "$log"
echo "log: $log"
