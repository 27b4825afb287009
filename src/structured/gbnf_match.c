/* The pushdown matcher over a parsed grammar (see gbnf.h).
 *
 * A stack is a node (position, parent) interned in a hash table, so equal stacks are one id; a
 * set of stacks is a sorted id list interned the same way. The work llama.cpp repeats for every
 * stack and every character is done once here and remembered:
 *   expand(node)   the stacks reached from a node by entering rule references (one per
 *                  alternative) until each top is a terminal: llama_grammar_advance_stack
 *   step(set, cp)  the set after one code point: every stack whose class matches moves past it
 *                  and is expanded again: llama_grammar_accept
 * Truncated stacks (gbnf_vocab.c) keep only the top frames above a CTX bottom: stepping a CTX
 * stack means a path returned into frames that are not known, reported as "escaped". */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/hashmap.h"
#include "structured/gbnf.h"

#define NONE UINT32_MAX
/* Guards against grammars whose parse grows exponentially (repetitions nested many deep: a
 * stack per way of splitting the text among them; "x" with + repeated 18 times holds 12616
 * stacks after 5 characters), which would otherwise run for minutes: stacks pending in one
 * expansion, stacks in one set, and stack nodes visited by one operation (start, a step, a
 * token). Grammars written by hand or from JSON Schemas stay far below. */
#define MAX_EXPAND 200000
#define MAX_SET 200000
#define MAX_WORK 2000000

typedef struct gclass {
    int negate, any;
    uint32_t n, first; /* ranges [first, first + n) of m->ranges */
    uint32_t next;     /* position after the class's elements */
    uint32_t ascii[4]; /* bitmap of the ASCII code points it matches (negation applied) */
} gclass;

struct vkf_gmatch {
    vkf_gbnf *g;
    int ctx_depth;
    int32_t *cls_of; /* [n_el] class index of a class's first element, else -1 */
    gclass *cls;
    uint32_t n_cls;
    uint32_t *ranges; /* lo, hi pairs */
    /* stack nodes; 0 = the empty stack, 1 = CTX */
    uint32_t *npos, *npar, *nexp, *ndepth, *nseen;
    uint32_t n_nodes, stamp;
    size_t cap_nodes;
    vkf_u64map node_map;
    /* sets of stacks; 0 = the empty set */
    uint32_t *pool;
    size_t n_pool, cap_pool;
    uint32_t *soff, *slen, *strunc;
    int32_t **sascii; /* per set: the step results for code points < 128 (result << 1 |
                         escaped, -1 unknown), made on the set's first ASCII step */
    uint32_t n_sets;
    size_t cap_sets;
    vkf_u64map set_map;
    vkf_u64map step_map;  /* set << 32 | cp -> result << 1 | escaped */
    vkf_u64map trunc_map; /* node << 8 | frames kept -> the truncated node */
    uint32_t *buf, *buf2, *todo;
    size_t cap_buf, cap_buf2, cap_todo;
    int oom;       /* failed: out of memory, or too_big; every later operation fails */
    int too_big;   /* a guard above was hit */
    uint64_t work; /* stack nodes visited by the current operation */
};

/* ------------------------------------------------------------------ growth helpers */

/* *p holds at least need elements (and is never NULL after a success, even for need 0: callers
 * copy zero elements to *p + n, which is undefined on a null pointer) */
static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap && *p) return 1;
    size_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, nc * elem);
    if (!q) return 0;
    *p = q;
    *cap = nc;
    return 1;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* ------------------------------------------------------------------ classes */

static int is_end(const vkf_gelem *e) { return e->type == VKF_G_END || e->type == VKF_G_ALT; }

static int class_match(const struct vkf_gmatch *m, const gclass *c, uint32_t cp) {
    if (cp < 128) return (c->ascii[cp >> 5] >> (cp & 31)) & 1;
    int found = c->any;
    for (uint32_t i = 0; i < c->n && !found; i++)
        found = m->ranges[2 * (c->first + i)] <= cp && cp <= m->ranges[2 * (c->first + i) + 1];
    return found != c->negate;
}

