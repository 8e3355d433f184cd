#!/usr/bin/env bash
# A/B of two profkit builds on the same commands: did a change (a refactor, an optimisation) move
# the time? Each case runs BASE and NEW alternately (the order rotating every round), ROUNDS times
# (default 7), after one untimed warm-up of each; medians of wall time and peak RSS are printed with
# NEW/BASE. Outputs of the two builds are compared byte for byte (a refactor must not change them).
#
# Usage: BASE=/path/old/profkit NEW=/path/new/profkit ROUNDS=7 scripts/bench/ab.sh CASES_FILE
# CASES_FILE: one case per line, `label<TAB>arguments` (the arguments after `profkit`; `{out}` is
# replaced by an output path of the build's own). Lines starting with # are skipped.
# scripts/bench/ab-cases.tsv: the perf.data cases (fixtures and the scale recordings), from the repository's root.
# Needs GNU time (/usr/bin/time).
set -euo pipefail
BASE=${BASE:?BASE=old profkit binary}
NEW=${NEW:?NEW=new profkit binary}
ROUNDS=${ROUNDS:-7}
CASES=${1:?cases file}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# run BUILD LABEL ARGS: one timed run; appends "wall rss" to $WORK/LABEL.BUILD.
run() {
  local build=$1 label=$2 args=$3 bin
  bin=$([ "$build" = base ] && echo "$BASE" || echo "$NEW")
  local out="$WORK/$label.$build.out"
  # shellcheck disable=SC2086
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$bin" ${args//\{out\}/$out} > "$WORK/$label.$build.stdout" 2>/dev/null || true
  tail -n 1 "$WORK/time" >> "$WORK/$label.$build"
}

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg); base=$BASE new=$NEW rounds=$ROUNDS"
printf '%-28s %12s %12s %8s %10s %10s  %s\n' case base_s new_s new/base base_MB new_MB outputs
while IFS=$'\t' read -r label args; do
  [ -z "$label" ] || [ "${label:0:1}" = "#" ] && continue
  run base "$label" "$args"; run new "$label" "$args"
  : > "$WORK/$label.base"; : > "$WORK/$label.new"
  for ((r = 0; r < ROUNDS; r++)); do
    if ((r % 2)); then run new "$label" "$args"; run base "$label" "$args"
    else run base "$label" "$args"; run new "$label" "$args"; fi
  done
  same=identical
  for f in out stdout; do
    if [ -e "$WORK/$label.base.$f" ] && ! cmp -s "$WORK/$label.base.$f" "$WORK/$label.new.$f"; then same=DIFFERENT; fi
  done
  bt=$(cut -d' ' -f1 "$WORK/$label.base" | median); nt=$(cut -d' ' -f1 "$WORK/$label.new" | median)
  bm=$(cut -d' ' -f2 "$WORK/$label.base" | median); nm=$(cut -d' ' -f2 "$WORK/$label.new" | median)
  printf '%-28s %12s %12s %8s %10.1f %10.1f  %s\n' "$label" "$bt" "$nt" \
    "$(awk -v a="$bt" -v b="$nt" 'BEGIN {printf "%.2f", (a > 0) ? b / a : 0}')" \
    "$(awk -v k="$bm" 'BEGIN {print k / 1024}')" "$(awk -v k="$nm" 'BEGIN {print k / 1024}')" "$same"
done < "$CASES"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
