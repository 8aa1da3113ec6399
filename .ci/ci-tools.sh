#!/usr/bin/env bash
# Installs the second readers tests/suite/ci_reports.rs, ci_files.rs and schemas.rs use (the
# last: check-jsonschema over otters' own schemas/v1, Python's tomllib), outside the checkout
# (idempotent; every version pinned):
#   PyPI -> $OTTERS_CI_TOOLS/venv: check-jsonschema 0.39.0 (its vendored GitHub Actions, GitHub
#           workflow and GitLab CI schemas), zizmor 1.32.0 (GitHub Actions audits, run --offline),
#           junitparser 5.0.3 (reads JUnit XML), markdown-it-py 4.0.0 (a CommonMark parser: the
#           Markdown of `otters diff`)
#   npm  -> $OTTERS_CI_TOOLS/sarif-2.1.0.json: the SARIF 2.1.0 JSON schema, as shipped in npm
#           @microsoft/jest-sarif 1.0.0-beta.0 (lib/schemas/sarif-2.1.0-rtm.5.json)
set -euo pipefail
TOOLS=${OTTERS_CI_TOOLS:-/tmp/otters-ci-tools}
mkdir -p "$TOOLS"
if ! "$TOOLS/venv/bin/python" -c 'import importlib.metadata as m
assert m.version("check-jsonschema") == "0.39.0" and m.version("zizmor") == "1.32.0" and m.version("junitparser") == "5.0.3" and m.version("markdown-it-py") == "4.0.0"' 2>/dev/null; then
  python3 -m venv "$TOOLS/venv"
  "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check \
    'check-jsonschema==0.39.0' 'zizmor==1.32.0' 'junitparser==5.0.3' 'markdown-it-py==4.0.0'
fi
if [ ! -s "$TOOLS/sarif-2.1.0.json" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent @microsoft/jest-sarif@1.0.0-beta.0 >/dev/null \
     && tar xzf microsoft-jest-sarif-1.0.0-beta.0.tgz package/lib/schemas/sarif-2.1.0-rtm.5.json)
  cp "$work/package/lib/schemas/sarif-2.1.0-rtm.5.json" "$TOOLS/sarif-2.1.0.json.tmp"
  mv "$TOOLS/sarif-2.1.0.json.tmp" "$TOOLS/sarif-2.1.0.json"
fi
echo "ci tools ready: $TOOLS"