static int build_classes(vkf_gmatch *m) {
    const vkf_gbnf *g = m->g;
    m->cls_of = malloc((g->n_el ? g->n_el : 1) * sizeof *m->cls_of);
    size_t cap_cls = 0, cap_r = 0, n_r = 0;
    if (!m->cls_of) return 0;
    for (uint32_t p = 0; p < g->n_el; p++) {
        m->cls_of[p] = -1;
        uint32_t t = g->el[p].type;
        if (t != VKF_G_CHAR && t != VKF_G_CHAR_NOT && t != VKF_G_CHAR_ANY) continue;
        /* a class starts here unless p continues one (CHAR_ALT / RNG_UPPER never start) */
        if (!grow((void **)&m->cls, &cap_cls, m->n_cls + 1, sizeof *m->cls)) return 0;
        gclass *c = &m->cls[m->n_cls];
        memset(c, 0, sizeof *c);
        c->negate = t == VKF_G_CHAR_NOT;
        c->first = (uint32_t)n_r;
        uint32_t i = p;
        do {
            uint32_t lo, hi;
            if (g->el[i].type == VKF_G_CHAR_ANY) {
                c->any = 1;
                i += 1;
                continue;
            }
            lo = hi = g->el[i].value;
            if (g->el[i + 1].type == VKF_G_CHAR_RNG_UPPER) {
                hi = g->el[i + 1].value;
                i += 2;
            } else {
                i += 1;
            }
            if (!grow((void **)&m->ranges, &cap_r, 2 * (n_r + 1), sizeof *m->ranges)) return 0;
            m->ranges[2 * n_r] = lo;
            m->ranges[2 * n_r + 1] = hi;
            n_r++;
            c->n++;
        } while (g->el[i].type == VKF_G_CHAR_ALT);
        c->next = i;
        for (uint32_t cp = 0; cp < 128; cp++) {
            int found = c->any;
            for (uint32_t k = 0; k < c->n && !found; k++)
                found =
                    m->ranges[2 * (c->first + k)] <= cp && cp <= m->ranges[2 * (c->first + k) + 1];
            if (found != c->negate) c->ascii[cp >> 5] |= 1u << (cp & 31);
        }
        m->cls_of[p] = (int32_t)m->n_cls++;
        /* the class's own elements are not starts */
        p = i - 1;
    }
    return 1;
}

/* Can the unfinished character p still become a code point class c matches? The code points it
 * can become are [lo, hi] (overlong forms excluded, as llama.cpp); a negated class matches
 * unless every one of them is excluded. */
static int class_match_partial(const struct vkf_gmatch *m, const gclass *c, vkf_gutf8 p) {
    if (p.n_remain <= 0 || (p.n_remain == 1 && p.value < 2)) return 0;
    uint32_t lo = p.value << (6 * p.n_remain), hi = lo | ((1u << (6 * p.n_remain)) - 1);
    if (lo == 0) lo = p.n_remain == 2 ? 1u << 11 : p.n_remain == 3 ? 1u << 16 : lo;
    if (c->any) return 1;
    if (!c->negate) {
        for (uint32_t i = 0; i < c->n; i++)
            if (m->ranges[2 * (c->first + i)] <= hi && lo <= m->ranges[2 * (c->first + i) + 1])
                return 1;
        return 0;
    }
    /* negated: is [lo, hi] covered by the excluded ranges? */
    for (uint32_t cur = lo;;) {
        int moved = 0;
        for (uint32_t i = 0; i < c->n; i++) {
            uint32_t a = m->ranges[2 * (c->first + i)], b = m->ranges[2 * (c->first + i) + 1];
            if (a <= cur && cur <= b) {
                if (b >= hi) return 0;
                cur = b + 1;
                moved = 1;
            }
        }
        if (!moved) return 1;
    }
}

/* ------------------------------------------------------------------ stacks */

