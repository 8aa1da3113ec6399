#!/usr/bin/env bash
# Measures `otters lint` as an editor runs it: process wall time on a typical file, against `cat`
# of the same file as the floor every process pays. Also runs the criterion front-end benchmark.
# Usage: bash bench/lint.sh   (needs hyperfine: apt-get install -y hyperfine)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --profile dist --quiet
bin=target/dist/otters
file=../shared/conformance/openotters/agents/kubectl/Agentfile
out=bench/out; mkdir -p "$out"
hyperfine --warmup 5 --runs 100 -N --export-json "$out/lint.json" \
  "cat $file" "$bin lint --format concise $file"
python3 - "$out/lint.json" <<'PY'
import json, sys
r = {x["command"].split()[0].split("/")[-1]: x for x in json.load(open(sys.argv[1]))["results"]}
cat, lint = r["cat"]["median"], r["otters"]["median"]
print(f"median: otters lint {lint*1000:.2f} ms, cat {cat*1000:.2f} ms, ratio {lint/cat:.1f}x")
PY
cargo bench --bench frontend -- --noplot 2>&1 | grep -E "time:|thrpt:|^frontend|^typical"
