#!/usr/bin/env bash
# Issue 39, growth with the store: `otters images`, `otters rm` of one tag and `otters prune` of one
# removed agent's blobs, with 1, 10 and 100 agents in the store (AGENTS to change), each agent its
# own small ADD (so its own layer, config and manifest), in CPU time (user + system,
# bench/cputime.py), medians of ROUNDS alternating rounds (default 5), with `otters version` (the
# binary's start) as the floor. Prints a growth table.
# Usage: bash bench/store.sh   (BIN=/path/to/otters skips the build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
agents=${AGENTS:-1 10 100}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/target/release/otters
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/otters-store.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p bench/out
rows=()
for n in $agents; do
  export OTTERS_HOME=$work/home-$n
  for i in $(seq 1 "$n"); do
    ctx=$work/ctx/a$i; mkdir -p "$ctx"
    printf 'agent %s\n' "$i" >"$ctx/notes.txt"
    printf 'FROM scratch\nNAME a%s\nMODEL m/m\nADD notes.txt\n' "$i" >"$ctx/Agentfile"
    "$BIN" build -q -t "bench/a$i:1" "$ctx" >/dev/null
  done
  junk=$work/ctx/junk; mkdir -p "$junk"
  printf 'FROM scratch\nNAME junk\nMODEL m/m\nADD notes.txt\n' >"$junk/Agentfile"
  json=bench/out/store-$n.json
  python3 bench/cputime.py "$rounds" "$json" \
    "version=$BIN version" \
    "images=$BIN images" \
    "rm=$BIN tag bench/a1:1 bench/extra:1 >/dev/null ;; $BIN rm bench/extra:1" \
    "prune=date +%s%N >$junk/notes.txt && $BIN build -q -t junk:1 $junk >/dev/null && $BIN rm junk:1 >/dev/null ;; $BIN prune" \
    >/dev/null
  rows+=("$n $json")
done
python3 - "${rows[@]}" <<'PY'
import json, sys
print("| agents | `otters version` | images | rm (one tag) | prune (one agent's blobs) | load |")
print("|---|---|---|---|---|---|")
for row in sys.argv[1:]:
    n, path = row.split()
    d = json.load(open(path)); m = d["medians"]
    v = m["version"]
    cells = " | ".join(f"{m[k]*1e3:.1f} ms ({m[k]/v:.1f}x)" for k in ("images", "rm", "prune"))
    print(f"| {n} | {v*1e3:.1f} ms | {cells} | {d['load'][0]:.1f}–{d['load'][1]:.1f} |")
PY
