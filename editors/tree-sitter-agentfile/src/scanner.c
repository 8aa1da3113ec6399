/*
 * External scanner for the Agentfile grammar: heredocs.
 *
 * An opener (`<<EOF`, `<<-EOF`, `<<"EOF"`, `<<'EOF'`) records its marker. The body is every
 * following line up to the first line whose text, with surrounding spaces and tabs removed, is
 * exactly the marker (the same rule for `<<-`, as in the otters parser); the body is one token,
 * so `#` lines and `${...}` inside it are text. The terminator is a token of its own: the blanks
 * before the marker and the marker (the blanks after it are extras).
 *
 * State: the marker of the heredoc whose body is pending (empty when none). It is serialised so
 * that incremental re-parses resume correctly.
 */

#include "tree_sitter/alloc.h"
#include "tree_sitter/parser.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum TokenType {
  HEREDOC_START,
  HEREDOC_BODY,
  HEREDOC_END,
  ERROR_SENTINEL,
  WORD_GUARD,
};

/* Markers longer than this are still recognised as openers but cannot be terminated. */
#define MAX_MARKER 255

typedef struct {
  uint8_t length;
  /* Too long to remember: the body runs to the end of the file. */
  bool overflow;
  int32_t marker[MAX_MARKER];
} Scanner;

static bool is_blank(int32_t c) { return c == ' ' || c == '\t'; }

static bool is_line_end(int32_t c) { return c == '\n' || c == '\r'; }

void *tree_sitter_agentfile_external_scanner_create(void) {
  Scanner *scanner = ts_calloc(1, sizeof(Scanner));
  return scanner;
}

void tree_sitter_agentfile_external_scanner_destroy(void *payload) { ts_free(payload); }

unsigned tree_sitter_agentfile_external_scanner_serialize(void *payload, char *buffer) {
  Scanner *scanner = (Scanner *)payload;
  unsigned size = 2 + (unsigned)scanner->length * sizeof(int32_t);
  if (size > TREE_SITTER_SERIALIZATION_BUFFER_SIZE) {
    return 0;
  }
  buffer[0] = (char)scanner->length;
  buffer[1] = (char)scanner->overflow;
  memcpy(buffer + 2, scanner->marker, (size_t)scanner->length * sizeof(int32_t));
  return size;
}

void tree_sitter_agentfile_external_scanner_deserialize(void *payload, const char *buffer,
                                                        unsigned length) {
  Scanner *scanner = (Scanner *)payload;
  scanner->length = 0;
  scanner->overflow = false;
  if (length < 2) {
    return;
  }
  uint8_t marker_length = (uint8_t)buffer[0];
  if (length != 2 + (unsigned)marker_length * sizeof(int32_t)) {
    return;
  }
  scanner->length = marker_length;
  scanner->overflow = buffer[1] != 0;
  memcpy(scanner->marker, buffer + 2, (size_t)marker_length * sizeof(int32_t));
}

static bool pending(const Scanner *scanner) { return scanner->length > 0 || scanner->overflow; }

/* `<<` `-`? then a bare or quoted marker: any run of characters other than blanks and quotes. */
static bool scan_start(Scanner *scanner, TSLexer *lexer) {
  if (lexer->lookahead != '<') {
    return false;
  }
  lexer->advance(lexer, false);
  if (lexer->lookahead != '<') {
    return false;
  }
  lexer->advance(lexer, false);
  if (lexer->lookahead == '-') {
    lexer->advance(lexer, false);
  }
  int32_t quote = 0;
  if (lexer->lookahead == '"' || lexer->lookahead == '\'') {
    quote = lexer->lookahead;
    lexer->advance(lexer, false);
  }
  uint32_t length = 0;
  bool overflow = false;
  int32_t marker[MAX_MARKER];
  while (!lexer->eof(lexer) && !is_blank(lexer->lookahead) && !is_line_end(lexer->lookahead) &&
         lexer->lookahead != '"' && lexer->lookahead != '\'') {
    if (length < MAX_MARKER) {
      marker[length] = lexer->lookahead;
    } else {
      overflow = true;
    }
    length++;
    lexer->advance(lexer, false);
  }
  if (length == 0) {
    return false;
  }
  if (quote != 0) {
    if (lexer->lookahead != quote) {
      return false;
    }
    lexer->advance(lexer, false);
  }
  /* The opener must be the last thing on its line (blanks aside). */
  lexer->mark_end(lexer);
  while (is_blank(lexer->lookahead)) {
    lexer->advance(lexer, false);
  }
  if (!lexer->eof(lexer) && !is_line_end(lexer->lookahead)) {
    return false;
  }
  scanner->overflow = overflow;
  scanner->length = overflow ? 0 : (uint8_t)length;
  if (!overflow) {
    memcpy(scanner->marker, marker, length * sizeof(int32_t));
  }
  lexer->result_symbol = HEREDOC_START;
  return true;
}

