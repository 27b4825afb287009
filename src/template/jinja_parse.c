/* Jinja parser: tokens to a syntax tree, with Jinja2's operator precedence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_lex.h"

typedef struct jj_parser {
    jj_ctx *c;
    jj_lexer L;
    size_t i;  /* current token */
    int loops; /* enclosing for bodies (break/continue), reset inside macros */
} jj_parser;

static jj_token *cur(jj_parser *P) { return &P->L.toks[P->i]; }
static jj_token *peek(jj_parser *P, size_t k) {
    size_t j = P->i + k;
    return &P->L.toks[j < P->L.n ? j : P->L.n - 1];
}
static void advance(jj_parser *P) {
    if (P->i + 1 < P->L.n) P->i++;
}

static const char *tok_desc(const jj_token *k, char *buf, size_t n) {
    switch (k->type) {
    case JT_TEXT: return "template text";
    case JT_VAR_BEGIN: return "'{{'";
    case JT_VAR_END: return "'}}'";
    case JT_BLOCK_BEGIN: return "'{%'";
    case JT_BLOCK_END: return "'%}'";
    case JT_STRING: return "a string";
    case JT_INT: return "an integer";
    case JT_FLOAT: return "a float";
    case JT_EOF: return "the end of the template";
    case JT_NAME:
    case JT_OP: snprintf(buf, n, "'%.*s'", (int)(k->n > 40 ? 40 : k->n), k->s); return buf;
    }
    return "?";
}

_Noreturn static void fail_at(jj_parser *P, const jj_token *k, const char *expected) {
    char buf[64];
    jj_fail(P->c, k->line, k->col, "expected %s, found %s", expected, tok_desc(k, buf, sizeof buf));
}

static int is_op(const jj_token *k, const char *op) {
    return k->type == JT_OP && k->n == strlen(op) && memcmp(k->s, op, k->n) == 0;
}
static int is_name(const jj_token *k, const char *name) {
    return k->type == JT_NAME && k->n == strlen(name) && memcmp(k->s, name, k->n) == 0;
}
static void expect_op(jj_parser *P, const char *op) {
    if (!is_op(cur(P), op)) {
        char e[16];
        snprintf(e, sizeof e, "'%s'", op);
        fail_at(P, cur(P), e);
    }
    advance(P);
}
static void expect_type(jj_parser *P, jj_tok_type t, const char *what) {
    if (cur(P)->type != t) fail_at(P, cur(P), what);
    advance(P);
}
static const char *expect_name(jj_parser *P) {
    jj_token *k = cur(P);
    if (k->type != JT_NAME) fail_at(P, k, "a name");
    advance(P);
    return jj_strdup(P->c, k->s, k->n);
}

static jj_node *node(jj_parser *P, jj_kind kind, const jj_token *at) {
    jj_node *n = jj_alloc(P->c, sizeof *n);
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->line = at->line;
    n->col = at->col;
    return n;
}

/* growable node lists */
typedef struct nlist {
    jj_node **p;
    int n, cap;
} nlist;
static void nl_push(jj_ctx *c, nlist *l, jj_node *x) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        jj_node **np = jj_alloc(c, (size_t)cap * sizeof *np);
        if (l->n) memcpy(np, l->p, (size_t)l->n * sizeof *np);
        l->p = np;
        l->cap = cap;
    }
    l->p[l->n++] = x;
}
typedef struct slist {
    const char **p;
    int n, cap;
} slist;
static void sl_push(jj_ctx *c, slist *l, const char *x) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        const char **np = jj_alloc(c, (size_t)cap * sizeof *np);
        if (l->n) memcpy(np, l->p, (size_t)l->n * sizeof *np);
        l->p = np;
        l->cap = cap;
    }
    l->p[l->n++] = x;
}

/* ------------------------------------------------------------------ expressions */

static jj_node *parse_expr(jj_parser *P);
static jj_node *parse_or(jj_parser *P);
static jj_node *parse_unary(jj_parser *P, int with_filter);
static jj_node *parse_primary(jj_parser *P);
static jj_node *parse_postfix(jj_parser *P, jj_node *n);

