#!/usr/bin/env bash
# A fuzzing campaign: every cargo-fuzz target in turn, on one core, each for SECONDS (default
# 60), starting from its corpus in fuzz/corpus/<target> (git-ignored), which is seeded from the
# real fixtures (tests/fixtures) and fuzz/seeds the first time. libFuzzer limits: 10 s per
# input, 512 MB RSS (RSS_MB overrides; a blow-up of time or memory is a finding, saved in
# fuzz/artifacts/<target>: the zstd and binary-spelling bombs of issue #23 went past it).
# Prints one line per target: executions, coverage, corpus size, findings; add them to the
# campaign table of fuzz/README.md.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (needs cargo-fuzz; nightly or RUSTC_BOOTSTRAP)
set -euo pipefail
secs="${1:-60}"
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/fuzz"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^profkit-fuzz$')
fi
fx="$root/tests/fixtures"
# Seeds per target (files of at most 1 MiB).
seeds() {
    case "$1" in
        jitdump_read|jitdump_roundtrip) echo "$fx"/jitdump/*.dump "$fx"/jitdump/*.map seeds/jitdump/* ;;
        xray_read|xray_analyses) echo "$fx"/xray/*.xray ;;
        xray_yaml) echo "$root"/crates/cli/tests/golden/*yaml*.txt ;;
        xray_profile) echo "$fx"/xray/*.xprof seeds/xray_profile/* ;;
        mlpd_read) echo "$fx"/mlpd/*.mlpd "$fx"/mlpd/synthetic/*.mlpd ;;
        perf_read|perf_feed) echo "$fx"/perf/*.data ;;
        # Whole recordings: the mutator edits their structure (made_seeds adds the gzip ones).
        perf_mutate) echo "$fx"/perf/*.data ;;
        native_binary) echo "$fx"/native/small-pie "$fx"/xray/libdso.so "$fx"/xray/sled-v1-pie ;;
        instr_map) echo "$fx"/xray/demo "$fx"/xray/nodebug "$fx"/xray/libdso.so "$fx"/xray/dso-main "$fx"/xray/sled-v1-pie ;;
        structured) ;;
        kallsyms) echo "$fx"/native/*kallsyms* ;;
        spool_staging) echo "$fx"/perf/*.gz "$fx"/jitdump/*.gz ;;
        # Made by made_seeds below (the targets read a header byte or a cut point first).
        inject|diff|perf_feed_jit) ;;
        convert_all) echo "$fx"/xray/*.xray "$fx"/xray/*.xprof "$fx"/jitdump/*.dump "$fx"/jitdump/*.gz \
            "$fx"/mlpd/synthetic/*.mlpd "$fx"/mlpd/hello_*.mlpd "$fx"/perf/*.data seeds/jitdump/* ;;
    esac
}
# Seeds of the targets whose input starts with a mode byte or a cut point.
made_seeds() {
    local t="$1" d="corpus/$1"
    case "$t" in
        inject)
            { printf '\x01'; cat "$fx/perf/node-fp.data"; } >"$d/recording"
            { printf '\x00'; head -c 400000 < <(zcat "$fx/perf/node-fp.jit-30519.dump.gz"); } >"$d/dump" ;;
        diff)
            for pair in "xray/demo-basic.xray xray/demo-fdr.xray" "perf/node-fp.data perf/node-pipe.data"; do
                set -- $pair
                local n; n=$(stat -c %s "$fx/$1")
                [ "$n" -lt 65536 ] || continue
                { printf "\\x$(printf %02x $((n >> 8)))\\x$(printf %02x $((n & 255)))"; cat "$fx/$1" "$fx/$2"; } \
                    >"$d/$(basename "$1")-$(basename "$2")"
            done ;;
        perf_mutate)
            for g in "$fx"/perf/*.data.gz; do zcat "$g" >"$d/$(basename "$g" .gz)"; done ;;
        perf_feed_jit)
            local n; n=$(stat -c %s "$fx/perf/node-fp.data")
            { python3 -c "import sys,struct; sys.stdout.buffer.write(struct.pack('<I', $n))";
              cat "$fx/perf/node-fp.data"; head -c 400000 < <(zcat "$fx/perf/node-fp.jit-30519.dump.gz"); } >"$d/node-fp" ;;
    esac
}

max_len() {
    case "$1" in
        instr_map|native_binary|perf_read|perf_feed|inject|perf_feed_jit|perf_mutate) echo 1048576 ;;
        # every writer per input: small inputs run ~10x more executions
        convert_all|structured) echo 8192 ;;
        *) echo 65536 ;;
    esac
}
# Seconds an input may take: a perf_mutate input may hold COMPRESSED records inflating to
# profkit-perf's bound of 64 MiB per sort window, which every entry point inflates again
# (~4 s under the fuzzer's instrumentation on a loaded machine), or 50,000 copies of a sample
# (33.6 s through every entry point under ASan alone; each CLI command < 1 s in release).
input_timeout() {
    case "$1" in
        perf_mutate) echo 60 ;;
        *) echo 10 ;;
    esac
}
export RUSTC_BOOTSTRAP=1
# LeakSanitizer also runs when libFuzzer exits (-detect_leaks=0 below only stops the per-input
# check): threads profkit leaves to free memory in the background (perf.data's walk state, a
# finished writer) are still holding it then, and the report is saved as an empty "crash".
# quarantine_size_mb=64: ASan keeps freed memory (256 MB by default) in its RSS, which with a
# corpus of whole recordings (perf_mutate: ~200 inputs of up to 1 MB held by libFuzzer) went over
# the RSS limit with ~140 MB live (2026-11-29: an "out-of-memory" whose input runs in 1.6 s alone).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:quarantine_size_mb=64"
cargo fuzz build -O "${targets[@]/#/}" >/dev/null 2>&1 || cargo fuzz build -O
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    if [ -z "$(ls -A "corpus/$t")" ]; then
        for f in $(seeds "$t"); do
            [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 1048576 ] && cp "$f" "corpus/$t/" || true
        done
        made_seeds "$t"
    fi
    before=$(ls "artifacts/$t" | wc -l)
    log="artifacts/$t.log"
    # -detect_leaks=0: LeakSanitizer reports the thread-local destructor list of rayon's worker
    # threads (32 bytes from __cxa_thread_atexit_impl) as a leak and stops the run.
    cargo fuzz run -O "$t" "corpus/$t" -- -max_total_time="$secs" -timeout="$(input_timeout "$t")" -rss_limit_mb="${RSS_MB:-512}" -detect_leaks=0 -artifact_prefix="artifacts/$t/" \
        -max_len="$(max_len "$t")" -print_final_stats=1 >"$log" 2>&1 || true
    after=$(ls "artifacts/$t" | wc -l)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    echo "$t: ${execs:-?} executions in ${secs} s, cov ${cov:-?}, ft ${ft:-?}, corpus $(ls "corpus/$t" | wc -l), findings $((after - before)) (log: fuzz/$log)"
done
