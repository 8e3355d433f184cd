#!/usr/bin/env bash
# XRay basic mode: profkit account / stack / graph / convert vs llvm-xray 14 on a ~200 MB basic-mode trace
# of a real program, cmark-gfm (the CommonMark parser bundled in the cmarkgfm 2025.10.22 sdist on
# PyPI) built with clang-22 and XRay, rendering profkit's own docs repeated to ~28 MB.
# Usage: scripts/bench/xray-basic.sh [ROUNDS]   (default 7; contenders alternate, medians reported)
# Writes under $WORK (default bench-data/xray, git-ignored). Needs pip, clang-22 +
# libclang-rt-22-dev, llvm-xray (14) and a release build of profkit.
set -euo pipefail
ROUNDS=${1:-7}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-$ROOT/bench-data/xray}
PROFKIT=${PROFKIT:-$ROOT/target/release/profkit}
mkdir -p "$WORK"; cd "$WORK"
if [ ! -x cmark-gfm ]; then
  pip download --no-deps --no-binary :all: cmarkgfm==2025.10.22 -q -d .
  tar xzf cmarkgfm-2025.10.22.tar.gz
  C=cmarkgfm-2025.10.22
  clang-22 -O1 -g -fno-inline-functions -fxray-instrument -fxray-instruction-threshold=1 \
    -I$C/generated/unix -I$C/third_party/cmark/src -I$C/third_party/cmark/extensions \
    $C/third_party/cmark/src/*.c $C/third_party/cmark/extensions/*.c -o cmark-gfm 2> /dev/null
fi
if [ ! -f cmark-basic.xray ]; then
  cat "$ROOT"/docs/*.md "$ROOT"/README.md > one.md
  : > input.md
  while [ "$(stat -c %s input.md)" -lt 28000000 ]; do cat one.md >> input.md; done
  XRAY_OPTIONS="patch_premain=true xray_mode=xray-basic verbosity=0 xray_logfile_base=cmark-basic." \
    ./cmark-gfm -e table -e strikethrough -e autolink input.md > /dev/null 2>&1
  mv cmark-basic.cmark-gfm.* cmark-basic.xray
fi
ls -l cmark-basic.xray
python3 - "$PROFKIT" "$ROUNDS" <<'PY'
import os, statistics, subprocess, sys, time
profkit, rounds = sys.argv[1], int(sys.argv[2])
trace, binary = "cmark-basic.xray", "./cmark-gfm"
cases = [
    ("account", ["llvm-xray", "account", "-m", binary, trace],
                [profkit, "account", "--llvm", "-m", binary, trace]),
    ("stack", ["llvm-xray", "stack", "-m", binary, trace],
              [profkit, "stack", "--llvm", "-m", binary, trace]),
    ("graph", ["llvm-xray", "graph", "-m", binary, trace, "-e", "sum", "-v", "count"],
              [profkit, "graph", "-m", binary, trace, "-e", "sum", "-v", "count"]),
]
def run(cmd):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out, _ = p.communicate()
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode})")
    return wall, out
def rss(cmd):
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    return int(r.stderr.strip().splitlines()[-1])
print(f"load: {open('/proc/loadavg').read().split()[:3]}")
for name, llvm, pk in cases:
    tl, tp = [], []
    for _ in range(rounds):
        w, lo = run(llvm); tl.append(w)
        w, po = run(pk); tp.append(w)
    same = sorted(lo.splitlines()) == sorted(po.splitlines())
    ml, mp = statistics.median(tl), statistics.median(tp)
    print(f"{name:8} llvm-xray {ml*1000:7.0f} ms {rss(llvm)//1024:5} MB | profkit {mp*1000:6.0f} ms "
          f"{rss(pk)//1024:4} MB | {ml/mp:5.1f}x | output {'identical' if lo == po else ('same lines' if same else 'DIFFERENT')}")
# convert writes files (the YAML is ~890 MB: through a pipe, reading it would dominate).
files = [
    ("yaml", ["llvm-xray", "convert", "-f", "yaml", "-m", binary, trace, "-o", "out.llvm.yaml"],
             [profkit, "convert", "-q", "-f", "yaml", "-m", binary, trace, "-o", "out.pk.yaml"]),
    ("chrome", ["llvm-xray", "convert", "-f", "trace_event", "-m", binary, trace, "-o", "out.llvm.json"],
               [profkit, "convert", "-q", "-f", "chrome", "-m", binary, trace, "-o", "out.pk.json"]),
]
for name, llvm, pk in files:
    tl, tp = [], []
    for _ in range(rounds):
        subprocess.run(["sync"]); w, _ = run(llvm); tl.append(w)
        subprocess.run(["sync"]); w, _ = run(pk); tp.append(w)
    ml, mp = statistics.median(tl), statistics.median(tp)
    same = subprocess.run(["cmp", "-s", llvm[-1], pk[-1]]).returncode == 0
    print(f"convert -f {name:6} llvm-xray {ml*1000:7.0f} ms {rss(llvm)//1024:5} MB | profkit {mp*1000:6.0f} ms "
          f"{rss(pk)//1024:4} MB | {ml/mp:5.1f}x | output {'identical' if same else 'differs (other format)'}")
    for f in (llvm[-1], pk[-1]):
        os.remove(f)
PY
