#!/usr/bin/env bash
# Build throughput: `otters build` of an agent with one large ADD against `cp` (with and without a
# final sync) and `sha256sum` of the same file on the same filesystem, measured in the same run with
# hyperfine (medians of 5 runs); then peak RSS and a no-op rebuild.
# Usage: bash bench/build.sh [SIZE_MIB]   (default 1024; needs hyperfine and GNU time)
set -euo pipefail
size_mib=${1:-1024}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --profile dist --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/dist/otters"
work=$(mktemp -d "${TMPDIR:-/tmp}/otters-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ctx" "$root/bench/out"
printf 'FROM scratch\nNAME big\nMODEL m/m\nADD big.bin\n' >"$work/ctx/Agentfile"
head -c $((size_mib * 1024 * 1024)) /dev/urandom >"$work/ctx/big.bin"
sleep 3   # the hash cache only trusts files whose mtime is older than 2 s
cat "$work/ctx/big.bin" >/dev/null   # warm the page cache for every contender alike
export OTTERS_HOME="$work/home"
json="$root/bench/out/build.json"
hyperfine --runs 5 --warmup 1 -N --export-json "$json" \
  --prepare "rm -f $work/copy.bin" -n cp "cp $work/ctx/big.bin $work/copy.bin" \
  --prepare "rm -f $work/copy.bin" -n "cp+sync" "sh -c 'cp $work/ctx/big.bin $work/copy.bin && sync -f $work/copy.bin'" \
  --prepare "true" -n sha256sum "sha256sum $work/ctx/big.bin" \
  --prepare "true" -n "openssl sha256" "openssl dgst -sha256 $work/ctx/big.bin" \
  --prepare "rm -rf $work/home" -n "otters build" "$bin build -q $work/ctx" \
  --prepare "true" -n "otters build (no-op)" "$bin build -q $work/ctx" >/dev/null
rm -rf "$work/home"
rss_kib=$(/usr/bin/time -f %M "$bin" build -q "$work/ctx" 2>&1 >/dev/null | tail -1)
python3 - "$json" "$size_mib" "$rss_kib" <<'PY'
import json, sys
res = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
mib, rss = int(sys.argv[2]), int(sys.argv[3])
for name, t in res.items():
    print(f"{name:22} median {t:8.3f} s  {mib / t:8.0f} MiB/s")
b = res["otters build"]
print(f"ratio build / cp        {b / res['cp']:.2f}x   (goal <= 1.5x)")
print(f"ratio build / cp+sync   {b / res['cp+sync']:.2f}x")
print(f"ratio build / sha256sum {b / res['sha256sum']:.2f}x")
print(f"ratio build / openssl   {b / res['openssl sha256']:.2f}x   (SHA-256 alone, with SHA-NI: the floor of any build)")
floor = max(res["openssl sha256"], res["cp+sync"])
print(f"ratio build / floor     {b / floor:.2f}x   (floor = max(SHA-256 alone, cp + sync): a durable content-addressed store; goal <= 1.2x)")
print(f"hash floor / cp         {res['openssl sha256'] / res['cp']:.2f}x   (above 1.5 means the cp goal cannot be met by any content-addressed store)")
print(f"ratio no-op / build     {res['otters build (no-op)'] / b:.3f}  (goal < 0.05)")
print(f"peak RSS of a build     {rss / 1024:.1f} MiB  (goal < 64 MiB)")
PY
