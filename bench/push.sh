#!/usr/bin/env bash
# Pushing an agent with a 1 GiB ADD to a local registry: `otters push` against `skopeo copy` of the
# same image (as an OCI layout) in the same run, then a re-push of the unchanged image, which must
# upload no blob. Goal: otters <= 1.0x skopeo; re-push uploads nothing.
# Usage: bash bench/push.sh [SIZE_MIB]   (needs docker-registry and skopeo; see shared/TESTING.md)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}
cargo build --profile dist --quiet
bin=$PWD/target/dist/otters
tmp=$(mktemp -d); trap 'kill $reg_pid $reg2_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_registry() { # dir port -> pid
  cat > "$1/cfg.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $1/data}}
http: {addr: 127.0.0.1:$2}
YML
  docker-registry serve "$1/cfg.yml" >"$1/log" 2>&1 & echo $!
}
wait_ready() { for _ in $(seq 100); do curl -fs "http://127.0.0.1:$1/v2/" >/dev/null && return; sleep 0.05; done; echo "registry $1 did not start" >&2; exit 1; }

mkdir -p "$tmp/ctx" "$tmp/r1" "$tmp/r2"
head -c "$((size_mib << 20))" /dev/urandom > "$tmp/ctx/big.bin"
printf 'FROM scratch\nNAME bench\nADD big.bin\n' > "$tmp/ctx/Agentfile"
export OTTERS_HOME=$tmp/home DOCKER_CONFIG=$tmp/docker
p1=$(port); reg_pid=$(start_registry "$tmp/r1" "$p1"); wait_ready "$p1"
p2=$(port); reg2_pid=$(start_registry "$tmp/r2" "$p2"); wait_ready "$p2"
"$bin" build -q -t "127.0.0.1:$p1/bench/agent:1" "$tmp/ctx" >/dev/null
"$bin" build -q -t "bench:1" --output "type=oci-layout,dest=$tmp/layout" "$tmp/ctx" >/dev/null

json=bench/out/push.json; mkdir -p bench/out
wipe="rm -rf $tmp/r1/data/docker/registry/v2/blobs $tmp/r1/data/docker/registry/v2/repositories $tmp/r2/data/docker/registry/v2/blobs $tmp/r2/data/docker/registry/v2/repositories"
# Each measured run starts from empty registries, so both tools upload every byte.
hyperfine --runs 5 -N --export-json "$json" \
  --prepare "$wipe" -n "skopeo copy" "skopeo copy --quiet --dest-tls-verify=false oci:$tmp/layout:bench:1 docker://127.0.0.1:$p2/bench/agent:1" \
  --prepare "$wipe" -n "otters push" "$bin push -q 127.0.0.1:$p1/bench/agent:1" \
  --prepare "true" -n "otters re-push" "$bin push -q 127.0.0.1:$p1/bench/agent:1" >/dev/null
repush=$("$bin" push -q --format json "127.0.0.1:$p1/bench/agent:1")
uploaded=$(echo "$repush" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["uploaded"]))')
python3 - "$json" "$size_mib" "$uploaded" <<'PY'
import json, sys
res = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
mib, up = int(sys.argv[2]), int(sys.argv[3])
o, s, r = res["otters push"], res["skopeo copy"], res["otters re-push"]
print(f"push {mib} MiB, medians of 5: otters {o:.2f} s ({mib/o:.0f} MiB/s), skopeo copy {s:.2f} s ({mib/s:.0f} MiB/s), ratio {o/s:.2f}x (goal <= 1.0x)")
print(f"re-push unchanged: {r:.3f} s, blobs uploaded: {up} (goal 0)")
PY
