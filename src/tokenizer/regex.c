/* Regular expressions over code points: parser -> syntax tree -> Thompson program -> Pike VM.
 * See regex.h for the syntax and the guarantees. */
#include "tokenizer/regex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/unicode.h"

#define RX_MAX_NODES 20000  /* syntax tree nodes: real pre-tokenizer patterns use a few hundred */
#define RX_MAX_INSTS 100000 /* program size after expanding {n,m}: bounds time and memory */
#define RX_MAX_DEPTH 200    /* group nesting */

/* ------------------------------------------------------------------ classes */

typedef struct rx_range {
    uint32_t lo, hi;
} rx_range;

enum {
    RXF_SPACE = 1,
    RXF_NSPACE = 2,
    RXF_WORD = 4,
    RXF_NWORD = 8,
    RXF_DIGIT = 16,
    RXF_NDIGIT = 32,
};

typedef struct rx_class {
    uint32_t ascii[4];  /* cp < 128: the final answer (negation and case folding included) */
    uint32_t gc, ngc;   /* \p{} categories (bit per vkf_gc); \P{}: any category outside ngc */
    int has_ngc, flags; /* RXF_* */
    rx_range *r;        /* explicit ranges of code points >= 128 */
    size_t nr, cap;
    int negate, fold;
} rx_class;

static int class_add_range(rx_class *c, uint32_t lo, uint32_t hi) {
    if (c->nr == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        rx_range *r = realloc(c->r, cap * sizeof *r);
        if (!r) return 0;
        c->r = r;
        c->cap = cap;
    }
    c->r[c->nr++] = (rx_range){lo, hi};
    return 1;
}

/* Whether cp is in the class before negation and the ASCII bitmap (the general rule). */
static int class_test_raw(const rx_class *c, uint32_t cp, int g) {
    if (c->gc >> g & 1) return 1;
    if (c->has_ngc && !(c->ngc >> g & 1)) return 1;
    if (c->flags) {
        int sp = vkf_unicode_is_space(cp);
        if ((c->flags & RXF_SPACE) && sp) return 1;
        if ((c->flags & RXF_NSPACE) && !sp) return 1;
        if ((c->flags & RXF_DIGIT) && g == VKF_GC_ND) return 1;
        if ((c->flags & RXF_NDIGIT) && g != VKF_GC_ND) return 1;
        if (c->flags & (RXF_WORD | RXF_NWORD)) {
            int w = vkf_unicode_is_word(cp);
            if ((c->flags & RXF_WORD) && w) return 1;
            if ((c->flags & RXF_NWORD) && !w) return 1;
        }
    }
    for (size_t i = 0; i < c->nr; i++)
        if (cp >= c->r[i].lo && cp <= c->r[i].hi) return 1;
    return 0;
}

static uint32_t simple_lower(uint32_t cp) {
    uint32_t o[3];
    return vkf_unicode_lower(cp, o) == 1 ? o[0] : cp;
}

static int class_test(const rx_class *c, uint32_t cp, int g) {
    if (cp < 128) return c->ascii[cp >> 5] >> (cp & 31) & 1;
    int m = class_test_raw(c, cp, g);
    if (!m && c->fold && !VKF_CP_IS_RAW(cp)) {
        uint32_t l = simple_lower(cp);
        if (l != cp) m = class_test_raw(c, l, (int)vkf_unicode_gc(l));
    }
    return m ^ c->negate;
}

