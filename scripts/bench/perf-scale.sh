#!/usr/bin/env bash
# perf.data at scale (issue #27): node recordings of ~25 MB (one process) and ~90 MB (two processes) — and ~340 MB
# (four processes) with BIG=1, and with JIT=1 a ~14 MB one of ~7,000 JIT functions (work-jit.js) — made with `perf record -k 1 -g -F $FREQ` of a CPU-bound node workload under
# `node --perf-prof --interpreted-frames-native-stack`; then profkit convert (folded, Perfetto, Firefox) against
# `samply import --save-only` and `perf inject --jit` + `perf report --stdio`, alternating in a rotating order,
# ROUNDS times. Prints per contender the median wall time, the median CPU time (user + system), samples/s, peak
# RSS and the peaks of its heap (RssAnon) and of its mapped file pages (RssFile), sampled from /proc/PID/status every
# 5 ms (scripts/bench/rss.py). On a shared machine the CPU time is the steadier measure; the load is logged per run.
#
# Usage: WORK=/tmp/profkit-bench-scale ROUNDS=3 [BIG=1] [JIT=1] [PERF=0] scripts/bench/perf-scale.sh
# PERF=0 leaves perf inject + report out (5–10 s a round on the ~90 MB recording). NEW=/path/to/profkit adds a
# second build's three conversions as contenders new_folded, new_perfetto, new_firefox (an A/B run in the same
# rounds; its outputs are compared with the first build's with cmp after every round).
set -euo pipefail
WORK=${WORK:-/tmp/profkit-bench-scale}
ROUNDS=${ROUNDS:-3}
FREQ=${FREQ:-10000}
PERF=${PERF:-1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROFKIT=${PROFKIT:-$ROOT/target/release/profkit}
RSS="python3 $ROOT/scripts/bench/rss.py"
[ -x "$PROFKIT" ] || (cd "$ROOT" && cargo build --release -q -p profkit)
mkdir -p "$WORK"
cd "$WORK"

cat > work.js <<'JS'
// CPU-bound: recursion, strings, Maps, arrays, closures; runs for argv[2] seconds of CPU time (so that the
// recording's size does not depend on the machine's load).
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const end = cpu() + 1000 * Number(process.argv[2] || 10);
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function strings(i) { let s = ''; for (let k = 0; k < 200; k++) s += String.fromCharCode(97 + ((i + k) % 26)); return s.split('').reverse().join('').length; }
function maps(i) { const m = new Map(); for (let k = 0; k < 500; k++) m.set('k' + ((k * i) % 97), k); let t = 0; for (const v of m.values()) t += v; return t; }
function arrays(i) { return Array.from({ length: 300 }, (_, k) => k ^ i).sort((a, b) => a - b).filter(x => x & 1).reduce((a, b) => a + b, 0); }
let acc = 0, i = 0;
while (cpu() < end) { acc += fib(18) + strings(i) + maps(i) + arrays(i); i++; }
console.log(acc);
JS

cat > work-jit.js <<'JS'
// CPU-bound over many distinct functions: each made by `new Function` from its own source, so V8 compiles
// each on its own (thousands of code entries in the jitdump, one ELF file each for perf inject --jit).
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const end = cpu() + 1000 * Number(process.argv[2] || 10);
let acc = 0, i = 0;
while (cpu() < end) {
  const f = new Function('a', `let s = ${i}; for (let j = 0; j < 3000; j++) s = (s + a * j + ${i % 97}) % 1000003; return s;`);
  for (let k = 0; k < 3; k++) acc += f(k);
  i++;
}
console.log(acc, i);
JS

# record NAME PROCESSES SECONDS [SCRIPT]: node x PROCESSES (SECONDS of CPU each) under one perf record.
record() {
  local name=$1 procs=$2 secs=$3 script=${4:-work.js}
  [ -f "$name.data" ] && return
  mkdir -p "$name" && rm -f "$name"/jit-*.dump "$name"/jitted-*.so
  (cd "$name" && perf record -q -k 1 -g -F "$FREQ" -o "../$name.data" -- bash -c "
      for ((p = 0; p < $procs; p++)); do node --perf-prof --interpreted-frames-native-stack ../$script $secs > /dev/null & done; wait")
}
record scale25 1 "${SECS25:-10}"
record scale90 2 "${SECS90:-18}"
[ "${BIG:-0}" = 1 ] && record scale340 4 "${SECS340:-34}"
# JIT=1: a recording of ~7,000 JIT functions (perf inject's cost grows with them, not with samples).
[ "${JIT:-0}" = 1 ] && record jit14 1 "${SECSJIT:-8}" work-jit.js

samples() { "$PROFKIT" info --json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(dict(d["kinds"]).get("SAMPLE", d["records"]))'; }
rm -f times.txt
contenders=(folded perfetto firefox samply)
NEW=${NEW:-}
[ -n "$NEW" ] && contenders+=(new_folded new_perfetto new_firefox)
[ "$PERF" = 1 ] && contenders+=(inject)
run() { # recording contender
  local d=$1 c=$2
  sync
  case $c in
    inject) $RSS "$d $c" times.txt bash -c "perf inject --jit -i $d.data -o $d.jit.data &&
              perf report -i $d.jit.data --stdio --no-children --sort sym -g none > $d.perf-report.txt 2> /dev/null" ;;
    folded) $RSS "$d $c" times.txt "$PROFKIT" convert -q "$d.data" -o "$d.folded" ;;
    perfetto) $RSS "$d $c" times.txt "$PROFKIT" convert -q "$d.data" -o "$d.pftrace" ;;
    firefox) $RSS "$d $c" times.txt "$PROFKIT" convert -q "$d.data" -o "$d.fxprof.json.gz" ;;
    new_folded) $RSS "$d $c" times.txt "$NEW" convert -q "$d.data" -o "$d.new.folded" ;;
    new_perfetto) $RSS "$d $c" times.txt "$NEW" convert -q "$d.data" -o "$d.new.pftrace" ;;
    new_firefox) $RSS "$d $c" times.txt "$NEW" convert -q "$d.data" -o "$d.new.fxprof.json.gz" ;;
    samply) $RSS "$d $c" times.txt samply import --save-only -o "$d.samply.json.gz" "$d.data" ;;
  esac
}
recs=(scale25 scale90)
[ "${BIG:-0}" = 1 ] && recs+=(scale340)
[ "${JIT:-0}" = 1 ] && recs+=(jit14)
: > samples.txt
for d in "${recs[@]}"; do
  echo "$d $(stat -c %s "$d.data") $(samples "$d.data")" >> samples.txt
