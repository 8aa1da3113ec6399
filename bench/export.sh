#!/usr/bin/env bash
# `otters export --as runnable` of an agent whose RUNTIME (SIZE_MIB of incompressible bytes) and
# BIN are already in the store, against `tar -c | gzip -6` of the same tree (the tree `otters run
# --executor docker` writes), in the same run. The export re-plans and re-writes the tree, then
# tars, gzips and hashes each layer into the store. Goal (issue 20): about the cost of writing
# its layers.
# Usage: bash bench/export.sh [SIZE_MIB]   (PROFILE=release for a quicker compile than dist)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-256}
profile=${PROFILE:-dist}
cargo build --profile "$profile" --quiet
dir=$profile; [ "$profile" = dev ] && dir=debug
bin=$PWD/target/$dir/otters
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
# A bin image (one tar+gzip layer holding NAME, annotated by the bin contract) in an OCI layout.
python3 - "$tmp" "$size_mib" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
tmp, mib = sys.argv[1], int(sys.argv[2])
def image(name, data):
    d = f"{tmp}/{name}"; os.makedirs(f"{d}/blobs/sha256")
    def blob(b):
        h = hashlib.sha256(b).hexdigest(); open(f"{d}/blobs/sha256/{h}", "wb").write(b); return "sha256:" + h
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as t:
        i = tarfile.TarInfo(name); i.size = len(data); i.mode = 0o755; t.addfile(i, io.BytesIO(data))
    layer = gzip.compress(raw.getvalue(), 1, mtime=0)
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers",
        "diff_ids": ["sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()]}}).encode()
    m = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": blob(cfg), "size": len(cfg)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": blob(layer), "size": len(layer)}],
        "annotations": {"io.openotters.bin.name": name, "io.openotters.bin.path": "/"}}).encode()
    open(f"{d}/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
    open(f"{d}/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": [{"mediaType":
        "application/vnd.oci.image.manifest.v1+json", "digest": blob(m), "size": len(m),
        "annotations": {"org.opencontainers.image.ref.name": "1"}}]}))
image("runtime", os.urandom(mib << 20))
image("tool", os.urandom(1 << 20))
PY
for n in runtime tool; do
  skopeo copy --quiet --dest-tls-verify=false "oci:$tmp/$n:1" "docker://127.0.0.1:$port/$n:1"
done
printf 'FROM scratch\nNAME bench\nRUNTIME 127.0.0.1:%s/runtime:1\nBIN tool 127.0.0.1:%s/tool:1\nMODEL local/x\n' "$port" "$port" > "$tmp/ctx/Agentfile"
ref="127.0.0.1:$port/bench/agent:1"
export OTTERS_HOME=$tmp/home
"$bin" build -q -t "$ref" "$tmp/ctx" >/dev/null
"$bin" export -q "$ref" --as runnable >/dev/null   # pulls the runtime and BIN into the store
printf '#!/bin/sh\nexit 0\n' > "$tmp/fake-docker"; chmod +x "$tmp/fake-docker"
"$bin" run --executor docker --docker "$tmp/fake-docker" --root "$tmp/tree" "$ref" >/dev/null

json=bench/out/export.json; mkdir -p bench/out
hyperfine --runs 5 -N --export-json "$json" \
  -n "tar | gzip" "sh -c 'tar -C $tmp/tree -cf - . | gzip -6 > /dev/null'" \
  -n "otters export" "$bin export -q --offline $ref --as runnable" >/dev/null
python3 - "$json" "$size_mib" <<'PY'
import json, sys
res = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
mib = int(sys.argv[2])
o, t = res["otters export"], res["tar | gzip"]
print(f"export of a {mib} MiB runtime, medians of 5: otters export {o:.2f} s, tar | gzip -6 {t:.2f} s, ratio {o/t:.2f}x")
PY
