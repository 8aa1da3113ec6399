#!/usr/bin/env bash
# The egress proxy of a confined run (issue 36): a MIB download (default 256) from a local server,
# directly and through the proxy's CONNECT tunnel, best of ROUNDS (default 5) each, alternating;
# the CPU the process kept busy in each; then the resident memory with 100 tunnels open. Goals:
# through the proxy at >= 80% of direct speed; < 32 MiB resident with 100 connections.
# Where HAProxy is installed (apt-get install -y haproxy), the same download also goes through it
# (mode tcp, splice forced in both directions) as the reference: what a mature relay reaches on this
# machine. Results: docs/performance.md.
#
#   bash bench/egress.sh [MIB] [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; kernel $(uname -r)"
cargo build -q --release -p otters-run --example egress_proxy_bench
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
if command -v haproxy >/dev/null; then
  work=$(mktemp -d)
  trap 'kill "$(cat "$work/pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$work"' EXIT
  server=$(free_port)
  relay=$(free_port)
  cat >"$work/haproxy.cfg" <<CFG
global
  maxconn 1000
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option splice-request
  option splice-response
frontend bench
  bind 127.0.0.1:$relay
  default_backend server
backend server
  server s 127.0.0.1:$server
CFG
  haproxy -D -p "$work/pid" -f "$work/haproxy.cfg"
  echo "$(haproxy -v | head -1 | cut -d' ' -f1-3)"
  EGRESS_BENCH_PORT=$server EGRESS_BENCH_RELAY=127.0.0.1:$relay \
    target/release/examples/egress_proxy_bench "${1:-256}" "${2:-5}"
else
  echo "haproxy not installed: no reference relay"
  target/release/examples/egress_proxy_bench "${1:-256}" "${2:-5}"
fi
