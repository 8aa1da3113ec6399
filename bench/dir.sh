#!/usr/bin/env bash
# Directory ADD (issue 22): `otters build` of an agent that ADDs one directory of 32 files, for
# incompressible data (random bytes) and text-like data, against its floors measured in the same
# run with hyperfine (medians): `tar -cf - DIR | openssl dgst -sha256` (reading and hashing the
# stream a layer holds) and `cp -r` + `sync -f` (a durable copy); `tar | gzip -6` (what one
# thread of gzip costs) beside them. Prints medians, ratios to the floor and the layer's size.
# Usage: bash bench/dir.sh [SIZE_MIB]   (default 256; PROFILE=dist for the release-cutting
# profile, default `release`: what `cargo install --path .` gives users)
set -euo pipefail
size_mib=${1:-256}
profile=${PROFILE:-release}
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
export OTTERS_HOME="$work/home"
for kind in random text; do
  ctx="$work/$kind"
  cat "$ctx"/data/* >/dev/null   # warm the page cache for every contender alike
  json="$root/bench/out/dir-$kind.json"
  hyperfine --runs 5 --warmup 1 --export-json "$json" \
    --prepare "true" -n "tar|sha256" "tar -C $ctx -cf - data | openssl dgst -sha256" \
    --prepare "rm -rf $work/copy" -n "cp -r+sync" "cp -r $ctx/data $work/copy && sync -f $work/copy" \
    --prepare "true" -n "tar|gzip-6" "tar -C $ctx -cf - data | gzip -6 | openssl dgst -sha256" \
    --prepare "rm -rf $work/home" -n "otters build" "$bin build -q $ctx" >/dev/null
  rm -rf "$work/home"
  "$bin" build -q -t dir:bench "$ctx" >/dev/null
  layer=$("$bin" inspect --format json dir:bench | python3 -c 'import json,sys; print([l["size"] for l in json.load(sys.stdin)["layers"] if l["title"]=="data"][0])')
  python3 - "$json" "$size_mib" "$kind" "$layer" <<'PY'
import json, sys
res = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
mib, kind, layer = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
print(f"== {kind} data, {mib} MiB in 32 files")
for name, t in res.items():
    print(f"{name:14} median {t:8.3f} s  {mib / t:8.0f} MiB/s")
floor = max(res["tar|sha256"], res["cp -r+sync"])
b = res["otters build"]
print(f"ratio build / floor   {b / floor:.2f}x   (floor = max(tar|sha256, cp -r + sync); goal <= 1.5x)")
print(f"ratio build / tar|gzip-6 {b / res['tar|gzip-6']:.2f}x")
print(f"layer size            {layer / 2**20:.1f} MiB ({layer / (mib * 2**20):.2f} of the input)")
PY
done
