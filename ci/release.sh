#!/usr/bin/env bash
# Builds a release archive reproducibly: otters-VERSION-TARGET.tar.gz with the `otters` binary at
# its top level, and its SHA-256 in otters-VERSION-TARGET.tar.gz.sha256 (the `sha256` input of
# ci/github/setup-otters). The same binary gives the same archive bytes: sorted entries, owner and
# group 0, mode 0755, mtime SOURCE_DATE_EPOCH (default: the last commit's time), gzip without a
# name or time.
#   ci/release.sh [OUT_DIR]        (default dist/)
#   OTTERS_BIN=path/to/otters ci/release.sh   packages that binary instead of building one
#   OTTERS_VSIX=1 ci/release.sh    also packages the VS Code extension: otters-agentfile-VERSION.vsix
#                                  and its .sha256 (needs Node.js; runs `npm ci` in editors/vscode)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
version=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "otters"))')
target=${OTTERS_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}
if [ -z "${OTTERS_BIN:-}" ]; then
  cargo build --release --locked --bin otters
  OTTERS_BIN="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/otters"
fi
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -m 0755 "$OTTERS_BIN" "$stage/otters"
mkdir -p "$out"
name="otters-$version-$target.tar.gz"
tar --sort=name --owner=0 --group=0 --numeric-owner --mode=0755 --mtime="@$epoch" \
    --format=gnu -C "$stage" -cf - otters | gzip -n -9 > "$out/$name.tmp"
mv "$out/$name.tmp" "$out/$name"
(cd "$out" && sha256sum "$name" > "$name.sha256")
cat "$out/$name.sha256"
if [ "${OTTERS_VSIX:-}" = 1 ]; then
  vsix="otters-agentfile-$version.vsix"
  [ -x editors/vscode/node_modules/.bin/vsce ] || (cd editors/vscode && npm ci --no-audit --no-fund)
  bash editors/vscode/package.sh "$out/$vsix.tmp" >&2
  mv "$out/$vsix.tmp" "$out/$vsix"
  (cd "$out" && sha256sum "$vsix" > "$vsix.sha256")
  cat "$out/$vsix.sha256"
fi
