// Checks the TextMate grammar (syntaxes/agentfile.tmLanguage.json) the way VS Code runs it:
// vscode-textmate + vscode-oniguruma, with the Markdown grammar VS Code embeds in CONTEXT bodies.
//
// Two kinds of checks: exact scopes on a fixture of tricky lines, and, on every Agentfile of the
// conformance corpus and the repository's samples, the scopes each line must get according to an
// independent reading of the language (docs/grammar.md): instruction keywords, comments, the
// directive, strings, ${ARG} references, file references, heredoc openers, bodies, terminators.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const here = __dirname;
const extensionDir = path.resolve(here, '..');
const repo = path.resolve(extensionDir, '..', '..');
const corpus = process.env.OTTERS_CONFORMANCE || path.resolve(repo, '..', 'shared', 'conformance');

const KEYWORD = 'keyword.other.instruction.agentfile';
const COMMENT = 'comment.line.number-sign.agentfile';
const DIRECTIVE = 'keyword.control.directive.agentfile';
const STRING = 'string.quoted.double.agentfile';
const ESCAPE = 'constant.character.escape.agentfile';
const BAD_ESCAPE = 'invalid.illegal.escape.agentfile';
const VARIABLE = 'variable.other.agentfile';
const FILE_REF = 'string.unquoted.file-reference.agentfile';
const HEREDOC_OP = 'keyword.operator.heredoc.agentfile';
const MARKER = 'keyword.control.heredoc-token.agentfile';
const MARKDOWN = 'meta.embedded.block.markdown';
const TEXT_BODY = 'string.unquoted.heredoc.agentfile';
const KEYWORDS = new Set(
  'FROM RUNTIME MODEL NAME CONTEXT CONFIG ENV BIN EXEC ADD LABEL ARG CAPABILITY MOUNT EGRESS'.split(' '),
);

function grammarFiles() {
  const markdown = require.resolve('tm-grammars/grammars/markdown.json');
  return {
    'source.agentfile': path.join(extensionDir, 'syntaxes', 'agentfile.tmLanguage.json'),
    'text.html.markdown': markdown,
  };
}

let grammarPromise;
function loadGrammar() {
  if (!grammarPromise) {
    const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
    const onigLib = oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength)).then(() => ({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }));
    const files = grammarFiles();
    const registry = new vsctm.Registry({
      onigLib,
      // Grammars Markdown embeds (fenced code in other languages, HTML) are absent, as they
      // may be in an editor: the Agentfile grammar must not depend on them.
      loadGrammar: async (scope) =>
        files[scope] ? vsctm.parseRawGrammar(fs.readFileSync(files[scope], 'utf8'), files[scope]) : null,
    });
    grammarPromise = registry.loadGrammar('source.agentfile');
  }
  return grammarPromise;
}

/** Tokenizes a whole file: one array of {start, end, scopes} per line (CR dropped as editors do). */
async function tokenize(text) {
  const grammar = await loadGrammar();
  assert.ok(grammar, 'the grammar loads');
  let stack = vsctm.INITIAL;
  const lines = text.replace(/\n$/, '').split('\n').map((l) => l.replace(/\r$/, ''));
  return lines.map((line) => {
    const r = grammar.tokenizeLine(line, stack);
    stack = r.ruleStack;
    return { line, tokens: r.tokens.map((t) => ({ start: t.startIndex, end: t.endIndex, scopes: t.scopes })) };
  });
}

/** The scopes of the character at `column` of a tokenized line. */
function scopesAt(tokenized, column) {
  const t = tokenized.tokens.find((tok) => tok.start <= column && column < tok.end);
  assert.ok(t, `no token at column ${column} of ${JSON.stringify(tokenized.line)}`);
  return t.scopes;
}

/** The scopes of the first occurrence of `needle` on line `n` (1-based), at offset `offset`. */
function scopesOf(lines, n, needle, offset = 0) {
  const l = lines[n - 1];
  const column = l.line.indexOf(needle);
  assert.ok(column >= 0, `line ${n} ${JSON.stringify(l.line)} has no ${JSON.stringify(needle)}`);
  return scopesAt(l, column + offset);
}

function has(scopes, scope, what) {
  assert.ok(scopes.includes(scope), `${what}: expected ${scope} in [${scopes.join(', ')}]`);
}

