#!/usr/bin/env bash
# The editor support's tests (issue 10): the tree-sitter grammar (generated parser up to date,
# corpus test, every Agentfile of the conformance corpus parsed without ERROR/MISSING, the error
# samples not), the VS Code extension (TextMate scopes, client, .vsix contents) and the Neovim
# package (headless). Installs what it needs: tree-sitter-cli from crates.io into a cache dir,
# npm packages (pinned by package-lock.json) into editors/*/node_modules.
#
#   bash editors/test.sh
#
# OTTERS_EDITORS_CACHE (default ~/.cache/otters-editors) holds the tree-sitter CLI and compiled
# parsers; OTTERS_CONFORMANCE (default ../shared/conformance) the corpus. Under CI (CI set) a
# missing corpus or Neovim is a failure; elsewhere their checks are skipped with a note.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cache="${OTTERS_EDITORS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otters-editors}"
corpus="${OTTERS_CONFORMANCE:-$repo/../shared/conformance}"
grammar="$here/tree-sitter-agentfile"
vscode="$here/vscode"
ts_version=0.27.1
# The ABI Neovim 0.7-0.10, Helix and Zed all load; tree-sitter-cli 0.27 defaults to 15.
ts_abi=14

step() { printf '== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

for tool in node npm cc; do
  command -v "$tool" >/dev/null 2>&1 ||
    fail "$tool is required (Debian: apt-get install nodejs npm gcc)"
done
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ── Tools ──────────────────────────────────────────────────────────────────────────────────
ts="$cache/tree-sitter-cli-$ts_version/bin/tree-sitter"
if [ ! -x "$ts" ]; then
  step "installing tree-sitter-cli $ts_version (crates.io; a few minutes, once)"
  command -v cargo >/dev/null 2>&1 || fail "cargo is required to install tree-sitter-cli"
  cargo install --quiet --locked tree-sitter-cli --version "$ts_version" \
    --root "$cache/tree-sitter-cli-$ts_version"
fi
"$ts" --version
# Where the CLI compiles parsers, and its configuration (none: the defaults).
export TREE_SITTER_LIBDIR="$cache/lib"
export XDG_CONFIG_HOME="$work/config"
mkdir -p "$TREE_SITTER_LIBDIR" "$XDG_CONFIG_HOME/tree-sitter"
printf '{ "parser-directories": ["%s"] }\n' "$here" >"$XDG_CONFIG_HOME/tree-sitter/config.json"

# npm ci, skipped when node_modules was installed from this very package-lock.json.
npm_ci() {
  local dir="$1" stamp want
  stamp="$dir/node_modules/.otters-installed"
  want="$(cd "$dir" && cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"
  want="$want node $(node --version)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  step "npm ci in ${dir#"$repo"/}"
  # No install scripts: nothing here needs one (vsce-sign only checks for its binary).
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  printf '%s\n' "$want" >"$stamp"
}
npm_ci "$vscode"

# ── Tree-sitter grammar ────────────────────────────────────────────────────────────────────
step "tree-sitter: src/ is what grammar.js generates"
mkdir -p "$work/gen"
cp -r "$grammar/grammar.js" "$grammar/tree-sitter.json" "$grammar/package.json" "$work/gen/"
mkdir -p "$work/gen/src" && cp "$grammar/src/scanner.c" "$work/gen/src/"
(cd "$work/gen" && "$ts" generate --abi "$ts_abi")
for f in parser.c grammar.json node-types.json tree_sitter/{parser,alloc,array}.h; do
  cmp -s "$work/gen/src/$f" "$grammar/src/$f" ||
    fail "src/$f differs from what grammar.js generates: run \`tree-sitter generate --abi $ts_abi\`" \
      "in editors/tree-sitter-agentfile (tree-sitter-cli $ts_version)"
done
echo "ok src/ is up to date"

step "tree-sitter test (corpus, highlight tests)"
(cd "$grammar" && "$ts" test)

step "tree-sitter fuzz: random edits of the corpus, incremental and fresh parses agree"
# The CLI exits 0 even when a case fails, so anything but its list of cases is a failure.
# A fixed seed keeps the run reproducible; set TREE_SITTER_SEED to explore others.
seed="${TREE_SITTER_SEED:-20261124}"
(cd "$grammar" && TREE_SITTER_SEED="$seed" "$ts" fuzz --iterations 100 --edits 5) \
  >"$work/fuzz.out" 2>&1 || { cat "$work/fuzz.out"; fail "tree-sitter fuzz"; }
if grep -vE '^  [0-9]+\. agentfile - |^fuzz seed: [0-9]+$|^$' "$work/fuzz.out" >/dev/null; then
  cat "$work/fuzz.out"
  fail "tree-sitter fuzz found a difference (the scanner's state, or error recovery)"
fi
cases="$(grep -cE '^  [0-9]+\. agentfile - ' "$work/fuzz.out")"
echo "ok $cases corpus cases fuzzed, 100 times each (seed $seed)"

step "tree-sitter parse: the conformance corpus and the repository's valid samples"
if [ -d "$corpus" ]; then
  corpus_files() { find "$corpus" -name Agentfile; }
elif [ -n "${CI:-}" ]; then
  fail "no conformance corpus at $corpus"
else
  echo "SKIP the conformance corpus: $corpus is absent (the repository's samples only)"
  corpus_files() { :; }
fi
mapfile -t good < <(
  {
    corpus_files
    find "$repo/testdata/syntax/ok" "$repo/testdata/build" "$repo/examples" \
      \( -name Agentfile -o -name '*.agentfile' \)
  } | sort
)
[ ! -d "$corpus" ] || [ "$(printf '%s\n' "${good[@]}" | grep -c "^$corpus")" -ge 14 ] ||
  fail "fewer than 14 Agentfiles under $corpus"
# Prints the lines of one file's tree that hold a syntax error (nothing when it parses cleanly).
# The CLI's own verdict misses a MISSING token hidden inside a node (`image: word` with no text);
# its CST marks every node whose subtree holds an ERROR or MISSING node with `•`.
syntax_errors() {
  (cd "$grammar" && "$ts" parse --cst --no-ranges "$1" 2>/dev/null || true) |
    sed 's/\x1b\[[0-9;]*m//g' | grep -E '•|ERROR|MISSING' || true
}
for f in "${good[@]}"; do
  errors="$(syntax_errors "$f")"
  [ -z "$errors" ] || fail "$f has syntax errors for tree-sitter:"$'\n'"$errors"
done
echo "ok ${#good[@]} Agentfiles parse with no ERROR or MISSING node"
(cd "$grammar" && python3 test/structure.py "$ts" "${good[@]}")

step "tree-sitter parse: a syntax error exactly where otters reports one (AF003, AF004, AF006)"
# The samples' snapshots hold what otters reports for each; tree-sitter must agree on which
# files have a syntax error (otters' other errors are not the grammar's business).
agree=0
for f in "$repo"/testdata/check/*.agentfile "$repo"/testdata/syntax/*/*.agentfile; do
  name="$(basename "$f" .agentfile)"
  case "$f" in
    */testdata/check/*) snap="$repo/snapshots/check/$name.snap" ;;
    *) snap="$repo/snapshots/syntax/$(basename "$(dirname "$f")")__${name}__diagnostics.snap" ;;
  esac
  [ -f "$snap" ] || fail "no snapshot $snap for $f"
  errors="$(syntax_errors "$f")"
  if grep -qE 'AF00[346]' "$snap"; then
    [ -n "$errors" ] ||
      fail "${f#"$repo"/}: otters reports a syntax error, tree-sitter parses it cleanly"
  else
    [ -z "$errors" ] ||
      fail "${f#"$repo"/}: tree-sitter finds a syntax error otters does not report:"$'\n'"$errors"
  fi
  agree=$((agree + 1))
done
echo "ok tree-sitter and otters agree on $agree samples"

# ── VS Code ────────────────────────────────────────────────────────────────────────────────
step "vscode: TextMate scopes and the language client"
(cd "$vscode" && OTTERS_CONFORMANCE="$corpus" node --test --test-reporter=spec test/)
echo "ok TextMate scopes and the language client"

step "vscode: package the .vsix"
bash "$vscode/package.sh" "$work/otters-agentfile.vsix" >"$work/vsce.out" 2>&1 ||
  { cat "$work/vsce.out"; fail "vsce package"; }
python3 - "$work/otters-agentfile.vsix" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
need = [
    "extension.vsixmanifest", "[Content_Types].xml",
    "extension/package.json", "extension/extension.js", "extension/readme.md", "extension/icon.png",
    "extension/language-configuration.json", "extension/syntaxes/agentfile.tmLanguage.json",
    "extension/node_modules/vscode-languageclient/package.json",
    "extension/node_modules/vscode-languageclient/node.js",
    "extension/node_modules/vscode-languageserver-protocol/package.json",
]
missing = [n for n in need if n not in names]
# Tests, fixtures, the lock file and development tools stay out.
banned = ("extension/test/", "extension/package-lock.json", "extension/node_modules/@vscode/",
          "extension/node_modules/vscode-textmate/", "extension/node_modules/vscode-oniguruma/",
          "extension/node_modules/tm-grammars/", "extension/node_modules/.otters-installed")
extra = sorted(n for n in names if n.startswith(banned) or n.endswith(".vsix"))
if missing or extra:
    sys.exit(f"vsix contents: missing {missing}, unexpected {extra[:10]}")
# The Marketplace and Open VSX want a PNG icon of at least 128x128 named by the manifest.
icon = z.read("extension/icon.png")
width, height = int.from_bytes(icon[16:20], "big"), int.from_bytes(icon[20:24], "big")
if icon[:8] != b"\x89PNG\r\n\x1a\n" or width < 128 or height < 128:
    sys.exit(f"vsix icon: not a PNG of at least 128x128 ({width}x{height})")
print(f"ok the .vsix holds {len(names)} files: the extension, its grammar, vscode-languageclient")
PY

# ── Neovim ─────────────────────────────────────────────────────────────────────────────────
step "nvim: queries/agentfile/ are the grammar's queries"
# One source: each is a link to the grammar's file (tests/suite/editors.rs checks the links too).
for q in highlights injections folds; do
  [ -L "$here/nvim/queries/agentfile/$q.scm" ] &&
    cmp -s "$here/nvim/queries/agentfile/$q.scm" "$grammar/queries/$q.scm" ||
    fail "editors/nvim/queries/agentfile/$q.scm is not a link to" \
      "editors/tree-sitter-agentfile/queries/$q.scm"
done
echo "ok queries are the same"
if command -v nvim >/dev/null 2>&1; then
  step "nvim: headless (filetype, LSP set-up, parser and queries) with $(nvim --version | head -1)"
  (cd "$grammar" && "$ts" build --output "$work/agentfile.so" .) >/dev/null
  AGENTFILE_PARSER="$work/agentfile.so" AGENTFILE_FILES="$(printf '%s\n' "${good[@]}")" \
    nvim --headless -u NONE -i NONE --cmd "set rtp^=$here/nvim" --cmd 'filetype plugin on' \
    -c "luafile $here/nvim/test/headless.lua" </dev/null >"$work/nvim.out" 2>&1 ||
    { cat "$work/nvim.out"; fail "nvim headless test"; }
  grep -v '^ok ' "$work/nvim.out" || true
elif [ -n "${CI:-}" ]; then
  fail "nvim is not installed (.ci/install installs Debian's neovim)"
else
  echo "SKIP nvim checks: nvim is not installed (apt-get install neovim)"
fi

step "editors: all green"
