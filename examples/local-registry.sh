#!/usr/bin/env bash
# A local OCI registry for the README tour, holding stand-ins for the images examples/hello names.
#
#   bash examples/local-registry.sh [ADDR]        start it (default 127.0.0.1:5000) and push the images
#   bash examples/local-registry.sh stop [ADDR]   stop it and delete what it stored
#
# It runs Debian's `docker-registry` (apt-get install docker-registry) in the background, with its
# storage in ${TMPDIR:-/tmp}/otters-tour-registry-PORT, and pushes two images with skopeo:
#   ADDR/openotters/runtime:latest     a shell-script runtime that calls no model: it prints what
#                                      it was given and writes reports/tour.md into the agent's
#                                      /reports mount (`otters run` runs it; `otters export`
#                                      refuses it: an export has no /bin/sh)
#   ADDR/openotters/tools/curl:latest  a stand-in `curl` that says it is one and fails
# Both follow the openotters bin contract (one gzip tar layer with the file, annotations
# io.openotters.bin.name / .path), for this machine's architecture. Build the example against them
# with `otters build --build-arg REGISTRY=ADDR/openotters …`. Nothing here needs the network.
# Needs: docker-registry, skopeo, sha256sum, tar, gzip.
set -euo pipefail

cmd=start
if [ "${1:-}" = stop ]; then
  cmd=stop
  shift
fi
addr=${1:-127.0.0.1:5000}
port=${addr##*:}
state=${TMPDIR:-/tmp}/otters-tour-registry-$port

if [ "$cmd" = stop ]; then
  if [ -f "$state/pid" ]; then
    kill "$(cat "$state/pid")" 2>/dev/null || true
  fi
  rm -rf "$state"
  echo "stopped the registry on $addr"
  exit 0
fi

for tool in docker-registry skopeo sha256sum tar gzip; do
  command -v "$tool" >/dev/null || {
    echo "local-registry.sh: \`$tool\` is missing (Debian: apt-get install docker-registry skopeo)" >&2
    exit 1
  }
done

answers() { (exec 3<>"/dev/tcp/${addr%:*}/$port") 2>/dev/null; }

mkdir -p "$state"
if [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null; then
  echo "the registry on $addr is already running"
else
  if answers; then
    echo "local-registry.sh: something else already listens on $addr; give another ADDR" >&2
    exit 1
  fi
  cat >"$state/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $state/data
  delete:
    enabled: true
http:
  addr: $addr
EOF
  docker-registry serve "$state/config.yml" >"$state/registry.log" 2>&1 </dev/null &
  echo $! >"$state/pid"
  for _ in $(seq 50); do
    answers && break
    kill -0 "$(cat "$state/pid")" 2>/dev/null || break
    sleep 0.1
  done
  answers || {
    echo "local-registry.sh: the registry did not start; its log:" >&2
    cat "$state/registry.log" >&2
    exit 1
  }
  echo "started a registry on $addr (storage in $state)"
fi

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac

# push_bin NAME REPO CONTENT: an OCI layout with one executable file NAME, copied to ADDR/REPO:latest.
push_bin() {
  local name=$1 repo=$2 content=$3 dir
  dir=$(mktemp -d "$state/image.XXXXXX")
  mkdir -p "$dir/rootfs" "$dir/blobs/sha256"
  printf '%s' "$content" >"$dir/rootfs/$name"
  chmod 755 "$dir/rootfs/$name"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$dir/rootfs" -cf "$dir/layer.tar" "$name"
  local diff_id
  diff_id=$(sha256sum <"$dir/layer.tar" | cut -d' ' -f1)
  gzip -n -c "$dir/layer.tar" >"$dir/layer.tar.gz"
  # blob FILE: moves FILE into the layout; prints "DIGEST SIZE".
  blob() {
    local d s
    d=$(sha256sum <"$1" | cut -d' ' -f1)
    s=$(stat -c %s "$1")
    mv "$1" "$dir/blobs/sha256/$d"
    echo "$d $s"
  }
  local layer config manifest
  read -r -a layer <<<"$(blob "$dir/layer.tar.gz")"
  printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/%s"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$arch" "$name" "$diff_id" >"$dir/config.json"
  read -r -a config <<<"$(blob "$dir/config.json")"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.openotters.bin.v1","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.title":"%s"}}],"annotations":{"io.openotters.bin.name":"%s","io.openotters.bin.path":"/"}}' \
    "${config[0]}" "${config[1]}" "${layer[0]}" "${layer[1]}" "$name" "$name" >"$dir/manifest.json"
  read -r -a manifest <<<"$(blob "$dir/manifest.json")"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$dir/oci-layout"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' \
    "${manifest[0]}" "${manifest[1]}" >"$dir/index.json"
  skopeo copy --quiet --dest-tls-verify=false "oci:$dir:latest" "docker://$addr/$repo:latest"
  rm -rf "$dir"
  echo "pushed $addr/$repo:latest"
}

# The runtime is called as `runtime serve --root ROOT --model MODEL` with PATH = the BIN directory
# only, so it uses shell builtins and nothing else.
push_bin runtime openotters/runtime '#!/bin/sh
# Tour runtime: a stand-in for a real agent runtime. It calls no model.
root=. model=unset
while [ $# -gt 0 ]; do
  case $1 in
    --root) root=$2; shift ;;
    --model) model=$2; shift ;;
  esac
  shift
done
echo "tour runtime: agent in $root, model $model (no model is called)"
for f in "$root"/etc/context/*.md; do echo "  context ${f##*/}"; done
for f in "$root"/usr/bin/*; do [ -x "$f" ] && echo "  tool ${f##*/}"; done
[ -d "$root/reports" ] || { echo "tour runtime: /reports is not mounted (run with -v ./reports:/reports)" >&2; exit 2; }
{
  echo "# Report from the tour runtime"
  echo
  echo "model: $model; max tokens: ${RUNTIME_MAX_TOKENS:-unset}; units: ${UNITS:-unset}"
  echo
  while IFS= read -r line; do echo "> $line"; done <"$root/etc/context/SOUL.md"
} >"$root/reports/tour.md"
echo "tour runtime: wrote reports/tour.md"
'
push_bin curl openotters/tools/curl '#!/bin/sh
echo "curl: a stand-in from examples/local-registry.sh; it fetches nothing" >&2
exit 1
'