/* Fills the ASCII bitmap once the class is complete. */
static void class_finish(rx_class *c) {
    memset(c->ascii, 0, sizeof c->ascii);
    for (uint32_t cp = 0; cp < 128; cp++) {
        int g = (int)vkf_unicode_gc(cp);
        int m = class_test_raw(c, cp, g);
        if (!m && c->fold && ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')))
            m = class_test_raw(c, cp ^ 32, g);
        if (m ^ c->negate) c->ascii[cp >> 5] |= 1u << (cp & 31);
    }
}

/* ------------------------------------------------------------------ syntax tree */

typedef enum {
    N_EMPTY,
    N_CHAR,  /* a = code point, b = fold */
    N_CLASS, /* a = class index */
    N_ANY,   /* . (not \n) */
    N_BOL,
    N_EOL,
    N_CAT,    /* kids */
    N_ALT,    /* kids */
    N_REPEAT, /* kid, a = min, b = max (-1: none), c = greedy */
    N_LOOK,   /* a = look index, b = negative */
} node_type;

typedef struct rx_node {
    node_type type;
    int a, b, c;
    int kid;          /* N_REPEAT: the child */
    int first, count; /* N_CAT / N_ALT: children in kids[first .. first + count) */
} rx_node;

typedef enum {
    OP_CHAR,
    OP_CHARI,
    OP_CLASS,
    OP_ANY,
    OP_SPLIT,
    OP_JMP,
    OP_BOL,
    OP_EOL,
    OP_LOOK,
    OP_MATCH
} op_type;

typedef struct rx_inst {
    uint8_t op;
    uint8_t neg;   /* OP_LOOK: negative */
    uint32_t x, y; /* CHAR: cp; CLASS: index; SPLIT: preferred, other; JMP: target; LOOK: index */
} rx_inst;

typedef struct rx_thread {
    uint32_t pc;
    uint32_t start;
} rx_thread;

struct vkf_regex {
    rx_inst *prog;
    size_t n_prog;
    rx_class *cls;
    size_t n_cls;
    vkf_regex **look; /* lookahead bodies, compiled as regexes of their own */
    size_t n_look;
    size_t *look_pos; /* per lookahead: the position of the cached answer (SIZE_MAX: none) */
    uint8_t *look_res;
    /* Pike VM scratch */
    rx_thread *clist, *nlist;
    uint32_t *mark; /* per instruction: the id of the list it was last added to */
    uint32_t *stack;
    uint32_t list_id;
    int fast; /* 0, the digit run length of a Llama-3 (3) / Qwen2 (1) pattern (fast_match), or
               * FAST_DIGIT3: SuperBPE's digit grouping (digit3_find, digit3_spans) */
};

typedef struct parser {
    const char *p, *end, *start;
    const char *what;
    rx_node *nodes;
    int n_nodes, cap_nodes;
    int *kids;
    int n_kids, cap_kids;
    rx_class *cls;
    size_t n_cls, cap_cls;
    vkf_regex **look;
    size_t n_look, cap_look;
    int fold, depth;
    vkf_status err;
} parser;

static int perr(parser *ps, vkf_status code, const char *msg) {
    if (ps->err == VKF_OK) {
        int len = (int)(ps->end - ps->start);
        ps->err = vkf_error(code, "%s: regular expression \"%.*s%s\": %s at offset %d", ps->what,
                            len > 200 ? 200 : len, ps->start, len > 200 ? "..." : "", msg,
                            (int)(ps->p - ps->start));
    }
    return -1;
}

static int new_node(parser *ps, node_type t) {
    if (ps->n_nodes >= RX_MAX_NODES) return perr(ps, VKF_ERROR_UNSUPPORTED, "pattern too large");
    if (ps->n_nodes == ps->cap_nodes) {
        int cap = ps->cap_nodes ? 2 * ps->cap_nodes : 64;
        rx_node *n = realloc(ps->nodes, (size_t)cap * sizeof *n);
        if (!n) return perr(ps, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
        ps->nodes = n;
        ps->cap_nodes = cap;
    }
    ps->nodes[ps->n_nodes] = (rx_node){.type = t, .kid = -1};
    return ps->n_nodes++;
}

/* A CAT or ALT node over the n node indices in list. */
static int new_list_node(parser *ps, node_type t, const int *list, int n) {
    int id = new_node(ps, t);
    if (id < 0) return -1;
    if (ps->n_kids + n > ps->cap_kids) {
        int cap = ps->cap_kids ? ps->cap_kids : 64;
        while (cap < ps->n_kids + n)
            cap *= 2;
        int *k = realloc(ps->kids, (size_t)cap * sizeof *k);
        if (!k) return perr(ps, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
        ps->kids = k;
        ps->cap_kids = cap;
    }
    memcpy(ps->kids + ps->n_kids, list, (size_t)n * sizeof *list);
    ps->nodes[id].first = ps->n_kids;
    ps->nodes[id].count = n;
    ps->n_kids += n;
    return id;
}

static int new_class(parser *ps) {
    if (ps->n_cls == ps->cap_cls) {
        size_t cap = ps->cap_cls ? 2 * ps->cap_cls : 8;
        rx_class *c = realloc(ps->cls, cap * sizeof *c);
        if (!c) return perr(ps, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
        ps->cls = c;
        ps->cap_cls = cap;
    }
    memset(&ps->cls[ps->n_cls], 0, sizeof ps->cls[0]);
    ps->cls[ps->n_cls].fold = ps->fold;
    return (int)ps->n_cls++;
}

static uint32_t next_char(parser *ps) {
    uint32_t cp;
    size_t l = vkf_utf8_decode(ps->p, (size_t)(ps->end - ps->p), &cp);
    ps->p += l;
    return cp == VKF_UTF8_INVALID ? VKF_CP_RAW(ps->p[-1]) : cp;
}

/* General category names -> bit masks over vkf_gc. */
static uint32_t gc_bits(int first, int last) {
    uint32_t m = 0;
    for (int g = first; g <= last; g++)
        m |= 1u << g;
    return m;
}

static int category_mask(const char *name, size_t n, uint32_t *mask) {
    static const struct {
        const char *name;
        int first, last;
    } k[] = {
        {"L", VKF_GC_LU, VKF_GC_LO},           {"Letter", VKF_GC_LU, VKF_GC_LO},
        {"Lu", VKF_GC_LU, VKF_GC_LU},          {"Ll", VKF_GC_LL, VKF_GC_LL},
        {"Lt", VKF_GC_LT, VKF_GC_LT},          {"Lm", VKF_GC_LM, VKF_GC_LM},
        {"Lo", VKF_GC_LO, VKF_GC_LO},          {"LC", VKF_GC_LU, VKF_GC_LT},
        {"L&", VKF_GC_LU, VKF_GC_LT},          {"M", VKF_GC_MN, VKF_GC_ME},
        {"Mark", VKF_GC_MN, VKF_GC_ME},        {"Mn", VKF_GC_MN, VKF_GC_MN},
        {"Mc", VKF_GC_MC, VKF_GC_MC},          {"Me", VKF_GC_ME, VKF_GC_ME},
        {"N", VKF_GC_ND, VKF_GC_NO},           {"Number", VKF_GC_ND, VKF_GC_NO},
        {"Nd", VKF_GC_ND, VKF_GC_ND},          {"Nl", VKF_GC_NL, VKF_GC_NL},
        {"No", VKF_GC_NO, VKF_GC_NO},          {"P", VKF_GC_PC, VKF_GC_PO},
        {"Punctuation", VKF_GC_PC, VKF_GC_PO}, {"Pc", VKF_GC_PC, VKF_GC_PC},
        {"Pd", VKF_GC_PD, VKF_GC_PD},          {"Ps", VKF_GC_PS, VKF_GC_PS},
        {"Pe", VKF_GC_PE, VKF_GC_PE},          {"Pi", VKF_GC_PI, VKF_GC_PI},
        {"Pf", VKF_GC_PF, VKF_GC_PF},          {"Po", VKF_GC_PO, VKF_GC_PO},
        {"S", VKF_GC_SM, VKF_GC_SO},           {"Symbol", VKF_GC_SM, VKF_GC_SO},
        {"Sm", VKF_GC_SM, VKF_GC_SM},          {"Sc", VKF_GC_SC, VKF_GC_SC},
        {"Sk", VKF_GC_SK, VKF_GC_SK},          {"So", VKF_GC_SO, VKF_GC_SO},
        {"Z", VKF_GC_ZS, VKF_GC_ZP},           {"Separator", VKF_GC_ZS, VKF_GC_ZP},
        {"Zs", VKF_GC_ZS, VKF_GC_ZS},          {"Zl", VKF_GC_ZL, VKF_GC_ZL},
        {"Zp", VKF_GC_ZP, VKF_GC_ZP},          {"Cc", VKF_GC_CC, VKF_GC_CC},
        {"Cf", VKF_GC_CF, VKF_GC_CF},          {"Cs", VKF_GC_CS, VKF_GC_CS},
        {"Co", VKF_GC_CO, VKF_GC_CO},          {"Cn", VKF_GC_CN, VKF_GC_CN},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strlen(k[i].name) == n && memcmp(k[i].name, name, n) == 0) {
            *mask = gc_bits(k[i].first, k[i].last);
            return 1;
        }
    if ((n == 1 && name[0] == 'C') || (n == 5 && memcmp(name, "Other", 5) == 0)) {
        *mask = gc_bits(VKF_GC_CC, VKF_GC_CO) | 1u << VKF_GC_CN;
        return 1;
    }
    return 0;
}

static int hexdig(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex(parser *ps, int ndig, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < ndig; i++) {
        if (ps->p >= ps->end || hexdig(*ps->p) < 0)
            return perr(ps, VKF_ERROR_FORMAT, "expected a hexadecimal digit");
        v = v * 16 + (uint32_t)hexdig(*ps->p++);
    }
    *out = v;
    return 0;
}

/* An escape after the backslash. Either a single code point (*cp, returns 0) or a set, which
 * is added to the class c (returns 1; c may be NULL outside a class: then the caller makes a
 * class and calls again). */
enum { ESC_CHAR = 0, ESC_SET = 1 };

static int parse_escape(parser *ps, rx_class *c, uint32_t *cp) {
    if (ps->p >= ps->end) return perr(ps, VKF_ERROR_FORMAT, "pattern ends with a backslash");
    char e = *ps->p;
    switch (e) {
    case 'n':
        ps->p++;
        *cp = '\n';
        return ESC_CHAR;
    case 'r':
        ps->p++;
        *cp = '\r';
        return ESC_CHAR;
    case 't':
        ps->p++;
        *cp = '\t';
        return ESC_CHAR;
    case 'f':
        ps->p++;
        *cp = '\f';
        return ESC_CHAR;
    case 'v':
        ps->p++;
        *cp = '\v';
        return ESC_CHAR;
    case 'a':
        ps->p++;
        *cp = 7;
        return ESC_CHAR;
    case 'e':
        ps->p++;
        *cp = 27;
        return ESC_CHAR;
    case '0':
        ps->p++;
        *cp = 0;
        return ESC_CHAR;
    case 'x':
        ps->p++;
        if (ps->p < ps->end && *ps->p == '{') {
            ps->p++;
            uint32_t v = 0;
            int nd = 0;
            while (ps->p < ps->end && hexdig(*ps->p) >= 0 && nd < 8) {
                v = v * 16 + (uint32_t)hexdig(*ps->p++);
                nd++;
            }
            if (!nd || ps->p >= ps->end || *ps->p != '}' || v > 0x10FFFF)
                return perr(ps, VKF_ERROR_FORMAT, "bad \\x{...} escape");
            ps->p++;
            *cp = v;
            return ESC_CHAR;
        }
        return read_hex(ps, 2, cp) < 0 ? -1 : ESC_CHAR;
    case 'u': ps->p++; return read_hex(ps, 4, cp) < 0 ? -1 : ESC_CHAR;
    case 'U': ps->p++; return read_hex(ps, 8, cp) < 0 ? -1 : ESC_CHAR;
    case 's':
    case 'S':
    case 'd':
    case 'D':
    case 'w':
    case 'W': {
        if (!c) return ESC_SET;
        ps->p++;
        static const char names[] = "sSdDwW";
        static const int flags[] = {RXF_SPACE,  RXF_NSPACE, RXF_DIGIT,
                                    RXF_NDIGIT, RXF_WORD,   RXF_NWORD};
        c->flags |= flags[strchr(names, e) - names];
        return ESC_SET;
    }
    case 'p':
    case 'P': {
        if (!c) return ESC_SET;
        ps->p++;
        const char *name = ps->p;
        size_t n = 0;
        if (ps->p < ps->end && *ps->p == '{') {
            name = ++ps->p;
            while (ps->p < ps->end && *ps->p != '}')
                ps->p++;
            if (ps->p >= ps->end) return perr(ps, VKF_ERROR_FORMAT, "unterminated \\p{");
            n = (size_t)(ps->p - name);
            ps->p++;
        } else if (ps->p < ps->end) {
            n = 1;
            ps->p++;
        }
        int neg = e == 'P';
        if (n && name[0] == '^') {
            neg = !neg;
            name++;
            n--;
        }
        uint32_t mask;
        if (!category_mask(name, n, &mask)) {
            ps->p = name;
            return perr(ps, VKF_ERROR_UNSUPPORTED,
                        "unknown Unicode property (general categories such as L, Lu, N, P, S, M, "
                        "Z, C are supported)");
        }
        if (!neg) {
            c->gc |= mask;
        } else if (c->has_ngc) { /* \P{A} or \P{B}: outside (A and B) */
            c->ngc &= mask;
        } else {
            c->ngc = mask;
            c->has_ngc = 1;
        }
        return ESC_SET;
    }
    default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9'))
            return perr(ps, VKF_ERROR_UNSUPPORTED, "unsupported escape");
        *cp = next_char(ps); /* an escaped punctuation character stands for itself */
        return ESC_CHAR;
    }
}

static int parse_alt(parser *ps);

static int parse_class(parser *ps) {
    int ci = new_class(ps);
    if (ci < 0) return -1;
    rx_class *c = &ps->cls[ci];
    if (ps->p < ps->end && *ps->p == '^') {
        c->negate = 1;
        ps->p++;
    }
    int first = 1;
    for (;;) {
        if (ps->p >= ps->end) return perr(ps, VKF_ERROR_FORMAT, "unterminated character class");
        if (*ps->p == ']' && !first) {
            ps->p++;
            break;
        }
        first = 0;
        if (*ps->p == '[')
            return perr(ps, VKF_ERROR_UNSUPPORTED,
                        "nested classes and POSIX classes are not supported");
        if (ps->p + 1 < ps->end && ps->p[0] == '&' && ps->p[1] == '&')
            return perr(ps, VKF_ERROR_UNSUPPORTED, "class intersection && is not supported");
        uint32_t lo;
        if (*ps->p == '\\') {
            ps->p++;
            c = &ps->cls[ci];
            int r = parse_escape(ps, c, &lo);
            if (r < 0) return -1;
            if (r == ESC_SET) continue;
        } else {
            lo = next_char(ps);
        }
        uint32_t hi = lo;
        if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
            ps->p++;
            if (*ps->p == '\\') {
                ps->p++;
                int r = parse_escape(ps, NULL, &hi);
                if (r < 0) return -1;
                if (r == ESC_SET)
                    return perr(ps, VKF_ERROR_FORMAT, "a range ends with a class escape");
            } else {
                hi = next_char(ps);
            }
            if (hi < lo) return perr(ps, VKF_ERROR_FORMAT, "range out of order");
        }
        if (!class_add_range(&ps->cls[ci], lo, hi))
            return perr(ps, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    class_finish(&ps->cls[ci]);
    int id = new_node(ps, N_CLASS);
    if (id >= 0) ps->nodes[id].a = ci;
    return id;
}

static int parse_int(parser *ps, int *v) {
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return 0;
    long x = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        x = x * 10 + (*ps->p++ - '0');
        if (x > 100000) x = 100000;
    }
    *v = (int)x;
    return 1;
}

static vkf_status compile_sub(const char *pat, size_t len, const char *what, int fold,
                              vkf_regex **out);

static int parse_atom(parser *ps) {
    const char *at = ps->p;
    char ch = *ps->p;
    if (ch == '(') {
        ps->p++;
        if (++ps->depth > RX_MAX_DEPTH)
            return perr(ps, VKF_ERROR_UNSUPPORTED, "groups nested too deeply");
        int saved_fold = ps->fold, look = 0, neg = 0;
        if (ps->p < ps->end && *ps->p == '?') {
            ps->p++;
            if (ps->p < ps->end && (*ps->p == '=' || *ps->p == '!')) {
                look = 1;
                neg = *ps->p == '!';
                ps->p++;
            } else if (ps->p < ps->end && *ps->p == ':') {
                ps->p++;
            } else {
                int on = 1, any = 0;
                while (ps->p < ps->end && (*ps->p == 'i' || *ps->p == '-')) {
                    if (*ps->p == '-')
                        on = 0;
                    else
                        ps->fold = on;
                    ps->p++;
                    any = 1;
                }
                if (!any || ps->p >= ps->end || *ps->p != ':') {
                    ps->p = at;
                    return perr(ps, VKF_ERROR_UNSUPPORTED,
                                "unsupported group (supported: (...), (?:...), (?i:...), (?=...), "
                                "(?!...))");
                }
                ps->p++;
            }
        }
        const char *body = ps->p;
        int id = parse_alt(ps);
        if (id < 0) return -1;
        if (ps->p >= ps->end || *ps->p != ')') return perr(ps, VKF_ERROR_FORMAT, "missing )");
        const char *body_end = ps->p;
        ps->p++;
        ps->depth--;
        if (look) { /* the body becomes a regex of its own, matched anchored */
            if (ps->n_look == ps->cap_look) {
                size_t cap = ps->cap_look ? 2 * ps->cap_look : 4;
                vkf_regex **l = realloc(ps->look, cap * sizeof *l);
                if (!l) return perr(ps, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
                ps->look = l;
                ps->cap_look = cap;
            }
            vkf_regex *sub;
            vkf_status s = compile_sub(body, (size_t)(body_end - body), ps->what, ps->fold, &sub);
            if (s != VKF_OK) {
                if (ps->err == VKF_OK) ps->err = s;
                return -1;
            }
            ps->look[ps->n_look] = sub;
            id = new_node(ps, N_LOOK);
            if (id < 0) return -1;
            ps->nodes[id].a = (int)ps->n_look++;
            ps->nodes[id].b = neg;
        }
        ps->fold = saved_fold;
        return id;
    }
    if (ch == '[') {
        ps->p++;
        return parse_class(ps);
    }
    if (ch == '.') {
        ps->p++;
        return new_node(ps, N_ANY);
    }
    if (ch == '^' || ch == '$') {
        ps->p++;
        return new_node(ps, ch == '^' ? N_BOL : N_EOL);
    }
    if (ch == '*' || ch == '+' || ch == '?')
        return perr(ps, VKF_ERROR_FORMAT, "quantifier without an operand");
    uint32_t cp;
    if (ch == '\\') {
        ps->p++;
        int r = parse_escape(ps, NULL, &cp);
        if (r < 0) return -1;
        if (r == ESC_SET) {
            int ci = new_class(ps);
            if (ci < 0) return -1;
            if (parse_escape(ps, &ps->cls[ci], &cp) < 0) return -1;
            class_finish(&ps->cls[ci]);
            int id = new_node(ps, N_CLASS);
            if (id >= 0) ps->nodes[id].a = ci;
            return id;
        }
    } else {
        cp = next_char(ps);
    }
    int id = new_node(ps, N_CHAR);
    if (id < 0) return -1;
    uint32_t l = simple_lower(cp);
    int foldable = ps->fold && (l != cp || (cp >= 'a' && cp <= 'z') || (cp < 128 ? 0 : 1));
    ps->nodes[id].a = (int)(foldable ? l : cp);
    ps->nodes[id].b = foldable;
    return id;
}

static int parse_repeat(parser *ps) {
    int id = parse_atom(ps);
    if (id < 0) return -1;
    for (;;) {
        if (ps->p >= ps->end) return id;
        int mn, mx;
        const char *at = ps->p;
        char q = *ps->p;
        if (q == '*')
            mn = 0, mx = -1;
        else if (q == '+')
            mn = 1, mx = -1;
        else if (q == '?')
            mn = 0, mx = 1;
        else if (q == '{') {
            ps->p++;
            if (!parse_int(ps, &mn)) { /* a literal brace */
                ps->p = at;
                return id;
            }
            mx = mn;
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                if (!parse_int(ps, &mx)) mx = -1;
            }
            if (ps->p >= ps->end || *ps->p != '}')
                return perr(ps, VKF_ERROR_FORMAT, "bad {n,m} quantifier");
            if (mx >= 0 && mx < mn) return perr(ps, VKF_ERROR_FORMAT, "{n,m} with m < n");
        } else {
            return id;
        }
        ps->p++; /* past the quantifier character or the closing brace */
        int greedy = 1;
        if (ps->p < ps->end && *ps->p == '?') {
            greedy = 0;
            ps->p++;
        } else if (ps->p < ps->end && *ps->p == '+') {
            ps->p++; /* possessive: read as greedy */
        }
        int r = new_node(ps, N_REPEAT);
        if (r < 0) return -1;
        ps->nodes[r].kid = id;
        ps->nodes[r].a = mn;
        ps->nodes[r].b = mx;
        ps->nodes[r].c = greedy;
        id = r;
    }
}

static int parse_cat(parser *ps) {
    int list[64], n = 0, *big = NULL, cap = 0;
    while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
        int id = parse_repeat(ps);
        if (id < 0) {
            free(big);
            return -1;
        }
        if (n < 64 && !big) {
            list[n++] = id;
            continue;
        }
        if (!big || n == cap) {
            cap = cap ? 2 * cap : 128;
            int *b = realloc(big, (size_t)cap * sizeof *b);
            if (!b) {
                free(big);
                return perr(ps, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
            }
            if (!big) memcpy(b, list, sizeof list);
            big = b;
        }
        big[n++] = id;
    }
    int r = n == 0   ? new_node(ps, N_EMPTY)
            : n == 1 ? (big ? big[0] : list[0])
                     : new_list_node(ps, N_CAT, big ? big : list, n);
    free(big);
    return r;
}

static int parse_alt(parser *ps) {
    int list[64], n = 0;
    int *all = list, cap = 64;
    for (;;) {
        int id = parse_cat(ps);
        if (id < 0) goto fail;
        if (n == cap) {
            int *a = malloc((size_t)cap * 2 * sizeof *a);
            if (!a) {
                perr(ps, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
                goto fail;
            }
            memcpy(a, all, (size_t)n * sizeof *a);
            if (all != list) free(all);
            all = a;
            cap *= 2;
        }
        all[n++] = id;
        if (ps->p < ps->end && *ps->p == '|') {
            ps->p++;
            continue;
        }
        break;
    }
    int r = n == 1 ? all[0] : new_list_node(ps, N_ALT, all, n);
    if (all != list) free(all);
    return r;
fail:
    if (all != list) free(all);
    return -1;
}

/* ------------------------------------------------------------------ code generation */

typedef struct emitter {
    rx_inst *v;
    size_t n, cap;
    int overflow;
} emitter;

static size_t emit(emitter *e, rx_inst in) {
    if (e->n >= RX_MAX_INSTS) {
        e->overflow = 1;
        return e->n;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        rx_inst *v = realloc(e->v, cap * sizeof *v);
        if (!v) {
            e->overflow = 2;
            return e->n;
        }
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n] = in;
    return e->n++;
}

static void gen(const parser *ps, emitter *e, int id) {
    if (e->overflow) return;
    const rx_node *nd = &ps->nodes[id];
    switch (nd->type) {
    case N_EMPTY: break;
    case N_CHAR: emit(e, (rx_inst){.op = nd->b ? OP_CHARI : OP_CHAR, .x = (uint32_t)nd->a}); break;
    case N_CLASS: emit(e, (rx_inst){.op = OP_CLASS, .x = (uint32_t)nd->a}); break;
    case N_ANY: emit(e, (rx_inst){.op = OP_ANY}); break;
    case N_BOL: emit(e, (rx_inst){.op = OP_BOL}); break;
    case N_EOL: emit(e, (rx_inst){.op = OP_EOL}); break;
    case N_LOOK:
        emit(e, (rx_inst){.op = OP_LOOK, .x = (uint32_t)nd->a, .neg = (uint8_t)nd->b});
        break;
    case N_CAT:
        for (int i = 0; i < nd->count; i++)
            gen(ps, e, ps->kids[nd->first + i]);
        break;
    case N_ALT: {
        /* SPLIT a, next; a: ... JMP end; next: SPLIT b, next2; ... last */
        size_t jumps[RX_MAX_DEPTH + 64], nj = 0;
        size_t *jv = jumps;
        size_t *heap = NULL;
        if (nd->count > (int)(sizeof jumps / sizeof jumps[0])) {
            heap = malloc((size_t)nd->count * sizeof *heap);
            if (!heap) {
                e->overflow = 2;
                return;
            }
            jv = heap;
        }
        for (int i = 0; i < nd->count; i++) {
            size_t split = 0;
            if (i + 1 < nd->count) split = emit(e, (rx_inst){.op = OP_SPLIT});
            if (i + 1 < nd->count && !e->overflow) e->v[split].x = (uint32_t)e->n;
            gen(ps, e, ps->kids[nd->first + i]);
            if (i + 1 < nd->count) {
                jv[nj++] = emit(e, (rx_inst){.op = OP_JMP});
                if (!e->overflow) e->v[split].y = (uint32_t)e->n;
            }
        }
        if (!e->overflow)
            for (size_t i = 0; i < nj; i++)
                e->v[jv[i]].x = (uint32_t)e->n;
        free(heap);
        break;
    }
    case N_REPEAT: {
        int mn = nd->a, mx = nd->b, greedy = nd->c;
        for (int i = 0; i < mn && !e->overflow; i++)
            gen(ps, e, nd->kid);
        if (mx < 0) { /* L: SPLIT body, out; body; JMP L */
            size_t l = emit(e, (rx_inst){.op = OP_SPLIT});
            size_t body = e->n;
            gen(ps, e, nd->kid);
            emit(e, (rx_inst){.op = OP_JMP, .x = (uint32_t)l});
            if (e->overflow) return;
            e->v[l].x = greedy ? (uint32_t)body : (uint32_t)e->n;
            e->v[l].y = greedy ? (uint32_t)e->n : (uint32_t)body;
        } else if (mx > mn) { /* nested optionals: (x(x(x)?)?)? all jumping to one end */
            int k = mx - mn;
            size_t *splits = malloc((size_t)k * sizeof *splits);
            if (!splits) {
                e->overflow = 2;
                return;
            }
            for (int i = 0; i < k && !e->overflow; i++) {
                splits[i] = emit(e, (rx_inst){.op = OP_SPLIT});
                if (!e->overflow) e->v[splits[i]].x = (uint32_t)e->n; /* preferred: body */
                gen(ps, e, nd->kid);
            }
            if (!e->overflow)
                for (int i = 0; i < k; i++) {
                    uint32_t body = e->v[splits[i]].x;
                    e->v[splits[i]].x = greedy ? body : (uint32_t)e->n;
                    e->v[splits[i]].y = greedy ? (uint32_t)e->n : body;
                }
            free(splits);
        }
        break;
    }
    }
}

/* ------------------------------------------------------------------ compile / free */

void vkf_regex_free(vkf_regex *re) {
    if (!re) return;
    for (size_t i = 0; i < re->n_cls; i++)
        free(re->cls[i].r);
    free(re->cls);
    for (size_t i = 0; i < re->n_look; i++)
        vkf_regex_free(re->look[i]);
    free(re->look);
    free(re->look_pos);
    free(re->look_res);
    free(re->prog);
    free(re->clist);
    free(re->nlist);
    free(re->mark);
    free(re->stack);
    free(re);
}

static vkf_status compile_sub(const char *pat, size_t len, const char *what, int fold,
                              vkf_regex **out) {
    *out = NULL;
    parser ps = {
        .p = pat, .end = pat + len, .start = pat, .what = what ? what : "regex", .fold = fold};
    int root = parse_alt(&ps);
    if (root >= 0 && ps.p < ps.end) {
        perr(&ps, VKF_ERROR_FORMAT, "unbalanced )");
        root = -1;
    }
    vkf_regex *re = calloc(1, sizeof *re);
    if (!re && ps.err == VKF_OK)
        ps.err = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", ps.what);
    if (re) {
        re->cls = ps.cls;
        re->n_cls = ps.n_cls;
        re->look = ps.look;
        re->n_look = ps.n_look;
    } else {
        for (size_t i = 0; i < ps.n_cls; i++)
            free(ps.cls[i].r);
        free(ps.cls);
        for (size_t i = 0; i < ps.n_look; i++)
            vkf_regex_free(ps.look[i]);
        free(ps.look);
    }
    emitter e = {0};
    if (root >= 0 && re) {
        gen(&ps, &e, root);
        emit(&e, (rx_inst){.op = OP_MATCH});
        if (e.overflow == 1) {
            ps.p = ps.start;
            perr(&ps, VKF_ERROR_UNSUPPORTED, "pattern too large once repetitions are expanded");
        } else if (e.overflow) {
            ps.err = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", ps.what);
        }
    }
    free(ps.nodes);
    free(ps.kids);
    if (ps.err != VKF_OK || root < 0) {
        free(e.v);
        vkf_regex_free(re);
        return ps.err != VKF_OK ? ps.err : VKF_ERROR_FORMAT;
    }
    re->prog = e.v;
    re->n_prog = e.n;
    size_t n = e.n;
    re->clist = malloc(n * sizeof *re->clist);
    re->nlist = malloc(n * sizeof *re->nlist);
    re->mark = calloc(n, sizeof *re->mark);
    re->stack = malloc(2 * n * sizeof *re->stack + sizeof *re->stack);
    re->look_pos = malloc((re->n_look + 1) * sizeof *re->look_pos);
    re->look_res = malloc(re->n_look + 1);
    if (!re->clist || !re->nlist || !re->mark || !re->stack || !re->look_pos || !re->look_res) {
        vkf_regex_free(re);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", ps.what);
    }
    *out = re;
    return VKF_OK;
}

/* SuperBPE's second pattern: an empty match before every group of three digits that ends a digit
 * run. On the engine its lookahead reads the rest of the run at every position (time quadratic
 * in the run's length); a dedicated matcher reads each run once. */
#define FAST_DIGIT3 (-1)
static const char k_digit3[] = "(?=(\\d{3})+(?!\\d))";

/* The Llama-3 and Qwen2 patterns, as tokenizer.json writes them and as llama.cpp rewrites them
 * for std::regex: the most used patterns get a hand-written matcher (fast_match), checked
 * against the engine by tests/test_tokenizer_regex.c. */
static const struct {
    const char *pattern;
    int digits;
} k_fast[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     3},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     1},
    {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?"
     "\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|"
     "\\s+",
     3},
    {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?"
     "\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     1},
};

vkf_status vkf_regex_compile_ex(const char *pattern, size_t len, const char *what, int no_fast,
                                vkf_regex **out) {
    VKF_TRY(compile_sub(pattern, len, what, 0, out));
    for (size_t i = 0; !no_fast && i < sizeof k_fast / sizeof k_fast[0]; i++)
        if (strlen(k_fast[i].pattern) == len && memcmp(k_fast[i].pattern, pattern, len) == 0)
            (*out)->fast = k_fast[i].digits;
    if (!no_fast && len == strlen(k_digit3) && memcmp(k_digit3, pattern, len) == 0)
        (*out)->fast = FAST_DIGIT3;
    return VKF_OK;
}

vkf_status vkf_regex_compile(const char *pattern, size_t len, const char *what, vkf_regex **out) {
    return vkf_regex_compile_ex(pattern, len, what, 0, out);
}

/* ------------------------------------------------------------------ Llama-3 / Qwen2 by hand */

static int is_letter_gc(int g) { return g >= VKF_GC_LU && g <= VKF_GC_LO; }
static int is_number_gc(int g) { return g >= VKF_GC_ND && g <= VKF_GC_NO; }

/* End of the match at i (the pattern matches at every position):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,D} |
 *    ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * alternatives in order, as the engine tries them. */
static size_t fast_match(const uint32_t *cp, const uint8_t *gc, size_t n, size_t i, int digits) {
#define LOW(c) ((c) >= 'A' && (c) <= 'Z' ? (c) | 32 : (c))
#define SPACE(k) vkf_unicode_is_space(cp[k])
#define OTHER(k) (!is_letter_gc(gc[k]) && !is_number_gc(gc[k]) && !SPACE(k))
    if (cp[i] == '\'' && i + 1 < n) {
        uint32_t a = LOW(cp[i + 1]);
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if (i + 2 < n) {
            uint32_t b = LOW(cp[i + 2]);
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return i + 3;
        }
    }
    size_t j = i;
    if (!is_letter_gc(gc[j]) && !is_number_gc(gc[j]) && cp[j] != '\r' && cp[j] != '\n' &&
        j + 1 < n && is_letter_gc(gc[j + 1]))
        j++;
    if (is_letter_gc(gc[j])) {
        while (j < n && is_letter_gc(gc[j]))
            j++;
        return j;
    }
    if (is_number_gc(gc[i])) {
        j = i;
        while (j < n && j - i < (size_t)digits && is_number_gc(gc[j]))
            j++;
        return j;
    }
    j = cp[i] == ' ' && i + 1 < n && OTHER(i + 1) ? i + 1 : i;
    if (OTHER(j)) {
        while (j < n && OTHER(j))
            j++;
        while (j < n && (cp[j] == '\r' || cp[j] == '\n'))
            j++;
        return j;
    }
    /* a whitespace run [i, k) */
    size_t k = i, last_nl = SIZE_MAX;
    while (k < n && SPACE(k)) {
        if (cp[k] == '\r' || cp[k] == '\n') last_nl = k;
        k++;
    }
    if (last_nl != SIZE_MAX) return last_nl + 1; /* \s*[\r\n]+ ends after the last newline */
    if (k == n || k - i == 1) return k;          /* \s+(?!\S) at the end; else \s+ */
    return k - 1;                                /* \s+(?!\S): leave the last space */
#undef LOW
#undef SPACE
#undef OTHER
}

/* ------------------------------------------------------------------ SuperBPE digits by hand */

/* (?=(\d{3})+(?!\d)) holds at i when the run of \d (Nd) starting at i, up to end, is a positive
 * multiple of 3 long. */
static int digit3_find(const uint8_t *gc, size_t end, size_t from, size_t *at) {
    for (size_t i = from; i < end;) {
        if (gc[i] != VKF_GC_ND) {
            i++;
            continue;
        }
        size_t r = i;
        while (r < end && gc[r] == VKF_GC_ND)
            r++;
        size_t p = i + (r - i) % 3; /* the first point of the run with a multiple of 3 left */
        if (p < r) {
            *at = p;
            return 1;
        }
        i = r;
    }
    return 0;
}

/* The split of [a, b) by those empty matches: pieces cut before each group of three digits
 * that ends a run (not at a). */
static int span_push(vkf_rx_spans *o, size_t s, size_t e, int match);
static int digit3_spans(const uint8_t *gc, size_t a, size_t b, vkf_rx_spans *out) {
    size_t pos = a;
    for (size_t i = a; i < b;) {
        if (gc[i] != VKF_GC_ND) {
            i++;
            continue;
        }
        size_t r = i;
        while (r < b && gc[r] == VKF_GC_ND)
            r++;
        for (size_t p = i + (r - i) % 3; p < r; p += 3)
            if (p > pos) {
                if (!span_push(out, pos, p, 0)) return 0;
                pos = p;
            }
        i = r;
    }
    return pos < b ? span_push(out, pos, b, 0) : 1;
}

/* ------------------------------------------------------------------ Pike VM */

typedef struct vm_text {
    const uint32_t *cp;
    const uint8_t *gc;
    size_t begin, end;
} vm_text;

static int vm_run(vkf_regex *re, const vm_text *t, size_t from, int anchored, size_t *ms,
                  size_t *me);

static int char_eq_fold(uint32_t want_lower, uint32_t c) {
    if (c == want_lower) return 1;
    if (c < 128) return (c >= 'A' && c <= 'Z') && (c | 32) == want_lower;
    return !VKF_CP_IS_RAW(c) && simple_lower(c) == want_lower;
}

/* Whether lookahead k holds at position i (cached per position). */
static int look_holds(vkf_regex *re, const rx_inst *in, const vm_text *t, size_t i) {
    size_t k = in->x;
    if (re->look_pos[k] == i) return re->look_res[k];
    vkf_regex *sub = re->look[k];
    int r;
    const rx_inst *p0 = &sub->prog[0];
    if (sub->n_prog == 2 && (p0->op == OP_CLASS || p0->op == OP_CHAR || p0->op == OP_ANY)) {
        /* one character: test it directly */
        if (i >= t->end)
            r = 0;
        else if (p0->op == OP_CLASS)
            r = class_test(&sub->cls[p0->x], t->cp[i], t->gc[i]);
        else if (p0->op == OP_CHAR)
            r = t->cp[i] == p0->x;
        else
            r = t->cp[i] != '\n';
    } else {
        size_t a, b;
        r = vm_run(sub, t, i, 1, &a, &b);
        if (r < 0) return -1;
    }
    r = in->neg ? !r : r;
    re->look_pos[k] = i;
    re->look_res[k] = (uint8_t)r;
    return r;
}

/* Adds the thread (pc, start) and its epsilon closure at position i to list (n entries). */
static int add_thread(vkf_regex *re, rx_thread *list, size_t *n, uint32_t id, uint32_t pc0,
                      uint32_t start, const vm_text *t, size_t i) {
    uint32_t *st = re->stack;
    size_t sp = 0;
    st[sp++] = pc0;
    while (sp) {
        uint32_t pc = st[--sp];
        if (re->mark[pc] == id) continue;
        re->mark[pc] = id;
        const rx_inst *in = &re->prog[pc];
        switch (in->op) {
        case OP_JMP: st[sp++] = in->x; break;
        case OP_SPLIT:
            st[sp++] = in->y;
            st[sp++] = in->x; /* popped first: the preferred branch */
            break;
        case OP_BOL:
            if (i == t->begin) st[sp++] = pc + 1;
            break;
        case OP_EOL:
            if (i == t->end) st[sp++] = pc + 1;
            break;
        case OP_LOOK: {
            int h = look_holds(re, in, t, i);
            if (h < 0) return -1;
            if (h) st[sp++] = pc + 1;
            break;
        }
        default: list[(*n)++] = (rx_thread){pc, start}; break;
        }
    }
    return 0;
}

static int vm_run(vkf_regex *re, const vm_text *t, size_t from, int anchored, size_t *ms,
                  size_t *me) {
    rx_thread *cl = re->clist, *nl = re->nlist;
    size_t nc = 0, nn = 0;
    int matched = 0;
    uint32_t cid = ++re->list_id;
    if (re->list_id > 0xFFFFFFF0u) { /* the ids wrap: clear the marks */
        memset(re->mark, 0, re->n_prog * sizeof *re->mark);
        re->list_id = cid = 1;
    }
    for (size_t k = 0; k < re->n_look; k++)
        re->look_pos[k] = SIZE_MAX;
    for (size_t i = from;; i++) {
        if (!matched && (!anchored || i == from))
            if (add_thread(re, cl, &nc, cid, 0, (uint32_t)(i - t->begin), t, i) < 0) return -1;
        if (nc == 0) {
            if (matched || anchored || i >= t->end) break;
            cid = ++re->list_id;
            continue;
        }
        uint32_t nid = ++re->list_id;
        nn = 0;
        uint32_t c = i < t->end ? t->cp[i] : 0;
        int g = i < t->end ? t->gc[i] : 0;
        for (size_t k = 0; k < nc; k++) {
            const rx_inst *in = &re->prog[cl[k].pc];
            int ok = 0;
            switch (in->op) {
            case OP_MATCH:
                matched = 1;
                *ms = t->begin + cl[k].start;
                *me = i;
                k = nc; /* lower-priority threads lose */
                continue;
            case OP_CHAR: ok = i < t->end && c == in->x; break;
            case OP_CHARI: ok = i < t->end && char_eq_fold(in->x, c); break;
            case OP_CLASS: ok = i < t->end && class_test(&re->cls[in->x], c, g); break;
            case OP_ANY: ok = i < t->end && c != '\n'; break;
            default: break;
            }
            if (ok && add_thread(re, nl, &nn, nid, cl[k].pc + 1, cl[k].start, t, i + 1) < 0)
                return -1;
        }
        rx_thread *tmp = cl;
        cl = nl;
        nl = tmp;
        nc = nn;
        cid = nid;
        if (i >= t->end) {
            /* past the end only MATCH threads can remain: one more round picks the best */
            for (size_t k = 0; k < nc; k++)
                if (re->prog[cl[k].pc].op == OP_MATCH) {
                    matched = 1;
                    *ms = t->begin + cl[k].start;
                    *me = t->end;
                    break;
                }
            break;
        }
    }
    return matched;
}

int vkf_regex_find(vkf_regex *re, const uint32_t *cp, const uint8_t *gc, size_t begin, size_t end,
                   size_t from, size_t *ms, size_t *me) {
    if (re->fast == FAST_DIGIT3) {
        size_t at;
        if (!digit3_find(gc, end, from, &at)) return 0;
        *ms = *me = at;
        return 1;
    }
    if (re->fast && from < end) {
        *ms = from;
        *me = fast_match(cp + begin, gc + begin, end - begin, from - begin, re->fast) + begin;
        return 1;
    }
    vm_text t = {cp, gc, begin, end};
    return vm_run(re, &t, from, 0, ms, me);
}

static int span_push(vkf_rx_spans *o, size_t s, size_t e, int match) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        vkf_rx_span *v = realloc(o->v, cap * sizeof *v);
        if (!v) return 0;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = (vkf_rx_span){(uint32_t)s, (uint32_t)e, match};
    return 1;
}

int vkf_regex_spans(vkf_regex *re, const uint32_t *cp, const uint8_t *gc, size_t a, size_t b,
                    vkf_rx_spans *out) {
    if (re->fast == FAST_DIGIT3) return digit3_spans(gc, a, b, out);
    size_t pos = a, from = a;
    while (from <= b) {
        size_t ms, me;
        int r = vkf_regex_find(re, cp, gc, a, b, from, &ms, &me);
        if (r < 0) return 0;
        if (!r) break;
        if (ms > pos && !span_push(out, pos, ms, 0)) return 0;
        if (me > ms) {
            if (!span_push(out, ms, me, 1)) return 0;
            pos = from = me;
        } else { /* empty: a split point; search again one character further */
            pos = ms;
            from = ms + 1;
        }
    }
    if (pos < b && !span_push(out, pos, b, 0)) return 0;
    return 1;
}
