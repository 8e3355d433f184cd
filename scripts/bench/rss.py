#!/usr/bin/env python3
"""Runs a command, appends "label wall_s maxrss_kb peak_anon_kb peak_file_kb load1 cpu_s" to a file
(cpu_s: user + system time of the command and the children it waited for).

Usage: rss.py LABEL OUTFILE COMMAND...  (the command's stdout goes to /dev/null, stderr to err.txt)
Peak RSS is the kernel's (ru_maxrss of the command and its children); RssAnon and RssFile are
the peaks of the sums over the command's process tree, read from /proc/PID/status every 5 ms.
"""
import os, subprocess, sys, time

label, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]

def tree(root):
    pids, todo = [], [root]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return pids

def status(pid):
    anon = fil = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
                elif line.startswith("RssFile:"):
                    fil = int(line.split()[1])
    except OSError:
        pass
    return anon, fil

load = os.getloadavg()[0]
start = time.perf_counter()
with open("err.txt", "w") as err:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
peak_anon = peak_file = 0
while True:
    pid, st, ru = os.wait4(p.pid, os.WNOHANG)
    if pid:
        break
    a = f = 0
    for q in tree(p.pid):
        x, y = status(q)
        a, f = a + x, f + y
    peak_anon, peak_file = max(peak_anon, a), max(peak_file, f)
    time.sleep(0.005)
wall = time.perf_counter() - start
if os.waitstatus_to_exitcode(st) != 0:
    sys.exit(f"{label} failed: {open('err.txt').read()[-500:]}")
with open(out, "a") as o:
    o.write(f"{label} {wall:.4f} {ru.ru_maxrss} {peak_anon} {peak_file} {load:.2f} {ru.ru_utime + ru.ru_stime:.4f}\n")
