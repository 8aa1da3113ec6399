"""Checks the tree-sitter parse of Agentfiles line by line against an independent reading.

Usage: python3 test/structure.py TREE_SITTER FILE...   (run in editors/tree-sitter-agentfile)

The reading follows docs/grammar.md: every line is blank, the directive, a comment, an
instruction (its keyword names the node) or, after a heredoc opener, body up to the first line
that is the marker alone (blanks aside). For each file, the sequence of directive, comment,
instruction, heredoc_body and heredoc_end nodes in the tree, with their rows (and the body's
columns), must be exactly the sequence the reading expects.
"""

import re
import subprocess
import sys

OPENER = re.compile(r"""[ \t](<<-?)(["']?)([^\s"']+)\2[ \t]*$""")
NODE = re.compile(r"^\s*(?:\w+: )?\((\w+) \[(\d+), (\d+)\] - \[(\d+), (\d+)\]")
KINDS = {"directive", "comment", "heredoc_body", "heredoc_end"}


def expected(text):
    out = []
    marker = None
    body_start = None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for row, raw in enumerate(lines):
        line = raw[:-1] if raw.endswith("\r") else raw
        if marker is not None:
            if line.strip(" \t") == marker:
                if body_start is not None:
                    out.append(("heredoc_body", body_start, 0, row, 0))
                out.append(("heredoc_end", row))
                marker = None
            elif body_start is None:
                body_start = row
            continue
        if line.strip(" \t") == "":
            continue
        if line.lstrip(" \t").startswith("# syntax="):
            out.append(("directive", row))
        elif line.lstrip(" \t").startswith("#"):
            out.append(("comment", row))
        else:
            keyword = re.match(r"[ \t]*([A-Za-z]+)", line).group(1).lower()
            out.append((keyword + "_instruction", row))
            m = OPENER.search(line)
            if m:
                marker, body_start = m.group(3), None
    if marker is not None:
        sys.exit("an unterminated heredoc in a sample that should be valid")
    return out


def actual(ts, path):
    tree = subprocess.run([ts, "parse", path], capture_output=True, text=True, check=False).stdout
    out = []
    for line in tree.splitlines():
        m = NODE.match(line)
        if not m:
            continue
        name, r1, c1, r2, c2 = m.group(1), *map(int, m.groups()[1:])
        if name == "heredoc_body":
            out.append((name, r1, c1, r2, c2))
        elif name in KINDS or name.endswith("_instruction"):
            out.append((name, r1))
    return out


def main():
    ts, files = sys.argv[1], sys.argv[2:]
    checked = 0
    for path in files:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            want = expected(f.read())
        got = actual(ts, path)
        if got != want:
            for i, (g, w) in enumerate(zip(got + [None] * len(want), want + [None] * len(got))):
                if g != w:
                    sys.exit(f"{path}: node {i}: tree-sitter has {g}, the reading expects {w}")
        checked += len(want)
    print(f"ok {len(files)} files: {checked} lines/nodes agree with an independent reading")


main()