/* the node (pos, parent), made if new */
static uint32_t node(vkf_gmatch *m, uint32_t pos, uint32_t parent) {
    uint64_t key = (uint64_t)pos << 32 | parent, v;
    if (vkf_u64map_get(&m->node_map, key, &v)) return (uint32_t)v;
    size_t cap = m->cap_nodes;
    if (m->n_nodes == cap) {
        size_t c = cap;
        int ok = grow((void **)&m->npos, &c, m->n_nodes + 1, sizeof *m->npos);
        c = cap;
        ok = ok && grow((void **)&m->npar, &c, m->n_nodes + 1, sizeof *m->npar);
        c = cap;
        ok = ok && grow((void **)&m->nexp, &c, m->n_nodes + 1, sizeof *m->nexp);
        c = cap;
        ok = ok && grow((void **)&m->ndepth, &c, m->n_nodes + 1, sizeof *m->ndepth);
        c = cap;
        ok = ok && grow((void **)&m->nseen, &c, m->n_nodes + 1, sizeof *m->nseen);
        if (!ok) {
            m->oom = 1;
            return VKF_GSTACK_EMPTY;
        }
        m->cap_nodes = c;
    }
    uint32_t id = m->n_nodes++;
    m->npos[id] = pos;
    m->npar[id] = parent;
    m->nexp[id] = NONE;
    m->nseen[id] = 0;
    m->ndepth[id] = parent <= VKF_GSTACK_CTX || parent >= id ? 1 : m->ndepth[parent] + 1;
    if (!vkf_u64map_put_first(&m->node_map, key, id)) m->oom = 1;
    return id;
}

/* parent with position pos pushed, or parent itself when pos ends its alternative */
static uint32_t push_pos(vkf_gmatch *m, uint32_t parent, uint32_t pos) {
    return is_end(&m->g->el[pos]) ? parent : node(m, pos, parent);
}

/* ------------------------------------------------------------------ sets */

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* sorts and dedupes v[0..n), interns it as a set */
static uint32_t intern_set(vkf_gmatch *m, uint32_t *v, size_t n) {
    if (n == 0) return VKF_GSET_EMPTY;
    qsort(v, n, sizeof *v, cmp_u32);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[k - 1]) v[k++] = v[i];
    n = k;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (size_t i = 0; i < n; i++)
        h = mix64(h ^ v[i]) + i;
    for (uint64_t key = h >> 1;; key = (mix64(key + 1)) >> 1) { /* >> 1: never UINT64_MAX */
        uint64_t s;
        if (!vkf_u64map_get(&m->set_map, key, &s)) {
            size_t cs = m->cap_sets;
            int ok = grow((void **)&m->pool, &m->cap_pool, m->n_pool + n, sizeof *m->pool);
            ok = ok && grow((void **)&m->soff, &cs, m->n_sets + 1, sizeof *m->soff);
            cs = m->cap_sets;
            ok = ok && grow((void **)&m->slen, &cs, m->n_sets + 1, sizeof *m->slen);
            cs = m->cap_sets;
            ok = ok && grow((void **)&m->strunc, &cs, m->n_sets + 1, sizeof *m->strunc);
            size_t old_cap = m->cap_sets;
            cs = m->cap_sets;
            ok = ok && grow((void **)&m->sascii, &cs, m->n_sets + 1, sizeof *m->sascii);
            if (ok && cs > old_cap)
                memset(m->sascii + old_cap, 0, (cs - old_cap) * sizeof *m->sascii);
            if (!ok) {
                m->oom = 1;
                return VKF_GSET_EMPTY;
            }
            m->cap_sets = cs;
            uint32_t id = m->n_sets++;
            m->soff[id] = (uint32_t)m->n_pool;
            m->slen[id] = (uint32_t)n;
            m->strunc[id] = NONE;
            memcpy(m->pool + m->n_pool, v, n * sizeof *v);
            m->n_pool += n;
            if (!vkf_u64map_put_first(&m->set_map, key, id)) m->oom = 1;
            return id;
        }
        if (m->slen[s] == n && memcmp(m->pool + m->soff[s], v, n * sizeof *v) == 0)
            return (uint32_t)s;
    }
}

uint32_t vkf_gmatch_union(vkf_gmatch *m, uint32_t *v, size_t n) { return intern_set(m, v, n); }

const uint32_t *vkf_gmatch_set(const vkf_gmatch *m, uint32_t s, uint32_t *n) {
    *n = m->slen[s];
    return m->pool + m->soff[s];
}