static void enter(jj_parser *P) { jj_enter(P->c, cur(P)->line, cur(P)->col); }

/* ( args, name=value ) after the '(' was seen */
static void parse_call_args(jj_parser *P, jj_node *n) {
    expect_op(P, "(");
    nlist args = {0}, kwv = {0};
    slist kwn = {0};
    while (!is_op(cur(P), ")")) {
        if (args.n + kwv.n) expect_op(P, ",");
        if (is_op(cur(P), ")")) break; /* trailing comma */
        if (is_op(cur(P), "*") || is_op(cur(P), "**"))
            jj_fail(P->c, cur(P)->line, cur(P)->col, "*args / **kwargs in calls are not supported");
        if (cur(P)->type == JT_NAME && is_op(peek(P, 1), "=")) {
            sl_push(P->c, &kwn, jj_strdup(P->c, cur(P)->s, cur(P)->n));
            advance(P);
            advance(P);
            nl_push(P->c, &kwv, parse_expr(P));
        } else {
            if (kwv.n)
                jj_fail(P->c, cur(P)->line, cur(P)->col,
                        "positional argument after a keyword argument");
            nl_push(P->c, &args, parse_expr(P));
        }
    }
    advance(P);
    n->args = args.p;
    n->nargs = args.n;
    n->kwn = kwn.p;
    n->kwv = kwv.p;
    n->nkw = kwn.n;
}

static const char *dotted_name(jj_parser *P) {
    jj_token *k = cur(P);
    const char *name = expect_name(P);
    while (is_op(cur(P), ".") &&
           peek(P, 1)->type == JT_NAME) { /* jinja2 allows dotted filter names */
        advance(P);
        jj_token *k2 = cur(P);
        advance(P);
        char *s = jj_alloc(P->c, strlen(name) + k2->n + 2);
        sprintf(s, "%s.%.*s", name, (int)k2->n, k2->s);
        name = s;
    }
    (void)k;
    return name;
}

static jj_node *parse_filter(jj_parser *P, jj_node *operand) {
    jj_token *at = cur(P);
    jj_node *n = node(P, JN_FILTER, at);
    n->a = operand;
    n->s = dotted_name(P);
    /* jinja2 checks filter and test names when it compiles the template */
    if (!jj_is_filter_name(n->s)) jj_fail(P->c, at->line, at->col, "no filter named '%s'", n->s);
    if (is_op(cur(P), "(")) parse_call_args(P, n);
    return n;
}

static jj_node *parse_test(jj_parser *P, jj_node *operand) {
    jj_token *at = cur(P);
    jj_node *n = node(P, JN_TEST, at);
    n->a = operand;
    if (is_name(cur(P), "not")) {
        n->neg = 1;
        advance(P);
    }
    jj_token *nt = cur(P);
    n->s = dotted_name(P);
    if (!jj_is_test_name(n->s)) jj_fail(P->c, nt->line, nt->col, "no test named '%s'", n->s);
    jj_token *k = cur(P);
    if (is_op(k, "(")) {
        parse_call_args(P, n);
    } else if ((k->type == JT_NAME || k->type == JT_STRING || k->type == JT_INT ||
                k->type == JT_FLOAT || is_op(k, "[") || is_op(k, "{")) &&
               !is_name(k, "else") && !is_name(k, "or") && !is_name(k, "and") &&
               !is_name(k, "if") && !is_name(k, "in") && !is_name(k, "is")) {
        /* one argument without parentheses: `x is sameas false`, `x is divisibleby 3` */
        jj_node *arg = parse_postfix(P, parse_primary(P));
        n->args = jj_alloc(P->c, sizeof *n->args);
        n->args[0] = arg;
        n->nargs = 1;
    }
    return n;
}

