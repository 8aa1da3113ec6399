#!/usr/bin/env bash
# Packages the VS Code extension as a .vsix at OUT, as the release does (ci/release.sh with
# OTTERS_VSIX=1) and as editors/test.sh checks it. Its node_modules must be installed (`npm ci`).
#   editors/vscode/package.sh OUT.vsix
set -euo pipefail
out=$(realpath -m "$1")
cd "$(dirname "$0")"
[ -x node_modules/.bin/vsce ] || { echo "editors/vscode: run \`npm ci\` there first" >&2; exit 2; }
./node_modules/.bin/vsce package --skip-license --out "$out"
