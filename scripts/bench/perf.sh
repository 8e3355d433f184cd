#!/usr/bin/env bash
# perf.data benchmark: `profkit convert perf.data` against `perf inject --jit` + `perf report --stdio` (the way perf
# users name JIT frames) and against `samply import --save-only`, on a recording of the TypeScript compiler
# (npm typescript 5) compiling a generated 120-file project under `node --perf-prof`, recorded with
# `perf record -k 1 -g`. The contenders alternate in a rotating order, ROUNDS times (default 5); medians and
# ratios are printed.
# Memory: profkit's peak RSS on this recording and on one with FACTOR (default 4) times as many samples.
#
# Usage: WORK=/tmp/profkit-bench-perf ROUNDS=5 scripts/bench/perf.sh
# Needs perf (root or perf_event_paranoid <= 1), node + npm (the registry), GNU time; samply is optional
# (`cargo install samply`).
set -euo pipefail
WORK=${WORK:-/tmp/profkit-bench-perf}
ROUNDS=${ROUNDS:-5}
FACTOR=${FACTOR:-4}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROFKIT=${PROFKIT:-$ROOT/target/release/profkit}
[ -x "$PROFKIT" ] || (cd "$ROOT" && cargo build --release -q -p profkit)
mkdir -p "$WORK"
cd "$WORK"

# A project of $1 TypeScript files, each 20 generic classes (type-checking work for tsc).
project() {
  local dir=$1 files=$2
  mkdir -p "$dir"
  echo 'export class Box<T> { constructor(public v: T) {} map<U>(f: (t: T) => U): Box<U> { return new Box(f(this.v)); } }' > "$dir/box.ts"
  echo '{"compilerOptions":{"strict":true,"target":"es2020","outDir":"out","declaration":true},"include":["*.ts"]}' > "$dir/tsconfig.json"
  for ((m = 0; m < files; m++)); do
    {
      echo "import { Box } from './box';"
      for ((i = 0; i < 20; i++)); do
        echo "export interface I${m}_$i<T> { a: T; b: Array<T>; c: Map<string, T>; f(x: T): Box<T>; }"
        echo "export class C${m}_$i<T extends { id: number }> implements I${m}_$i<T> {"
        echo "  a!: T; b: T[] = []; c = new Map<string, T>();"
        echo "  f(x: T): Box<T> { return new Box(x); }"
        echo "  g<U>(u: U, k: keyof T): [U, keyof T] { return [u, k]; }"
        echo "  h(xs: T[]): number { return xs.map(x => x.id).filter(n => n % $((i + 2)) === 0).reduce((p, q) => p + q, 0); }"
        echo "}"
      done
    } > "$dir/m$m.ts"
  done
}

# Records tsc on project $1 into $2.
record() {
  rm -f jit-*.dump
  perf record -q -k 1 -g -o "$2" -- node --perf-prof --interpreted-frames-native-stack \
    node_modules/typescript/bin/tsc -p "$1" > /dev/null
}

if [ ! -f tsc-fp.data ]; then
  [ -d node_modules/typescript ] || npm install --silent --no-audit --no-fund typescript@5 > /dev/null
  [ -f proj/tsconfig.json ] || project proj 120
  record proj tsc-fp.data
fi
if [ ! -f tsc-big.data ]; then
  [ -f proj-big/tsconfig.json ] || project proj-big $((120 * FACTOR))
  mkdir -p big && (cd big && ln -sf ../node_modules . && cp -r ../proj-big . && \
    perf record -q -k 1 -g -o ../tsc-big.data -- node --perf-prof --interpreted-frames-native-stack \
      node_modules/typescript/bin/tsc -p proj-big > /dev/null)
fi

samples() { "$PROFKIT" info --json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(dict(d["kinds"]).get("SAMPLE", d["records"]))' 2>/dev/null || echo "?"; }
echo "recording: tsc-fp.data $(stat -c %s tsc-fp.data) bytes, $(samples tsc-fp.data) samples; jitdump $(ls -1 jit-*.dump | head -n 1) $(stat -c %s "$(ls -1 jit-*.dump | head -n 1)") bytes"

timed() { # label, command... : appends "label wall rss" to times.txt
  local label=$1; shift
  # Each contender starts with the previous one's output written out: perf inject leaves
  # 11,150 files and 13 MB of dirty pages whose writeback otherwise slows whoever runs next.
  sync
  # Wall time from bash's microsecond clock around GNU time (whose %e has 10 ms steps, a
  # twentieth of profkit's run); GNU time gives the peak RSS.
  local start=$EPOCHREALTIME
  /usr/bin/time -f "%M" -o t.txt "$@" > /dev/null 2> "err.$label" || { echo "$label failed: $(tail -n 3 "err.$label")"; return 1; }
  local end=$EPOCHREALTIME
  echo "$label $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.4f", b - a}') $(tail -n 1 t.txt)" >> times.txt
}
INJECT_REPORT='perf inject --jit -i tsc-fp.data -o tsc-fp.jit.data &&
  perf report -i tsc-fp.jit.data --stdio --no-children --sort sym -g none > perf-report.txt 2> /dev/null'
have_samply=0
command -v samply > /dev/null 2>&1 && have_samply=1
rm -f times.txt
# The contenders take turns in an order that rotates each round and runs backwards every
# other round: whoever runs right after perf inject (which rewrites 11,000 files) may meet its
# writeback, and no contender should always be that one.
contenders=(inject folded perfetto firefox)
[ $have_samply = 1 ] && contenders+=(samply)
run() {
  case $1 in
    inject) timed perf_inject+report bash -c "$INJECT_REPORT" ;;
    folded) timed profkit_folded "$PROFKIT" convert -q tsc-fp.data -o out.folded ;;
    perfetto) timed profkit_perfetto "$PROFKIT" convert -q tsc-fp.data -o out.pftrace ;;
    firefox) timed profkit_firefox "$PROFKIT" convert -q tsc-fp.data -o out.fxprof.json.gz ;;
    samply) timed samply_import samply import --save-only -o samply.json.gz tsc-fp.data ;;
  esac
}
n=${#contenders[@]}
for ((r = 0; r < ROUNDS; r++)); do
  for ((i = 0; i < n; i++)); do
    if ((r % 2)); then k=$(((n - 1 - i + r) % n)); else k=$(((i + r) % n)); fi
    run "${contenders[$k]}"
  done
done
timed profkit_folded_big "$PROFKIT" convert -q tsc-big.data -o big.folded
echo "big recording: tsc-big.data $(stat -c %s tsc-big.data) bytes, $(samples tsc-big.data) samples"

python3 - "$have_samply" <<'EOF'
import statistics, sys
runs = {}
for line in open("times.txt"):
    label, wall, rss = line.split()
    runs.setdefault(label, []).append((float(wall), int(rss)))
med = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
rss = {k: max(r for _, r in v) for k, v in runs.items()}
for k in runs:
    print(f"{k:22s} median {med[k]:.3f} s over {len(runs[k])} runs, peak RSS {rss[k] // 1024} MB")
base = med["perf_inject+report"]
for k in ("profkit_folded", "profkit_perfetto", "profkit_firefox"):
    print(f"{k}: {base / med[k]:.1f}x faster than perf inject --jit + perf report")
if sys.argv[1] == "1":
    for k in ("profkit_folded", "profkit_firefox"):
        print(f"{k}: {med['samply_import'] / med[k]:.1f}x faster than samply import --save-only")
EOF
echo "files perf inject wrote: $(ls jitted-*.so 2>/dev/null | wc -l)"
