#!/usr/bin/env python3
"""Writes COUNT text files of BYTES each into DIR (words of a small vocabulary in random order,
seeded by the file's number: bench/dir.sh's text, which compresses about 3-4x).

Usage: text.py DIR COUNT BYTES [SUBDIRS]   (SUBDIRS > 0 spreads the files over that many directories)
"""
import os
import random
import sys

root, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
subdirs = int(sys.argv[4]) if len(sys.argv) > 4 else 0
words = ("agent runtime model context weather city forecast rain sun wind north south "
         "report data layer image registry digest build store tool note").split()
for i in range(count):
    r = random.Random(i + 1)
    d = os.path.join(root, f"d{i % subdirs:04}") if subdirs else root
    os.makedirs(d, exist_ok=True)
    out, n = [], 0
    while n < size:
        line = " ".join(r.choice(words) for _ in range(12)) + "\n"
        out.append(line)
        n += len(line)
    with open(os.path.join(d, f"f{i:06}.txt"), "w") as f:
        f.write("".join(out)[:size])
