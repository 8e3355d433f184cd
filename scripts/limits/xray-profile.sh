#!/usr/bin/env bash
# Address space of every command on XRay profiling-mode files that name millions of distinct
# functions (issue #23, B5: `ulimit -v 2000000` never trips on inputs under 50 MB). Makes the
# files with xray-profile-gen.py (shapes `deep`: one path N functions deep; `wide`: N paths
# `main;f_i`), runs each command under `ulimit -v 2000000` with /usr/bin/time -v, and prints per
# command: exit code, peak RSS (MB), elapsed seconds, and the first line of stderr when it
# failed. Record the numbers in docs/BENCHMARKS.md.
#
# Usage: scripts/limits/xray-profile.sh [PROFKIT] [SIZES_MB] [SHAPES]
#   defaults: target/release/profkit, "12 25 50", "deep wide"
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-$root/target/release/profkit}"
bin="$(realpath "$bin")"
sizes="${2:-12 25 50}"
shapes="${3:-deep wide}"
limit="${ULIMIT_V:-2000000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
run() {
    local label="$1"
    shift
    (ulimit -v "$limit" && exec /usr/bin/time -v -o time.txt "$bin" "$@") >/dev/null 2>err.txt
    local code=$?
    local rss secs
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' time.txt)
    secs=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' time.txt)
    local msg=""
    [ "$code" -ne 0 ] && [ "$code" -ne 1 ] && msg="  $(grep -v '^Command exited' err.txt | head -1)"
    printf '%-28s exit %-3s rss %6s MB  %8s s%s\n' "$label" "$code" "$(( ${rss:-0} / 1024 ))" "$secs" "$msg"
    rm -f out.* .out.*
}
for shape in $shapes; do
    for mb in $sizes; do
        f="$shape-$mb.xprof"
        python3 "$root/scripts/limits/xray-profile-gen.py" "$shape" "$mb" "$f"
        echo "== $f ($(stat -c %s "$f") bytes), ulimit -v $limit"
        run info info "$f"
        run validate validate "$f"
        for ext in folded svg fxprof.json json pftrace pb.gz speedscope.json parquet; do
            run "convert .$ext" convert "$f" -o "out.$ext"
        done
        run account account "$f"
        run stack stack "$f"
        run report report "$f"
        run graph graph "$f"
        run "diff A A" diff "$f" "$f"
        rm -f "$f"
    done
done
