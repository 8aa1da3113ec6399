#!/usr/bin/env bash
# Issue 39, growth with the file count: the first build and the no-op rebuild of a context of N
# small text files (100 per directory, about 210 B each, one `ADD data`) for N in COUNTS (default
# 10000 100000 300000), against `tar -cf - data | sha256sum` (first build) and
# `find data -printf '%s %T@ %i\n'` (no-op rebuild: stat-ing every file), in CPU time (user +
# system, bench/cputime.py: the machine is shared), medians of ROUNDS alternating rounds
# (default 3). Prints a growth table (ratios, and each figure per 10k files).
# Usage: bash bench/files.sh   (BIN=/path/to/otters skips the build; BASE=/path/to/old/otters
# adds an older binary in the same rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
counts=${COUNTS:-10000 100000 300000}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/target/release/otters
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/otters-files.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p bench/out
rows=()
for n in $counts; do
  ctx=$work/ctx-$n
  python3 bench/text.py "$ctx/data" "$n" 210 $((n / 100))
  printf 'FROM scratch\nNAME files\nMODEL m/m\nADD data\n' >"$ctx/Agentfile"
  sleep 3   # the hash cache only trusts files whose mtime is older than 2 s
  find "$ctx/data" -type f -exec cat {} + >/dev/null
  json=bench/out/files-$n.json
  base=()
  if [ -n "${BASE:-}" ]; then
    rm -rf "$work/home-base"; OTTERS_HOME=$work/home-base "$BASE" build -q "$ctx" >/dev/null
    base=("first build (BASE)=rm -rf $work/fb ;; OTTERS_HOME=$work/fb $BASE build -q $ctx"
          "no-op rebuild (BASE)=OTTERS_HOME=$work/home-base $BASE build -q $ctx")
  fi
  rm -rf "$work/home"; OTTERS_HOME=$work/home "$BIN" build -q "$ctx" >/dev/null
  python3 bench/cputime.py "$rounds" "$json" \
    "tar|sha256sum=tar -C $ctx -cf - data | sha256sum" \
    "find -printf=find $ctx/data -printf '%s %T@ %i\n'" \
    "first build=rm -rf $work/first ;; OTTERS_HOME=$work/first $BIN build -q $ctx" \
    "no-op rebuild=OTTERS_HOME=$work/home $BIN build -q $ctx" \
    "${base[@]}"
  rows+=("$n $json")
  rm -rf "$ctx" "$work/first" "$work/fb"
done
python3 - "${rows[@]}" <<'PY'
import json, sys
print("| files | tar\\|sha256sum | first build | ratio (goal <= 1.5x) | find -printf | no-op rebuild | ratio (goal <= 2x) | first build per 10k files | no-op per 10k files | load |")
print("|---|---|---|---|---|---|---|---|---|---|")
for row in sys.argv[1:]:
    n, path = row.split()
    d = json.load(open(path)); m = d["medians"]; n = int(n)
    t, f = m["tar|sha256sum"], m["find -printf"]
    load = f"{d['load'][0]:.1f}–{d['load'][1]:.1f}"
    for tag, b, r in [("", m["first build"], m["no-op rebuild"])] + (
            [(" (BASE)", m["first build (BASE)"], m["no-op rebuild (BASE)"])] if "first build (BASE)" in m else []):
        print(f"| {n:,}{tag} | {t*1e3:.0f} ms | {b*1e3:.0f} ms | **{b/t:.2f}x** | {f*1e3:.0f} ms | {r*1e3:.0f} ms | "
              f"**{r/f:.2f}x** | {b*1e4/n*1e3:.0f} ms | {r*1e4/n*1e3:.0f} ms | {load} |")
PY
