/* Jinja lexer: template text to tokens, with Jinja2's whitespace control as transformers
 * configures it (trim_blocks, lstrip_blocks, keep_trailing_newline off). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_lex.h"

/* ------------------------------------------------------------------ positions */

static void lx_pos(const jj_lexer *L, size_t pos, int *line, int *col) {
    int lo = 0, hi = L->nlines - 1; /* last line start <= pos */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (L->line_start[mid] <= pos)
            lo = mid;
        else
            hi = mid - 1;
    }
    *line = lo + 1;
    *col = (int)(pos - L->line_start[lo]) + 1;
}

static jj_token *lx_emit(jj_lexer *L, jj_tok_type t, size_t pos) {
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jj_token *nt = jj_alloc(L->c, cap * sizeof *nt);
        if (L->n) memcpy(nt, L->toks, L->n * sizeof *nt);
        L->toks = nt;
        L->cap = cap;
    }
    jj_token *k = &L->toks[L->n++];
    memset(k, 0, sizeof *k);
    k->type = t;
    lx_pos(L, pos, &k->line, &k->col);
    return k;
}

_Noreturn static void lx_fail(jj_lexer *L, size_t pos, const char *what) {
    int line, col;
    lx_pos(L, pos, &line, &col);
    jj_fail(L->c, line, col, "%s", what);
}

/* Python's \s for the '-' markers: ASCII whitespace plus Unicode spaces. */
static int is_ws_at(const char *s, size_t n, size_t i, size_t *len) {
    return jj_is_space_at(s, n, i, len);
}

static size_t rstrip_ws(const char *s, size_t n) {
    /* strips whitespace from the end: walk forward remembering the end of the last non-space */
    size_t i = 0, end = 0, len;
    while (i < n) {
        if (is_ws_at(s, n, i, &len)) {
            i += len;
        } else {
            i++;
            while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
                i++;
            end = i;
        }
    }
    return end;
}

static size_t skip_ws(const char *s, size_t n, size_t i) {
    size_t len;
    while (i < n && is_ws_at(s, n, i, &len))
        i += len;
    return i;
}

/* ------------------------------------------------------------------ strings */

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static void put_utf8(jj_ctx *c, jj_buf *b, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    jj_buf_put(c, b, u, n);
}

/* A string literal at s[i] (the quote); Python's unicode-escape rules, as Jinja2 decodes them. */
static size_t lex_string(jj_lexer *L, size_t i, jj_token *k) {
    const char *s = L->src;
    size_t n = L->len;
    char q = s[i];
    size_t start = i++;
    jj_buf b = {0};
    while (i < n && s[i] != q) {
        if (s[i] != '\\') {
            jj_buf_put(L->c, &b, s + i, 1);
            i++;
            continue;
        }
        if (i + 1 >= n) break;
        char e = s[i + 1];
        i += 2;
        switch (e) {
        case 'n': jj_buf_put(L->c, &b, "\n", 1); break;
        case 't': jj_buf_put(L->c, &b, "\t", 1); break;
        case 'r': jj_buf_put(L->c, &b, "\r", 1); break;
        case 'a': jj_buf_put(L->c, &b, "\a", 1); break;
        case 'b': jj_buf_put(L->c, &b, "\b", 1); break;
        case 'f': jj_buf_put(L->c, &b, "\f", 1); break;
        case 'v': jj_buf_put(L->c, &b, "\v", 1); break;
        case '\\': jj_buf_put(L->c, &b, "\\", 1); break;
        case '\'': jj_buf_put(L->c, &b, "'", 1); break;
        case '"': jj_buf_put(L->c, &b, "\"", 1); break;
        case '\n': break; /* line continuation */
        case 'x':
        case 'u':
        case 'U': {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int d = 0; d < digits; d++) {
                int h = i < n ? hexval(s[i]) : -1;
                if (h < 0) lx_fail(L, start, "truncated \\x/\\u escape in a string literal");
                cp = cp * 16 + (uint32_t)h;
                i++;
            }
            if (cp > 0x10FFFF) lx_fail(L, start, "escape outside Unicode in a string literal");
            put_utf8(L->c, &b, cp);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t cp = (uint32_t)(e - '0');
                for (int d = 0; d < 2 && i < n && s[i] >= '0' && s[i] <= '7'; d++)
                    cp = cp * 8 + (uint32_t)(s[i++] - '0');
                put_utf8(L->c, &b, cp);
            } else { /* unknown escapes keep their backslash */
                jj_buf_put(L->c, &b, s + i - 2, 1);
                i--;
            }
        }
    }
    if (i >= n) lx_fail(L, start, "unterminated string literal");
    k->s = b.p ? b.p : "";
    k->n = b.n;
    return i + 1;
}

