#!/usr/bin/env bash
# Issue 39 (kept goal): an agent with a SIZE_MIB ADD (default 128, random bytes) copied from a
# local docker-registry into an `oci-archive:` file, `otters copy` (blobs staged in an empty
# store, then the archive written) against `skopeo copy docker:// oci-archive:`, alternating, each
# into a removed archive; wall time and CPU time (bench/cputime.py), medians of ROUNDS (default 5).
# Goal: otters <= 1.2x skopeo. Usage: bash bench/archive.sh [SIZE_MIB]  (BIN= skips the build)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-128}
rounds=${ROUNDS:-5}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/target/release/otters
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/otters-archive.XXXXXX")
trap 'kill $reg_pid 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/r"
cat >"$work/r/cfg.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $work/r/data}}
http: {addr: 127.0.0.1:$port}
YML
docker-registry serve "$work/r/cfg.yml" >"$work/r/log" 2>&1 &
reg_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.05; done
mkdir -p "$work/ctx"
head -c $((size_mib << 20)) /dev/urandom >"$work/ctx/big.bin"
printf 'FROM scratch\nNAME archive\nMODEL m/m\nADD big.bin\n' >"$work/ctx/Agentfile"
src=127.0.0.1:$port/bench/archive:1
OTTERS_HOME=$work/home "$BIN" build -q --push -t "$src" "$work/ctx" >/dev/null
mkdir -p bench/out
python3 bench/cputime.py "$rounds" bench/out/archive.json \
  "skopeo=rm -f $work/s.tar ;; skopeo copy -q --src-tls-verify=false docker://$src oci-archive:$work/s.tar:bench" \
  "otters=rm -rf $work/o.tar $work/copyhome ;; OTTERS_HOME=$work/copyhome $BIN copy -q $src oci-archive:$work/o.tar:bench"
python3 - bench/out/archive.json "$size_mib" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1])); m = d["medians"]
w = {k: statistics.median(v) for k, v in d["wall"].items()}
print(f"| {sys.argv[2]} MiB into oci-archive: | skopeo | otters | ratio (goal <= 1.2x) |")
print("|---|---|---|---|")
print(f"| wall | {w['skopeo']:.3f} s | {w['otters']:.3f} s | {w['otters']/w['skopeo']:.2f}x |")
print(f"| CPU | {m['skopeo']:.3f} s | {m['otters']:.3f} s | {m['otters']/m['skopeo']:.2f}x |")
print(f"load average {d['load'][0]:.1f}-{d['load'][1]:.1f}")
PY
