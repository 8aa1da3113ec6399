#!/usr/bin/env bash
# Copying an agent with a 512 MiB ADD between two local registries: `otters copy` (staging in an
# empty store, as a first copy on a fresh machine does) against `skopeo copy docker:// docker://`
# of the same image, in the same run, each into an emptied destination registry. Both verify every
# digest; otters also fsyncs what it staged. Also reports otters' peak RSS (GNU time), to show
# memory stays bounded whatever the layer size.
# Goal (issue 21): otters <= 1.2x skopeo.
# Usage: bash bench/copy.sh [SIZE_MIB]   (PROFILE=release for a quicker compile than dist)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-512}
profile=${PROFILE:-dist}
cargo build --profile "$profile" --quiet
bin=$PWD/target/$profile/otters
tmp=$(mktemp -d); trap 'kill $reg1_pid $reg2_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_registry() { # dir port
  mkdir -p "$1"
  cat > "$1/cfg.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $1/data}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$2}
YML
  docker-registry serve "$1/cfg.yml" >"$1/log" 2>&1 &
}
p1=$(free_port); start_registry "$tmp/r1" "$p1"; reg1_pid=$!
p2=$(free_port); start_registry "$tmp/r2" "$p2"; reg2_pid=$!
for p in "$p1" "$p2"; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$p/v2/" >/dev/null && break; sleep 0.05; done
done
mkdir -p "$tmp/ctx"
head -c "$((size_mib << 20))" /dev/urandom > "$tmp/ctx/big.bin"
printf 'FROM scratch\nNAME bench\nADD big.bin\n' > "$tmp/ctx/Agentfile"
src="127.0.0.1:$p1/bench/agent:1"
dst="127.0.0.1:$p2/bench/agent:1"
OTTERS_HOME=$tmp/home "$bin" build -q -t "$src" --push "$tmp/ctx" >/dev/null

# Emptying the destination's storage between runs (the registry keeps no cache in this config).
clean="rm -rf $tmp/r2/data $tmp/copyhome"
json=bench/out/copy.json; mkdir -p bench/out
hyperfine --runs 5 -N --export-json "$json" \
  --prepare "$clean" -n "skopeo copy" "skopeo copy --quiet --src-tls-verify=false --dest-tls-verify=false docker://$src docker://$dst" \
  --prepare "$clean" -n "otters copy" "env OTTERS_HOME=$tmp/copyhome $bin copy -q $src $dst" >/dev/null
$clean
rss=$( { /usr/bin/time -f '%M' env OTTERS_HOME="$tmp/copyhome" "$bin" copy -q "$src" "$dst" >/dev/null; } 2>&1 | tail -1)
python3 - "$json" "$size_mib" "$rss" <<'PY'
import json, sys
res = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
mib, rss = int(sys.argv[2]), int(sys.argv[3])
o, s = res["otters copy"], res["skopeo copy"]
print(f"copy {mib} MiB registry to registry, medians of 5: otters {o:.2f} s ({mib/o:.0f} MiB/s), skopeo copy {s:.2f} s ({mib/s:.0f} MiB/s), ratio {o/s:.2f}x (goal <= 1.2x); otters peak RSS {rss/1024:.0f} MiB")
PY