/* ------------------------------------------------------------------ tags */

static const char *const ops3[] = {NULL};
static const char *const ops2[] = {"//", "**", "==", "!=", "<=", ">=", NULL};
static const char ops1[] = "+-*/%~<>=()[]{},.:|;";

static int is_name_start(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}
static int is_name_char(char ch) { return is_name_start(ch) || (ch >= '0' && ch <= '9'); }
static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* Tokens of one {{ }} / {% %} tag from i (after the opening marker) to its end marker.
 * Returns the position after the end marker; *strip_after: '-', '+' or 0; *trailing_nl: the
 * tag ends a line for lstrip purposes. */
static size_t lex_tag(jj_lexer *L, size_t i, int block, int *strip_after) {
    const char *s = L->src;
    size_t n = L->len;
    char open[64]; /* brackets open in this tag: '}}' / '%}' inside them is not the tag's end */
    int depth = 0;
    (void)ops3;
    for (;;) {
        i = skip_ws(s, n, i);
        if (i >= n)
            lx_fail(L, i,
                    block ? "unexpected end of template: missing '%}'"
                          : "unexpected end of template: missing '}}'");
        char e = block ? '%' : '}';
        if (depth == 0) {
            if ((s[i] == '-' || s[i] == '+') && i + 2 < n && s[i + 1] == e && s[i + 2] == '}') {
                *strip_after = s[i];
                lx_emit(L, block ? JT_BLOCK_END : JT_VAR_END, i);
                return i + 3;
            }
            if (s[i] == e && i + 1 < n && s[i + 1] == '}') {
                *strip_after = 0;
                lx_emit(L, block ? JT_BLOCK_END : JT_VAR_END, i);
                return i + 2;
            }
        }
        char ch = s[i];
        if (ch == '\'' || ch == '"') {
            jj_token *k = lx_emit(L, JT_STRING, i);
            i = lex_string(L, i, k);
        } else if (is_digit(ch)) {
            size_t st = i;
            int is_float = 0;
            while (i < n && (is_digit(s[i]) || (s[i] == '_' && i + 1 < n && is_digit(s[i + 1]))))
                i++;
            if (i + 1 < n && s[i] == '.' && is_digit(s[i + 1])) {
                is_float = 1;
                i++;
                while (i < n &&
                       (is_digit(s[i]) || (s[i] == '_' && i + 1 < n && is_digit(s[i + 1]))))
                    i++;
            }
            if (i < n && (s[i] == 'e' || s[i] == 'E')) {
                size_t j = i + 1;
                if (j < n && (s[j] == '+' || s[j] == '-')) j++;
                if (j < n && is_digit(s[j])) {
                    is_float = 1;
                    i = j;
                    while (i < n && is_digit(s[i]))
                        i++;
                }
            }
            char num[64];
            size_t m = 0;
            for (size_t p = st; p < i && m < sizeof num - 1; p++)
                if (s[p] != '_') num[m++] = s[p];
            num[m] = 0;
            jj_token *k = lx_emit(L, is_float ? JT_FLOAT : JT_INT, st);
            if (is_float) {
                k->f = strtod(num, NULL);
            } else {
                int64_t v = 0;
                for (size_t p = 0; p < m; p++) {
                    if (v > (INT64_MAX - (num[p] - '0')) / 10)
                        lx_fail(L, st, "integer literal too large");
                    v = v * 10 + (num[p] - '0');
                }
                k->i = v;
            }
        } else if (is_name_start(ch)) {
            size_t st = i;
            while (i < n && is_name_char(s[i]))
                i++;
            jj_token *k = lx_emit(L, JT_NAME, st);
            k->s = s + st;
            k->n = i - st;
        } else {
            size_t st = i, len = 0;
            for (int o = 0; ops2[o]; o++)
                if (i + 1 < n && s[i] == ops2[o][0] && s[i + 1] == ops2[o][1]) len = 2;
            if (!len && strchr(ops1, ch) && ch) len = 1;
            if (!len) {
                char msg[64];
                if ((unsigned char)ch < 0x20 || (unsigned char)ch >= 0x7f)
                    snprintf(msg, sizeof msg, "unexpected character (byte 0x%02x)",
                             (unsigned char)ch);
                else
                    snprintf(msg, sizeof msg, "unexpected character '%c'", ch);
                lx_fail(L, st, msg);
            }
            if (ch == '(' || ch == '[' || ch == '{') {
                if (depth == (int)sizeof open) lx_fail(L, st, "brackets nested too deeply");
                open[depth++] = ch == '(' ? ')' : ch == '[' ? ']' : '}';
            } else if (ch == ')' || ch == ']' || ch == '}') {
                char msg[48];
                if (depth == 0) {
                    snprintf(msg, sizeof msg, "unexpected '%c'", ch);
                    lx_fail(L, st, msg);
                }
                if (open[depth - 1] != ch) {
                    snprintf(msg, sizeof msg, "unexpected '%c', expected '%c'", ch,
                             open[depth - 1]);
                    lx_fail(L, st, msg);
                }
                depth--;
            }
            jj_token *k = lx_emit(L, JT_OP, st);
            k->s = s + st;
            k->n = len;
            i += len;
        }
    }
}

