#!/usr/bin/env bash
# Pushing an agent with a SIZE_MIB ADD (default 512) to a local docker-registry: `otters push` from
# the store against `skopeo copy` of the same image from an OCI layout to the same registry, in
# alternating rounds (order rotated each round), every run starting from an emptied registry; then
# a re-push of the unchanged image, which must upload no blob. Goal (issue 22): otters <= 0.8x skopeo.
# Beside them, the floor of any client: curl uploading the big file alone (POST, PATCH, PUT).
#
# Beside the wall times it prints, per contender, the median CPU time of the client (user+sys, from
# the child's rusage) and of the registry process during the run (/proc/PID/stat), so a figure
# taken on a loaded machine still says where the time goes. The load average is printed beside.
#
# Usage: bash bench/push.sh [SIZE_MIB]
#   ROUNDS=5          rounds (default 5)
#   PROFILE=release   cargo profile of the otters binary (default release: what users get)
#   BIN=/path/otters  measure that binary instead of building
#   BASE=/path/otters an older binary measured beside (before/after in the same run)
#   KEEP_LOG=dir      run the registry at log level info and copy its log (one request a line) there
# Needs docker-registry, skopeo, curl, python3 (see shared/TESTING.md).
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-512}
rounds=${ROUNDS:-5}
profile=${PROFILE:-release}
if [ -z "${BIN:-}" ]; then
  cargo build --profile "$profile" --quiet
  BIN=$PWD/target/$profile/otters
fi
base=${BASE:-}
tmp=$(mktemp -d); reg_pid=""
trap '[ -n "$reg_pid" ] && kill $reg_pid 2>/dev/null; rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/reg" "$tmp/ctx"
level=error; [ -n "${KEEP_LOG:-}" ] && level=info
cat >"$tmp/reg/cfg.yml" <<YML
version: 0.1
log: {level: $level}
storage: {filesystem: {rootdirectory: $tmp/reg/data}}
http: {addr: 127.0.0.1:$port}
YML
docker-registry serve "$tmp/reg/cfg.yml" >"$tmp/reg/log" 2>&1 & reg_pid=$!
for _ in $(seq 200); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.05; done
head -c "$((size_mib << 20))" /dev/urandom >"$tmp/ctx/big.bin"
printf 'FROM scratch\nNAME bench\nADD big.bin\n' >"$tmp/ctx/Agentfile"
export DOCKER_CONFIG=$tmp/docker
ref=127.0.0.1:$port/bench/agent:1
OTTERS_HOME=$tmp/home "$BIN" build -q -t "$ref" "$tmp/ctx" >/dev/null
OTTERS_HOME=$tmp/home "$BIN" build -q -t bench:1 --output "type=oci-layout,dest=$tmp/layout" "$tmp/ctx" >/dev/null
# The floor of any client: curl uploading the big file alone (POST, one streamed PATCH, PUT with
# the digest), the requests both tools send for the layer that is nearly all of the image.
big_digest=sha256:$(sha256sum "$tmp/ctx/big.bin" | cut -d' ' -f1)
cat >"$tmp/raw.sh" <<'SH'
# raw.sh PORT FILE DIGEST: POST, one streamed PATCH of FILE, PUT ?digest=DIGEST.
set -euo pipefail
port=$1 file=$2 digest=$3
loc() { tr -d '\r' | awk 'tolower($1)=="location:"{print $2}'; }
abs() { case "$1" in http*) echo "$1" ;; *) echo "http://127.0.0.1:$port$1" ;; esac; }
l=$(abs "$(curl -fsS -X POST -D - -o /dev/null "http://127.0.0.1:$port/v2/bench/raw/blobs/uploads/" | loc)")
l=$(abs "$(curl -fsS -X PATCH -H 'Content-Type: application/octet-stream' -T "$file" -D - -o /dev/null "$l" | loc)")
case "$l" in *\?*) sep='&' ;; *) sep='?' ;; esac
curl -fsS -X PUT -o /dev/null "$l${sep}digest=$digest"
SH
contenders=("skopeo copy=skopeo copy --quiet --dest-tls-verify=false oci:$tmp/layout:bench:1 docker://$ref"
  "otters push=OTTERS_HOME=$tmp/home $BIN push -q $ref"
  "curl, the layer alone=bash $tmp/raw.sh $port $tmp/ctx/big.bin $big_digest")
[ -n "$base" ] && contenders+=("otters push (BASE)=OTTERS_HOME=$tmp/home $base push -q $ref")
mkdir -p bench/out
echo "uptime before: $(uptime)"
python3 - "$rounds" "$reg_pid" "$tmp/reg/data/docker/registry/v2" "$size_mib" "${contenders[@]}" <<'PY'
import json, os, resource, shutil, statistics, subprocess, sys, time
rounds, pid, v2, mib = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
contenders = [a.partition("=")[::2] for a in sys.argv[5:]]
tick = os.sysconf("SC_CLK_TCK")
def reg_cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
def kids():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
s = {n: {"wall": [], "client": [], "registry": []} for n, _ in contenders}
load0 = os.getloadavg()[0]
for r in range(rounds):
    k = r % len(contenders)
    for name, cmd in contenders[k:] + contenders[:k]:
        for d in ("blobs", "repositories"):
            shutil.rmtree(os.path.join(v2, d), ignore_errors=True)
        subprocess.run("sync", check=True)
        c0, g0, t0 = kids(), reg_cpu(), time.perf_counter()
        subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
        t1 = time.perf_counter()
        s[name]["wall"].append(t1 - t0)
        s[name]["client"].append(kids() - c0)
        s[name]["registry"].append(reg_cpu() - g0)
load1 = os.getloadavg()[0]
med = {n: {k: statistics.median(v) for k, v in d.items()} for n, d in s.items()}
sk = med["skopeo copy"]["wall"]
print(f"push {mib} MiB, medians of {rounds} alternating rounds (load average {load0:.1f} -> {load1:.1f}):")
for n, m in med.items():
    pairs = [o / k for o, k in zip(s[n]["wall"], s["skopeo copy"]["wall"])]
    print(f"  {n:20} {m['wall']:6.2f} s ({mib / m['wall']:4.0f} MiB/s)  ratio {m['wall'] / sk:.2f}x"
          f" (median pair {statistics.median(pairs):.2f}x)  client CPU {m['client']:.2f} s"
          f"  registry CPU {m['registry']:.2f} s")
json.dump({"samples": s, "medians": med, "load": [load0, load1]},
          open("bench/out/push.json", "w"), indent=1)
PY
echo "uptime after: $(uptime)"
repush=$(OTTERS_HOME=$tmp/home "$BIN" push -q --format json "$ref")
uploaded=$(echo "$repush" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["uploaded"]))')
echo "re-push of the unchanged image: blobs uploaded: $uploaded (goal 0)"
if [ -n "${KEEP_LOG:-}" ]; then mkdir -p "$KEEP_LOG" && cp "$tmp/reg/log" "$KEEP_LOG/registry.log"; fi
