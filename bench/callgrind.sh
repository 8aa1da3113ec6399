#!/usr/bin/env bash
# Issue 39, instruction counts (callgrind): the first build and the no-op rebuild of a context of
# N small text files (COUNTS, default 10000 100000; 100 per directory, about 210 B each, one
# `ADD data`), against the same floors as bench/files.sh, `tar -cf - data | sha256sum` (both
# processes counted) and `find data -printf '%s %T@ %i\n'`. Instructions, unlike time, do not
# move with the machine's load: a ratio here holds on a busy machine. Every thread of otters is
# counted (callgrind runs them one at a time). Prints the table, then the ten functions with the
# most instructions (self) in each otters run, from callgrind_annotate.
# Usage: bash bench/callgrind.sh   (BIN=/path/to/otters skips the build; needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=${COUNTS:-10000 100000}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/target/release/otters
fi
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install -y valgrind)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/otters-callgrind.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=bench/out/callgrind
mkdir -p "$out"
cg() { # NAME COMMAND...: the command's instruction count (all threads)
  local name=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$out/$name.out" "$@" 2>"$out/$name.log" >/dev/null
  sed -n 's/^summary: //p;s/^totals: //p' "$out/$name.out" | head -1
}
rows=()
for n in $counts; do
  ctx=$work/ctx-$n
  python3 bench/text.py "$ctx/data" "$n" 210 $((n / 100))
  printf 'FROM scratch\nNAME files\nMODEL m/m\nADD data\n' >"$ctx/Agentfile"
  sleep 3 # the hash cache only trusts files whose mtime is older than 2 s
  tar_ir=$(cg "tar-$n" tar -C "$ctx" -cf "$work/data.tar" data)
  sha_ir=$(cg "sha256sum-$n" sha256sum "$work/data.tar")
  rm -f "$work/data.tar"
  find_ir=$(cg "find-$n" find "$ctx/data" -printf '%s %T@ %i\n')
  first_ir=$(OTTERS_HOME=$work/home-$n cg "first-$n" "$BIN" build -q "$ctx")
  noop_ir=$(OTTERS_HOME=$work/home-$n cg "noop-$n" "$BIN" build -q "$ctx")
  rows+=("$n $tar_ir $sha_ir $first_ir $find_ir $noop_ir")
done
python3 - "${rows[@]}" <<'PY'
import sys
g = lambda v: f"{int(v)/1e9:.2f} G" if int(v) >= 1e8 else f"{int(v)/1e6:.0f} M"
print("| files | tar + sha256sum | first build | ratio (goal ≤ 1.5×) | find -printf | no-op rebuild | ratio (goal ≤ 2×) |")
print("|---|---|---|---|---|---|---|")
for row in sys.argv[1:]:
    n, tar, sha, first, find, noop = row.split()
    floor = int(tar) + int(sha)
    print(f"| {int(n):,} | {g(floor)} | {g(first)} | {int(first)/floor:.2f}× | {g(find)} | {g(noop)} | {int(noop)/int(find):.2f}× |")
PY
for f in "$out"/first-*.out "$out"/noop-*.out; do
  echo "== $(basename "$f" .out): the ten functions with the most instructions (self)"
  { callgrind_annotate --threshold=100 "$f" 2>/dev/null || true; } | grep -E '^ *[0-9,]+ \(' | head -10 || true
done