static jj_node *parse_filter_expr(jj_parser *P, jj_node *n) {
    for (;;) {
        if (is_op(cur(P), "|")) {
            advance(P);
            n = parse_filter(P, n);
        } else if (is_name(cur(P), "is")) {
            advance(P);
            n = parse_test(P, n);
        } else if (is_op(cur(P), "(")) {
            jj_node *call = node(P, JN_CALL, cur(P));
            call->a = n;
            parse_call_args(P, call);
            n = call;
        } else {
            return n;
        }
    }
}

static jj_node *parse_subscript(jj_parser *P, jj_node *obj) {
    jj_token *at = cur(P);
    expect_op(P, "[");
    jj_node *b = NULL, *c = NULL, *d = NULL;
    if (!is_op(cur(P), ":")) b = parse_expr(P);
    if (!is_op(cur(P), ":")) {
        if (is_op(cur(P), ",")) { /* x[a, b]: a tuple key */
            jj_node *t = node(P, JN_TUPLE, at);
            nlist items = {0};
            nl_push(P->c, &items, b);
            while (is_op(cur(P), ",")) {
                advance(P);
                if (is_op(cur(P), "]")) break;
                nl_push(P->c, &items, parse_expr(P));
            }
            t->args = items.p;
            t->nargs = items.n;
            b = t;
        }
        expect_op(P, "]");
        jj_node *n = node(P, JN_GETITEM, at);
        n->a = obj;
        n->b = b;
        return n;
    }
    advance(P); /* ':' */
    if (!is_op(cur(P), "]") && !is_op(cur(P), ":")) c = parse_expr(P);
    if (is_op(cur(P), ":")) {
        advance(P);
        if (!is_op(cur(P), "]")) d = parse_expr(P);
    }
    expect_op(P, "]");
    jj_node *n = node(P, JN_SLICE, at);
    n->a = obj;
    n->b = b;
    n->c = c;
    n->d = d;
    return n;
}

static jj_node *parse_postfix(jj_parser *P, jj_node *n) {
    for (;;) {
        jj_token *k = cur(P);
        if (is_op(k, ".")) {
            advance(P);
            jj_token *a = cur(P);
            if (a->type == JT_NAME) {
                jj_node *g = node(P, JN_GETATTR, k);
                g->a = n;
                g->s = jj_strdup(P->c, a->s, a->n);
                advance(P);
                n = g;
            } else if (a->type == JT_INT) { /* x.0 is x[0] */
                jj_node *g = node(P, JN_GETITEM, k);
                g->a = n;
                g->b = node(P, JN_CONST, a);
                g->b->val = jj_int(P->c, a->i);
                advance(P);
                n = g;
            } else {
                fail_at(P, a, "an attribute name after '.'");
            }
        } else if (is_op(k, "[")) {
            n = parse_subscript(P, n);
        } else if (is_op(k, "(")) {
            jj_node *call = node(P, JN_CALL, k);
            call->a = n;
            parse_call_args(P, call);
            n = call;
        } else {
            return n;
        }
    }
}

/* ( ... ): a parenthesized expression or a tuple */
static jj_node *parse_paren(jj_parser *P) {
    jj_token *at = cur(P);
    expect_op(P, "(");
    if (is_op(cur(P), ")")) {
        advance(P);
        jj_node *t = node(P, JN_TUPLE, at);
        return t;
    }
    jj_node *first = parse_expr(P);
    if (!is_op(cur(P), ",")) {
        expect_op(P, ")");
        return first;
    }
    nlist items = {0};
    nl_push(P->c, &items, first);
    while (is_op(cur(P), ",")) {
        advance(P);
        if (is_op(cur(P), ")")) break;
        nl_push(P->c, &items, parse_expr(P));
    }
    expect_op(P, ")");
    jj_node *t = node(P, JN_TUPLE, at);
    t->args = items.p;
    t->nargs = items.n;
    return t;
}

