#!/usr/bin/env bash
# Every figure of issue 22's goals in one run, each as a ratio to its floor measured in the same
# run, with the binary users get (`release` profile). Prints a markdown table for
# docs/performance.md: median of otters, median of the floor, ratio, goal, met?; with BASE=<an
# older otters binary>, a column with the older binary's ratio, measured in the same rounds.
#
#   figure                 otters                          floor (same run)
#   file ADD               build of one FILE_MIB file      max(openssl dgst -sha256, cp + sync -f)
#   dir ADD, random/text   build of 32 files, DIR_MIB      max(tar -cf - | openssl dgst -sha256, cp -r + sync -f)
#   lint                   lint --format concise kubectl   otters version (the binary's own start)
#   push                   push to docker-registry         skopeo copy oci-layout -> docker-registry
#   pull                   pull into an empty store        skopeo copy docker-registry -> oci-layout
#   no-op rebuild          build again, nothing changed    the first build (file ADD)
#   peak RSS               /usr/bin/time -f %M, largest of build (file, dir), push, pull: goal < 64 MiB
#
# Method: contenders run in alternating rounds (order rotated each round: a burst of load falls on
# all alike), median of ROUNDS (default 5; lint: LINT_ROUNDS, default 200, each process exec'd
# directly, no shell). Load average printed beside each figure. Every run of a build starts from
# an empty OTTERS_HOME (and, for push/pull, from an emptied registry).
#
# Usage: bash bench/all.sh
#   FILE_MIB=512 DIR_MIB=128 PUSH_MIB=512 ROUNDS=5 LINT_ROUNDS=200  sizes and rounds (defaults)
#   BASE=/path/to/old/otters   adds the older binary beside (before/after column)
#   BIN=/path/to/otters        measures that binary instead of building `cargo build --release`
# Needs python3, openssl, skopeo, docker-registry, curl and GNU time (.ci/install); not hyperfine.
# At the default sizes it takes about 5-10 minutes on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
file_mib=${FILE_MIB:-512}
dir_mib=${DIR_MIB:-128}
push_mib=${PUSH_MIB:-512}
rounds=${ROUNDS:-5}
lint_rounds=${LINT_ROUNDS:-200}
base=${BASE:-}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  target_dir="$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  BIN="$target_dir/release/otters"
fi
bin=$BIN
agentfile=$root/../shared/conformance/openotters/agents/kubectl/Agentfile
[ -f "$agentfile" ] || agentfile=$(find "$root/.." -path '*conformance*/kubectl/Agentfile' -print -quit)
work=$(mktemp -d "${TMPDIR:-/tmp}/otters-all.XXXXXX")
reg_pid=""
trap '[ -n "$reg_pid" ] && kill $reg_pid 2>/dev/null; rm -rf "$work"' EXIT
out=$root/bench/out/all
mkdir -p "$out"
results=$out/results.tsv
: >"$results"
alt() { python3 "$root/bench/alternate.py" "$@"; }
# record FIGURE JSON OTTERS_NAME FLOOR_EXPR GOAL_OP GOAL FLOOR_LABEL: one row of the table.
record() {
  python3 - "$@" >>"$results" <<'PY'
import json, sys
fig, path, name, floor_names, op, goal, label = sys.argv[1:8]
r = json.load(open(path))
m = r["medians"]
floor = max(m[f] for f in floor_names.split(","))
ratio = m[name] / floor
b = m.get(name + " (BASE)")
base = f"{b / floor:.2f}x" if b is not None else ""
met = ratio <= float(goal) if op == "<=" else ratio < float(goal)
load = f"{r['load'][0]:.1f}-{r['load'][1]:.1f}"
print("\t".join([fig, f"{m[name]:.4f}", label, f"{floor:.4f}", f"{ratio:.2f}x", f"{op} {goal}x",
                 "yes" if met else "**no**", base, load]))
PY
}
with_base() { # NAME CMD-with-@BIN@ -> contender args for otters and, if BASE, for BASE
  local name=$1 cmd=$2
  printf '%s\0' "$name=${cmd//@BIN@/$bin}"
  if [ -n "$base" ]; then
    local b=${cmd//@BIN@/$base}
    printf '%s\0' "$name (BASE)=${b//$work\/home/$work/home-base}"
  fi
}

echo "== preparing inputs in $work" >&2
mkdir -p "$work/file" "$work/random/data" "$work/text/data"
printf 'FROM scratch\nNAME file\nMODEL m/m\nADD big.bin\n' >"$work/file/Agentfile"
head -c $((file_mib << 20)) /dev/urandom >"$work/file/big.bin"
per_file=$((dir_mib * 1024 * 1024 / 32))
for kind in random text; do
  printf 'FROM scratch\nNAME dir\nMODEL m/m\nADD data\n' >"$work/$kind/Agentfile"
done
for i in $(seq -w 1 32); do
  head -c "$per_file" /dev/urandom >"$work/random/data/f$i.bin"
  # Text-like: words of a small vocabulary in random order (gzip -6 makes it about 0.17 of its size).
  python3 - "$per_file" "$i" >"$work/text/data/f$i.txt" <<'PY'
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
done
sleep 3 # the hash cache only trusts files whose mtime is older than 2 s
cat "$work"/file/big.bin "$work"/*/data/* >/dev/null # warm the page cache for everyone alike

echo "== file ADD, $file_mib MiB" >&2
mapfile -d '' extra < <(with_base "otters build" "rm -rf $work/home ;; OTTERS_HOME=$work/home @BIN@ build -q $work/file")
alt "$rounds" "$out/file.json" \
  "openssl sha256=openssl dgst -sha256 $work/file/big.bin" \
  "cp+sync=rm -f $work/copy.bin ;; cp $work/file/big.bin $work/copy.bin && sync -f $work/copy.bin" \
  "${extra[@]}" >&2
record "file ADD ($file_mib MiB)" "$out/file.json" "otters build" "openssl sha256,cp+sync" "<=" 1.2 "max(openssl sha256, cp+sync)"

echo "== no-op rebuild" >&2
rm -rf "$work/home" "$work/home-base"
OTTERS_HOME=$work/home "$bin" build -q "$work/file" >/dev/null
[ -n "$base" ] && OTTERS_HOME=$work/home-base "$base" build -q "$work/file" >/dev/null
mapfile -d '' extra < <(with_base "otters build (no-op)" "OTTERS_HOME=$work/home @BIN@ build -q $work/file")
alt "$rounds" "$out/noop.json" "${extra[@]}" >&2
python3 - "$out/file.json" "$out/noop.json" >"$out/noop-merged.json" <<'PY'
import json, sys
first, noop = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
m = dict(noop["medians"])
m["first build"] = first["medians"]["otters build"]
if "otters build (BASE)" in first["medians"] and "otters build (no-op) (BASE)" in m:
    # The BASE ratio is taken to BASE's own first build.
    m["otters build (no-op) (BASE)"] *= m["first build"] / first["medians"]["otters build (BASE)"]
print(json.dumps({"medians": m, "load": noop["load"]}))
PY
record "no-op rebuild" "$out/noop-merged.json" "otters build (no-op)" "first build" "<" 0.05 "first build (file ADD)"

for kind in random text; do
  echo "== dir ADD, $kind, $dir_mib MiB in 32 files" >&2
  mapfile -d '' extra < <(with_base "otters build" "rm -rf $work/home ;; OTTERS_HOME=$work/home @BIN@ build -q $work/$kind")
  alt "$rounds" "$out/dir-$kind.json" \
    "tar|sha256=tar -C $work/$kind -cf - data | openssl dgst -sha256" \
    "cp -r+sync=rm -rf $work/copy ;; cp -r $work/$kind/data $work/copy && sync -f $work/copy" \
    "${extra[@]}" >&2
  record "dir ADD, $kind ($dir_mib MiB)" "$out/dir-$kind.json" "otters build" "tar|sha256,cp -r+sync" "<=" 1.5 "max(tar|sha256, cp -r+sync)"
  rm -rf "$work/home"
  OTTERS_HOME=$work/home "$bin" build -q -t dir:bench "$work/$kind" >/dev/null
  size=$(OTTERS_HOME=$work/home "$bin" inspect --format json dir:bench | python3 -c 'import json,sys; print([l["size"] for l in json.load(sys.stdin)["layers"] if l["title"]=="data"][0])')
  echo "layer size, $kind: $size bytes ($(python3 -c "print(f'{$size / ($dir_mib * 2**20):.3f}')") of the input)" >>"$out/sizes.txt"
done
rm -rf "$work/copy"

echo "== lint vs otters version, $lint_rounds alternating rounds" >&2
python3 - "$lint_rounds" "$out/lint.json" "$bin" "$agentfile" "$base" <<'PY' >&2
import json, os, statistics, subprocess, sys, time
rounds, path, binary, agentfile, base = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
cmds = {"otters version": [binary, "version"],
        "otters lint": [binary, "lint", "--format", "concise", agentfile]}
if base:
    cmds["otters lint (BASE)"] = [base, "lint", "--format", "concise", agentfile]
    cmds["otters version (BASE)"] = [base, "version"]
names = list(cmds)
samples = {n: [] for n in names}
load0 = os.getloadavg()[0]
for _ in range(5):
    for n in names:
        subprocess.run(cmds[n], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for r in range(rounds):
    k = r % len(names)
    for n in names[k:] + names[:k]:
        t0 = time.perf_counter()
        subprocess.run(cmds[n], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples[n].append(time.perf_counter() - t0)
m = {n: statistics.median(s) for n, s in samples.items()}
if base:
    # BASE's lint is taken as a ratio to BASE's own start, scaled onto this binary's.
    m["otters lint (BASE)"] *= m["otters version"] / m["otters version (BASE)"]
for n in names:
    print(f"{n:24} median {m[n] * 1000:8.2f} ms")
json.dump({"medians": m, "load": [load0, os.getloadavg()[0]]}, open(path, "w"))
PY
record "lint (kubectl, 451 lines)" "$out/lint.json" "otters lint" "otters version" "<=" 1.5 "otters version"

echo "== push and pull, $push_mib MiB, against skopeo copy" >&2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/reg" "$work/push"
cat >"$work/reg/cfg.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $work/reg/data}}
http: {addr: 127.0.0.1:$port}
YML
docker-registry serve "$work/reg/cfg.yml" >"$work/reg/log" 2>&1 &
reg_pid=$!
for _ in $(seq 200); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.05; done
head -c $((push_mib << 20)) /dev/urandom >"$work/push/big.bin"
printf 'FROM scratch\nNAME bench\nADD big.bin\n' >"$work/push/Agentfile"
ref=127.0.0.1:$port/bench/agent:1
export DOCKER_CONFIG=$work/docker
OTTERS_HOME=$work/home-push "$bin" build -q -t "$ref" "$work/push" >/dev/null
OTTERS_HOME=$work/home-push "$bin" build -q -t bench:1 --output "type=oci-layout,dest=$work/layout" "$work/push" >/dev/null
[ -n "$base" ] && OTTERS_HOME=$work/home-push-base "$base" build -q -t "$ref" "$work/push" >/dev/null
wipe="rm -rf $work/reg/data/docker/registry/v2/blobs $work/reg/data/docker/registry/v2/repositories"
extra=("otters push=$wipe ;; OTTERS_HOME=$work/home-push $bin push -q $ref")
[ -n "$base" ] && extra+=("otters push (BASE)=$wipe ;; OTTERS_HOME=$work/home-push-base $base push -q $ref")
alt "$rounds" "$out/push.json" \
  "skopeo copy=$wipe ;; skopeo copy --quiet --dest-tls-verify=false oci:$work/layout:bench:1 docker://$ref" \
  "${extra[@]}" >&2
record "push ($push_mib MiB)" "$out/push.json" "otters push" "skopeo copy" "<=" 0.8 "skopeo copy (layout -> registry)"
# The registry now holds the image (the last run pushed it, whoever it was); pull reads it.
OTTERS_HOME=$work/home-push "$bin" push -q "$ref" >/dev/null
extra=("otters pull=rm -rf $work/pulled ;; OTTERS_HOME=$work/pulled $bin pull -q $ref")
[ -n "$base" ] && extra+=("otters pull (BASE)=rm -rf $work/pulled ;; OTTERS_HOME=$work/pulled $base pull -q $ref")
alt "$rounds" "$out/pull.json" \
  "skopeo copy=rm -rf $work/skopeo ;; skopeo copy --quiet --src-tls-verify=false docker://$ref oci:$work/skopeo:bench" \
  "${extra[@]}" >&2
record "pull ($push_mib MiB)" "$out/pull.json" "otters pull" "skopeo copy" "<=" 0.8 "skopeo copy (registry -> layout)"

echo "== peak RSS" >&2
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
rm -rf "$work/home"
r_file=$(OTTERS_HOME=$work/home rss "$bin" build -q "$work/file")
rm -rf "$work/home"
r_dir=$(OTTERS_HOME=$work/home rss "$bin" build -q "$work/text")
rm -rf "$work/reg/data/docker/registry/v2/blobs" "$work/reg/data/docker/registry/v2/repositories"
r_push=$(OTTERS_HOME=$work/home-push rss "$bin" push -q "$ref")
rm -rf "$work/pulled"
r_pull=$(OTTERS_HOME=$work/pulled rss "$bin" pull -q "$ref")
peak=$(printf '%s\n' "$r_file" "$r_dir" "$r_push" "$r_pull" | sort -n | tail -1)
printf 'peak RSS (KiB): file build %s, dir build (text) %s, push %s, pull %s\n' "$r_file" "$r_dir" "$r_push" "$r_pull" >>"$out/sizes.txt"

python3 - "$results" "$peak" "$base" "$(uptime)" "$(cat "$out/sizes.txt")" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
peak, base, up, notes = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
head = "| figure | otters (median) | floor | floor (median) | ratio | goal | met? |"
sep = "|---|---|---|---|---|---|---|"
if base:
    head += " BASE ratio |"; sep += "---|"
head += " load avg |"; sep += "---|"
print(head); print(sep)
unit = lambda s: f"{float(s) * 1000:.2f} ms" if float(s) < 0.1 else f"{float(s):.3f} s"
for fig, t, label, floor, ratio, goal, met, b, load in rows:
    label = label.replace("|", "\\|")  # a pipe inside a cell would end it
    line = f"| {fig} | {unit(t)} | {label} | {unit(floor)} | {ratio} | {goal} | {met} |"
    if base:
        line += f" {b} |"
    print(line + f" {load} |")
cells = f"| peak RSS (largest of build, dir build, push, pull) | {peak / 1024:.1f} MiB | — | — | — | < 64 MiB | {'yes' if peak < 64 * 1024 else '**no**'} |"
print(cells + (" |" if base else "") + " |")
print()
print(notes)
print(f"uptime at the end: {up.strip()}")
PY