/* {% raw %} ... {% endraw %}: i is after "{%" (and its marker). Returns the position after
 * the raw tag, or 0 when this is not a raw tag. *body / *body_end: the raw text. */
static size_t raw_tag(const char *s, size_t n, size_t i, const char *word) {
    i = skip_ws(s, n, i);
    size_t w = strlen(word);
    if (i + w > n || memcmp(s + i, word, w) != 0 || (i + w < n && is_name_char(s[i + w]))) return 0;
    i = skip_ws(s, n, i + w);
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    if (i + 1 < n && s[i] == '%' && s[i + 1] == '}') return i + 2;
    return 0;
}

void jj_lex(jj_lexer *L, jj_ctx *c, const char *tmpl, size_t len) {
    memset(L, 0, sizeof *L);
    L->c = c;
    /* newlines: \r\n and \r become \n; one final newline is dropped (keep_trailing_newline off) */
    char *src = jj_alloc(c, len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (tmpl[i] == '\r') {
            src[n++] = '\n';
            if (i + 1 < len && tmpl[i + 1] == '\n') i++;
        } else {
            src[n++] = tmpl[i];
        }
    }
    if (n && src[n - 1] == '\n') n--;
    src[n] = 0;
    L->src = src;
    L->len = n;
    size_t nl = 1;
    for (size_t i = 0; i < n; i++)
        nl += src[i] == '\n';
    L->line_start = jj_alloc(c, nl * sizeof *L->line_start);
    L->line_start[0] = 0;
    L->nlines = 1;
    for (size_t i = 0; i < n; i++)
        if (src[i] == '\n') L->line_start[L->nlines++] = i + 1;

    size_t pos = 0;
    int line_starting = 1;
    while (pos < n) {
        /* the next tag start */
        size_t t = pos;
        int kind = 0; /* '{', '%', '#' */
        for (; t + 1 < n; t++)
            if (src[t] == '{' && (src[t + 1] == '{' || src[t + 1] == '%' || src[t + 1] == '#')) {
                kind = src[t + 1];
                break;
            }
        if (!kind) {
            jj_token *k = lx_emit(L, JT_TEXT, pos);
            k->s = src + pos;
            k->n = n - pos;
            break;
        }
        char marker = t + 2 < n ? src[t + 2] : 0;
        size_t text_end = t;
        if (marker == '-') {
            text_end = pos + rstrip_ws(src + pos, t - pos);
        } else if (marker != '+' && kind != '{') {
            /* lstrip_blocks: spaces and tabs between the line start and a block/comment tag */
            size_t l = t;
            while (l > pos && (src[l - 1] == ' ' || src[l - 1] == '\t'))
                l--;
            if ((l > pos && src[l - 1] == '\n') || (l == pos && line_starting)) text_end = l;
        }
        if (text_end > pos) {
            jj_token *k = lx_emit(L, JT_TEXT, pos);
            k->s = src + pos;
            k->n = text_end - pos;
        }
        size_t after = t + 2 + (marker == '-' || marker == '+');
        int strip_after = 0;
        if (kind == '#') {
            size_t e = after;
            while (e + 1 < n && !(src[e] == '#' && src[e + 1] == '}'))
                e++;
            if (e + 1 >= n) lx_fail(L, t, "unterminated comment: missing '#}'");
            if (e > after && (src[e - 1] == '-' || src[e - 1] == '+')) strip_after = src[e - 1];
            pos = e + 2;
            if (strip_after == '-')
                pos = skip_ws(src, n, pos);
            else if (strip_after != '+' && pos < n && src[pos] == '\n')
                pos++;
            line_starting = pos > 0 && src[pos - 1] == '\n';
            continue;
        }
        if (kind == '%') {
            size_t r = raw_tag(src, n, after, "raw");
            if (r) {
                /* find {% endraw %} (any markers) */
                size_t e = r, end_tag = 0;
                for (; e + 1 < n; e++) {
                    if (src[e] == '{' && src[e + 1] == '%') {
                        size_t a2 = e + 2 + (e + 2 < n && (src[e + 2] == '-' || src[e + 2] == '+'));
                        end_tag = raw_tag(src, n, a2, "endraw");
                        if (end_tag) break;
                    }
                }
                if (!end_tag) lx_fail(L, t, "missing {% endraw %}");
                size_t body_end = e;
                if (e + 2 < n && src[e + 2] == '-') body_end = r + rstrip_ws(src + r, e - r);
                if (src[r - 3] == '-')
                    r = skip_ws(src, n, r);
                else if (src[r - 3] != '+' && r < n && src[r] == '\n')
                    r++;
                if (body_end > r) {
                    jj_token *k = lx_emit(L, JT_TEXT, r);
                    k->s = src + r;
                    k->n = body_end - r;
                }
                pos = end_tag;
                if (src[end_tag - 3] == '-')
                    pos = skip_ws(src, n, pos);
                else if (src[end_tag - 3] != '+' && pos < n && src[pos] == '\n')
                    pos++;
                line_starting = pos > 0 && src[pos - 1] == '\n';
                continue;
            }
        }
        lx_emit(L, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, t);
        pos = lex_tag(L, after, kind == '%', &strip_after);
        if (strip_after == '-')
            pos = skip_ws(src, n, pos);
        else if (kind == '%' && strip_after != '+' && pos < n && src[pos] == '\n')
            pos++; /* trim_blocks */
        line_starting = pos > 0 && src[pos - 1] == '\n';
    }
    lx_emit(L, JT_EOF, n);
}

void jj_token_pos(const jj_lexer *L, const jj_token *k, int *line, int *col) {
    *line = k->line;
    *col = k->col;
}