function lacks(scopes, scope, what) {
  assert.ok(!scopes.includes(scope), `${what}: unexpected ${scope} in [${scopes.join(', ')}]`);
}

// ── An independent reading of the line structure (docs/grammar.md) ──────────────────────────

const OPENER = /[ \t](<<-?)(["']?)([^\s"']+)\2[ \t]*$/;

/** Classifies each line: blank, directive, comment, instruction (with keyword and opener), body, terminator. */
function classify(text) {
  const out = [];
  let marker = null;
  let bodyScope = null;
  for (const raw of text.replace(/\n$/, '').split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (marker !== null) {
      if (line.replace(/^[ \t]+|[ \t]+$/g, '') === marker) {
        out.push({ kind: 'terminator', marker });
        marker = null;
      } else {
        out.push({ kind: 'body', bodyScope });
      }
      continue;
    }
    if (/^[ \t]*$/.test(line)) out.push({ kind: 'blank' });
    else if (/^[ \t]*# syntax=/.test(line)) out.push({ kind: 'directive' });
    else if (/^[ \t]*#/.test(line)) out.push({ kind: 'comment' });
    else {
      const kw = /^[ \t]*([A-Za-z]+)/.exec(line);
      const keyword = kw ? kw[1].toUpperCase() : null;
      const opener = OPENER.exec(line);
      out.push({ kind: 'instruction', keyword, keywordColumn: kw ? kw[0].length - kw[1].length : 0, opener });
      if (opener) {
        marker = opener[3];
        bodyScope = keyword === 'CONTEXT' ? MARKDOWN : TEXT_BODY;
      }
    }
  }
  return out;
}

/** Strings, ${ARG} references and file references of an instruction line, outside its opener. */
function spans(line, opener) {
  const text = opener ? line.slice(0, opener.index) : line;
  const strings = [...text.matchAll(/"(?:[^"\\]|\\.)*"/g)].map((m) => m.index);
  const insideString = (i) => [...text.matchAll(/"(?:[^"\\]|\\.)*"/g)].some((m) => i > m.index && i < m.index + m[0].length);
  const expansions = [...text.matchAll(/\$\{[A-Za-z0-9_.-]+\}/g)].map((m) => m.index);
  const files = [...text.matchAll(/(^|[ \t])file:\/\/\S+/g)]
    .filter((m) => !insideString(m.index + m[1].length))
    .map((m) => m.index + m[1].length);
  return { strings, expansions, files };
}

/** Asserts the scopes every line of `text` must have; returns counts of what was checked. */
async function checkFile(name, text) {
  const lines = await tokenize(text);
  const kinds = classify(text);
  assert.equal(lines.length, kinds.length);
  const counts = { keywords: 0, bodyLines: 0, terminators: 0, comments: 0, strings: 0, expansions: 0, files: 0 };
  kinds.forEach((k, i) => {
    const l = lines[i];
    const where = `${name}:${i + 1} ${JSON.stringify(l.line)}`;
    switch (k.kind) {
      case 'directive':
        has(scopesAt(l, l.line.indexOf('#')), DIRECTIVE, where);
        break;
      case 'comment':
        for (const t of l.tokens.filter((tok) => tok.start >= l.line.indexOf('#'))) has(t.scopes, COMMENT, where);
        counts.comments++;
        break;
      case 'instruction': {
        if (KEYWORDS.has(k.keyword)) {
          has(scopesAt(l, k.keywordColumn), KEYWORD, where);
          counts.keywords++;
        }
        const s = spans(l.line, k.opener);
        for (const c of s.strings) has(scopesAt(l, c + 1 < l.line.length ? c + 1 : c), STRING, `${where} string at ${c}`);
        for (const c of s.expansions) has(scopesAt(l, c + 2), VARIABLE, `${where} \${} at ${c}`);
        for (const c of s.files) has(scopesAt(l, c), FILE_REF, `${where} file:// at ${c}`);
        counts.strings += s.strings.length;
        counts.expansions += s.expansions.length;
        counts.files += s.files.length;
        if (k.opener) {
          const at = k.opener.index + 1;
          has(scopesAt(l, at), HEREDOC_OP, where);
          has(scopesAt(l, at + k.opener[1].length + k.opener[2].length), MARKER, where);
        }
        break;
      }
      case 'body':
        for (const t of l.tokens) {
          if (t.end === t.start) continue;
          has(t.scopes, k.bodyScope, where);
          lacks(t.scopes, KEYWORD, where);
          lacks(t.scopes, COMMENT, where);
        }
        counts.bodyLines++;
        break;
      case 'terminator': {
        const s = scopesAt(l, l.line.indexOf(k.marker));
        has(s, MARKER, where);
        lacks(s, MARKDOWN, where);
        lacks(s, TEXT_BODY, where);
        counts.terminators++;
        break;
      }
      default:
        break;
    }
  });
  return counts;
}

function agentfilesUnder(dir) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...agentfilesUnder(p));
    else if (entry.name === 'Agentfile' || entry.name.endsWith('.agentfile')) found.push(p);
  }
  return found.sort();
}

// ── Tests ────────────────────────────────────────────────────────────────────────────────────

test('tricky fixture: exact scopes', async () => {
  const lines = await tokenize(fs.readFileSync(path.join(here, 'fixtures', 'tricky.agentfile'), 'utf8'));
  has(scopesOf(lines, 1, '# syntax='), DIRECTIVE, 'directive');
  has(scopesOf(lines, 1, 'openotters'), 'string.unquoted.directive.agentfile', 'directive value');
  has(scopesOf(lines, 2, 'Tricky'), COMMENT, 'comment');
  has(scopesOf(lines, 3, 'from'), KEYWORD, 'lower-case keyword');
  has(scopesOf(lines, 4, 'VERSION'), 'variable.other.property.agentfile', 'ARG name');
  has(scopesOf(lines, 5, '${VERSION}', 2), VARIABLE, '${ARG} in a word');
  has(scopesOf(lines, 5, '${VERSION}'), 'punctuation.definition.variable.begin.agentfile', '${ punctuation');
  lacks(scopesOf(lines, 6, '# not'), COMMENT, '# after an instruction');
  has(scopesOf(lines, 7, 'description'), 'variable.other.property.agentfile', 'LABEL key');
  has(scopesOf(lines, 7, '"Say'), STRING, 'string');
  has(scopesOf(lines, 7, '\\"hi'), ESCAPE, 'escaped quote');
  has(scopesOf(lines, 7, '\\t'), ESCAPE, 'tab escape');
  has(scopesOf(lines, 7, '${VERSION}', 3), VARIABLE, '${ARG} in a string');
  has(scopesOf(lines, 7, '${VERSION}', 3), STRING, '${ARG} in a string stays in the string');
  has(scopesOf(lines, 7, '\\$HOME'), BAD_ESCAPE, '\\$ is no escape (AF005)');
  has(scopesOf(lines, 8, '256'), 'constant.numeric.agentfile', 'integer value');
  has(scopesOf(lines, 8, '"Short'), STRING, 'description');
  has(scopesOf(lines, 9, 'false'), 'constant.language.boolean.agentfile', 'boolean value');
  has(scopesOf(lines, 10, '!'), 'keyword.operator.required.agentfile', 'required mark');
  has(scopesOf(lines, 11, '='), 'keyword.operator.assignment.agentfile', '=');
  // CONTEXT heredoc: Markdown inside, the terminator indented after an indented-continuation line.
  has(scopesOf(lines, 12, 'CONTEXT'), KEYWORD, 'CONTEXT');
  has(scopesOf(lines, 12, '"Core'), STRING, 'CONTEXT description');
  has(scopesOf(lines, 12, '<<'), HEREDOC_OP, 'opener');
  has(scopesOf(lines, 12, 'EOF'), MARKER, 'marker');
  has(scopesOf(lines, 13, 'A heading'), MARKDOWN, 'body');
  has(scopesOf(lines, 13, 'A heading'), 'markup.heading.markdown', 'Markdown heading in a CONTEXT body');
  lacks(scopesOf(lines, 13, '#'), COMMENT, 'a # line in a body');
  has(scopesOf(lines, 15, 'paragraph'), MARKDOWN, 'body paragraph');
  has(scopesOf(lines, 16, 'EOF'), MARKER, 'indented terminator');
  lacks(scopesOf(lines, 16, 'EOF'), MARKDOWN, 'indented terminator is not body');
  has(scopesOf(lines, 17, 'CONTEXT'), KEYWORD, 'the line after a heredoc');
  has(scopesOf(lines, 17, '<<-'), HEREDOC_OP, '<<- opener');
  has(scopesOf(lines, 17, 'END'), MARKER, 'quoted marker');
  has(scopesOf(lines, 17, '"END'), 'punctuation.definition.string.begin.agentfile', 'marker quote');
  has(scopesOf(lines, 19, 'never'), MARKDOWN, 'inside an unclosed fence');
  has(scopesOf(lines, 20, 'END'), MARKER, 'terminator after an unclosed fence');
  lacks(scopesOf(lines, 20, 'END'), MARKDOWN, 'an unclosed fence ends with the heredoc');
  has(scopesOf(lines, 21, 'file://'), FILE_REF, 'file reference');
  has(scopesOf(lines, 22, 'BIN'), KEYWORD, 'BIN');
  has(scopesOf(lines, 22, 'USAGE'), MARKER, 'BIN marker');
  has(scopesOf(lines, 23, '# not'), TEXT_BODY, 'BIN body');
  lacks(scopesOf(lines, 23, '# not'), 'markup.heading.markdown', 'a BIN body is not Markdown');
  lacks(scopesOf(lines, 24, 'FROM'), KEYWORD, 'a keyword inside a body');
  has(scopesOf(lines, 25, 'USAGE'), MARKER, 'BIN terminator');
  has(scopesOf(lines, 26, 'EXEC'), KEYWORD, 'EXEC');
  has(scopesOf(lines, 26, '['), 'punctuation.definition.array.begin.agentfile', 'EXEC [');
  has(scopesOf(lines, 26, '"serve"'), STRING, 'EXEC argument');
  has(scopesOf(lines, 26, ','), 'punctuation.separator.array.agentfile', 'EXEC ,');
  has(scopesOf(lines, 27, 'exec'), KEYWORD, 'exec directly followed by [');
  lacks(scopesOf(lines, 28, 'EXECUTOR'), KEYWORD, 'EXECUTOR');
  lacks(scopesOf(lines, 29, 'FROMAGE'), KEYWORD, 'FROMAGE');
  has(scopesOf(lines, 30, 'MOUNT'), KEYWORD, 'MOUNT');
  has(scopesOf(lines, 31, 'CAPABILITY'), KEYWORD, 'CAPABILITY');
  has(scopesOf(lines, 32, 'context'), KEYWORD, 'lower-case keyword with a heredoc');
  has(scopesOf(lines, 33, 'bold'), MARKDOWN, 'lower-case CONTEXT body is Markdown');
  has(scopesOf(lines, 34, 'X'), MARKER, 'lower-case CONTEXT terminator');
  // The independent reading agrees on the fixture as well.
  await checkFile('tricky.agentfile', fs.readFileSync(path.join(here, 'fixtures', 'tricky.agentfile'), 'utf8'));
});

test('conformance corpus and repository samples: every line scoped as the language reads it', async () => {
  // CI always has the corpus; a plain clone has only the repository's samples, and says so.
  const present = fs.existsSync(corpus);
  assert.ok(present || !process.env.CI, `the conformance corpus is missing: ${corpus}`);
  if (!present) console.log(`SKIP the conformance corpus: ${corpus} is absent (the repository's samples only)`);
  const files = [
    ...(present ? agentfilesUnder(corpus) : []),
    ...agentfilesUnder(path.join(repo, 'testdata', 'syntax', 'ok')),
    ...agentfilesUnder(path.join(repo, 'testdata', 'build')),
    ...agentfilesUnder(path.join(repo, 'examples')),
  ];
  assert.ok(files.length >= (present ? 14 : 1), `too few Agentfiles found (${files.length})`);
  const total = { keywords: 0, bodyLines: 0, terminators: 0, comments: 0, strings: 0, expansions: 0, files: 0 };
  for (const f of files) {
    const counts = await checkFile(path.relative(repo, f), fs.readFileSync(f, 'utf8'));
    for (const k of Object.keys(total)) total[k] += counts[k];
  }
  // The corpus exercises every kind of check (a reading that found nothing would prove nothing).
  for (const [k, v] of Object.entries(total)) assert.ok(v > 0, `no ${k} checked`);
  console.log(`checked ${files.length} files: ${JSON.stringify(total)}`);
});
