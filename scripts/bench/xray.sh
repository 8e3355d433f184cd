#!/usr/bin/env bash
# XRay benchmark: profkit account / convert vs llvm-xray 14 on traces of a real clang-14 program.
# Usage: scripts/bench/xray.sh [ITERS]   (default 12400000 ≈ 379 MiB single-thread FDR trace)
# CONVERT=0 skips the YAML conversions (2 x 6.8 GB written, minutes of llvm-xray).
# Traces are generated under $WORK (default /tmp/profkit-bench-xray) and never committed.
# Needs clang++-14 (apt-get install -y clang-14), llvm-xray 14 and GNU time (/usr/bin/time).
set -euo pipefail
ITERS=${1:-12400000}
WORK=${WORK:-/tmp/profkit-bench-xray}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROFKIT=${PROFKIT:-$ROOT/target/release/profkit}
mkdir -p "$WORK"; cd "$WORK"
cat > big.cc <<'CC'
#include <pthread.h>
#include <cstdlib>
#include <cstdio>
#include "xray/xray_interface.h"
#include "xray/xray_log_interface.h"
[[clang::xray_always_instrument]] __attribute__((noinline)) int tiny(int x) { asm volatile(""); return x + 1; }
[[clang::xray_always_instrument]] __attribute__((noinline)) int small_fn(int x) { return tiny(x) * 2; }
[[clang::xray_always_instrument]] __attribute__((noinline)) int rec(int d) { return d == 0 ? 0 : rec(d - 1) + 1; }
static long iters;
[[clang::xray_always_instrument]] __attribute__((noinline)) void *worker(void *) {
  long s = 0;
  for (long i = 0; i < iters; i++) { s += small_fn((int)i); if ((i & 1023) == 0) s += rec(8); }
  return (void *)s;
}
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1; iters = argc > 2 ? atol(argv[2]) : 1000;
  const char *o = getenv("BIG_FDR_OPTS");
  if (o) { __xray_log_init_mode("xray-fdr", o); __xray_patch(); }
  pthread_t t[64];
  for (int i = 0; i < n; i++) pthread_create(&t[i], nullptr, worker, nullptr);
  for (int i = 0; i < n; i++) pthread_join(t[i], nullptr);
  if (o) { __xray_unpatch(); __xray_log_finalize(); __xray_log_flushLog(); }
  return 0;
}
CC
[ -x big ] || clang++-14 -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -pthread big.cc -o big
rm -f xray-log.big1.* xray-log.big4.*
# Buffers large enough that nothing is dropped (see shared/notes/xray.md §5).
BUF1=$(( (ITERS * 32 / 12) + 1048576 ))
XRAY_OPTIONS="xray_mode=xray-fdr xray_logfile_base=xray-log.big1." \
  BIG_FDR_OPTS="func_duration_threshold_us=0:buffer_size=$BUF1:buffer_max=16" ./big 1 "$ITERS" 2>/dev/null
XRAY_OPTIONS="xray_mode=xray-fdr xray_logfile_base=xray-log.big4." \
  BIG_FDR_OPTS="func_duration_threshold_us=0:buffer_size=1048576:buffer_max=$(( ITERS / 8000 + 64 ))" ./big 4 $(( ITERS / 4 )) 2>/dev/null
T1=$(ls xray-log.big1.*); T4=$(ls xray-log.big4.*)
ls -l "$T1" "$T4"
run() { # label, command...
  local label=$1; shift
  # Start every timed command with no dirty page-cache backlog from the previous one (llvm's
  # 6.9 GB YAML would otherwise throttle the next writer), and log how busy the machine is.
  sync
  echo "$label start: load $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "%e %M" -o time.txt "$@" > out.$label 2> err.$label || echo "($label exited $?)"
  read -r wall rss < <(tail -n 1 time.txt)
  echo "$label wall=${wall}s rss=${rss}KB"
}
for T in "$T1" "$T4"; do
  echo "== $T ($(stat -c %s "$T") bytes)"
  run llvm_account llvm-xray account -m ./big "$T"
  run pk_account "$PROFKIT" account --llvm -m ./big "$T"
  if cmp -s out.llvm_account out.pk_account; then echo "account output: identical"; else echo "account output: DIFFERENT"; diff out.llvm_account out.pk_account | head -20 || true; fi
  [ "${CONVERT:-1}" = 0 ] && continue
  run llvm_yaml llvm-xray convert -m ./big -f yaml -o llvm.yaml "$T"
  run pk_yaml "$PROFKIT" convert -m ./big -o pk.yaml "$T"
  if cmp -s llvm.yaml pk.yaml; then echo "yaml output: identical"; else echo "yaml output: DIFFERENT (sizes $(stat -c %s llvm.yaml) $(stat -c %s pk.yaml))"; fi
  rm -f llvm.yaml pk.yaml
done
