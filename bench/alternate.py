#!/usr/bin/env python3
"""Runs contenders in alternating rounds and prints medians and ratios (issue 22's method).

Usage: alternate.py ROUNDS OUT.json NAME=CMD [NAME=CMD ...]
A CMD may be `PREPARE ;; COMMAND`: PREPARE runs (untimed) before every timed run of COMMAND.
Each round runs every contender once, in an order rotated by one each round, so a burst of load
on the shared machine falls on all of them alike. Prints each contender's median, min and max
wall time and the load average (1 min) at the start and end; writes the samples to OUT.json.
"""
import json
import os
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
samples = {name: [] for name, _, _ in contenders}
load0 = os.getloadavg()[0]
for r in range(rounds):
    k = r % len(contenders)
    for name, prep, run in contenders[k:] + contenders[:k]:
        if prep:
            subprocess.run(prep, shell=True, check=True)
        t0 = time.perf_counter()
        subprocess.run(run, shell=True, check=True, stdout=subprocess.DEVNULL)
        samples[name].append(time.perf_counter() - t0)
load1 = os.getloadavg()[0]
medians = {n: statistics.median(s) for n, s in samples.items()}
for n, s in samples.items():
    print(f"{n:24} median {medians[n]:8.3f} s   (min {min(s):.3f}, max {max(s):.3f}, {len(s)} runs)")
print(f"load average (1 min): {load0:.1f} at start, {load1:.1f} at end")
json.dump({"samples": samples, "medians": medians, "load": [load0, load1]}, open(out, "w"), indent=1)
