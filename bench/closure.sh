#!/usr/bin/env bash
# Issue 39, growth of `copy -r`: N agents (1, 5 and 20; AGENTS to change) that share one RUNTIME
# (a bin image of RUNTIME_MIB, default 16, packed with `otters bin pack` from random bytes behind
# an ELF header) and each carry their own small ADD, copied with `otters copy -r` from one local
# docker-registry to another, one call per agent, the first fetching the runtime and the rest
# finding it there; against `skopeo copy --all` of the runtime once plus `skopeo copy` of each
# agent (the same blobs moved, no closure walk), in the same alternating rounds, each into an
# emptied destination and (otters) an empty home. CPU time of the client (bench/cputime.py; the
# registries' CPU is not counted) and wall time, medians of ROUNDS (default 5). Prints the growth
# table for docs/performance.md.
# Usage: bash bench/closure.sh   (BIN=/path/to/otters skips the build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
agents=${AGENTS:-1 5 20}
runtime_mib=${RUNTIME_MIB:-16}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/target/release/otters
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/otters-closure.XXXXXX")
trap 'kill $reg1_pid $reg2_pid 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_registry() { # dir port
  mkdir -p "$1"
  cat >"$1/cfg.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $1/data}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$2}
YML
  docker-registry serve "$1/cfg.yml" >"$1/log" 2>&1 &
}
p1=$(free_port); start_registry "$work/r1" "$p1"; reg1_pid=$!
p2=$(free_port); start_registry "$work/r2" "$p2"; reg2_pid=$!
for p in "$p1" "$p2"; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$p/v2/" >/dev/null && break; sleep 0.05; done
done
src=127.0.0.1:$p1
dst=127.0.0.1:$p2
export OTTERS_HOME=$work/home
# The runtime: an x86-64 ELF header (so `bin pack` reads its platform) and random bytes.
python3 - "$work/runtime" "$runtime_mib" <<'PY'
import os, struct, sys
path, mib = sys.argv[1], int(sys.argv[2])
head = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) + struct.pack("<HHI", 2, 62, 1)
with open(path, "wb") as f:
    f.write(head + bytes(64 - len(head)) + os.urandom((mib << 20) - 64))
PY
"$BIN" bin pack -q -t "$src/tools/runtime:1" runtime "$work/runtime" >/dev/null
"$BIN" push -q "$src/tools/runtime:1" >/dev/null
max=$(printf '%s\n' $agents | sort -n | tail -1)
for i in $(seq 1 "$max"); do
  ctx=$work/ctx/a$i; mkdir -p "$ctx"
  printf 'agent %s\n' "$i" >"$ctx/notes.txt"
  printf 'FROM scratch\nNAME a%s\nRUNTIME %s/tools/runtime:1\nMODEL m/m\nADD notes.txt\n' "$i" "$src" >"$ctx/Agentfile"
  "$BIN" build -q --push -t "$src/agents/a$i:1" "$ctx" >/dev/null
done
clean="rm -rf $work/r2/data $work/copyhome"
# Once, before timing: `copy -r` of one agent must leave the shared runtime in the destination.
OTTERS_HOME=$work/copyhome "$BIN" copy -q -r "$src/agents/a1:1" "$dst/agents/a1:1" >/dev/null
skopeo inspect --raw --tls-verify=false "docker://$dst/tools/runtime:1" >/dev/null \
  || { echo "copy -r did not copy the runtime" >&2; exit 1; }
mkdir -p bench/out
rows=()
for n in $agents; do
  otters_cmd="" skopeo_cmd="skopeo copy -q --all --src-tls-verify=false --dest-tls-verify=false docker://$src/tools/runtime:1 docker://$dst/tools/runtime:1"
  for i in $(seq 1 "$n"); do
    otters_cmd+="${otters_cmd:+ && }OTTERS_HOME=$work/copyhome $BIN copy -q -r $src/agents/a$i:1 $dst/agents/a$i:1"
    skopeo_cmd+=" && skopeo copy -q --src-tls-verify=false --dest-tls-verify=false docker://$src/agents/a$i:1 docker://$dst/agents/a$i:1"
  done
  json=bench/out/closure-$n.json
  python3 bench/cputime.py "$rounds" "$json" \
    "otters=$clean ;; $otters_cmd" \
    "skopeo=$clean ;; $skopeo_cmd" >&2
  rows+=("$n $json")
done
python3 - "$runtime_mib" "${rows[@]}" <<'PY'
import json, statistics, sys
mib = sys.argv[1]
print(f"| agents (sharing a {mib} MiB runtime) | skopeo CPU | otters `copy -r` CPU | ratio | per agent after the first (otters) | skopeo wall | otters wall | load |")
print("|---|---|---|---|---|---|---|---|")
first = None
for row in sys.argv[2:]:
    n, path = row.split()
    n = int(n)
    d = json.load(open(path)); m = d["medians"]
    w = {k: statistics.median(v) for k, v in d["wall"].items()}
    o, s = m["otters"], m["skopeo"]
    if first is None:
        first = (n, o)
    per = f"{(o - first[1]) / (n - first[0]) * 1e3:.0f} ms" if n > first[0] else "–"
    print(f"| {n} | {s*1e3:.0f} ms | {o*1e3:.0f} ms | {o/s:.2f}× | {per} | {w['skopeo']:.2f} s | {w['otters']:.2f} s | {d['load'][0]:.1f}–{d['load'][1]:.1f} |")
PY
