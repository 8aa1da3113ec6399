/**
 * @file Tree-sitter grammar for the Agentfile language (openotters/agentfile:1 as otters reads it).
 *
 * The reference is crates/otters-agentfile/grammar/agentfile.pest, stated in prose in
 * docs/grammar.md. This grammar follows it line for line: one instruction per line, comments take
 * the whole line, keywords are case-insensitive and end at a blank (or, for EXEC, a `[`), and a
 * heredoc (`<<EOF`, `<<-EOF`, `<<"EOF"`, `<<'EOF'`) may follow any instruction. Heredocs are
 * recognised by the external scanner in src/scanner.c, which remembers the marker.
 *
 * Where the pest grammar is stricter about blanks (`hws+` between tokens), this grammar treats
 * blanks as extras: it is meant for highlighting, folding and navigation; `otters lint` stays the
 * judge of validity.
 */

/* eslint-disable arrow-parens, camelcase, max-len */
/// <reference types="tree-sitter-cli/dsl" />
// @ts-check

/**
 * A case-insensitive keyword: `FROM` matches `from`, `From`, ….
 * @param {string} word
 */
function keyword(word) {
  const pattern = word
    .split('')
    .map((c) => `[${c.toUpperCase()}${c.toLowerCase()}]`)
    .join('');
  return alias(new RegExp(pattern), word);
}

