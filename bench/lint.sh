#!/usr/bin/env bash
# Measures `otters lint` as an editor runs it: process wall time on a typical file, against `cat`
# of the same file (the floor every process pays) and `otters version` (the binary's own start,
# issue 22's floor: goal lint <= 1.5x), in one hyperfine run. Also runs the criterion front-end
# benchmark.
# Usage: bash bench/lint.sh   (needs hyperfine: apt-get install -y hyperfine; PROFILE=release
# measures the profile `cargo install --path .` gives users, default dist)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-dist}
cargo build --profile "$profile" --quiet
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
bin="$target_dir/$profile/otters"
file=../shared/conformance/openotters/agents/kubectl/Agentfile
out=bench/out; mkdir -p "$out"
hyperfine --warmup 5 --runs 100 -N --export-json "$out/lint.json" \
  -n cat "cat $file" -n version "$bin version" -n lint "$bin lint --format concise $file"
python3 - "$out/lint.json" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
cat, version, lint = r["cat"], r["version"], r["lint"]
print(f"median: otters lint {lint*1000:.2f} ms, otters version {version*1000:.2f} ms, cat {cat*1000:.2f} ms")
print(f"ratio lint / version {lint/version:.2f}x (goal <= 1.5x), lint / cat {lint/cat:.1f}x")
PY
cargo bench --bench frontend -- --noplot 2>&1 | grep -E "time:|thrpt:|^frontend|^typical"