/* llama_grammar_advance_stack: the terminal-topped stacks reached from n, as a set */
static uint32_t expand(vkf_gmatch *m, uint32_t n) {
    if (m->nexp[n] != NONE) return m->nexp[n];
    const vkf_gelem *el = m->g->el;
    size_t n_out = 0, n_todo = 0;
    uint32_t stamp = ++m->stamp;
    if (!grow((void **)&m->todo, &m->cap_todo, 1, sizeof *m->todo)) goto oom;
    m->todo[n_todo++] = n;
    while (n_todo) {
        uint32_t x = m->todo[--n_todo];
        if (++m->work > MAX_WORK) goto too_big;
        if (m->nseen[x] == stamp) continue;
        m->nseen[x] = stamp;
        if (x > VKF_GSTACK_CTX && el[m->npos[x]].type == VKF_G_RULE_REF) {
            uint32_t pos = m->npos[x], par = m->npar[x];
            uint32_t base = push_pos(m, par, pos + 1);
            uint32_t a = m->g->rule_start[el[pos].value];
            for (;;) {
                uint32_t y = push_pos(m, base, a);
                if (m->oom || !grow((void **)&m->todo, &m->cap_todo, n_todo + 1, sizeof *m->todo))
                    goto oom;
                m->todo[n_todo++] = y;
                while (!is_end(&el[a]))
                    a++;
                if (el[a].type != VKF_G_ALT) break;
                a++;
            }
            if (n_todo > MAX_EXPAND) goto too_big;
            continue;
        }
        if (!grow((void **)&m->buf, &m->cap_buf, n_out + 1, sizeof *m->buf)) goto oom;
        m->buf[n_out++] = x;
    }
    if (n_out > MAX_SET) goto too_big;
    uint32_t s = intern_set(m, m->buf, n_out);
    if (m->oom) return VKF_GSET_EMPTY;
    m->nexp[n] = s;
    return s;
too_big:
    m->too_big = 1;
oom:
    m->oom = 1;
    return VKF_GSET_EMPTY;
}

const char *vkf_gmatch_failure(const vkf_gmatch *m) {
    if (!m->oom) return NULL;
    return m->too_big ? "the parse grew past its limits (more than 200000 stacks at once, or 2 "
                        "million visited for one character): nested repetitions such as "
                        "x++++ or ((x+)+)+, many deep, make a stack per way of splitting the "
                        "text; write one repetition instead"
                      : "out of memory";
}

uint32_t vkf_gmatch_step(vkf_gmatch *m, uint32_t s, uint32_t cp, int *escaped) {
    uint64_t key = (uint64_t)s << 32 | cp, v;
    int32_t *asc = cp < 128 ? m->sascii[s] : NULL;
    if (asc && asc[cp] >= 0) { /* the common case of a trie walk: an array, not a hash */
        if (escaped && (asc[cp] & 1)) *escaped = 1;
        return (uint32_t)asc[cp] >> 1;
    }
    if (cp < 128 && !asc) {
        asc = m->sascii[s] = malloc(128 * sizeof *asc);
        if (asc) memset(asc, 0xFF, 128 * sizeof *asc);
    }
    if (!asc && vkf_u64map_get(&m->step_map, key, &v)) {
        if (escaped && (v & 1)) *escaped = 1;
        return (uint32_t)(v >> 1);
    }
    size_t n_out = 0;
    int esc = 0;
    m->work = 0;
    for (uint32_t i = 0; i < m->slen[s]; i++) {
        uint32_t x = m->pool[m->soff[s] + i];
        if (x == VKF_GSTACK_CTX) esc = 1;
        if (x <= VKF_GSTACK_CTX) continue;
        int32_t c = m->cls_of[m->npos[x]];
        if (c < 0 || !class_match(m, &m->cls[c], cp)) continue; /* tokens take no characters */
        uint32_t e = expand(m, push_pos(m, m->npar[x], m->cls[c].next));
        uint32_t ne = m->slen[e];
        if (!grow((void **)&m->buf2, &m->cap_buf2, n_out + ne, sizeof *m->buf2)) {
            m->oom = 1;
            return VKF_GSET_EMPTY;
        }
        memcpy(m->buf2 + n_out, m->pool + m->soff[e], ne * sizeof *m->buf2);
        n_out += ne;
        if (n_out > MAX_SET) {
            m->too_big = m->oom = 1;
            return VKF_GSET_EMPTY;
        }
    }
    uint32_t r = intern_set(m, m->buf2, n_out);
    if (m->oom) return VKF_GSET_EMPTY;
    if (asc && r < 0x40000000u)
        asc[cp] = (int32_t)(r << 1 | (uint32_t)esc);
    else if (!vkf_u64map_put_first(&m->step_map, key, (uint64_t)r << 1 | (uint64_t)esc))
        m->oom = 1;
    if (escaped && esc) *escaped = 1;
    return r;
}