/*
 * Reads blanks, the marker, blanks and a line end (or the end of the file) from the start of a
 * line. Returns whether the line is the terminator; the lexer is left somewhere on the line.
 * When `end` is set, the token's end is marked just after the marker. The blanks before the
 * marker belong to the token: were they skipped, a body line that only looked like a terminator
 * at first would lose its indentation.
 */
static bool scan_terminator(const Scanner *scanner, TSLexer *lexer, bool end) {
  while (is_blank(lexer->lookahead)) {
    lexer->advance(lexer, false);
  }
  if (scanner->overflow) {
    return false;
  }
  for (uint8_t i = 0; i < scanner->length; i++) {
    if (lexer->eof(lexer) || lexer->lookahead != scanner->marker[i]) {
      return false;
    }
    lexer->advance(lexer, false);
  }
  if (end) {
    lexer->mark_end(lexer);
  }
  while (is_blank(lexer->lookahead)) {
    lexer->advance(lexer, false);
  }
  if (lexer->eof(lexer) || lexer->lookahead == '\n') {
    return true;
  }
  if (lexer->lookahead == '\r') {
    lexer->advance(lexer, false);
    return lexer->lookahead == '\n';
  }
  return false;
}

/* Skips the rest of the current line, its line break included. Returns false at end of file. */
static bool skip_line(TSLexer *lexer) {
  while (!lexer->eof(lexer) && lexer->lookahead != '\n') {
    lexer->advance(lexer, false);
  }
  if (lexer->eof(lexer)) {
    return false;
  }
  lexer->advance(lexer, false);
  return true;
}

static bool scan_body_or_end(Scanner *scanner, TSLexer *lexer, const bool *valid_symbols) {
  if (valid_symbols[HEREDOC_END] && scan_terminator(scanner, lexer, true)) {
    scanner->length = 0;
    scanner->overflow = false;
    lexer->result_symbol = HEREDOC_END;
    return true;
  }
  if (!valid_symbols[HEREDOC_BODY]) {
    return false;
  }
  /* The first line is body (it was not the terminator); so is every line up to the next one. */
  for (;;) {
    bool more = skip_line(lexer);
    lexer->mark_end(lexer);
    if (!more || lexer->eof(lexer)) {
      break;
    }
    if (scan_terminator(scanner, lexer, false)) {
      break;
    }
  }
  lexer->result_symbol = HEREDOC_BODY;
  return true;
}

bool tree_sitter_agentfile_external_scanner_scan(void *payload, TSLexer *lexer,
                                                 const bool *valid_symbols) {
  Scanner *scanner = (Scanner *)payload;
  bool recovering = valid_symbols[ERROR_SENTINEL];

  if (pending(scanner) && (valid_symbols[HEREDOC_BODY] || valid_symbols[HEREDOC_END])) {
    /* While recovering, only a line start is a sensible place for a body. */
    if (recovering && lexer->get_column(lexer) != 0) {
      return false;
    }
    /* After an opener that ended a bad line, the parser may ask for the body before the line
     * break that ends the opener's line: the body starts on the next line. */
    if (is_line_end(lexer->lookahead) && lexer->get_column(lexer) != 0) {
      if (lexer->lookahead == '\r') {
        lexer->advance(lexer, true);
      }
      if (lexer->lookahead != '\n') {
        return false;
      }
      lexer->advance(lexer, true);
    }
    if (lexer->eof(lexer)) {
      return false;
    }
    return scan_body_or_end(scanner, lexer, valid_symbols);
  }

  /* A word never starts with a heredoc opener: where only a word may come, an opener that ends
   * the line is still read as one. The parser finds it out of place (a syntax error, as otters
   * reports) and its body is consumed whole afterwards (`heredoc_rest`). */
  if (valid_symbols[HEREDOC_START] || (valid_symbols[WORD_GUARD] && !recovering)) {
    while (is_blank(lexer->lookahead)) {
      lexer->advance(lexer, true);
    }
    return scan_start(scanner, lexer);
  }
  return false;
}
