#!/usr/bin/env bash
# Measures `otters lsp`: the criterion benchmark of the server-side time from didChange to the
# publishDiagnostics bytes (crates/otters-lsp/benches/lsp.rs), then the real binary driven over
# stdio (bench/lsp.py): the client-side round trip and the server's RSS with 50 open documents.
# Usage: bash bench/lsp.sh [PROFILE]   (default: release; `dist` as the other scripts use)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-release}
cargo bench -p otters-lsp --bench lsp -- --noplot 2>&1 | grep -E "^did_change|time:"
for d in target/criterion/did_change_to_publish_kubectl_*; do
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]+"/new/estimates.json")); print(sys.argv[1].split("/")[-1], "median %.1f µs" % (e["median"]["point_estimate"]/1000))' "$d"
done
cargo build --profile "$profile" --bin otters --quiet
python3 bench/lsp.py "target/$profile/otters" 300
