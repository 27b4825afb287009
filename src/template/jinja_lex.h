/* Jinja lexer (template/jinja_lex.c), used by the parser. */
#ifndef VKF_MODEL_JINJA_LEX_H
#define VKF_MODEL_JINJA_LEX_H

#include "template/jinja_int.h"

typedef enum jj_tok_type {
    JT_TEXT,
    JT_VAR_BEGIN,
    JT_VAR_END,
    JT_BLOCK_BEGIN,
    JT_BLOCK_END,
    JT_NAME,
    JT_STRING,
    JT_INT,
    JT_FLOAT,
    JT_OP,
    JT_EOF,
} jj_tok_type;

typedef struct jj_token {
    jj_tok_type type;
    int line, col;
    const char *s; /* TEXT, NAME, STRING (decoded), OP */
    size_t n;
    int64_t i;
    double f;
} jj_token;

typedef struct jj_lexer {
    jj_ctx *c;
    const char *src; /* normalized newlines, final newline dropped */
    size_t len;
    size_t *line_start;
    int nlines;
    jj_token *toks;
    size_t n, cap;
} jj_lexer;

/* Tokenizes the whole template (errors unwind through c). */
void jj_lex(jj_lexer *L, jj_ctx *c, const char *tmpl, size_t len);

#endif
