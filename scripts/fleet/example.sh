#!/usr/bin/env bash
# The worked example of docs/fleet.md: N recordings (default 100) converted to Parquet in a
# hive-style tree, one directory per host, day and run:
#
#   OUT/host=host3/date=2026-11-02/run=r042/{samples,stacks,frames,functions,mappings,...}.parquet
#
# The "recordings" are the repository's sampled fixtures converted again and again (perf.data
# of node named through its jitdump, perf.data of node named through its perf map, a Mono
# sample profile), N conversions spread over 5 hosts and 3 days, run in parallel: cheap (about
# 0.3 s of CPU each), and what a fleet job does per host.
#
# Usage: scripts/fleet/example.sh [OUT] [N]      (OUT default ./fleet, N default 100)
#   PROFKIT=path/to/profkit (default: `profkit` on PATH, else target/release or target/debug)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-fleet}"
n="${2:-100}"
profkit="${PROFKIT:-}"
if [ -z "$profkit" ]; then
    profkit="$(command -v profkit || true)"
    for p in "$root/target/release/profkit" "$root/target/debug/profkit"; do
        [ -n "$profkit" ] || { [ -x "$p" ] && profkit="$p"; } || true
    done
fi
[ -n "$profkit" ] || { echo "example.sh: no profkit (set PROFKIT)" >&2; exit 2; }
fixtures="$root/tests/fixtures"

# The inputs, each in a directory of its own with the JIT files beside it.
inputs="$(mktemp -d)"
trap 'rm -rf "$inputs"' EXIT
mkdir -p "$inputs/fp" "$inputs/map" "$inputs/mono"
cp "$fixtures/perf/node-fp.data" "$inputs/fp/node-fp.data"
gzip -dc "$fixtures/perf/node-fp.jit-30519.dump.gz" >"$inputs/fp/jit-30519.dump"
cp "$fixtures/perf/node-basic-prof.data" "$fixtures/perf/node-basic-prof.perf-30665.map" "$inputs/map/"
cp "$fixtures/mlpd/cpu_sample.mlpd" "$inputs/mono/"
set -- "$inputs/fp/node-fp.data" "$inputs/map/node-basic-prof.data" "$inputs/mono/cpu_sample.mlpd"

rm -rf "$out"
i=0
while [ "$i" -lt "$n" ]; do
    host="host$((i % 5))"
    date="2026-11-0$((i / 5 % 3 + 1))"
    run="$(printf 'r%03d' "$i")"
    case $((i % 3)) in
        0) input="$1" ;;
        1) input="$2" ;;
        *) input="$3" ;;
    esac
    printf '%s\t%s\n' "$input" "$out/host=$host/date=$date/run=$run"
    i=$((i + 1))
done | xargs -P "$(nproc)" -L 1 sh -c '
    mkdir -p "$2" && "$0" convert "$1" -q -o "$2/spans.parquet" 2>/dev/null
' "$profkit"
echo "example.sh: $n recordings under $out/ ($(find "$out" -name samples.parquet | wc -l) sample tables)"
