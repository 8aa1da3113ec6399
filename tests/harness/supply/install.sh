#!/usr/bin/env bash
# Installs the packages the supply-chain harness drives, outside the checkout, every version pinned:
#
#   $OTTERS_HARNESS/npm   npm: package.json + package-lock.json of this directory (`npm ci`):
#                         @sigstore/verify and @sigstore/bundle (verify_bundle.mjs, keyless/verify_keyless.mjs),
#                         @sigstore/mock and @sigstore/protobuf-specs (keyless/serve.mjs)
#   $OTTERS_HARNESS/venv  PyPI: spdx-tools and cyclonedx-python-lib with its JSON schema validation
#                         (validate_sbom.py)
#
# OTTERS_HARNESS defaults to /tmp/otters-harness; the tests (tests/suite/support/harness.rs) look in
# the same place. Idempotent: a part already installed at its pinned versions is left alone.
# Needs node and npm, python3 with venv (.ci/install installs them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="${OTTERS_HARNESS:-/tmp/otters-harness}"
npm_dir="$root/npm"
venv="$root/venv"
spdx_tools=0.8.5
cyclonedx=11.12.0

for tool in node npm python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "install.sh: $tool is not installed" >&2; exit 1; }
done
mkdir -p "$root"

# npm: reinstalled whenever the lock file differs from the one installed (a stamp holds its hash).
want="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
stamp="$npm_dir/node_modules/.otters-harness"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "installing the harness's npm packages into $npm_dir" >&2
  rm -rf "$npm_dir"
  mkdir -p "$npm_dir"
  cp "$here/package.json" "$here/package-lock.json" "$npm_dir/"
  # The @sigstore packages declare node >= 22 and run on node 20: npm's EBADENGINE note is expected.
  npm ci --prefix "$npm_dir" --ignore-scripts --no-audit --no-fund --loglevel=error
  printf '%s\n' "$want" >"$stamp"
fi

# PyPI: its own venv, so the system python stays as it is.
if ! "$venv/bin/python" - "$spdx_tools" "$cyclonedx" 2>/dev/null <<'PY'
import importlib.metadata as meta, sys
import jsonschema, referencing  # the validator's JSON schema extra
sys.exit(meta.version("spdx-tools") != sys.argv[1] or meta.version("cyclonedx-python-lib") != sys.argv[2])
PY
then
  echo "installing spdx-tools $spdx_tools and cyclonedx-python-lib $cyclonedx into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "spdx-tools==$spdx_tools" "cyclonedx-python-lib[json-validation]==$cyclonedx"
fi
echo "supply harness ready in $root"
