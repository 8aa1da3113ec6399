#!/usr/bin/env bash
# Copying an agent with a 512 MiB ADD between two local registries: `otters copy` (each blob
# streamed from the source's GET into the destination's upload, hashed on the way; a fresh home)
# against `skopeo copy docker:// docker://` of the same image, in the same run, alternated, each
# into an emptied destination registry. Both verify every digest. Also reports otters' peak RSS
# (GNU time), to show memory stays bounded whatever the layer size, and the load average.
# Goal (issue 21): otters <= 1.2x skopeo.
# Usage: bash bench/copy.sh [SIZE_MIB]
#   PROFILE=release   cargo profile of the otters binary (default dist; release compiles quicker)
#   RUNS=7            rounds (default 7)
#   LAYERS=8          the SIZE_MIB split into that many files, each its own ADD (a layer of
#                     SIZE_MIB/LAYERS MiB): an image with many layers (default 1)
#   BIN=/path/otters  measure that binary instead of building
#   BASE=/path/otters an older binary measured beside, in the same rounds (before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-512}
profile=${PROFILE:-dist}
layers=${LAYERS:-1}
base=${BASE:-}
if [ -z "${BIN:-}" ]; then
  cargo build --profile "$profile" --quiet
  BIN=$PWD/target/$profile/otters
fi
bin=$BIN
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
printf 'FROM scratch\nNAME bench\n' > "$tmp/ctx/Agentfile"
for i in $(seq "$layers"); do
  head -c "$(((size_mib << 20) / layers))" /dev/urandom > "$tmp/ctx/big$i.bin"
  printf 'ADD big%s.bin\n' "$i" >> "$tmp/ctx/Agentfile"
done
src="127.0.0.1:$p1/bench/agent:1"
dst="127.0.0.1:$p2/bench/agent:1"
OTTERS_HOME=$tmp/home "$bin" build -q -t "$src" --push "$tmp/ctx" >/dev/null

# Emptying the destination's storage between runs (the registry keeps no cache in this config).
clean() { rm -rf "$tmp/r2/data" "$tmp/copyhome"; }
# Alternated rounds (the contenders' order rotated each round), so a change of load on the shared
# machine hits every side alike; medians of each side and of the per-round ratios.
runs=${RUNS:-7}
times=$tmp/times; : > "$times"
timed() { # name command...
  clean
  local t0 t1; t0=$(date +%s.%N); "${@:2}" >/dev/null; t1=$(date +%s.%N)
  echo "$1 $(python3 -c "print($t1 - $t0)")" >> "$times"
}
skopeo_copy() { skopeo copy --quiet --src-tls-verify=false --dest-tls-verify=false "docker://$src" "docker://$dst"; }
otters_copy() { env OTTERS_HOME="$tmp/copyhome" "$bin" copy -q "$src" "$dst"; }
base_copy() { env OTTERS_HOME="$tmp/copyhome" "$base" copy -q "$src" "$dst"; }
sides=(skopeo otters); [ -n "$base" ] && sides+=(base)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$runs"); do
  n=${#sides[@]}
  for j in $(seq 0 $((n - 1))); do
    side=${sides[$(((i + j) % n))]}
    timed "$side" "${side}_copy"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
clean
rss=$( { /usr/bin/time -f '%M' env OTTERS_HOME="$tmp/copyhome" "$bin" copy -q "$src" "$dst" >/dev/null; } 2>&1 | tail -1)
python3 - "$times" "$size_mib" "$rss" "$load_before" "$load_after" "$layers" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
side = lambda name: [float(t) for n, t in rows if n == name]
o, s, b = side("otters"), side("skopeo"), side("base")
mib, rss, layers = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[6])
mo, ms = st.median(o), st.median(s)
pairs = st.median([a / c for a, c in zip(o, s)])
what = f"{mib} MiB" if layers == 1 else f"{mib} MiB in {layers} layers"
print(f"copy {what} registry to registry, {len(o)} alternated rounds: otters median {mo:.2f} s ({mib/mo:.0f} MiB/s), "
      f"skopeo copy median {ms:.2f} s ({mib/ms:.0f} MiB/s); ratio of medians {mo/ms:.2f}x, median of pair ratios {pairs:.2f}x (goal <= 1.2x)")
print(f"otters runs: {' '.join(f'{t:.2f}' for t in o)}; skopeo runs: {' '.join(f'{t:.2f}' for t in s)}")
if b:
    mb = st.median(b)
    print(f"BASE median {mb:.2f} s ({mib/mb:.0f} MiB/s), {mb/ms:.2f}x skopeo; otters/BASE: ratio of medians {mo/mb:.2f}x, "
          f"median of pair ratios {st.median([a / c for a, c in zip(o, b)]):.2f}x")
    print(f"BASE runs: {' '.join(f'{t:.2f}' for t in b)}")
print(f"load average before {sys.argv[4]}, after {sys.argv[5]}; otters peak RSS {rss/1024:.0f} MiB")
PY