/* stack x with its top keep frames above CTX (x itself when it has no more) */
static uint32_t trunc_node(vkf_gmatch *m, uint32_t x, uint32_t keep) {
    if (x <= VKF_GSTACK_CTX || m->ndepth[x] <= keep) return x;
    uint64_t key = (uint64_t)x << 8 | keep, v;
    if (vkf_u64map_get(&m->trunc_map, key, &v)) return (uint32_t)v;
    uint32_t pos[128];
    uint32_t k = 0;
    for (uint32_t y = x; k < keep; y = m->npar[y])
        pos[k++] = m->npos[y];
    uint32_t t = VKF_GSTACK_CTX;
    while (k > 0)
        t = node(m, pos[--k], t);
    if (!vkf_u64map_put_first(&m->trunc_map, key, t)) m->oom = 1;
    return t;
}

/* The stacks of a set are cut at one depth: ctx_depth frames below the shallowest stack's top.
 * Cutting each stack to its own top frames would keep parent frames of the shallow stacks (a
 * string's closing quote sits right under the property that holds the string) and no two
 * contexts would share an entry; cut at one level, every string's inside is the same set. */
uint32_t vkf_gmatch_truncate(vkf_gmatch *m, uint32_t s) {
    if (m->ctx_depth <= 0) return s;
    if (m->strunc[s] != NONE) return m->strunc[s];
    uint32_t n = m->slen[s], min_depth = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = m->pool[m->soff[s] + i];
        if (x > VKF_GSTACK_CTX && m->ndepth[x] < min_depth) min_depth = m->ndepth[x];
    }
    uint32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v || min_depth == UINT32_MAX) {
        free(v);
        if (!v) m->oom = 1;
        return s;
    }
    uint32_t base = min_depth > (uint32_t)m->ctx_depth ? min_depth - (uint32_t)m->ctx_depth : 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = m->pool[m->soff[s] + i];
        uint32_t keep = x > VKF_GSTACK_CTX ? m->ndepth[x] - base : 0;
        v[i] = keep > 127 ? x : trunc_node(m, x, keep);
    }
    uint32_t t = intern_set(m, v, n);
    free(v);
    if (m->oom) return s;
    m->strunc[s] = t;
    return t;
}

int vkf_gmatch_partial_ok(const vkf_gmatch *m, uint32_t s, vkf_gutf8 p) {
    for (uint32_t i = 0; i < m->slen[s]; i++) {
        uint32_t x = m->pool[m->soff[s] + i];
        if (x <= VKF_GSTACK_CTX) continue;
        int32_t c = m->cls_of[m->npos[x]];
        if (c >= 0 && class_match_partial(m, &m->cls[c], p)) return 1;
    }
    return 0;
}

const vkf_gelem *vkf_gmatch_top(const vkf_gmatch *m, uint32_t stack) {
    return stack <= VKF_GSTACK_CTX ? NULL : &m->g->el[m->npos[stack]];
}

size_t vkf_gmatch_bytes(const vkf_gmatch *m) {
    return (size_t)m->cap_nodes * 6 * sizeof(uint32_t) + m->cap_pool * sizeof(uint32_t) +
           (size_t)m->cap_sets * (3 * sizeof(uint32_t) + sizeof(int32_t *) + 512) +
           (m->node_map.cap + m->set_map.cap + m->step_map.cap) * 16;
}

/* ------------------------------------------------------------------ UTF-8 */

/* Well-formed UTF-8 only (Unicode's table 3-7): no overlong forms (C0, C1, E0 80..9F,
 * F0 80..8F), no surrogates (ED A0..BF), nothing past U+10FFFF (F4 90.., F5..FF); a grammar
 * then never lets a model write bytes that are not UTF-8 (JSON strings must be). */
