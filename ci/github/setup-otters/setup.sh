#!/usr/bin/env bash
# The setup-otters action's step (action.yml runs it with its inputs in the environment):
#   OTTERS_VERSION  version, fills {version} in OTTERS_URL
#   OTTERS_URL      archive URL template (.tar.gz with `otters` at its top level)
#   OTTERS_SHA256   the archive's expected SHA-256
# and the runner's GITHUB_PATH, GITHUB_OUTPUT, RUNNER_TEMP, RUNNER_TOOL_CACHE (the cache; default
# RUNNER_TEMP). Downloads, refuses a checksum mismatch, unpacks into
# $RUNNER_TOOL_CACHE/otters/VERSION/SHA256 (reused by later jobs on the same runner), checks that
# the binary runs, then writes `path=DIR` to GITHUB_OUTPUT and DIR to GITHUB_PATH.
set -euo pipefail

fail() { echo "::error title=setup-otters::$*"; exit 1; }

version=${OTTERS_VERSION:-}
sha=${OTTERS_SHA256:-}
url=${OTTERS_URL:-}
[[ "$version" =~ ^[0-9A-Za-z._+-]+$ ]] || fail "input version must be a version such as 0.1.0, not '$version'"
sha=$(printf '%s' "$sha" | tr 'A-F' 'a-f')
[[ "$sha" =~ ^[0-9a-f]{64}$ ]] || fail "input sha256 must be the archive's SHA-256 (64 hex digits); ci/release.sh prints it"
[ -n "$url" ] || fail "input url is empty"
url=${url//\{version\}/$version}
case "$url" in
  https://* | http://127.0.0.1[:/]* | http://localhost[:/]*) ;;
  *) fail "refusing to download over plain HTTP from a host that is not this machine: $url" ;;
esac
: "${GITHUB_PATH:?not set: run this inside GitHub Actions}"
: "${GITHUB_OUTPUT:?not set: run this inside GitHub Actions}"
: "${RUNNER_TEMP:?not set: run this inside GitHub Actions}"

dir="${RUNNER_TOOL_CACHE:-$RUNNER_TEMP}/otters/$version/$sha"
if [ -x "$dir/otters" ]; then
  echo "otters $version from the tool cache: $dir"
else
  work=$(mktemp -d "$RUNNER_TEMP/setup-otters.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  archive="$work/otters.tar.gz"
  curl --fail --silent --show-error --location --proto '=https,http' --retry 3 --output "$archive" "$url" \
    || fail "cannot download $url"
  got=$(sha256sum "$archive" | cut -d' ' -f1)
  [ "$got" = "$sha" ] || fail "checksum mismatch for $url: expected $sha, got $got; refusing to install it"
  mkdir -p "$work/unpacked"
  tar -xzf "$archive" -C "$work/unpacked" --no-same-owner otters \
    || fail "$url has no otters binary at its top level"
  [ -f "$work/unpacked/otters" ] && [ ! -L "$work/unpacked/otters" ] || fail "$url: otters is not a regular file"
  chmod 0755 "$work/unpacked/otters"
  mkdir -p "$(dirname "$dir")"
  rm -rf "$dir.tmp" && mv "$work/unpacked" "$dir.tmp" && mv -T "$dir.tmp" "$dir"
fi
"$dir/otters" version >/dev/null || fail "the installed otters does not run on this runner"
echo "path=$dir" >> "$GITHUB_OUTPUT"
echo "$dir" >> "$GITHUB_PATH"
echo "otters $version installed in $dir"
