#!/usr/bin/env bash
# The egress proxy of a confined run (issue 36): a MIB download (default 256) from a local server,
# directly and through the proxy's CONNECT tunnel, best of ROUNDS (default 5) each, alternating;
# then the resident memory with 100 tunnels open. Goals: through the proxy at >= 80% of direct
# speed; < 32 MiB resident with 100 connections. Results: docs/performance.md.
#
#   bash bench/egress.sh [MIB] [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
cargo run -q --release -p otters-run --example egress_proxy_bench -- "${1:-256}" "${2:-5}"