int vkf_gutf8_push(vkf_gutf8 *p, unsigned char b, uint32_t *cp) {
    if (p->n_remain == 0) {
        if (b < 0x80) {
            *cp = b;
            return 1;
        }
        int n = b >= 0xF5 ? -1 : b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC2 ? 1 : -1;
        if (n < 0) return -1; /* a continuation byte, an overlong or out-of-range lead */
        p->value = b & ((1u << (7 - n)) - 1);
        p->n_remain = n;
        p->next_lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
        p->next_hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
        return 0;
    }
    unsigned char lo = p->next_lo ? p->next_lo : 0x80, hi = p->next_hi ? p->next_hi : 0xBF;
    if (b < lo || b > hi) return -1;
    p->next_lo = p->next_hi = 0;
    p->value = (p->value << 6) | (b & 0x3F);
    if (--p->n_remain) return 0;
    *cp = p->value;
    p->value = 0;
    return 1;
}

/* ------------------------------------------------------------------ public matcher */

vkf_status vkf_gmatch_create(vkf_gbnf *g, int context_depth, vkf_gmatch **out) {
    vkf_gmatch *m = calloc(1, sizeof *m);
    if (!m) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    m->g = g;
    m->ctx_depth = context_depth < 0 ? 0 : context_depth > 64 ? 64 : context_depth;
    int ok = build_classes(m) && vkf_u64map_init(&m->node_map, 1024) &&
             vkf_u64map_init(&m->set_map, 1024) && vkf_u64map_init(&m->step_map, 4096) &&
             vkf_u64map_init(&m->trunc_map, 256);
    if (ok) {
        /* node 0: the empty stack; node 1: CTX; set 0: the empty set */
        node(m, NONE - 1, NONE - 1);
        node(m, NONE - 2, NONE - 2);
        m->ndepth[0] = m->ndepth[1] = 0;
        ok = !m->oom && grow((void **)&m->soff, &m->cap_sets, 1, sizeof *m->soff);
        size_t c = 0;
        ok = ok && grow((void **)&m->slen, &c, m->cap_sets, sizeof *m->slen);
        c = 0;
        ok = ok && grow((void **)&m->strunc, &c, m->cap_sets, sizeof *m->strunc);
        c = 0;
        ok = ok && grow((void **)&m->sascii, &c, m->cap_sets, sizeof *m->sascii);
        /* the pool exists from the start: the empty set's members are m->pool + 0 */
        ok = ok && grow((void **)&m->pool, &m->cap_pool, 0, sizeof *m->pool);
        if (ok) memset(m->sascii, 0, m->cap_sets * sizeof *m->sascii);
        if (ok) {
            m->soff[0] = 0;
            m->slen[0] = 0;
            m->strunc[0] = 0;
            m->n_sets = 1;
        }
    }
    if (!ok) {
        m->g = NULL; /* the caller keeps g on failure */
        vkf_gmatch_free(m);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    *out = m;
    return VKF_OK;
}

void vkf_gmatch_free(vkf_gmatch *m) {
    if (!m) return;
    vkf_gbnf_free(m->g);
    free(m->cls_of);
    free(m->cls);
    free(m->ranges);
    free(m->npos);
    free(m->npar);
    free(m->nexp);
    free(m->ndepth);
    free(m->nseen);
    vkf_u64map_free(&m->node_map);
    free(m->pool);
    free(m->soff);
    free(m->slen);
    free(m->strunc);
    for (uint32_t i = 0; m->sascii && i < m->n_sets; i++)
        free(m->sascii[i]);
    free(m->sascii);
    vkf_u64map_free(&m->set_map);
    vkf_u64map_free(&m->step_map);
    vkf_u64map_free(&m->trunc_map);
    free(m->buf);
    free(m->buf2);
    free(m->todo);
    free(m);
}

const vkf_gbnf *vkf_gmatch_grammar(const vkf_gmatch *m) { return m->g; }

vkf_gstate vkf_gmatch_start(vkf_gmatch *m) {
    /* the root's alternatives, each expanded (llama_grammar_init) */
    const vkf_gelem *el = m->g->el;
    uint32_t a = m->g->rule_start[m->g->root];
    uint32_t *v = NULL;
    size_t n = 0, cap = 0;
    m->work = 0;
    for (;;) {
        uint32_t e = expand(m, push_pos(m, VKF_GSTACK_EMPTY, a));
        if (m->oom) break;
        if (n + m->slen[e] > MAX_SET) {
            m->too_big = m->oom = 1;
            break;
        }
        if (!grow((void **)&v, &cap, n + m->slen[e], sizeof *v)) {
            m->oom = 1;
            break;
        }
        memcpy(v + n, m->pool + m->soff[e], m->slen[e] * sizeof *v);
        n += m->slen[e];
        while (!is_end(&el[a]))
            a++;
        if (el[a].type != VKF_G_ALT) break;
        a++;
    }
    vkf_gstate st = {.set = m->oom ? VKF_GSET_EMPTY : intern_set(m, v, n)};
    free(v);
    return st;
}

int vkf_gmatch_accept_bytes(vkf_gmatch *m, vkf_gstate *st, const char *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t cp;
        int r = vkf_gutf8_push(&st->partial, (unsigned char)bytes[i], &cp);
        if (r < 0) {
            st->set = VKF_GSET_EMPTY;
            return -1;
        }
        if (r == 0) continue;
        st->set = vkf_gmatch_step(m, st->set, cp, NULL);
        if (st->set == VKF_GSET_EMPTY || m->oom) return -1;
    }
    return 0;
}

