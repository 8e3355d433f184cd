#!/usr/bin/env bash
# Benchmark: `profkit report` against `mprof-report` on a real Mono `calls,alloc` file made at
# bench time (>= 200 MB), plain and gzip, same run. Usage: scripts/bench/mono.sh [CPU_ARG]
# Needs mono-runtime mono-devel mono-utils libmono-profiler (scripts/fixtures/mono.sh installs them).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
n="${1:-48}"
work="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -p profkit --manifest-path "$root/Cargo.toml" >/dev/null
profkit="$CARGO_TARGET_DIR/release/profkit"
mcs -optimize+ -out:"$work/Cpu.exe" "$root/scripts/fixtures/mono/Cpu.cs" >/dev/null
if [ ! -s "$work/big_calls.mlpd" ]; then
    (cd "$work" && mono --profile=log:calls,alloc,output="$work/big_calls.mlpd" Cpu.exe "$n" >/dev/null)
fi
[ -s "$work/big_calls_gz.mlpd" ] || gzip -6 -c "$work/big_calls.mlpd" >"$work/big_calls_gz.mlpd"
ls -l "$work"/big_calls*.mlpd
t() { /usr/bin/time -f "%e %U %M" "$@" >/dev/null 2>"$work/t" || true; tail -1 "$work/t"; }
for f in big_calls.mlpd big_calls_gz.mlpd; do
    for i in 1 2 3; do
        m=$(t mprof-report "$work/$f")
        p=$(t "$profkit" report "$work/$f")
        echo "$f run $i: mprof-report wall/user/maxrss_kb: $m | profkit: $p | ratio $(echo "$m $p" | awk '{printf "%.2f", $1/$4}')"
    done
done
