#!/usr/bin/env bash
# Exporter benchmark: `profkit convert` to Chrome JSON and Perfetto vs `llvm-xray convert -f trace_event`
# on the XRay benchmark traces (the ~400 MB single-thread and 4-thread FDR traces of scripts/bench/xray.sh).
# Usage: WORK=/tmp/profkit-bench-xray scripts/bench/export.sh
# Generates the traces with scripts/bench/xray.sh first when $WORK has none. Needs llvm-xray 14 and GNU time.
set -euo pipefail
WORK=${WORK:-/tmp/profkit-bench-xray}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROFKIT=${PROFKIT:-$ROOT/target/release/profkit}
if ! ls "$WORK"/xray-log.big1.* >/dev/null 2>&1; then
  echo "no traces in $WORK: generating them with scripts/bench/xray.sh (this also runs its own benchmark)"
  WORK=$WORK PROFKIT=$PROFKIT "$ROOT/scripts/bench/xray.sh"
fi
cd "$WORK"
T1=$(ls xray-log.big1.* | head -n 1); T4=$(ls xray-log.big4.* | head -n 1)
run() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o time.txt "$@" > /dev/null 2> err.$label || echo "($label exited $?: $(tail -n 2 err.$label))"
  read -r wall rss < <(tail -n 1 time.txt)
  echo "$label wall=${wall}s rss=${rss}KB"
}
for T in "$T1" "$T4"; do
  echo "== $T ($(stat -c %s "$T") bytes)"
  run llvm_trace_event llvm-xray convert -m ./big -f trace_event -o llvm.json "$T"
  echo "   llvm.json $(stat -c %s llvm.json 2>/dev/null || echo 0) bytes"
  rm -f llvm.json
  run pk_chrome "$PROFKIT" convert -q -m ./big -o pk.json "$T"
  echo "   pk.json $(stat -c %s pk.json) bytes"
  rm -f pk.json
  run pk_perfetto "$PROFKIT" convert -q -m ./big -o pk.pftrace "$T"
  echo "   pk.pftrace $(stat -c %s pk.pftrace) bytes"
  rm -f pk.pftrace
done
