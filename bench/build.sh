#!/bin/sh
# Build-throughput benchmark: an agent with one large ADD, against cp and sha256sum of the same
# file on the same filesystem, plus peak RSS and a no-op rebuild.
#
# Usage: bench/build.sh [SIZE_MIB]   (default 1024). Needs GNU time at /usr/bin/time for RSS.
# Everything happens in a temp dir under $TMPDIR (same filesystem for input, copy and store).
set -eu
size_mib=${1:-1024}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/otters"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ctx"
printf 'FROM scratch\nNAME big\nMODEL m/m\nRUNTIME r:1\nADD big.bin\n' >"$work/ctx/Agentfile"
head -c $((size_mib * 1024 * 1024)) /dev/urandom >"$work/ctx/big.bin"
# The hash cache only remembers files whose mtime is older than 2 s.
sleep 3
cat "$work/ctx/big.bin" >/dev/null # warm the page cache for every contender alike

secs() { # run a command, print its wall time in seconds
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    echo "$e - $s" | bc
}

cp_t=$(secs cp "$work/ctx/big.bin" "$work/copy.bin")
rm -f "$work/copy.bin"
cpsync_t=$(secs sh -c "cp '$work/ctx/big.bin' '$work/copy.bin' && sync -f '$work/copy.bin'")
rm -f "$work/copy.bin"
sha_t=$(secs sha256sum "$work/ctx/big.bin")
export OTTERS_HOME="$work/home"
first_t=$(secs "$bin" build -q "$work/ctx")
noop_t=$(secs "$bin" build -q "$work/ctx")
rm -rf "$work/home"
rss_kib=$(/usr/bin/time -f %M "$bin" build -q "$work/ctx" 2>&1 >/dev/null | tail -1)

echo "input:                   ${size_mib} MiB ADD (one raw blob)"
echo "cp:                      ${cp_t} s"
echo "cp + sync -f:            ${cpsync_t} s"
echo "sha256sum:               ${sha_t} s"
echo "otters build (first):    ${first_t} s  (reads, hashes, writes and fsyncs the blob)"
echo "otters build (no-op):    ${noop_t} s"
echo "ratio build/cp:          $(echo "scale=2; $first_t / $cp_t" | bc)"
echo "ratio build/(cp+sync):   $(echo "scale=2; $first_t / $cpsync_t" | bc)"
echo "ratio no-op/first:       $(echo "scale=3; $noop_t / $first_t" | bc)"
echo "peak RSS (first build):  $((rss_kib / 1024)) MiB"
