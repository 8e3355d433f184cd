#!/usr/bin/env bash
# profkit inject vs perf inject --jit on a real recording (docs/BENCHMARKS.md, "perf inject").
#
#   scripts/bench/inject.sh [RECORDING] [ROUNDS]
#
# RECORDING: a `perf record -k 1` recording of a JIT whose jitdump is at its marker mmap's path
#            (default bench-data/perf/tsc-fp.data); ROUNDS: alternating runs of each (default 5).
# Both tools run on a copy in $WORK (default /tmp/profkit-bench-inject) whose marker path is
# rewritten to a copy of the dump there: perf inject writes its jitted-*.so beside the dump, and
# nothing is written next to the original. Page cache warm (one untimed run each first); the
# jitted-*.so files of the previous perf inject run are removed outside the timing. Prints wall /
# user / sys / max RSS medians, the files each wrote, perf report's time on each output and
# whether the two `perf report --sort sym` outputs are identical. perf runs with its build-id
# cache in $WORK/buildid (emptied before each perf inject run, outside the timing): perf inject
# copies each of its ELFs there (~/.debug by default).
# Environment: PROFKIT (default $CARGO_TARGET_DIR/release/profkit, built here), WORK, SETTLE
# (seconds to wait after deleting the previous run's 11K files, default 10: on a filesystem
# mounted with `discard` the deletions otherwise slow the next run down 2x), KEEP_CACHE=1 (keep
# perf's build-id cache between rounds: a re-run of perf inject on the same file, whose cache
# directories then exist; by default every round starts with an empty cache, a first run).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REC=$(realpath "${1:-$ROOT/bench-data/perf/tsc-fp.data}")
ROUNDS=${2:-5}
WORK=${WORK:-/tmp/profkit-bench-inject}
SETTLE=${SETTLE:-10}
KEEP_CACHE=${KEEP_CACHE:-0}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROFKIT=${PROFKIT:-$TARGET/release/profkit}
if [ -z "${PROFKIT_PREBUILT:-}" ]; then
  (cd "$ROOT" && cargo build --release -q -p profkit)
fi
mkdir -p "$WORK"
cd "$WORK"
PERF="perf --buildid-dir $WORK/buildid"
MARKER=$(perf script -i "$REC" --show-mmap-events 2>/dev/null | grep -m1 -o '/[^ ]*/jit-[0-9]*\.dump' || true)
[ -n "$MARKER" ] || { echo "no jitdump marker in $REC"; exit 1; }
DUMP=$WORK/$(basename "$MARKER")
cp "$MARKER" "$DUMP"
python3 - "$REC" "$WORK/rec.data" "$MARKER" "$DUMP" <<'PY'
import sys
src, dst, old, new = sys.argv[1:5]
b = bytearray(open(src, 'rb').read())
o, n = old.encode(), new.encode()
assert len(n) <= len(o), f"{new} is longer than {old}: set WORK to a shorter directory"
i = b.find(o)
assert i >= 0
b[i:i + len(o)] = n + b'\0' * (len(o) - len(n))
open(dst, 'wb').write(b)
PY
echo "# $(date -u +%FT%TZ) $(git -C "$ROOT" rev-parse --short HEAD) $(perf version) $REC ($(stat -c %s "$REC") bytes) rounds=$ROUNDS keep_cache=$KEEP_CACHE load=$(cut -d' ' -f1-3 /proc/loadavg)"
timed() { # file, command...
  local out=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$out.t" "$@" > /dev/null 2> "$out.err" || { cat "$out.err"; exit 1; }
  tail -n 1 "$out.t" >> "$out"
}
rm -f perf.times pk.times
$PERF inject --jit -i rec.data -o perf.jit.data 2>/dev/null   # warm-up
"$PROFKIT" inject -i rec.data -o pk.data > /dev/null
for _ in $(seq "$ROUNDS"); do
  rm -rf jitted-*.so
  [ "$KEEP_CACHE" = 1 ] || rm -rf "$WORK/buildid"
  sync; sleep "$SETTLE"   # let the deletions (and their discards) finish before timing
  timed perf.times $PERF inject --jit -i rec.data -o perf.jit.data
  timed pk.times "$PROFKIT" inject -i rec.data -o pk.data
done
median() { # column of a times file
  awk -v c="$2" '{print $c}' "$1" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
for t in perf pk; do
  echo "$t: wall $(median $t.times 1) s, user $(median $t.times 2) s, sys $(median $t.times 3) s, max RSS $(median $t.times 4) KB"
done
echo "files: perf inject $(ls | grep -c '^jitted-.*\.so$'), profkit $(ls pk.data-jit | grep -c '\.so$') ($(du -sh pk.data-jit | cut -f1))"
for d in perf.jit.data pk.data; do
  /usr/bin/time -f "%e" -o rep.t $PERF report -i $d --stdio --no-children --sort sym -g none > $d.report 2>/dev/null
  echo "perf report on $d: $(cat rep.t) s"
done
if diff <(grep '%' perf.jit.data.report) <(grep '%' pk.data.report) > /dev/null; then
  echo "perf report --sort sym: identical ($(grep -c '%' pk.data.report) lines)"
else
  echo "perf report --sort sym: DIFFERENT"; diff <(grep '%' perf.jit.data.report) <(grep '%' pk.data.report) | head
fi