static jj_node *parse_primary(jj_parser *P) {
    jj_token *k = cur(P);
    enter(P);
    jj_node *n;
    if (k->type == JT_NAME) {
        n = node(P, JN_CONST, k);
        if (is_name(k, "true") || is_name(k, "True"))
            n->val = P->c->vtrue;
        else if (is_name(k, "false") || is_name(k, "False"))
            n->val = P->c->vfalse;
        else if (is_name(k, "none") || is_name(k, "None"))
            n->val = P->c->none;
        else {
            n->kind = JN_NAME;
            n->s = jj_strdup(P->c, k->s, k->n);
        }
        advance(P);
    } else if (k->type == JT_STRING) {
        jj_buf b = {0};
        while (cur(P)->type == JT_STRING) { /* adjacent literals concatenate */
            jj_buf_put(P->c, &b, cur(P)->s, cur(P)->n);
            advance(P);
        }
        n = node(P, JN_CONST, k);
        n->val = jj_str_ref(P->c, b.p ? b.p : "", b.n);
    } else if (k->type == JT_INT) {
        n = node(P, JN_CONST, k);
        n->val = jj_int(P->c, k->i);
        advance(P);
    } else if (k->type == JT_FLOAT) {
        n = node(P, JN_CONST, k);
        n->val = jj_float(P->c, k->f);
        advance(P);
    } else if (is_op(k, "(")) {
        n = parse_paren(P);
    } else if (is_op(k, "[")) {
        advance(P);
        n = node(P, JN_LIST, k);
        nlist items = {0};
        while (!is_op(cur(P), "]")) {
            if (items.n) expect_op(P, ",");
            if (is_op(cur(P), "]")) break;
            nl_push(P->c, &items, parse_expr(P));
        }
        advance(P);
        n->args = items.p;
        n->nargs = items.n;
    } else if (is_op(k, "{")) {
        advance(P);
        n = node(P, JN_DICT, k);
        nlist items = {0};
        while (!is_op(cur(P), "}")) {
            if (items.n) expect_op(P, ",");
            if (is_op(cur(P), "}")) break;
            nl_push(P->c, &items, parse_expr(P));
            expect_op(P, ":");
            nl_push(P->c, &items, parse_expr(P));
        }
        advance(P);
        n->args = items.p;
        n->nargs = items.n;
    } else {
        fail_at(P, k, "an expression");
    }
    jj_leave(P->c);
    return n;
}

static jj_node *parse_unary(jj_parser *P, int with_filter) {
    jj_token *k = cur(P);
    enter(P);
    jj_node *n;
    if (is_op(k, "-") || is_op(k, "+")) {
        advance(P);
        n = node(P, is_op(k, "-") ? JN_NEG : JN_POS, k);
        n->a = parse_unary(P, 0);
    } else {
        n = parse_postfix(P, parse_primary(P));
    }
    if (with_filter) n = parse_filter_expr(P, n);
    jj_leave(P->c);
    return n;
}