done
n=${#contenders[@]}
for ((r = 0; r < ROUNDS; r++)); do
  for d in "${recs[@]}"; do
    for ((i = 0; i < n; i++)); do
      if ((r % 2)); then k=$(((n - 1 - i + r) % n)); else k=$(((i + r) % n)); fi
      run "$d" "${contenders[$k]}"
    done
    if [ -n "$NEW" ]; then
      cmp "$d.folded" "$d.new.folded" && cmp "$d.pftrace" "$d.new.pftrace" &&
        cmp <(gzip -dc "$d.fxprof.json.gz") <(gzip -dc "$d.new.fxprof.json.gz") || { echo "$d: outputs differ"; exit 1; }
    fi
  done
done

python3 - <<'PY'
import statistics
size, samples = {}, {}
for line in open("samples.txt"):
    d, b, s = line.split()
    size[d], samples[d] = int(b), int(s)
runs = {}
for line in open("times.txt"):
    d, c, wall, rss, anon, fil, load, cpu = line.split()
    runs.setdefault(d, {}).setdefault(c, []).append((float(wall), int(rss), int(anon), int(fil), float(load), float(cpu)))
for d in runs:
    print(f"\n{d}.data: {size[d] / 1e6:.1f} MB, {samples[d]} samples")
    print("| contender | median wall s | runs | median CPU s | M samples/s | peak RSS MB | peak RssAnon MB | peak RssFile MB | vs samply | vs perf | vs first build | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    med = {c: statistics.median(w for w, *_ in v) for c, v in runs[d].items()}
    for c, v in runs[d].items():
        vs = lambda o: f"{med[o] / med[c]:.2f}x" if o in med and o != c else ""
        loads = "–".join(f"{x:.1f}" for x in (min(r[4] for r in v), max(r[4] for r in v)))
        print(f"| {c} | {med[c]:.3f} | {len(v)} ({', '.join(f'{w:.2f}' for w, *_ in sorted(v))}) | {statistics.median(r[5] for r in v):.3f} | {samples[d] / med[c] / 1e6:.2f} | "
              f"{max(r[1] for r in v) / 1024:.0f} | {max(r[2] for r in v) / 1024:.0f} | {max(r[3] for r in v) / 1024:.0f} | "
              f"{vs('samply')} | {vs('inject')} | {vs(c[4:]) if c.startswith('new_') else ''} | {loads} |")
PY