int vkf_gmatch_accept_token_elem(vkf_gmatch *m, vkf_gstate *st, int32_t token) {
    size_t n_out = 0;
    uint32_t *v = NULL;
    size_t cap = 0;
    m->work = 0;
    for (uint32_t i = 0; i < m->slen[st->set]; i++) {
        uint32_t x = m->pool[m->soff[st->set] + i];
        if (x <= VKF_GSTACK_CTX) continue;
        const vkf_gelem *e = &m->g->el[m->npos[x]];
        int ok = (e->type == VKF_G_TOKEN && e->value == (uint32_t)token) ||
                 (e->type == VKF_G_TOKEN_NOT && e->value != (uint32_t)token);
        if (!ok) continue;
        uint32_t s = expand(m, push_pos(m, m->npar[x], m->npos[x] + 1));
        if (!grow((void **)&v, &cap, n_out + m->slen[s], sizeof *v)) {
            m->oom = 1;
            break;
        }
        memcpy(v + n_out, m->pool + m->soff[s], m->slen[s] * sizeof *v);
        n_out += m->slen[s];
        if (n_out > MAX_SET) {
            m->too_big = m->oom = 1;
            break;
        }
    }
    st->set = m->oom ? VKF_GSET_EMPTY : intern_set(m, v, n_out);
    free(v);
    return st->set == VKF_GSET_EMPTY ? -1 : 0;
}

int vkf_gmatch_accept_token(vkf_gmatch *m, vkf_gstate *st, int32_t token, const char *bytes,
                            size_t n) {
    vkf_gstate a = *st, b = *st;
    int ra = st->partial.n_remain ? -1 : vkf_gmatch_accept_token_elem(m, &a, token);
    int rb = bytes ? vkf_gmatch_accept_bytes(m, &b, bytes, n) : -1;
    if (ra != 0 && rb != 0) return -1;
    if (ra == 0 && rb == 0) {
        uint32_t na = m->slen[a.set], nb = m->slen[b.set];
        uint32_t *u = malloc((size_t)(na + nb) * sizeof *u);
        if (!u) {
            m->oom = 1;
            return -1;
        }
        memcpy(u, m->pool + m->soff[a.set], na * sizeof *u);
        memcpy(u + na, m->pool + m->soff[b.set], nb * sizeof *u);
        b.set = intern_set(m, u, na + nb);
        free(u);
        *st = b;
    } else {
        *st = ra == 0 ? a : b;
    }
    return 0;
}

int vkf_gmatch_complete(const vkf_gmatch *m, const vkf_gstate *st) {
    return st->partial.n_remain == 0 && m->slen[st->set] > 0 &&
           m->pool[m->soff[st->set]] == VKF_GSTACK_EMPTY; /* sorted: 0 comes first */
}

int vkf_gmatch_only_complete(const vkf_gmatch *m, const vkf_gstate *st) {
    return vkf_gmatch_complete(m, st) && m->slen[st->set] == 1;
}

int vkf_gmatch_can_accept(vkf_gmatch *m, const vkf_gstate *st, const char *bytes, size_t n) {
    vkf_gstate t = *st;
    if (n == 0 || vkf_gmatch_accept_bytes(m, &t, bytes, n) != 0) return 0;
    if (t.partial.n_remain) return vkf_gmatch_partial_ok(m, t.set, t.partial);
    return 1;
}
