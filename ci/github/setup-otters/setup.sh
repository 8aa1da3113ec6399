#!/usr/bin/env bash
# The setup-otters action's step (action.yml runs it with its inputs in the environment):
#   OTTERS_VERSION  version, fills {version} in OTTERS_URL
#   OTTERS_URL      archive URL template (.tar.gz with `otters` at its top level)
#   OTTERS_SHA256   the archive's expected SHA-256
# and the runner's GITHUB_PATH, GITHUB_OUTPUT, RUNNER_TEMP, RUNNER_TOOL_CACHE (the cache; default
# RUNNER_TEMP). Takes the archive from $RUNNER_TOOL_CACHE/otters/VERSION/SHA256/otters.tar.gz, or
# downloads it (and keeps it there for later jobs on the same runner); checks its SHA-256 on every
# use, cached or downloaded, on a private copy (the tool cache is shared by every job, and on a
# self-hosted runner by every workflow: whatever sits there may have been changed since it was
# put there), refuses a mismatch, unpacks that copy into this job's RUNNER_TEMP, checks that the
# binary runs, then writes `path=DIR` to GITHUB_OUTPUT and DIR to GITHUB_PATH.
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

cache="${RUNNER_TOOL_CACHE:-$RUNNER_TEMP}/otters/$version/$sha"
dir="$RUNNER_TEMP/otters-$version-$sha"
work=$(mktemp -d "$RUNNER_TEMP/setup-otters.XXXXXX")
trap 'rm -rf "$work"' EXIT
archive="$work/otters.tar.gz"
if [ -f "$cache/otters.tar.gz" ]; then
  # Copied first, then checked and unpacked: what is checked is what runs, whatever happens to
  # the cache meanwhile.
  cp "$cache/otters.tar.gz" "$archive" || fail "cannot read $cache/otters.tar.gz"
  got=$(sha256sum "$archive" | cut -d' ' -f1)
  [ "$got" = "$sha" ] || fail "the cached archive $cache/otters.tar.gz has SHA-256 $got, not $sha: the tool cache was changed after otters was put there; refusing to run it (remove $cache, then run the job again)"
  echo "otters $version from the tool cache: $cache (SHA-256 checked)"
else
  curl --fail --silent --show-error --location --proto '=https,http' --retry 3 --output "$archive" "$url" \
    || fail "cannot download $url"
  got=$(sha256sum "$archive" | cut -d' ' -f1)
  [ "$got" = "$sha" ] || fail "checksum mismatch for $url: expected $sha, got $got; refusing to install it"
  # Kept for later jobs (a whole file renamed into place); a cache that cannot be written costs
  # only the next download.
  if mkdir -p "$cache" && part=$(mktemp "$cache/.otters.tar.gz.XXXXXX") \
    && cp "$archive" "$part" && chmod 0644 "$part" && mv -f "$part" "$cache/otters.tar.gz"; then
    :
  else
    rm -f "${part:-}"
    echo "::warning title=setup-otters::cannot keep the archive in $cache; the next job downloads it again"
  fi
fi
mkdir -p "$work/unpacked"
tar -xzf "$archive" -C "$work/unpacked" --no-same-owner otters \
  || fail "$url has no otters binary at its top level"
[ -f "$work/unpacked/otters" ] && [ ! -L "$work/unpacked/otters" ] || fail "$url: otters is not a regular file"
chmod 0755 "$work/unpacked/otters"
rm -rf "$dir" && mv -T "$work/unpacked" "$dir"
"$dir/otters" version >/dev/null || fail "the installed otters does not run on this runner"
echo "path=$dir" >> "$GITHUB_OUTPUT"
echo "$dir" >> "$GITHUB_PATH"
echo "otters $version installed in $dir"
