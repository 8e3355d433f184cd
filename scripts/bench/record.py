#!/usr/bin/env python3
"""profkit record against perf record and samply record, side by side in one run.

For each round (contenders alternate, the order rotating each round) the same node workload
runs under each recorder at the same rate; the workload reports its own work time and the
wall clock when it ended. Reported, medians over the rounds:

  * overhead: the workload's own time under each recorder, and profkit's work rate as a
    ratio of perf's (>= 0.95 is the target);
  * samples: each recorder's sample count (profkit >= 0.9x perf's), and lost samples;
  * after exit: the time from the workload's end to the output written — profkit record -o
    (its convert of the recording to a Firefox profile) against samply record --save-only.

samply refuses to run at kernel.perf_event_paranoid 2 even as root: this script sets 1 for
its run and restores the value. perf and profkit run as root need no change.

usage: python3 scripts/bench/record.py [--rounds 5] [--seconds 10] [--freq 999]
"""
import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFKIT = os.path.join(ROOT, "target/release/profkit")

# perf and samply runs get the JIT flags profkit record sets for node by itself
NODE_FLAGS = ["--perf-prof", "--perf-prof-unwinding-info", "--interpreted-frames-native-stack"]

WORKLOAD = r"""
'use strict';
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function work(n) { let s = 0; for (let i = 0; i < n; i++) { s = (s + i * i) % 1000003; } return s; }
const rounds = +process.argv[2];
const t0 = process.hrtime.bigint();
let acc = 0;
for (let i = 0; i < rounds; i++) { acc += fib(24) + work(200000); }
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
console.log(JSON.stringify({ work_ms: ms, end_wall_ms: Date.now(), acc }));
"""


def run_workload(cmd, cwd):
    """Runs cmd; returns (workload's report, wall time when the recorder finished, stderr)."""
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    done = time.time() * 1000
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    report = None
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
    if report is None:
        sys.exit(f"no workload report from {' '.join(cmd)}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return report, done, p.stderr


def perf_samples(perf_data):
    out = subprocess.run(["perf", "report", "-i", perf_data, "--stats"], capture_output=True, text=True).stdout
    samples = lost = 0
    for line in out.splitlines():
        m = re.match(r"\s*SAMPLE events:\s+(\d+)", line)
        if m:
            samples = int(m.group(1))
        m = re.match(r"\s*LOST(_SAMPLES)? events:\s+(\d+)", line)
        if m:
            lost += int(m.group(2))
    return samples, lost


def samply_samples(path):
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        prof = json.load(f)
    n = 0
    for t in prof.get("threads", []):
        s = t.get("samples", {})
        n += s.get("length", len(s.get("stack", [])))
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--freq", type=int, default=999)
    args = ap.parse_args()
    for tool in ("node", "perf", "samply"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (samply: cargo install samply)")
    work = tempfile.mkdtemp(prefix="profkit-bench-record-")
    script = os.path.join(work, "work.js")
    with open(script, "w") as f:
        f.write(WORKLOAD)
    # calibrate the rounds to about --seconds of work, unrecorded
    probe, _, _ = run_workload(["node", script, "20"], work)
    rounds = max(20, int(20 * args.seconds * 1000 / max(probe["work_ms"], 1)))
    paranoid_path = "/proc/sys/kernel/perf_event_paranoid"
    paranoid = open(paranoid_path).read().strip()
    results = {k: {"work_ms": [], "samples": [], "lost": [], "after_exit_ms": []} for k in ("profkit", "perf", "samply")}
    plain = []

    def profkit_run(i):
        d = os.path.join(work, f"rec{i}")
        out = os.path.join(work, f"profkit{i}.fxprof.json.gz")
        rep, done, _ = run_workload([PROFKIT, "record", "-q", "-F", str(args.freq), "-d", d, "-o", out, "--", "node", script, str(rounds)], work)
        m = json.load(open(os.path.join(d, "manifest.json")))
        r = results["profkit"]
        r["work_ms"].append(rep["work_ms"])
        r["samples"].append(m["samples"])
        r["lost"].append(m["lost"])
        r["after_exit_ms"].append(done - rep["end_wall_ms"])
        shutil.rmtree(d, ignore_errors=True)

    def perf_run(i):
        data = os.path.join(work, f"perf{i}.data")
        rep, done, _ = run_workload(["perf", "record", "-q", "-k", "1", "-g", "-F", str(args.freq), "-o", data, "--", "node", *NODE_FLAGS, script, str(rounds)], work)
        s, lost = perf_samples(data)
        r = results["perf"]
        r["work_ms"].append(rep["work_ms"])
        r["samples"].append(s)
        r["lost"].append(lost)
        r["after_exit_ms"].append(done - rep["end_wall_ms"])
        os.remove(data)

    def samply_run(i):
        out = os.path.join(work, f"samply{i}.json.gz")
        with open(paranoid_path, "w") as f:
            f.write("1")
        try:
            rep, done, _ = run_workload(["samply", "record", "--save-only", "-r", str(args.freq), "-o", out, "--", "node", *NODE_FLAGS, script, str(rounds)], work)
        finally:
            with open(paranoid_path, "w") as f:
                f.write(paranoid)
        r = results["samply"]
        r["work_ms"].append(rep["work_ms"])
        r["samples"].append(samply_samples(out))
        r["lost"].append(0)
        r["after_exit_ms"].append(done - rep["end_wall_ms"])

    runs = [("profkit", profkit_run), ("perf", perf_run), ("samply", samply_run)]
    for i in range(args.rounds):
        rep, _, _ = run_workload(["node", script, str(rounds)], work)
        plain.append(rep["work_ms"])
        k = i % len(runs)
        for name, fn in runs[k:] + runs[:k]:
            fn(i)
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)
    for f in os.listdir(work):
        if f.startswith("jit-") and f.endswith(".dump"):
            os.remove(os.path.join(work, f))
    med = {k: {m: statistics.median(v) for m, v in r.items()} for k, r in results.items()}
    base = statistics.median(plain)
    print(f"workload: node fib(24)+work x{rounds}, {args.rounds} rounds, -F {args.freq}; unrecorded median {base:.0f} ms")
    print(f"{'recorder':8} {'work ms':>8} {'rate vs unrecorded':>19} {'samples':>8} {'lost':>5} {'after exit ms':>14}")
    for k in ("profkit", "perf", "samply"):
        m = med[k]
        print(f"{k:8} {m['work_ms']:8.0f} {base / m['work_ms']:19.3f} {m['samples']:8.0f} {m['lost']:5.0f} {m['after_exit_ms']:14.0f}")
    print(f"profkit work rate / perf's: {med['perf']['work_ms'] / med['profkit']['work_ms']:.3f} (target >= 0.95)")
    print(f"profkit samples / perf's:   {med['profkit']['samples'] / max(med['perf']['samples'], 1):.3f} (target >= 0.9)")
    print(f"after exit, samply / profkit -o: {med['samply']['after_exit_ms'] / max(med['profkit']['after_exit_ms'], 1):.2f}x")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