// Characters that end a bare word (pest: blanks, line breaks, `"`, `=`, `!`).
const WORD_CHARS = /[^ \t\r\n"=!$]+/;
// A `${NAME}` reference (otters expands names of ASCII letters, digits, `_`, `-` and `.`).
const EXPANSION = /\$\{[A-Za-z0-9_.\-]+\}/;
// A `$` that starts no complete `${NAME}`: an ordinary character.
const DOLLAR = /\$\{?/;
// A carriage return not followed by a line feed is an ordinary character too (within a word).
const LONE_CR = /\r+[^ \t\r\n"=!$]/;

module.exports = grammar({
  name: 'agentfile',

  // Blanks between tokens; line breaks are significant.
  extras: (_) => [/[ \t]+/],

  externals: ($) => [
    $.heredoc_start,
    $.heredoc_body,
    $.heredoc_end,
    // Never produced: lets the scanner know the parser is recovering from an error.
    $._error_sentinel,
    // Never produced: makes the scanner look at the start of every word, where a heredoc opener
    // (`BIN tool <<EOF`, the image forgotten) is an error whose body must still be consumed.
    $._word_guard,
  ],

  // Keywords are lexed as this identifier first, so `FROMAGE x` is an unknown keyword, not
  // `FROM` followed by `AGE`, and `EXEC["serve"]` still finds `EXEC`.
  word: ($) => $._identifier,

  rules: {
    source_file: ($) => seq(repeat(seq(optional($._line), $._newline)), optional($._line)),

    _line: ($) => choice($.directive, $.comment, $._instruction, $.heredoc_rest),

    _newline: (_) => /\r?\n/,

    // `# syntax=VALUE`: counts on line 1 only; elsewhere `otters lint` reports it (AF212).
    directive: (_) => token(prec(1, /# syntax=[^\r\n]*/)),

    // A comment takes the whole line; a `#` after an instruction is part of a word.
    comment: (_) => token(/#[^\r\n]*/),

    _instruction: ($) =>
      choice(
        $.from_instruction,
        $.runtime_instruction,
        $.model_instruction,
        $.name_instruction,
        $.context_instruction,
        $.config_instruction,
        $.env_instruction,
        $.bin_instruction,
        $.exec_instruction,
        $.add_instruction,
        $.label_instruction,
        $.arg_instruction,
        $.capability_instruction,
        $.mount_instruction,
        $.egress_instruction,
      ),

    from_instruction: ($) =>
      seq(keyword('FROM'), field('image', $.word), optional($.heredoc)),

    runtime_instruction: ($) =>
      seq(keyword('RUNTIME'), field('image', $.word), optional($.heredoc)),

    model_instruction: ($) =>
      seq(keyword('MODEL'), field('model', $.word), optional($.heredoc)),

    name_instruction: ($) =>
      seq(keyword('NAME'), field('name', $.word), optional($.heredoc)),

    context_instruction: ($) =>
      seq(
        keyword('CONTEXT'),
        field('name', $.word),
        optional(field('description', $.string)),
        optional(field('file', $.file_reference)),
        optional($.heredoc),
      ),

    config_instruction: ($) =>
      seq(
        keyword('CONFIG'),
        field('key', $.word),
        optional(field('required', $.required)),
        optional(seq('=', field('value', $._value))),
        optional(field('description', $.string)),
        optional($.heredoc),
      ),

    env_instruction: ($) =>
      seq(
        keyword('ENV'),
        field('key', $.word),
        '=',
        field('value', $._value),
        optional(field('description', $.string)),
        optional($.heredoc),
      ),

    bin_instruction: ($) =>
      seq(
        keyword('BIN'),
        field('name', $.word),
        field('image', $.word),
        optional(field('description', $.string)),
        optional($.heredoc),
      ),

    exec_instruction: ($) =>
      seq(keyword('EXEC'), field('command', $.exec_form), optional($.heredoc)),

    exec_form: ($) => seq('[', optional(seq($.string, repeat(seq(',', $.string)))), ']'),

    add_instruction: ($) =>
      seq(
        keyword('ADD'),
        field('source', $.word),
        optional(field('destination', $.word)),
        optional(field('description', $.string)),
        optional($.heredoc),
      ),

    label_instruction: ($) =>
      seq(keyword('LABEL'), field('key', $.word), '=', field('value', $._value), optional($.heredoc)),

    arg_instruction: ($) =>
      seq(
        keyword('ARG'),
        field('name', $.word),
        optional(seq('=', optional(field('default', $._value)))),
        optional($.heredoc),
      ),

    capability_instruction: ($) =>
      seq(keyword('CAPABILITY'), repeat1(field('name', $.word)), optional($.heredoc)),

    mount_instruction: ($) =>
      seq(
        keyword('MOUNT'),
        field('target', $.word),
        optional(field('mode', $.mount_mode)),
        optional(field('description', $.string)),
        optional($.heredoc),
      ),

    egress_instruction: ($) =>
      seq(
        keyword('EGRESS'),
        field('destination', choice($.word, $.bracketed_address)),
        optional(field('description', $.string)),
        optional($.heredoc),
      ),

    // `[2001:db8::1]` or `[2001:db8::1]:853`: a `[` would otherwise start no word.
    bracketed_address: (_) => token(seq('[', /[0-9A-Fa-f:.]+/, ']', optional(seq(':', /[0-9]+/)))),

    required: (_) => '!',

    mount_mode: (_) => choice(keyword('ro'), keyword('rw')),

    _value: ($) => choice($.string, $.word),

    // The identifier keywords are lexed as: a letter, then anything a word may hold but `[`.
    _identifier: (_) => /[A-Za-z][^ \t\r\n"=!\[]*/,

    // ── Heredocs ──────────────────────────────────────────────────────────────────────────
    // The opener, the line break after it, the body lines (verbatim) and the terminator line.
    heredoc: ($) =>
      seq($.heredoc_start, $._newline, optional($.heredoc_body), $.heredoc_end),

    // The body and terminator of a heredoc whose opener ended a line that is not an instruction
    // (`CONTXT SOUL <<EOF`): the opener is inside an ERROR node, and the body is still consumed
    // as a whole, as otters does, instead of being read as instructions. It only follows an error:
    // without a pending opener the scanner never produces a body or a terminator.
    heredoc_rest: ($) => seq(optional($.heredoc_body), $.heredoc_end),

    // ── Tokens ────────────────────────────────────────────────────────────────────────────
    // A bare word, in pieces so that `${NAME}` references are nodes of their own.
    word: ($) =>
      seq(
        optional($._word_guard),
        choice(WORD_CHARS, DOLLAR, $.expansion),
        repeat(
          choice(
            token.immediate(WORD_CHARS),
            token.immediate(LONE_CR),
            token.immediate(DOLLAR),
            alias(token.immediate(EXPANSION), $.expansion),
          ),
        ),
      ),

    expansion: (_) => EXPANSION,

    // `"…"` on one line; escapes are checked by `otters lint` (AF005), not here.
    string: ($) =>
      seq(
        '"',
        repeat(
          choice(
            token.immediate(prec(1, /[^"\\\r\n$]+/)),
            token.immediate(prec(1, DOLLAR)),
            alias(token.immediate(prec(1, EXPANSION)), $.expansion),
            $.escape_sequence,
          ),
        ),
        token.immediate('"'),
      ),

    escape_sequence: (_) =>
      token.immediate(
        seq(
          '\\',
          choice(
            /x[0-9A-Fa-f]{2}/,
            /u[0-9A-Fa-f]{4}/,
            /U[0-9A-Fa-f]{8}/,
            /[0-7]{3}/,
            /[^\r\n]/,
          ),
        ),
      ),

    file_reference: (_) => token(seq('file://', /[^ \t\r\n]+/)),
  },
});
