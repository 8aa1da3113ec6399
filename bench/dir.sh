#!/usr/bin/env bash
# Directory ADD (issue 22): `otters build` of an agent that ADDs one directory of 32 files, for
# incompressible data (random bytes) and text-like data, against its floors measured in the same
# run: `tar -cf - DIR | openssl dgst -sha256` (reading and hashing the stream a layer holds) and
# `cp -r` + `sync -f` (a durable copy); `tar | gzip -6` (what one thread of gzip costs) beside
# them. Contenders run in alternating rounds (bench/alternate.py; median of ROUNDS, default 5).
# Prints medians, ratios to the floor, the layer's size and the load average.
# Usage: bash bench/dir.sh [SIZE_MIB]   (default 256; PROFILE=dist for the release-cutting
# profile, default `release`: what `cargo install --path .` gives users; BASE=/path/to/otters adds
# another binary, e.g. one built before a change, as a contender)
set -euo pipefail
size_mib=${1:-256}
profile=${PROFILE:-release}
rounds=${ROUNDS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --profile "$profile" --quiet --manifest-path "$root/Cargo.toml"
target_dir="$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
bin="$target_dir/$profile/otters"
work=$(mktemp -d "${TMPDIR:-/tmp}/otters-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$root/bench/out"
per_file=$((size_mib * 1024 * 1024 / 32))
for kind in random text; do
  ctx="$work/$kind"
  mkdir -p "$ctx/data"
  printf 'FROM scratch\nNAME dir\nMODEL m/m\nADD data\n' >"$ctx/Agentfile"
  for i in $(seq -w 1 32); do
    if [ "$kind" = random ]; then
      head -c "$per_file" /dev/urandom >"$ctx/data/f$i.bin"
    else
      # Text-like: words from a small vocabulary in random order (compresses about 3-4x).
      python3 - "$per_file" "$i" >"$ctx/data/f$i.txt" <<'PY'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(seed)
words = ("agent runtime model context weather city forecast rain sun wind north south "
         "report data layer image registry digest build store tool note").split()
out, size = [], 0
while size < n:
    line = " ".join(r.choice(words) for _ in range(12)) + "\n"
    out.append(line); size += len(line)
sys.stdout.write("".join(out)[:n])
PY
    fi
  done
done
sleep 3   # the hash cache only trusts files whose mtime is older than 2 s
for kind in random text; do
  ctx="$work/$kind"
  cat "$ctx"/data/* >/dev/null   # warm the page cache for every contender alike
  json="$root/bench/out/dir-$kind.json"
  base=()
  if [ -n "${BASE:-}" ]; then
    base=("otters build (BASE)=rm -rf $work/home-base ;; OTTERS_HOME=$work/home-base $BASE build -q $ctx")
  fi
  python3 "$root/bench/alternate.py" "$rounds" "$json" \
    "tar|sha256=tar -C $ctx -cf - data | openssl dgst -sha256" \
    "cp -r+sync=rm -rf $work/copy ;; cp -r $ctx/data $work/copy && sync -f $work/copy" \
    "tar|gzip-6=tar -C $ctx -cf - data | gzip -6 | openssl dgst -sha256" \
    "otters build=rm -rf $work/home ;; OTTERS_HOME=$work/home $bin build -q $ctx" \
    ${base[@]+"${base[@]}"}
  export OTTERS_HOME="$work/home"
  rm -rf "$work/home"
  "$bin" build -q -t dir:bench "$ctx" >/dev/null
  layer=$("$bin" inspect --format json dir:bench | python3 -c 'import json,sys; print([l["size"] for l in json.load(sys.stdin)["layers"] if l["title"]=="data"][0])')
  base_layer=0
  if [ -n "${BASE:-}" ]; then
    base_layer=$(OTTERS_HOME="$work/home-base" "$BASE" build -q -t dir:bench "$ctx" >/dev/null &&
      OTTERS_HOME="$work/home-base" "$BASE" inspect --format json dir:bench | python3 -c 'import json,sys; print([l["size"] for l in json.load(sys.stdin)["layers"] if l["title"]=="data"][0])')
  fi
  python3 - "$json" "$size_mib" "$kind" "$layer" "$base_layer" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["medians"]
mib, kind, layer, base_layer = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
print(f"== {kind} data, {mib} MiB in 32 files")
floor = max(res["tar|sha256"], res["cp -r+sync"])
for name, t in res.items():
    print(f"{name:24} median {t:8.3f} s  {mib / t:8.0f} MiB/s  {t / floor:6.2f}x floor")
print("floor = max(tar|sha256, cp -r + sync); goal: otters build <= 1.5x")
print(f"layer size            {layer / 2**20:.1f} MiB ({layer / (mib * 2**20):.3f} of the input)")
if base_layer:
    print(f"layer size (BASE)     {base_layer / 2**20:.1f} MiB ({base_layer / (mib * 2**20):.3f} of the input)")
PY
done
