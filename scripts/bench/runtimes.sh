#!/usr/bin/env bash
# Per-runtime benchmark: `profkit convert REC -o REC.folded` against `perf inject --jit` + `perf report --stdio`
# (how perf users name JIT frames) on live recordings of each JIT runtime of the CI matrix: node (--perf-prof),
# OpenJDK (perf map at exit), Erlang/OTP BeamAsm (+JPperf dump), PHP opcache JIT (jitdump and perf map), QEMU user
# mode (-jitdump). Each recording is `perf record -k 1 -g -F 999` of the workload in scripts/fixtures/<runtime>/
# (a few seconds). The two contenders alternate, ROUNDS times (default 5); medians and the ratio are printed.
#
# Usage: WORK=/tmp/profkit-bench-runtimes ROUNDS=5 scripts/bench/runtimes.sh
# Needs perf (root or perf_event_paranoid <= 1) and the runtimes (.ci/run installs them).
set -euo pipefail
WORK=${WORK:-/tmp/profkit-bench-runtimes}
ROUNDS=${ROUNDS:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROFKIT=${PROFKIT:-$ROOT/target/release/profkit}
[ -x "$PROFKIT" ] || (cd "$ROOT" && cargo build --release -q -p profkit)
FIX=$ROOT/scripts/fixtures
mkdir -p "$WORK"
cd "$WORK"
# perf inject writes one jitted-<pid>-<n>.so per function beside the dump (/tmp for Erlang's): what this run
# adds there is removed after each round.
touch started

PHP_JIT="-d opcache.file_update_protection=0 -d opcache.enable_cli=1 -d opcache.jit=tracing -d opcache.jit_buffer_size=32M"
# name | directory setup | command (run in the directory)
record() {
  local name=$1 cmd=$2
  [ -f "$name/rec.data" ] && return 0
  rm -rf "$name" && mkdir -p "$name"
  cp "$FIX"/node/busy.js "$FIX"/java/Busy.java "$FIX"/erlang/busy.erl "$FIX"/php/busy.php "$FIX"/qemu/busy.c "$name"/
  (cd "$name" && eval "$3" && perf record -q -k 1 -g -F 999 -o rec.data -- $cmd > /dev/null 2>&1)
}
record node "node --perf-prof --interpreted-frames-native-stack busy.js 4000" true
record openjdk "java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -XX:+PreserveFramePointer -cp . Busy 5000" "javac Busy.java"
record erlang "erl -noshell +JPperf dump -s busy main 8000" "erlc busy.erl"
record php-dump "php $PHP_JIT -d opcache.jit_debug=0x20 busy.php 3000" true
record php-map "php $PHP_JIT -d opcache.jit_debug=0x10 busy.php 3000" true
record qemu "qemu-x86_64 -jitdump ./busy 3000" "gcc -O1 -static -o busy busy.c"

median() { sort -n | awk '{a[NR]=$1} END {m=(NR+1)/2; if (NR%2) print a[m]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }
timed() { # file label command...
  local file=$1 label=$2; shift 2
  sync
  local start=$EPOCHREALTIME
  "$@" > /dev/null 2>&1 || { echo "$label failed" >&2; return 1; }
  local end=$EPOCHREALTIME
  awk -v a="$start" -v b="$end" -v l="$label" 'BEGIN {printf "%s %.4f\n", l, b - a}' >> "$file"
}
perf_side() { perf inject --jit -i rec.data -o rec.jit.data && perf report -i rec.jit.data --stdio --no-children --sort sym -g none > perf-report.txt; }
ours() { "$PROFKIT" convert rec.data -o rec.folded; }

printf '%-10s %8s %10s %10s %8s\n' runtime samples perf_s profkit_s ratio
for name in node openjdk erlang php-dump php-map qemu; do
  [ -f "$name/rec.data" ] || { echo "$name: no recording"; continue; }
  (
    cd "$name"
    rm -f times.txt
    for ((r = 0; r < ROUNDS; r++)); do
      if ((r % 2)); then timed times.txt profkit ours; timed times.txt perf perf_side
      else timed times.txt perf perf_side; timed times.txt profkit ours; fi
      rm -f rec.jit.data jitted-*.so
      find /tmp -maxdepth 1 -name 'jitted-*.so' -newer ../started -delete
    done
    p=$(awk '$1 == "perf" {print $2}' times.txt | median)
    o=$(awk '$1 == "profkit" {print $2}' times.txt | median)
    n=$("$PROFKIT" info --json rec.data | python3 -c 'import json,sys; print(json.load(sys.stdin)["kinds"].get("SAMPLE", "?"))')
    printf '%-10s %8s %10s %10s %7.1fx\n' "$name" "$n" "$p" "$o" "$(awk -v p="$p" -v o="$o" 'BEGIN {print p / o}')"
  )
done
