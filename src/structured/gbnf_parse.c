/* GBNF text -> rules, in llama.cpp's layout (see gbnf.h).
 *
 * The grammar format (llama.cpp grammars/README.md):
 *   name ::= alternatives          one rule per line (a newline inside ( ) continues it)
 *   "literal" with \x.. \u.... \U........ \t \n \r \\ \" \[ \] \- escapes
 *   [a-z0-9_] [^...] classes, . any character, ( ) groups, | alternatives
 *   * + ? {m} {m,} {m,n} repetitions, # comments, <[id]> / !<[id]> / <text> tokens
 * Names are [a-zA-Z0-9-]+. Repetitions become generated rules exactly as llama.cpp rewrites
 * them (S{m,n} -> S repeated m times, then n-m nested optional rules), groups become sub-rules
 * named "<rule>_<id>", so symbol ids and element sequences equal llama_grammar_parser's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "structured/gbnf.h"

#define MAX_REPETITION 2000 /* llama.cpp's MAX_REPETITION_THRESHOLD */
#define MAX_NESTING 256     /* ( ) depth: a guard for the recursive descent */

typedef struct elvec {
    vkf_gelem *v;
    size_t n, cap;
} elvec;

typedef struct parser {
    const char *src; /* NUL-terminated copy of the text */
    char **names;    /* symbol names by id */
    uint32_t n_sym, cap_sym;
    elvec *rules; /* by id; n == 0: not defined */
    uint32_t n_rules;
    vkf_gbnf_token_fn tok;
    void *tok_user;
    int depth;
    vkf_status err; /* first error; parsing stops */
} parser;

/* ------------------------------------------------------------------ errors */