static jj_node *binop(jj_parser *P, const jj_token *at, int op, jj_node *a, jj_node *b) {
    jj_node *n = node(P, JN_BINOP, at);
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static jj_node *parse_pow(jj_parser *P) {
    jj_node *n = parse_unary(P, 1);
    while (is_op(cur(P), "**")) {
        jj_token *at = cur(P);
        advance(P);
        n = binop(P, at, JOP_POW, n, parse_unary(P, 1));
    }
    return n;
}

static jj_node *parse_math2(jj_parser *P) {
    jj_node *n = parse_pow(P);
    for (;;) {
        jj_token *at = cur(P);
        int op = is_op(at, "*")    ? JOP_MUL
                 : is_op(at, "/")  ? JOP_DIV
                 : is_op(at, "//") ? JOP_FLOORDIV
                 : is_op(at, "%")  ? JOP_MOD
                                   : 0;
        if (!op) return n;
        advance(P);
        n = binop(P, at, op, n, parse_pow(P));
    }
}

static jj_node *parse_concat(jj_parser *P) {
    jj_node *n = parse_math2(P);
    while (is_op(cur(P), "~")) {
        jj_token *at = cur(P);
        advance(P);
        n = binop(P, at, JOP_CONCAT, n, parse_math2(P));
    }
    return n;
}

static jj_node *parse_math1(jj_parser *P) {
    jj_node *n = parse_concat(P);
    for (;;) {
        jj_token *at = cur(P);
        int op = is_op(at, "+") ? JOP_ADD : is_op(at, "-") ? JOP_SUB : 0;
        if (!op) return n;
        advance(P);
        n = binop(P, at, op, n, parse_concat(P));
    }
}

/* a < b < c is (a < b) and (b < c) */
static jj_node *parse_compare(jj_parser *P) {
    jj_node *left = parse_math1(P), *result = NULL;
    for (;;) {
        jj_token *at = cur(P);
        int op = is_op(at, "==")     ? JOP_EQ
                 : is_op(at, "!=")   ? JOP_NE
                 : is_op(at, "<")    ? JOP_LT
                 : is_op(at, "<=")   ? JOP_LE
                 : is_op(at, ">")    ? JOP_GT
                 : is_op(at, ">=")   ? JOP_GE
                 : is_name(at, "in") ? JOP_IN
                                     : 0;
        if (!op && is_name(at, "not") && is_name(peek(P, 1), "in")) {
            op = JOP_NOTIN;
            advance(P);
        }
        if (!op) return result ? result : left;
        advance(P);
        jj_node *right = parse_math1(P);
        jj_node *cmp = binop(P, at, op, left, right);
        if (result) {
            jj_node *a = node(P, JN_AND, at);
            a->a = result;
            a->b = cmp;
            result = a;
        } else {
            result = cmp;
        }
        left = right;
    }
}

static jj_node *parse_not(jj_parser *P) {
    if (is_name(cur(P), "not")) {
        jj_token *at = cur(P);
        advance(P);
        enter(P);
        jj_node *n = node(P, JN_NOT, at);
        n->a = parse_not(P);
        jj_leave(P->c);
        return n;
    }
    return parse_compare(P);
}

static jj_node *parse_and(jj_parser *P) {
    jj_node *n = parse_not(P);
    while (is_name(cur(P), "and")) {
        jj_token *at = cur(P);
        advance(P);
        jj_node *a = node(P, JN_AND, at);
        a->a = n;
        a->b = parse_not(P);
        n = a;
    }
    return n;
}

static jj_node *parse_or(jj_parser *P) {
    jj_node *n = parse_and(P);
    while (is_name(cur(P), "or")) {
        jj_token *at = cur(P);
        advance(P);
        jj_node *o = node(P, JN_OR, at);
        o->a = n;
        o->b = parse_and(P);
        n = o;
    }
    return n;
}

/* b if a else c */
static jj_node *parse_expr(jj_parser *P) {
    enter(P);
    jj_node *n = parse_or(P);
    while (is_name(cur(P), "if")) {
        jj_token *at = cur(P);
        advance(P);
        jj_node *ce = node(P, JN_COND, at);
        ce->b = n;
        ce->a = parse_or(P);
        if (is_name(cur(P), "else")) {
            advance(P);
            ce->c = parse_expr(P);
        }
        n = ce;
    }
    jj_leave(P->c);
    return n;
}

/* a, b, c (without parentheses) as a tuple; a single expression as itself */
static jj_node *parse_tuple(jj_parser *P, int with_condexpr) {
    jj_token *at = cur(P);
    jj_node *first = with_condexpr ? parse_expr(P) : parse_or(P);
    if (!is_op(cur(P), ",")) return first;
    nlist items = {0};
    nl_push(P->c, &items, first);
    while (is_op(cur(P), ",")) {
        advance(P);
        if (cur(P)->type == JT_BLOCK_END || cur(P)->type == JT_VAR_END || is_name(cur(P), "in") ||
            is_op(cur(P), "="))
            break;
        nl_push(P->c, &items, with_condexpr ? parse_expr(P) : parse_or(P));
    }
    jj_node *t = node(P, JN_TUPLE, at);
    t->args = items.p;
    t->nargs = items.n;
    return t;
}

/* ------------------------------------------------------------------ statements */

static jj_node **parse_body(jj_parser *P, const char *const *ends, int *n, const char **which);

static void end_tag(jj_parser *P) { expect_type(P, JT_BLOCK_END, "'%}'"); }

/* for targets: a name, or names separated by commas (optionally in parentheses) */
static void parse_targets(jj_parser *P, jj_node *n) {
    slist names = {0};
    int paren = is_op(cur(P), "(");
    if (paren) advance(P);
    do {
        if (names.n) advance(P);
        sl_push(P->c, &names, expect_name(P));
    } while (is_op(cur(P), ","));
    if (paren) expect_op(P, ")");
    n->kwn = names.p;
    n->nkw = names.n;
}

static jj_node *parse_if(jj_parser *P, jj_token *at) {
    jj_node *n = node(P, JN_IF, at);
    n->a = parse_tuple(P, 1);
    end_tag(P);
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    const char *which;
    n->body = parse_body(P, ends, &n->nbody, &which);
    jj_token *k = cur(P);
    advance(P); /* the tag name */
    if (strcmp(which, "elif") == 0) {
        n->els = jj_alloc(P->c, sizeof *n->els);
        n->els[0] = parse_if(P, k);
        n->nels = 1;
        return n;
    }
    if (strcmp(which, "else") == 0) {
        end_tag(P);
        static const char *const ends2[] = {"endif", NULL};
        n->els = parse_body(P, ends2, &n->nels, &which);
        advance(P);
    }
    end_tag(P);
    return n;
}

static jj_node *parse_for(jj_parser *P, jj_token *at) {
    jj_node *n = node(P, JN_FOR, at);
    parse_targets(P, n);
    if (!is_name(cur(P), "in")) fail_at(P, cur(P), "'in'");
    advance(P);
    n->a = parse_tuple(P, 0);
    if (is_name(cur(P), "if")) {
        advance(P);
        n->b = parse_expr(P);
    }
    if (is_name(cur(P), "recursive")) { /* loop(items) renders the body again, one level deeper */
        n->neg = 1;
        advance(P);
    }
    end_tag(P);
    static const char *const ends[] = {"else", "endfor", NULL};
    const char *which;
    P->loops++;
    n->body = parse_body(P, ends, &n->nbody, &which);
    P->loops--;
    advance(P);
    if (strcmp(which, "else") == 0) {
        end_tag(P);
        static const char *const ends2[] = {"endfor", NULL};
        n->els = parse_body(P, ends2, &n->nels, &which);
        advance(P);
    }
    end_tag(P);
    return n;
}

static jj_node *parse_set(jj_parser *P, jj_token *at) {
    jj_node *n = node(P, JN_SET, at);
    jj_token *t = cur(P);
    const char *name = expect_name(P);
    if (is_op(cur(P), ".")) { /* ns.attr */
        advance(P);
        n->a = node(P, JN_GETATTR, t);
        n->a->a = node(P, JN_NAME, t);
        n->a->a->s = name;
        n->a->s = expect_name(P);
    } else if (is_op(cur(P), ",")) {
        n->a = node(P, JN_TUPLE, t);
        slist names = {0};
        sl_push(P->c, &names, name);
        while (is_op(cur(P), ",")) {
            advance(P);
            sl_push(P->c, &names, expect_name(P));
        }
        n->a->kwn = names.p;
        n->a->nkw = names.n;
    } else {
        n->a = node(P, JN_NAME, t);
        n->a->s = name;
    }
    if (is_op(cur(P), "=")) {
        advance(P);
        n->b = parse_tuple(P, 1);
        end_tag(P);
        return n;
    }
    /* block set: {% set x %}...{% endset %} (with optional filters) */
    if (n->a->kind != JN_NAME) fail_at(P, cur(P), "'='");
    jj_node *filt = NULL;
    while (is_op(cur(P), "|")) {
        advance(P);
        filt = parse_filter(P, filt);
    }
    end_tag(P);
    static const char *const ends[] = {"endset", NULL};
    const char *which;
    n->body = parse_body(P, ends, &n->nbody, &which);
    advance(P);
    end_tag(P);
    n->c = filt;
    return n;
}

/* ( name [= default], ... ) of a macro or a call block */
static void parse_params(jj_parser *P, jj_node *n) {
    expect_op(P, "(");
    slist names = {0};
    nlist defs = {0};
    while (!is_op(cur(P), ")")) {
        if (names.n) expect_op(P, ",");
        if (is_op(cur(P), ")")) break;
        sl_push(P->c, &names, expect_name(P));
        jj_node *def = NULL;
        if (is_op(cur(P), "=")) {
            advance(P);
            def = parse_expr(P);
        } else if (defs.n && defs.p[defs.n - 1]) {
            jj_fail(P->c, cur(P)->line, cur(P)->col,
                    "non-default argument follows default argument");
        }
        nl_push(P->c, &defs, def);
    }
    advance(P);
    n->kwn = names.p;
    n->kwv = defs.p;
    n->nkw = names.n;
}

/* a macro's (or caller's) body: break/continue cannot reach loops outside it */
static jj_node **parse_macro_body(jj_parser *P, const char *end, int *n) {
    const char *const ends[] = {end, NULL};
    const char *which;
    int saved = P->loops;
    P->loops = 0;
    jj_node **body = parse_body(P, ends, n, &which);
    P->loops = saved;
    advance(P);
    return body;
}

static jj_node *parse_macro(jj_parser *P, jj_token *at) {
    jj_node *n = node(P, JN_MACRO, at);
    n->s = expect_name(P);
    parse_params(P, n);
    end_tag(P);
    n->body = parse_macro_body(P, "endmacro", &n->nbody);
    if (cur(P)->type == JT_NAME) advance(P); /* {% endmacro name %} */
    end_tag(P);
    return n;
}

/* {% call [(params)] macro(args) %}body{% endcall %}: the macro gets caller() */
static jj_node *parse_call_block(jj_parser *P, jj_token *at) {
    jj_node *n = node(P, JN_CALLBLOCK, at);
    n->s = "caller";
    if (is_op(cur(P), "(")) parse_params(P, n);
    n->a = parse_expr(P);
    if (n->a->kind != JN_CALL)
        jj_fail(P->c, n->a->line, n->a->col, "expected a macro call after 'call'");
    end_tag(P);
    n->body = parse_macro_body(P, "endcall", &n->nbody);
    end_tag(P);
    return n;
}

/* {% with a = x, b = y %}body{% endwith %} */
static jj_node *parse_with(jj_parser *P, jj_token *at) {
    jj_node *n = node(P, JN_WITH, at);
    slist names = {0};
    nlist vals = {0};
    while (cur(P)->type != JT_BLOCK_END) {
        if (names.n) expect_op(P, ",");
        sl_push(P->c, &names, expect_name(P));
        expect_op(P, "=");
        nl_push(P->c, &vals, parse_expr(P));
    }
    end_tag(P);
    n->kwn = names.p;
    n->kwv = vals.p;
    n->nkw = names.n;
    static const char *const ends[] = {"endwith", NULL};
    const char *which;
    n->body = parse_body(P, ends, &n->nbody, &which);
    advance(P);
    end_tag(P);
    return n;
}

static jj_node *parse_statement(jj_parser *P) {
    jj_token *at = cur(P);
    if (at->type != JT_NAME) fail_at(P, at, "a tag name");
    advance(P);
    enter(P);
    jj_node *n;
    if (is_name(at, "if")) {
        n = parse_if(P, at);
    } else if (is_name(at, "for")) {
        n = parse_for(P, at);
    } else if (is_name(at, "set")) {
        n = parse_set(P, at);
    } else if (is_name(at, "macro")) {
        n = parse_macro(P, at);
    } else if (is_name(at, "break") || is_name(at, "continue")) {
        if (!P->loops)
            jj_fail(P->c, at->line, at->col, "'%s' outside loop",
                    is_name(at, "break") ? "break" : "continue");
        n = node(P, is_name(at, "break") ? JN_BREAK : JN_CONTINUE, at);
        end_tag(P);
    } else if (is_name(at, "call")) {
        n = parse_call_block(P, at);
    } else if (is_name(at, "with")) {
        n = parse_with(P, at);
    } else if (is_name(at, "filter")) {
        n = node(P, JN_FILTERBLOCK, at);
        n->a = parse_filter(P, NULL);
        while (is_op(cur(P), "|")) {
            advance(P);
            n->a = parse_filter(P, n->a);
        }
        end_tag(P);
        static const char *const ends[] = {"endfilter", NULL};
        const char *which;
        n->body = parse_body(P, ends, &n->nbody, &which);
        advance(P);
        end_tag(P);
    } else if (is_name(at, "generation")) { /* transformers' assistant-mask tag: renders its body */
        end_tag(P);
        n = node(P, JN_IF, at);
        n->a = node(P, JN_CONST, at);
        n->a->val = P->c->vtrue;
        static const char *const ends[] = {"endgeneration", NULL};
        const char *which;
        n->body = parse_body(P, ends, &n->nbody, &which);
        advance(P);
        end_tag(P);
    } else {
        char buf[64];
        jj_fail(P->c, at->line, at->col, "unknown tag %s", tok_desc(at, buf, sizeof buf));
    }
    jj_leave(P->c);
    return n;
}

/* Statements until one of the end tags (left as the current token, after '{%'), or EOF when
 * ends is NULL. */
static jj_node **parse_body(jj_parser *P, const char *const *ends, int *n, const char **which) {
    nlist body = {0};
    for (;;) {
        jj_token *k = cur(P);
        if (k->type == JT_EOF) {
            if (ends) {
                char exp[128];
                size_t o = 0;
                for (int e = 0; ends[e]; e++)
                    o += (size_t)snprintf(exp + o, sizeof exp - o, "%s'%s'", e ? " or " : "",
                                          ends[e]);
                jj_fail(P->c, k->line, k->col, "unexpected end of template, expected %s", exp);
            }
            break;
        }
        if (k->type == JT_TEXT) {
            jj_node *t = node(P, JN_TEXT, k);
            t->s = k->s;
            t->sn = k->n;
            nl_push(P->c, &body, t);
            advance(P);
        } else if (k->type == JT_VAR_BEGIN) {
            advance(P);
            jj_node *pr = node(P, JN_PRINT, k);
            pr->a = parse_tuple(P, 1);
            expect_type(P, JT_VAR_END, "'}}'");
            nl_push(P->c, &body, pr);
        } else if (k->type == JT_BLOCK_BEGIN) {
            jj_token *name = peek(P, 1);
            if (ends)
                for (int e = 0; ends[e]; e++)
                    if (is_name(name, ends[e])) {
                        advance(P); /* now at the tag name */
                        *which = ends[e];
                        *n = body.n;
                        return body.p;
                    }
            if (name->type == JT_NAME && name->n > 3 && memcmp(name->s, "end", 3) == 0) {
                char buf[64];
                jj_fail(P->c, name->line, name->col, "unexpected %s",
                        tok_desc(name, buf, sizeof buf));
            }
            if (name->type == JT_NAME && (is_name(name, "elif") || is_name(name, "else"))) {
                char buf[64];
                jj_fail(P->c, name->line, name->col, "unexpected %s",
                        tok_desc(name, buf, sizeof buf));
            }
            advance(P);
            nl_push(P->c, &body, parse_statement(P));
        } else {
            fail_at(P, k, "template text or a tag");
        }
    }
    *n = body.n;
    return body.p;
}

jj_node **jj_parse(jj_ctx *c, const char *src, size_t len, int *n) {
    jj_parser P;
    memset(&P, 0, sizeof P);
    P.c = c;
    jj_lex(&P.L, c, src, len);
    const char *which = NULL;
    return parse_body(&P, NULL, n, &which);
}
