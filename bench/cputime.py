#!/usr/bin/env python3
"""Runs contenders in alternating rounds and prints the median CPU time of each (issue 39's method).

Usage: cputime.py ROUNDS OUT.json NAME=CMD [NAME=CMD ...]
As alternate.py (a CMD may be `PREPARE ;; COMMAND`, PREPARE untimed; the order rotates each
round), but the figure is CPU time, user + system of the command and every process it waited for
(getrusage of the children, the same count as `perf stat -e task-clock` of a process tree), which
a shared, loaded machine disturbs far less than wall time. Wall time is printed beside it. Prints
the load average (1 min) at the start and end; writes the samples to OUT.json.
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

rounds, out = int(sys.argv[1]), sys.argv[2]
contenders = []
for arg in sys.argv[3:]:
    name, _, cmd = arg.partition("=")
    prep, _, run = cmd.rpartition(";;")
    contenders.append((name, prep.strip(), run.strip()))


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


cpu_samples = {name: [] for name, _, _ in contenders}
wall_samples = {name: [] for name, _, _ in contenders}
load0 = os.getloadavg()[0]
for r in range(rounds):
    k = r % len(contenders)
    for name, prep, run in contenders[k:] + contenders[:k]:
        if prep:
            subprocess.run(prep, shell=True, check=True)
        c0, t0 = cpu(), time.perf_counter()
        subprocess.run(run, shell=True, check=True, stdout=subprocess.DEVNULL)
        wall_samples[name].append(time.perf_counter() - t0)
        cpu_samples[name].append(cpu() - c0)
load1 = os.getloadavg()[0]
medians = {n: statistics.median(s) for n, s in cpu_samples.items()}
for n, s in cpu_samples.items():
    w = statistics.median(wall_samples[n])
    print(f"{n:28} cpu median {medians[n]:8.3f} s (min {min(s):.3f}, max {max(s):.3f}, "
          f"{len(s)} runs)   wall median {w:.3f} s")
print(f"load average (1 min): {load0:.1f} at start, {load1:.1f} at end")
json.dump({"cpu": cpu_samples, "wall": wall_samples, "medians": medians, "load": [load0, load1]},
          open(out, "w"), indent=1)