static void where(const parser *p, const char *pos, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (const char *s = p->src; s < pos && *s; s++) {
        if (*s == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* "expected X at line L, column C, found 'abc...'"; st: VKF_ERROR_FORMAT for what is not GBNF,
 * VKF_ERROR_UNSUPPORTED for GBNF past a limit (llama.cpp's repetition threshold, the nesting
 * guard): a schema's converter tells its users which of the two it met */
static const char *fail_as(parser *p, const char *pos, vkf_status st, const char *expected) {
    if (p->err != VKF_OK) return NULL;
    int line, col;
    where(p, pos, &line, &col);
    char found[40];
    size_t k = 0;
    for (const char *s = pos; *s && *s != '\n' && k < 24; s++)
        found[k++] = *s;
    found[k] = '\0';
    p->err = vkf_error(st, "grammar: line %d, column %d: expected %s, found %s%s%s", line, col,
                       expected, *pos && *pos != '\n' ? "'" : "",
                       *pos == '\n' ? "the end of the line"
                       : *pos       ? found
                                    : "the end of the grammar",
                       *pos && *pos != '\n' ? (k == 24 ? "...'" : "'") : "");
    return NULL;
}

static const char *fail(parser *p, const char *pos, const char *expected) {
    return fail_as(p, pos, VKF_ERROR_FORMAT, expected);
}

static int oom(parser *p) {
    if (p->err == VKF_OK) p->err = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    return -1;
}

/* ------------------------------------------------------------------ symbols and rules */

static int push(parser *p, elvec *r, uint32_t type, uint32_t value) {
    if (r->n == r->cap) {
        size_t nc = r->cap ? 2 * r->cap : 16;
        vkf_gelem *v = realloc(r->v, nc * sizeof *v);
        if (!v) return oom(p);
        r->v = v;
        r->cap = nc;
    }
    r->v[r->n++] = (vkf_gelem){type, value};
    return 0;
}

static int append(parser *p, elvec *r, const vkf_gelem *e, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (push(p, r, e[i].type, e[i].value)) return -1;
    return 0;
}

static int64_t add_symbol(parser *p, char *name) {
    if (!name) return oom(p);
    if (p->n_sym == p->cap_sym) {
        uint32_t nc = p->cap_sym ? 2 * p->cap_sym : 32;
        char **v = realloc(p->names, nc * sizeof *v);
        if (!v) {
            free(name);
            return oom(p);
        }
        p->names = v;
        p->cap_sym = nc;
    }
    p->names[p->n_sym] = name;
    return p->n_sym++;
}

/* the id of name[0..len), a new one when unknown (llama.cpp's get_symbol_id) */
static int64_t symbol_id(parser *p, const char *name, size_t len) {
    for (uint32_t i = 0; i < p->n_sym; i++)
        if (strlen(p->names[i]) == len && memcmp(p->names[i], name, len) == 0) return i;
    char *s = malloc(len + 1);
    if (s) {
        memcpy(s, name, len);
        s[len] = '\0';
    }
    return add_symbol(p, s);
}

/* a fresh id named base_<id> (llama.cpp's generate_symbol_id) */
static int64_t new_symbol(parser *p, const char *base) {
    size_t n = strlen(base) + 16;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s_%u", base, p->n_sym);
    return add_symbol(p, s);
}

/* rules[id] = r (taken) */
static int set_rule(parser *p, uint32_t id, elvec *r) {
    if (id >= p->n_rules) {
        elvec *v = realloc(p->rules, (size_t)(id + 1) * sizeof *v);
        if (!v) return oom(p);
        memset(v + p->n_rules, 0, (size_t)(id + 1 - p->n_rules) * sizeof *v);
        p->rules = v;
        p->n_rules = id + 1;
    }
    free(p->rules[id].v);
    p->rules[id] = *r;
    memset(r, 0, sizeof *r);
    return 0;
}

/* ------------------------------------------------------------------ lexing */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || is_digit(c);
}

static const char *skip_space(const char *s, int newline_ok) {
    while (*s == ' ' || *s == '\t' || *s == '#' || (newline_ok && (*s == '\r' || *s == '\n'))) {
        if (*s == '#')
            while (*s && *s != '\r' && *s != '\n')
                s++;
        else
            s++;
    }
    return s;
}

static int hexval(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* one character of a literal or class: an escape or a UTF-8 sequence (decoded as llama.cpp's
 * parser decodes it: the lead byte's high nibble gives the length) */
static const char *parse_char(parser *p, const char *s, uint32_t *cp) {
    if (*s == '\\') {
        int nhex = 0;
        switch (s[1]) {
        case 'x': nhex = 2; break;
        case 'u': nhex = 4; break;
        case 'U': nhex = 8; break;
        case 't': *cp = '\t'; return s + 2;
        case 'r': *cp = '\r'; return s + 2;
        case 'n': *cp = '\n'; return s + 2;
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-': *cp = (unsigned char)s[1]; return s + 2;
        default:
            return fail(p, s,
                        "an escape (\\x.. \\u.... \\U........ \\t \\r \\n \\\\ \\\" \\[ \\] \\-)");
        }
        uint32_t v = 0;
        for (int i = 0; i < nhex; i++) {
            int h = hexval(s[2 + i]);
            if (h < 0) {
                char what[48];
                snprintf(what, sizeof what, "%d hex digits after \\%c", nhex, s[1]);
                return fail(p, s + 2 + i, what);
            }
            v = (v << 4) | (uint32_t)h;
        }
        *cp = v;
        return s + 2 + nhex;
    }
    if (!*s) return fail(p, s, "a character");
    static const int len_of[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    unsigned char b = (unsigned char)*s;
    int len = len_of[b >> 4];
    uint32_t v = b & ((1u << (8 - len)) - 1);
    const char *e = s + 1;
    for (int i = 1; i < len && *e; i++, e++)
        v = (v << 6) | ((unsigned char)*e & 0x3F);
    *cp = v;
    return e;
}

static const char *parse_uint(parser *p, const char *s, uint64_t *out) {
    if (!is_digit(*s)) return fail(p, s, "an integer");
    uint64_t v = 0;
    for (; is_digit(*s); s++) {
        if (v > (UINT64_MAX - 9) / 10) return fail(p, s, "a smaller integer");
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return s;
}

/* <[id]> or <text> (text resolved by the vocabulary to exactly one token) */
static const char *parse_token(parser *p, const char *s, uint32_t *id) {
    const char *start = s;
    if (*s != '<') return fail(p, s, "'<' (a token)");
    s++;
    if (*s == '[') {
        uint64_t v;
        if (!(s = parse_uint(p, s + 1, &v))) return NULL;
        if (v > INT32_MAX) return fail(p, s, "a token id below 2^31");
        if (*s != ']') return fail(p, s, "']' closing the token id");
        if (s[1] != '>') return fail(p, s + 1, "'>' closing the token");
        *id = (uint32_t)v;
        return s + 2;
    }
    while (*s && *s != '>')
        s++;
    if (*s != '>') return fail(p, s, "'>' closing the token");
    s++;
    if (!p->tok)
        return fail(p, start, "<[id]> (a token written as text needs a model's vocabulary)");
    int32_t t = p->tok(p->tok_user, start, (size_t)(s - start));
    if (t < 0) return fail(p, start, "a token that is exactly one token of the vocabulary");
    *id = (uint32_t)t;
    return s;
}

/* ------------------------------------------------------------------ rules */

static const char *parse_alternates(parser *p, const char *s, const char *rule_name,
                                    uint32_t rule_id, int nested);

/* S{min,max} applied to r[last..]: llama.cpp's rewrite (see the top of the file) */
static int repeat(parser *p, const char *at, elvec *r, size_t last, uint64_t *n_prev,
                  const char *rule_name, uint64_t min, uint64_t max, int no_max) {
    if (last == r->n) {
        fail(p, at, "an item before the repetition (*, +, ?, {...})");
        return -1;
    }
    if (!no_max && max < min) {
        fail(p, at, "a repetition {m,n} with n >= m");
        return -1;
    }
    uint64_t total = !no_max && max > 0 ? max : min > 0 ? min : 1;
    if (*n_prev * total > MAX_REPETITION) {
        fail_as(p, at, VKF_ERROR_UNSUPPORTED,
                "fewer repetitions (rules times repetitions at most 2000, as llama.cpp)");
        return -1;
    }
    elvec prev = {0};
    if (append(p, &prev, r->v + last, r->n - last)) return -1;
    if (min == 0) {
        r->n = last;
    } else {
        for (uint64_t i = 1; i < min; i++)
            if (append(p, r, prev.v, prev.n)) goto fail;
    }
    uint32_t last_rec = 0;
    uint64_t n_opt = no_max ? 1 : max - min;
    for (uint64_t i = 0; i < n_opt; i++) {
        elvec rec = {0};
        int64_t id = new_symbol(p, rule_name);
        if (id < 0 || append(p, &rec, prev.v, prev.n)) goto fail_rec;
        if ((i > 0 || no_max) && push(p, &rec, VKF_G_RULE_REF, no_max ? (uint32_t)id : last_rec))
            goto fail_rec;
        if (push(p, &rec, VKF_G_ALT, 0) || push(p, &rec, VKF_G_END, 0) ||
            set_rule(p, (uint32_t)id, &rec))
            goto fail_rec;
        last_rec = (uint32_t)id;
        continue;
    fail_rec:
        free(rec.v);
        goto fail;
    }
    if (n_opt > 0 && push(p, r, VKF_G_RULE_REF, last_rec)) goto fail;
    *n_prev *= total;
    free(prev.v);
    return 0;
fail:
    free(prev.v);
    return -1;
}

static const char *parse_sequence(parser *p, const char *s, const char *rule_name, elvec *r,
                                  int nested) {
    size_t last = r->n;
    uint64_t n_prev = 1;
    while (*s) {
        if (*s == '"') { /* literal */
            s++;
            last = r->n;
            n_prev = 1;
            while (*s != '"') {
                if (!*s) return fail(p, s, "'\"' closing the literal");
                uint32_t cp;
                if (!(s = parse_char(p, s, &cp)) || push(p, r, VKF_G_CHAR, cp)) return NULL;
            }
            s = skip_space(s + 1, nested);
        } else if (*s == '[') { /* class */
            s++;
            uint32_t start = VKF_G_CHAR;
            if (*s == '^') {
                s++;
                start = VKF_G_CHAR_NOT;
            }
            last = r->n;
            n_prev = 1;
            while (*s != ']') {
                if (!*s) return fail(p, s, "']' closing the character class");
                uint32_t cp;
                if (!(s = parse_char(p, s, &cp)) ||
                    push(p, r, last < r->n ? VKF_G_CHAR_ALT : start, cp))
                    return NULL;
                if (s[0] == '-' && s[1] != ']') {
                    if (!s[1]) return fail(p, s + 1, "the end of the range");
                    if (!(s = parse_char(p, s + 1, &cp)) || push(p, r, VKF_G_CHAR_RNG_UPPER, cp))
                        return NULL;
                }
            }
            s = skip_space(s + 1, nested);
        } else if (*s == '<' || *s == '!') { /* token */
            uint32_t type = VKF_G_TOKEN, id;
            if (*s == '!') {
                type = VKF_G_TOKEN_NOT;
                s++;
            }
            if (!(s = parse_token(p, s, &id))) return NULL;
            last = r->n;
            n_prev = 1;
            if (push(p, r, type, id)) return NULL;
            s = skip_space(s, nested);
        } else if (is_word(*s)) { /* rule reference */
            const char *e = s;
            while (is_word(*e))
                e++;
            int64_t id = symbol_id(p, s, (size_t)(e - s));
            if (id < 0) return NULL;
            s = skip_space(e, nested);
            last = r->n;
            n_prev = 1;
            if (push(p, r, VKF_G_RULE_REF, (uint32_t)id)) return NULL;
        } else if (*s == '(') { /* group: a sub-rule */
            if (++p->depth > MAX_NESTING)
                return fail_as(p, s, VKF_ERROR_UNSUPPORTED, "fewer nested groups (at most 256)");
            s = skip_space(s + 1, 1);
            uint32_t before = p->n_sym;
            int64_t id = new_symbol(p, rule_name);
            if (id < 0 || !(s = parse_alternates(p, s, rule_name, (uint32_t)id, 1))) return NULL;
            p->depth--;
            n_prev = p->n_sym - before > 1 ? p->n_sym - before : 1;
            last = r->n;
            if (push(p, r, VKF_G_RULE_REF, (uint32_t)id)) return NULL;
            if (*s != ')') return fail(p, s, "')' closing the group");
            s = skip_space(s + 1, nested);
        } else if (*s == '.') {
            last = r->n;
            n_prev = 1;
            if (push(p, r, VKF_G_CHAR_ANY, 0)) return NULL;
            s = skip_space(s + 1, nested);
        } else if (*s == '*' || *s == '+' || *s == '?') {
            const char *at = s;
            char c = *s;
            s = skip_space(s + 1, nested);
            if (repeat(p, at, r, last, &n_prev, rule_name, c == '+', c == '?', c != '?'))
                return NULL;
        } else if (*s == '{') {
            const char *at = s;
            uint64_t min, max = 0;
            int no_max = 1;
            s = skip_space(s + 1, nested);
            if (!(s = parse_uint(p, s, &min))) return NULL;
            s = skip_space(s, nested);
            if (*s == '}') {
                max = min;
                no_max = 0;
                s = skip_space(s + 1, nested);
            } else if (*s == ',') {
                s = skip_space(s + 1, nested);
                if (is_digit(*s)) {
                    if (!(s = parse_uint(p, s, &max))) return NULL;
                    no_max = 0;
                    s = skip_space(s, nested);
                }
                if (*s != '}') return fail(p, s, "'}' closing the repetition");
                s = skip_space(s + 1, nested);
            } else {
                return fail(p, s, "',' or '}' in the repetition");
            }
            if (min > MAX_REPETITION)
                return fail_as(p, at, VKF_ERROR_UNSUPPORTED,
                               "at most 2000 repetitions (llama.cpp's limit)");
            if (!no_max && max > MAX_REPETITION) no_max = 1; /* as llama.cpp: unbounded */
            if (repeat(p, at, r, last, &n_prev, rule_name, min, max, no_max)) return NULL;
        } else {
            break;
        }
    }
    return s;
}

static const char *parse_alternates(parser *p, const char *s, const char *rule_name,
                                    uint32_t rule_id, int nested) {
    elvec r = {0};
    s = parse_sequence(p, s, rule_name, &r, nested);
    while (s && *s == '|') {
        if (push(p, &r, VKF_G_ALT, 0)) s = NULL;
        if (s) s = parse_sequence(p, skip_space(s + 1, 1), rule_name, &r, nested);
    }
    if (!s || push(p, &r, VKF_G_END, 0) || set_rule(p, rule_id, &r)) {
        free(r.v);
        return NULL;
    }
    return s;
}

static const char *parse_rule(parser *p, const char *s) {
    const char *e = s;
    while (is_word(*e))
        e++;
    if (e == s) return fail(p, s, "a rule name ([a-zA-Z0-9-]+)");
    size_t nlen = (size_t)(e - s);
    int64_t id = symbol_id(p, s, nlen);
    if (id < 0) return NULL;
    const char *q = skip_space(e, 0);
    if (!(q[0] == ':' && q[1] == ':' && q[2] == '='))
        return fail(p, q, "'::=' after the rule name");
    q = skip_space(q + 3, 1);
    if (!(q = parse_alternates(p, q, p->names[id], (uint32_t)id, 0))) return NULL;
    if (*q == '\r')
        q += q[1] == '\n' ? 2 : 1;
    else if (*q == '\n')
        q++;
    else if (*q)
        return fail(p, q, "the end of the line (or '|' for another alternative)");
    return skip_space(q, 1);
}

/* ------------------------------------------------------------------ checks */

/* Least fixpoints over the rules: with terminals 0, the rules that can derive the empty string
 * (nullable: an alternative of nullable rules only); with terminals 1, the rules that derive some
 * string (productive: an alternative of characters, tokens and productive rules). A start rule
 * that is not productive (x ::= x, or x ::= "a" x) matches nothing: a model held to it could never
 * write a token. */
static uint8_t *rule_fixpoint(const vkf_gbnf *g, int terminals) {
    uint8_t *in = calloc(g->n_rules ? g->n_rules : 1, 1);
    if (!in) return NULL;
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t r = 0; r < g->n_rules; r++) {
            if (in[r]) continue;
            const vkf_gelem *e = g->rules[r];
            int alt_ok = 1; /* the current alternative qualifies so far */
            for (uint32_t i = 0;; i++) {
                if (e[i].type == VKF_G_END || e[i].type == VKF_G_ALT) {
                    if (alt_ok) {
                        in[r] = 1;
                        changed = 1;
                        break;
                    }
                    if (e[i].type == VKF_G_END) break;
                    alt_ok = 1;
                } else if (e[i].type == VKF_G_RULE_REF) {
                    alt_ok = alt_ok && in[e[i].value];
                } else if (!terminals && e[i].type != VKF_G_CHAR_ALT &&
                           e[i].type != VKF_G_CHAR_RNG_UPPER) {
                    alt_ok = 0; /* a character or token: not empty */
                }
            }
        }
    }
    return in;
}

static uint8_t *nullable_rules(const vkf_gbnf *g) { return rule_fixpoint(g, 0); }

int vkf_gbnf_rule_productive(const vkf_gbnf *g, uint32_t rule) {
    uint8_t *prod = rule_fixpoint(g, 1);
    if (!prod) return -1;
    int r = rule < g->n_rules && prod[rule];
    free(prod);
    return r;
}

/* Left recursion (a rule reaching itself before consuming anything, through a reference that
 * leaves something of its alternative to match afterwards) makes the stack grow without end:
 * refused, as llama.cpp refuses it. Nullability is computed to the fixpoint (llama.cpp looks
 * only at directly empty alternatives); a cycle of references in tail position only (x ::= y x
 * | "" with y nullable) pushes nothing, revisits the same stacks and is kept, as llama.cpp keeps
 * it. The edges r -> s ("s can come first in r") form strongly connected components (Tarjan,
 * iterative); a component with a pushing edge inside is left recursion. Returns a rule of such
 * a component, -1 when none, -2 out of memory. */
typedef struct ledge {
    uint32_t to;
    uint8_t push;
} ledge;

static int64_t left_recursive(const vkf_gbnf *g) {
    uint32_t n = g->n_rules;
    uint8_t *nul = nullable_rules(g);
    uint32_t *first = calloc((size_t)n + 1, sizeof *first);
    ledge *edges = NULL;
    size_t n_edges = 0, cap = 0;
    int64_t found = -2;
    uint32_t *index = NULL, *low = NULL, *stk = NULL, *cstk = NULL, *cpos = NULL, *comp = NULL;
    uint8_t *on = NULL;
    if (!nul || !first) goto done;
    for (uint32_t r = 0; r < n; r++) {
        first[r] = (uint32_t)n_edges;
        const vkf_gelem *e = g->rules[r];
        int lead = 1;
        for (uint32_t i = 0; e[i].type != VKF_G_END; i++) {
            if (e[i].type == VKF_G_ALT) {
                lead = 1;
            } else if (e[i].type == VKF_G_RULE_REF) {
                if (lead) {
                    if (n_edges == cap) {
                        cap = cap ? 2 * cap : 64;
                        ledge *ne = realloc(edges, cap * sizeof *ne);
                        if (!ne) goto done;
                        edges = ne;
                    }
                    uint32_t nt = e[i + 1].type;
                    edges[n_edges++] = (ledge){e[i].value, nt != VKF_G_END && nt != VKF_G_ALT};
                }
                lead = lead && nul[e[i].value];
            } else if (e[i].type != VKF_G_CHAR_ALT && e[i].type != VKF_G_CHAR_RNG_UPPER) {
                lead = 0;
            }
        }
    }
    first[n] = (uint32_t)n_edges;
    index = malloc((n ? n : 1) * sizeof *index);
    low = malloc((n ? n : 1) * sizeof *low);
    stk = malloc((n ? n : 1) * sizeof *stk);
    cstk = malloc((n ? n : 1) * sizeof *cstk);
    cpos = malloc((n ? n : 1) * sizeof *cpos);
    comp = malloc((n ? n : 1) * sizeof *comp);
    on = calloc(n ? n : 1, 1);
    if (!index || !low || !stk || !cstk || !cpos || !comp || !on) goto done;
    for (uint32_t r = 0; r < n; r++)
        index[r] = comp[r] = UINT32_MAX;
    uint32_t next = 0, sp = 0, csp = 0;
    for (uint32_t r0 = 0; r0 < n; r0++) {
        if (index[r0] != UINT32_MAX) continue;
        cstk[csp] = r0;
        cpos[csp++] = first[r0];
        index[r0] = low[r0] = next++;
        stk[sp++] = r0;
        on[r0] = 1;
        while (csp) {
            uint32_t v = cstk[csp - 1];
            if (cpos[csp - 1] < first[v + 1]) {
                uint32_t w = edges[cpos[csp - 1]++].to;
                if (index[w] == UINT32_MAX) {
                    index[w] = low[w] = next++;
                    stk[sp++] = w;
                    on[w] = 1;
                    cstk[csp] = w;
                    cpos[csp++] = first[w];
                } else if (on[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
                continue;
            }
            csp--;
            if (csp && low[v] < low[cstk[csp - 1]]) low[cstk[csp - 1]] = low[v];
            if (low[v] == index[v]) { /* v roots a component */
                uint32_t w;
                do {
                    w = stk[--sp];
                    on[w] = 0;
                    comp[w] = v;
                } while (w != v);
            }
        }
    }
    found = -1;
    for (uint32_t r = 0; r < n && found < 0; r++)
        for (uint32_t k = first[r]; k < first[r + 1]; k++)
            if (edges[k].push && comp[edges[k].to] == comp[r]) {
                found = r;
                break;
            }
done:
    free(nul);
    free(first);
    free(edges);
    free(index);
    free(low);
    free(stk);
    free(cstk);
    free(cpos);
    free(comp);
    free(on);
    return found;
}

/* ------------------------------------------------------------------ entry points */

void vkf_gbnf_free(vkf_gbnf *g) {
    if (!g) return;
    for (uint32_t i = 0; i < g->n_rules; i++) {
        free(g->rules ? g->rules[i] : NULL);
        free(g->names ? g->names[i] : NULL);
    }
    free(g->rules);
    free(g->rule_len);
    free(g->names);
    free(g->el);
    free(g->rule_start);
    free(g);
}

static void parser_free(parser *p) {
    for (uint32_t i = 0; i < p->n_sym; i++)
        free(p->names[i]);
    free(p->names);
    for (uint32_t i = 0; i < p->n_rules; i++)
        free(p->rules[i].v);
    free(p->rules);
}

static vkf_status parse(const char *text, size_t len, vkf_gbnf_token_fn tok, void *tok_user,
                        int check, vkf_gbnf **out) {
    *out = NULL;
    if (!text) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "grammar: NULL text");
    if (memchr(text, '\0', len))
        return vkf_error(VKF_ERROR_FORMAT, "grammar: a NUL byte in the text (at byte %zu)",
                         (size_t)((const char *)memchr(text, '\0', len) - text));
    char *src = malloc(len + 1);
    if (!src) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    memcpy(src, text, len);
    src[len] = '\0';
    parser p = {.src = src, .tok = tok, .tok_user = tok_user};
    const char *s = skip_space(src, 1);
    while (s && *s)
        s = parse_rule(&p, s);
    if (p.err == VKF_OK && check && p.n_sym == 0)
        p.err = vkf_error(VKF_ERROR_FORMAT, "grammar: no rules");
    /* every rule used is defined */
    for (uint32_t i = 0; p.err == VKF_OK && i < p.n_sym; i++) {
        if (i < p.n_rules && p.rules[i].n) continue;
        /* find a use, for the line */
        p.err =
            vkf_error(VKF_ERROR_FORMAT, "grammar: rule '%s' is used but never defined", p.names[i]);
    }
    if (p.err != VKF_OK) {
        parser_free(&p);
        free(src);
        return p.err;
    }
    free(src);
    vkf_gbnf *g = calloc(1, sizeof *g);
    if (!g) {
        parser_free(&p);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    g->n_rules = p.n_sym;
    g->names = p.names;
    g->rules = calloc(p.n_sym ? p.n_sym : 1, sizeof *g->rules);
    g->rule_len = calloc(p.n_sym ? p.n_sym : 1, sizeof *g->rule_len);
    g->rule_start = calloc(p.n_sym ? p.n_sym : 1, sizeof *g->rule_start);
    size_t total = 0;
    for (uint32_t i = 0; i < p.n_sym; i++)
        total += p.rules[i].n;
    g->el = malloc((total ? total : 1) * sizeof *g->el);
    if (!g->rules || !g->rule_len || !g->rule_start || !g->el) {
        for (uint32_t i = 0; i < p.n_rules; i++)
            free(p.rules[i].v);
        free(p.rules);
        g->n_rules = p.n_sym;
        vkf_gbnf_free(g);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    for (uint32_t i = 0; i < p.n_sym; i++) {
        g->rules[i] = p.rules[i].v;
        g->rule_len[i] = (uint32_t)p.rules[i].n;
        g->rule_start[i] = g->n_el;
        memcpy(g->el + g->n_el, p.rules[i].v, p.rules[i].n * sizeof *g->el);
        g->n_el += (uint32_t)p.rules[i].n;
    }
    free(p.rules);
    if (check) {
        int64_t lr = left_recursive(g);
        if (lr == -2) {
            vkf_gbnf_free(g);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
        }
        if (lr >= 0) {
            vkf_status st = vkf_error(VKF_ERROR_FORMAT,
                                      "grammar: rule '%s' is left-recursive (it can reach itself "
                                      "before matching any character); rewrite it with a "
                                      "repetition, e.g. x ::= item (\",\" item)*",
                                      g->names[lr]);
            vkf_gbnf_free(g);
            return st;
        }
    }
    *out = g;
    return VKF_OK;
}

vkf_status vkf_gbnf_parse_rules(const char *text, size_t len, vkf_gbnf_token_fn tok, void *tok_user,
                                vkf_gbnf **out) {
    return parse(text, len, tok, tok_user, 0, out);
}

vkf_status vkf_gbnf_parse(const char *text, size_t len, const char *root, vkf_gbnf_token_fn tok,
                          void *tok_user, vkf_gbnf **out) {
    vkf_gbnf *g;
    VKF_TRY(parse(text, len, tok, tok_user, 1, &g));
    if (!root || !*root) root = "root";
    for (uint32_t i = 0; i < g->n_rules; i++)
        if (strcmp(g->names[i], root) == 0) {
            int prod = vkf_gbnf_rule_productive(g, i);
            if (prod != 1) {
                vkf_status st =
                    prod < 0
                        ? vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory")
                        : vkf_error(VKF_ERROR_FORMAT,
                                    "grammar: the start rule '%s' matches no string (each of its "
                                    "alternatives refers to a rule that never ends, e.g. x ::= "
                                    "\"a\" x); give the recursion an alternative that ends",
                                    root);
                vkf_gbnf_free(g);
                return st;
            }
            g->root = i;
            *out = g;
            return VKF_OK;
        }
    vkf_gbnf_free(g);
    return vkf_error(VKF_ERROR_FORMAT, "grammar: no rule named '%s' (the start rule)", root);
}
