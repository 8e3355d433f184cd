#!/usr/bin/env bash
# Benchmark: `profkit report` against `mprof-report` on real Mono `calls,alloc` files made at
# bench time, plain and gzip, same run, alternating, page cache warm.
# Usage: scripts/bench/mono.sh [CPU_ARG [RUNS]]
#   CPU_ARG: Cpu.exe's argument for the big file (default 48: about 250 MB); a second file of
#   half that work (about 120 MB) shows whether peak memory grows with the file size.
#   Data goes to $BENCH_DIR (default bench-data/mono, git-ignored); files are reused.
# Needs mono-runtime mono-devel mono-utils libmono-profiler (scripts/fixtures/mono.sh installs
# them) and GNU time.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
n="${1:-48}"
runs="${2:-5}"
work="${BENCH_DIR:-$root/bench-data/mono}"
mkdir -p "$work"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -p profkit --manifest-path "$root/Cargo.toml" >/dev/null
profkit="$CARGO_TARGET_DIR/release/profkit"
[ -s "$work/Cpu.exe" ] || mcs -optimize+ -out:"$work/Cpu.exe" "$root/scripts/fixtures/mono/Cpu.cs" >/dev/null
make_file() { # NAME CPU_ARG
    if [ ! -s "$work/$1.mlpd" ]; then
        (cd "$work" && mono --profile=log:calls,alloc,output="$work/$1.mlpd" Cpu.exe "$2" >/dev/null)
    fi
    [ -s "$work/$1_gz.mlpd" ] || gzip -6 -c "$work/$1.mlpd" >"$work/$1_gz.mlpd"
}
make_file big_calls "$n"
make_file half_calls "$((n / 2))"
ls -l "$work"/*_calls*.mlpd
echo "mono: $(mono --version | head -1)"
echo "mprof-report: $(dpkg-query -W -f='${Version}' mono-utils 2>/dev/null || echo unknown)"
echo "cores: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
# t CMD...: "wall user maxrss_kb" of one run (output discarded). The wall time is taken with
# bash's microsecond clock around GNU time: its own %e has 10 ms steps, too coarse for runs of
# 0.1 s (GNU time's fork and wait add the same ~1 ms to both contenders).
t() {
    local start=$EPOCHREALTIME
    /usr/bin/time -f "%U %M" "$@" >/dev/null 2>"$work/t" || true
    local end=$EPOCHREALTIME
    echo "$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.4f", b - a}') $(tail -1 "$work/t")"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-20s %8s %8s %8s | %8s %8s %8s | %6s\n' file mp_wall mp_user mp_rssKB pk_wall pk_user pk_rssKB ratio
for f in big_calls.mlpd big_calls_gz.mlpd half_calls.mlpd half_calls_gz.mlpd; do
    : >"$work/m.runs"
    : >"$work/p.runs"
    for _ in $(seq "$runs"); do
        t mprof-report "$work/$f" >>"$work/m.runs"
        t "$profkit" report "$work/$f" >>"$work/p.runs"
    done
    col() { awk "{print \$$2}" "$1" | median; }
    mw=$(col "$work/m.runs" 1) mu=$(col "$work/m.runs" 2) mr=$(col "$work/m.runs" 3)
    pw=$(col "$work/p.runs" 1) pu=$(col "$work/p.runs" 2) pr=$(col "$work/p.runs" 3)
    printf '%-20s %8s %8s %8s | %8s %8s %8s | %6s\n' "$f" "$mw" "$mu" "$mr" "$pw" "$pu" "$pr" \
        "$(awk -v a="$mw" -v b="$pw" 'BEGIN {printf "%.2f", a / b}')"
done
echo "(medians of $runs alternating runs; ratio = mprof-report wall / profkit wall)"
