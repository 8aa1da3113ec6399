#!/usr/bin/env bash
# Issue 39: `otters export --as runnable` of an agent whose ADDed directory is SIZE_MIB of text in
# 64 files (RUNTIME and BIN of 1 MiB each, already in the store), against `tar | pigz -1 |
# sha256sum` of the same directory (the fastest parallel gzip) and `cp -r` + `sync`, in CPU time
# (user + system, bench/cputime.py: the machine is shared), medians of ROUNDS alternating rounds.
# The build of that directory alone (FROM scratch, ADD data) is measured beside them, against
# `tar | pigz -1 | sha256sum` (goal: no slower). Then the size of the build's text directory layer against `gzip -1` and `pigz -1` of the same tar.
# Usage: bash bench/export-text.sh [SIZE_MIB]   (default 128; BIN=/path/to/otters skips the build;
# BASE=/path/to/old/otters adds an older binary's export in the same rounds; ROUNDS, default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-128}
rounds=${ROUNDS:-5}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/target/release/otters
fi
command -v pigz >/dev/null || { echo "pigz is missing (apt-get install pigz; .ci/install has it)" >&2; exit 1; }
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
# Bin images (one tar+gzip layer holding NAME, annotated by the bin contract) in OCI layouts.
python3 - "$tmp" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
tmp = sys.argv[1]
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
image("runtime", os.urandom(1 << 20))
image("tool", os.urandom(1 << 20))
PY
for n in runtime tool; do
  skopeo copy --quiet --dest-tls-verify=false "oci:$tmp/$n:1" "docker://127.0.0.1:$port/$n:1"
done
python3 bench/text.py "$tmp/ctx/data" 64 $((size_mib * 1024 * 1024 / 64))
printf 'FROM scratch\nNAME bench\nRUNTIME 127.0.0.1:%s/runtime:1\nBIN tool 127.0.0.1:%s/tool:1\nMODEL local/x\nADD data\n' "$port" "$port" > "$tmp/ctx/Agentfile"
ref="127.0.0.1:$port/bench/agent:1"
export OTTERS_HOME=$tmp/home
sleep 3   # the hash cache only trusts files whose mtime is older than 2 s
"$BIN" build -q -t "$ref" "$tmp/ctx" >/dev/null
"$BIN" export -q "$ref" --as runnable >/dev/null   # pulls the runtime and BIN into the store
# The text directory ADD alone (its own context: no RUNTIME to resolve), into an empty home.
mkdir -p "$tmp/dirctx"; cp -r "$tmp/ctx/data" "$tmp/dirctx/data"
printf 'FROM scratch\nNAME text\nMODEL m/m\nADD data\n' > "$tmp/dirctx/Agentfile"
sleep 3
base=()
if [ -n "${BASE:-}" ]; then
  OTTERS_HOME=$tmp/home-base "$BASE" build -q -t "$ref" "$tmp/ctx" >/dev/null
  OTTERS_HOME=$tmp/home-base "$BASE" export -q "$ref" --as runnable >/dev/null
  base=("otters export (BASE)=OTTERS_HOME=$tmp/home-base $BASE export -q --offline $ref --as runnable"
        "otters build, text dir (BASE)=rm -rf $tmp/hb ;; OTTERS_HOME=$tmp/hb $BASE build -q $tmp/dirctx")
fi
cat "$tmp"/ctx/data/* >/dev/null
json=bench/out/export-text.json; mkdir -p bench/out
python3 bench/cputime.py "$rounds" "$json" \
  "tar|pigz-1|sha256sum=tar -C $tmp/ctx -cf - data | pigz -1 | sha256sum" \
  "cp -r+sync=rm -rf $tmp/copy ;; cp -r $tmp/ctx/data $tmp/copy && sync -f $tmp/copy" \
  "otters export=$BIN export -q --offline $ref --as runnable" \
  "otters build, text dir=rm -rf $tmp/hd ;; OTTERS_HOME=$tmp/hd $BIN build -q $tmp/dirctx" \
  "${base[@]}"
python3 - "$json" "$size_mib" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["medians"]
floor = max(m["tar|pigz-1|sha256sum"], m["cp -r+sync"])
for k, v in m.items():
    if k.startswith("otters export"):
        print(f"{k}: {v:.3f} s of CPU, {v / floor:.2f}x the floor ({floor:.3f} s; goal <= 1.2x)")
    elif k.startswith("otters build"):
        p = m["tar|pigz-1|sha256sum"]
        print(f"{k}: {v:.3f} s of CPU, {v / p:.2f}x tar|pigz -1|sha256sum ({p:.3f} s; goal <= 1x)")
PY
layer=$("$BIN" inspect "$ref" --format json | python3 -c 'import json,sys; print(next(l["size"] for l in json.load(sys.stdin)["layers"] if l.get("title") == "data"))')
g1=$(tar -C "$tmp/ctx" -cf - data | gzip -1 | wc -c)
p1=$(tar -C "$tmp/ctx" -cf - data | pigz -1 | wc -c)
python3 -c "import sys; l,g,p=map(int,sys.argv[1:]); print(f'text directory layer: {l} B; gzip -1 {g} B ({l/g:.2f}x; goal <= 1.15x); pigz -1 {p} B ({l/p:.2f}x)')" "$layer" "$g1" "$p1"
