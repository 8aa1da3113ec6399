#!/usr/bin/env bash
# Pulling an agent with a 1 GiB ADD from a local registry: `otters pull` into an empty store against
# `skopeo copy` of the same image into an empty OCI layout, in the same run. Both verify every
# digest and make what they wrote durable (otters fsyncs; skopeo does not, which favours it).
# Goal (issue 12): otters <= 0.8x skopeo.
# Usage: bash bench/pull.sh [SIZE_MIB]   (PROFILE=release for a quicker compile than dist)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}
profile=${PROFILE:-dist}
cargo build --profile "$profile" --quiet
bin=$PWD/target/$profile/otters
tmp=$(mktemp -d); trap 'kill $reg_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/ctx" "$tmp/r"
cat > "$tmp/r/cfg.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $tmp/r/data}}
http: {addr: 127.0.0.1:$port}
YML
docker-registry serve "$tmp/r/cfg.yml" >"$tmp/r/log" 2>&1 & reg_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.05; done
head -c "$((size_mib << 20))" /dev/urandom > "$tmp/ctx/big.bin"
printf 'FROM scratch\nNAME bench\nADD big.bin\n' > "$tmp/ctx/Agentfile"
ref="127.0.0.1:$port/bench/agent:1"
OTTERS_HOME=$tmp/home "$bin" build -q -t "$ref" --push "$tmp/ctx" >/dev/null

json=bench/out/pull.json; mkdir -p bench/out
hyperfine --runs 5 -N --export-json "$json" \
  --prepare "rm -rf $tmp/skopeo" -n "skopeo copy" "skopeo copy --quiet --src-tls-verify=false docker://$ref oci:$tmp/skopeo:bench" \
  --prepare "rm -rf $tmp/pulled" -n "otters pull" "env OTTERS_HOME=$tmp/pulled $bin pull -q $ref" >/dev/null
python3 - "$json" "$size_mib" <<'PY'
import json, sys
res = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
mib = int(sys.argv[2])
o, s = res["otters pull"], res["skopeo copy"]
print(f"pull {mib} MiB, medians of 5: otters {o:.2f} s ({mib/o:.0f} MiB/s), skopeo copy {s:.2f} s ({mib/s:.0f} MiB/s), ratio {o/s:.2f}x (goal <= 0.8x)")
PY
