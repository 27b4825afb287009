/* Token masks: which tokens of a vocabulary can continue a grammar's state.
 *
 * llama.cpp tests every candidate token against every stack, character by character, at every
 * step (src/llama-grammar.cpp, llama_grammar_reject_candidates): O(vocabulary x token length x
 * stacks) per token. Here the work is shared three ways:
 *
 * 1. Per vocabulary (once per model): the tokens' texts sorted into a byte trie stored in
 *    preorder (node i's subtree is [i, end[i]), its tokens a range of the sorted list), so one
 *    walk tests every token while pruning every subtree whose prefix the grammar rejects: a
 *    prefix shared by thousands of tokens is stepped once.
 * 2. Per grammar context: masks are cached by the top ctx_depth frames of the stacks (stacks
 *    truncated above a CTX bottom), which is all a token's text usually reaches: a string
 *    property's value, wherever in the object it is, is one cache entry. A token whose text runs
 *    out of those frames (a path "escapes" below them: a closing quote and what follows) is
 *    recorded as uncertain.
 * 3. Per full state: the cached mask plus its uncertain tokens checked one by one against the
 *    real stacks, cached by the state's set of stacks (a state recurs, e.g. inside every
 *    string).
 * The result is exactly llama.cpp's mask; tests/test_grammar.c compares it with a token-by-token
 * check at several context depths. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/hashmap.h"
#include "structured/grammar.h"

#define CACHE_BUDGET ((size_t)96 << 20) /* bytes of cached masks per engine before a flush */

struct vkf_gvocab {
    int32_t n_vocab;
    uint32_t n_words; /* 64-bit words of a mask */
    char *blob;       /* token texts */
    uint64_t *off;    /* [n_vocab] */
    uint32_t *len;    /* [n_vocab] */
    uint64_t *eog;    /* end-of-generation tokens */
    uint64_t *usable; /* tokens in the trie: a non-empty text without NUL, not end-of-generation */
    int32_t *tok;     /* the usable tokens, sorted by text */
    uint32_t n_tok;
    uint32_t n_nodes;    /* trie nodes, node 0 the root */
    uint8_t *byte;       /* [n_nodes] the byte on the edge into the node */
    uint16_t *depth;     /* [n_nodes] */
    uint32_t *end;       /* [n_nodes] first node after the subtree */
    uint32_t *tok_start; /* [n_nodes + 1] first sorted token at or below the node, in preorder */
    uint32_t max_depth;
};

/* ------------------------------------------------------------------ vocabulary */

static const char *piece_of(const vkf_gvocab *v, int32_t t) { return v->blob + v->off[t]; }

static int cmp_piece(const void *a, const void *b, void *user) {
    const vkf_gvocab *v = user;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint32_t lx = v->len[x], ly = v->len[y];
    int c = memcmp(piece_of(v, x), piece_of(v, y), lx < ly ? lx : ly);
    if (c) return c;
    if (lx != ly) return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

void vkf_gvocab_free(vkf_gvocab *v) {
    if (!v) return;
    free(v->blob);
    free(v->off);
    free(v->len);
    free(v->eog);
    free(v->usable);
    free(v->tok);
    free(v->byte);
    free(v->depth);
    free(v->end);
    free(v->tok_start);
    free(v);
}

int32_t vkf_gvocab_n_vocab(const vkf_gvocab *v) { return v->n_vocab; }
uint32_t vkf_gvocab_n_nodes(const vkf_gvocab *v) { return v->n_nodes; }

vkf_status vkf_gvocab_create(int32_t n_vocab, const char *const *piece, const size_t *len,
                             const uint8_t *eog, vkf_gvocab **out) {
    if (n_vocab < 1) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "grammar: empty vocabulary");
    vkf_gvocab *v = calloc(1, sizeof *v);
    if (!v) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    v->n_vocab = n_vocab;
    v->n_words = (uint32_t)((n_vocab + 63) / 64);
    size_t total = 0, n_nodes_max = 1;
    for (int32_t t = 0; t < n_vocab; t++)
        total += len[t];
    v->blob = malloc(total + 1);
    v->off = malloc((size_t)n_vocab * sizeof *v->off);
    v->len = malloc((size_t)n_vocab * sizeof *v->len);
    v->eog = calloc(v->n_words, sizeof *v->eog);
    v->usable = calloc(v->n_words, sizeof *v->usable);
    v->tok = malloc((size_t)n_vocab * sizeof *v->tok);
    if (!v->blob || !v->off || !v->len || !v->eog || !v->usable || !v->tok) goto oom;
    total = 0;
    for (int32_t t = 0; t < n_vocab; t++) {
        memcpy(v->blob + total, piece[t], len[t]);
        v->off[t] = total;
        v->len[t] = (uint32_t)len[t];
        total += len[t];
        if (eog && eog[t]) {
            v->eog[t >> 6] |= 1ull << (t & 63);
            continue;
        }
        /* no text, a NUL (llama.cpp's pieces end there) or longer than a trie depth: never */
        if (len[t] == 0 || len[t] > 0xFFFF || memchr(piece[t], '\0', len[t])) continue;
        v->usable[t >> 6] |= 1ull << (t & 63);
        v->tok[v->n_tok++] = t;
        n_nodes_max += v->len[t];
    }
    qsort_r(v->tok, v->n_tok, sizeof *v->tok, cmp_piece, v);
    /* the trie in preorder: each token adds nodes for the bytes past its common prefix with the
     * previous one (sorted order makes that the preorder) */
    v->byte = malloc(n_nodes_max);
    v->depth = malloc(n_nodes_max * sizeof *v->depth);
    v->end = malloc(n_nodes_max * sizeof *v->end);
    v->tok_start = malloc((n_nodes_max + 1) * sizeof *v->tok_start);
    uint32_t *path = malloc((0x10000 + 1) * sizeof *path); /* node at each depth of the path */
    if (!v->byte || !v->depth || !v->end || !v->tok_start || !path) {
        free(path);
        goto oom;
    }
    v->byte[0] = 0;
    v->depth[0] = 0;
    v->tok_start[0] = 0;
    v->n_nodes = 1;
    path[0] = 0;
    uint32_t path_len = 0; /* depth of the current path */
    const char *prev = NULL;
    uint32_t prev_len = 0;
    for (uint32_t j = 0; j < v->n_tok; j++) {
        int32_t t = v->tok[j];
        const char *p = piece_of(v, t);
        uint32_t l = v->len[t], lcp = 0;
        while (prev && lcp < l && lcp < prev_len && p[lcp] == prev[lcp])
            lcp++;
        for (; path_len > lcp; path_len--) /* close the nodes off the common prefix */
            v->end[path[path_len]] = v->n_nodes;
        for (uint32_t d = lcp + 1; d <= l; d++) {
            uint32_t n = v->n_nodes++;
            v->byte[n] = (uint8_t)p[d - 1];
            v->depth[n] = (uint16_t)d;
            v->tok_start[n] = j;
            path[d] = n;
        }
        path_len = l;
        if (l > v->max_depth) v->max_depth = l;
        prev = p;
        prev_len = l;
    }
    for (; path_len > 0; path_len--)
        v->end[path[path_len]] = v->n_nodes;
    v->end[0] = v->n_nodes;
    v->tok_start[v->n_nodes] = v->n_tok;
    free(path);
    *out = v;
    return VKF_OK;
oom:
    vkf_gvocab_free(v);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory for the vocabulary");
}

/* ------------------------------------------------------------------ engine */

typedef struct centry {
    uint64_t *mask; /* [n_words] */
    uint32_t *unc;  /* uncertain token ranges in sorted order: lo, hi pairs (ctx entries) */
    uint32_t n_unc;
} centry;

struct vkf_gengine {
    const vkf_gvocab *v;
    vkf_gmatch *m;
    vkf_gstate start;
    vkf_u64map ctx_map, full_map; /* set id -> entry index */
    centry *ent;
    uint32_t n_ent, cap_ent;
    size_t cache_bytes;
    uint64_t *scratch; /* [n_words] */
    /* walk state per trie depth */
    uint32_t *d_set;
    vkf_gutf8 *d_part;
    uint8_t *d_esc;
    uint32_t *unc;
    size_t n_unc, cap_unc;
    vkf_gengine_stats st;
};

static int unc_add(vkf_gengine *e, uint32_t lo, uint32_t hi) {
    if (lo >= hi) return 1;
    if (e->n_unc && e->unc[2 * e->n_unc - 1] == lo) { /* extends the last range */
        e->unc[2 * e->n_unc - 1] = hi;
        return 1;
    }
    if (e->n_unc == e->cap_unc) {
        size_t nc = e->cap_unc ? 2 * e->cap_unc : 256;
        uint32_t *u = realloc(e->unc, 2 * nc * sizeof *u);
        if (!u) return 0;
        e->unc = u;
        e->cap_unc = nc;
    }
    e->unc[2 * e->n_unc] = lo;
    e->unc[2 * e->n_unc + 1] = hi;
    e->n_unc++;
    return 1;
}

static void set_range(uint64_t *mask, const int32_t *tok, uint32_t lo, uint32_t hi) {
    for (uint32_t j = lo; j < hi; j++)
        mask[tok[j] >> 6] |= 1ull << (tok[j] & 63);
}

/* a member of s is CTX (sets are sorted: it is first or second) */
static int has_ctx(const vkf_gmatch *m, uint32_t s) {
    uint32_t n;
    const uint32_t *mem = vkf_gmatch_set(m, s, &n);
    return (n > 0 && mem[0] == VKF_GSTACK_CTX) || (n > 1 && mem[1] == VKF_GSTACK_CTX);
}

/* One pruned walk of the trie from (set, part): accepted tokens into mask, tokens whose outcome
 * depends on frames below a CTX bottom into e->unc. 0 when out of memory. */
static int walk(vkf_gengine *e, uint32_t set, vkf_gutf8 part, uint64_t *mask) {
    const vkf_gvocab *v = e->v;
    vkf_gmatch *m = e->m;
    e->n_unc = 0;
    e->st.walks++;
    memset(mask, 0, v->n_words * sizeof *mask);
    e->d_set[0] = set;
    e->d_part[0] = part;
    e->d_esc[0] = 0;
    for (uint32_t i = 1; i < v->n_nodes;) {
        uint32_t d = v->depth[i];
        uint32_t s = e->d_set[d - 1];
        vkf_gutf8 p = e->d_part[d - 1];
        int esc = e->d_esc[d - 1];
        uint32_t cp;
        int r = vkf_gutf8_push(&p, v->byte[i], &cp);
        if (r < 0) { /* malformed UTF-8: no grammar takes it */
            i = v->end[i];
            continue;
        }
        if (r == 1) s = vkf_gmatch_step(m, s, cp, &esc);
        if (s == VKF_GSET_EMPTY) {
            if (esc && !unc_add(e, v->tok_start[i], v->tok_start[v->end[i]])) return 0;
            i = v->end[i];
            continue;
        }
        uint32_t lo = v->tok_start[i], hi = v->tok_start[i + 1];
        if (lo < hi) {
            int ok = 1, unsure = 0;
            if (p.n_remain) { /* ends inside a character: can a class still take it? */
                ok = vkf_gmatch_partial_ok(m, s, p);
                unsure = !ok && (esc || has_ctx(m, s));
            }
            if (ok)
                set_range(mask, v->tok, lo, hi);
            else if (unsure && !unc_add(e, lo, hi))
                return 0;
        }
        e->d_set[d] = s;
        e->d_part[d] = p;
        e->d_esc[d] = (uint8_t)esc;
        i++;
    }
    return 1;
}

static void cache_flush(vkf_gengine *e) {
    for (uint32_t i = 0; i < e->n_ent; i++) {
        free(e->ent[i].mask);
        free(e->ent[i].unc);
    }
    e->n_ent = 0;
    e->cache_bytes = 0;
    vkf_u64map_free(&e->ctx_map);
    vkf_u64map_free(&e->full_map);
    vkf_u64map_init(&e->ctx_map, 256);
    vkf_u64map_init(&e->full_map, 256);
}

/* a new entry holding mask (copied) and e->unc (copied when with_unc) */
static centry *cache_put(vkf_gengine *e, vkf_u64map *map, uint32_t key, const uint64_t *mask,
                         int with_unc) {
    size_t bytes = e->v->n_words * sizeof *mask + (with_unc ? e->n_unc * 8 : 0);
    if (e->cache_bytes + bytes > CACHE_BUDGET) return NULL; /* the caller flushes, then retries */
    if (e->n_ent == e->cap_ent) {
        uint32_t nc = e->cap_ent ? 2 * e->cap_ent : 64;
        centry *n = realloc(e->ent, nc * sizeof *n);
        if (!n) return NULL;
        e->ent = n;
        e->cap_ent = nc;
    }
    centry *c = &e->ent[e->n_ent];
    memset(c, 0, sizeof *c);
    c->mask = malloc(e->v->n_words * sizeof *mask);
    if (with_unc && e->n_unc) {
        c->unc = malloc(e->n_unc * 2 * sizeof *c->unc);
        if (c->unc) memcpy(c->unc, e->unc, e->n_unc * 2 * sizeof *c->unc);
        c->n_unc = (uint32_t)e->n_unc;
    }
    if (!c->mask || (with_unc && e->n_unc && !c->unc) ||
        !vkf_u64map_put_first(map, key, e->n_ent)) {
        free(c->mask);
        free(c->unc);
        return NULL;
    }
    memcpy(c->mask, mask, e->v->n_words * sizeof *mask);
    e->n_ent++;
    e->cache_bytes += bytes;
    e->st.cache_bytes = e->cache_bytes;
    return c;
}

/* a failed matcher (or allocation here): its reason */
static vkf_status match_err(const vkf_gengine *e, const char *when) {
    const char *why = vkf_gmatch_failure(e->m);
    if (why && strcmp(why, "out of memory") != 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "grammar: %s: %s", when, why);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory %s", when);
}

vkf_status vkf_gengine_create(const vkf_gvocab *v, const char *text, size_t len, const char *root,
                              vkf_gbnf_token_fn tok, void *tok_user, int ctx_depth,
                              vkf_gengine **out) {
    vkf_gbnf *g;
    VKF_TRY(vkf_gbnf_parse(text, len, root, tok, tok_user, &g));
    vkf_gengine *e = calloc(1, sizeof *e);
    if (!e) {
        vkf_gbnf_free(g);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    e->v = v;
    vkf_status s = vkf_gmatch_create(g, ctx_depth, &e->m);
    if (s != VKF_OK) {
        vkf_gbnf_free(g);
        free(e);
        return s;
    }
    e->scratch = malloc(v->n_words * sizeof *e->scratch);
    e->d_set = malloc((v->max_depth + 1) * sizeof *e->d_set);
    e->d_part = malloc((v->max_depth + 1) * sizeof *e->d_part);
    e->d_esc = malloc(v->max_depth + 1);
    if (!e->scratch || !e->d_set || !e->d_part || !e->d_esc || !vkf_u64map_init(&e->ctx_map, 256) ||
        !vkf_u64map_init(&e->full_map, 256)) {
        vkf_gengine_free(e);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    e->start = vkf_gmatch_start(e->m);
    if (e->start.set == VKF_GSET_EMPTY) {
        vkf_status st = match_err(e, "at the start rule");
        vkf_gengine_free(e);
        return st;
    }
    *out = e;
    return VKF_OK;
}

void vkf_gengine_free(vkf_gengine *e) {
    if (!e) return;
    for (uint32_t i = 0; i < e->n_ent; i++) {
        free(e->ent[i].mask);
        free(e->ent[i].unc);
    }
    free(e->ent);
    vkf_u64map_free(&e->ctx_map);
    vkf_u64map_free(&e->full_map);
    vkf_gmatch_free(e->m);
    free(e->scratch);
    free(e->d_set);
    free(e->d_part);
    free(e->d_esc);
    free(e->unc);
    free(e);
}

vkf_gmatch *vkf_gengine_matcher(vkf_gengine *e) { return e->m; }
vkf_gstate vkf_gengine_start(vkf_gengine *e) { return e->start; }
void vkf_gengine_get_stats(const vkf_gengine *e, vkf_gengine_stats *s) { *s = e->st; }

/* token elements (<[id]>, !<[id]>) on top of st's stacks, and end-of-generation tokens when a
 * stack is empty */
static void add_token_elems(vkf_gengine *e, const vkf_gstate *st, uint64_t *mask) {
    const vkf_gvocab *v = e->v;
    uint32_t n;
    const uint32_t *mem = vkf_gmatch_set(e->m, st->set, &n);
    for (uint32_t i = 0; i < n; i++) {
        const vkf_gelem *top = vkf_gmatch_top(e->m, mem[i]);
        if (!top) continue;
        if (top->type == VKF_G_TOKEN && top->value < (uint32_t)v->n_vocab) {
            uint32_t t = top->value;
            mask[t >> 6] |= v->usable[t >> 6] & (1ull << (t & 63));
        } else if (top->type == VKF_G_TOKEN_NOT) {
            uint32_t t = top->value;
            for (uint32_t w = 0; w < v->n_words; w++) {
                uint64_t u = v->usable[w];
                if (t >> 6 == w) u &= ~(1ull << (t & 63));
                mask[w] |= u;
            }
        }
    }
    if (vkf_gmatch_complete(e->m, st))
        for (uint32_t w = 0; w < v->n_words; w++)
            mask[w] |= v->eog[w];
}

vkf_status vkf_gengine_mask(vkf_gengine *e, const vkf_gstate *st, const uint64_t **mask) {
    const vkf_gvocab *v = e->v;
    e->st.masks++;
    if (st->partial.n_remain) { /* inside a character: one walk, exact, not cached */
        if (!walk(e, st->set, st->partial, e->scratch)) return match_err(e, "while masking tokens");
        *mask = e->scratch;
        return VKF_OK;
    }
    uint64_t idx;
    if (vkf_u64map_get(&e->full_map, st->set, &idx)) {
        e->st.hits_full++;
        *mask = e->ent[idx].mask;
        return VKF_OK;
    }
    uint32_t tset = vkf_gmatch_truncate(e->m, st->set);
    const uint64_t *cmask;
    const uint32_t *unc;
    uint32_t n_unc;
    if (vkf_u64map_get(&e->ctx_map, tset, &idx)) {
        e->st.hits_ctx++;
    } else {
        if (!walk(e, tset, (vkf_gutf8){.value = 0}, e->scratch))
            return match_err(e, "while masking tokens");
        centry *c = cache_put(e, &e->ctx_map, tset, e->scratch, 1);
        if (!c) {
            cache_flush(e);
            c = cache_put(e, &e->ctx_map, tset, e->scratch, 1);
            if (!c) return match_err(e, "while masking tokens");
        }
        idx = (uint64_t)(c - e->ent);
    }
    cmask = e->ent[idx].mask;
    unc = e->ent[idx].unc;
    n_unc = e->ent[idx].n_unc;
    memcpy(e->scratch, cmask, v->n_words * sizeof *e->scratch);
    for (uint32_t r = 0; r < n_unc; r++)
        for (uint32_t j = unc[2 * r]; j < unc[2 * r + 1]; j++) {
            int32_t t = v->tok[j];
            e->st.uncertain_checked++;
            if (vkf_gmatch_can_accept(e->m, st, piece_of(v, t), v->len[t]))
                e->scratch[t >> 6] |= 1ull << (t & 63);
        }
    add_token_elems(e, st, e->scratch);
    centry *c = cache_put(e, &e->full_map, st->set, e->scratch, 0);
    if (!c) { /* over budget: flush, keep this one */
        cache_flush(e);
        c = cache_put(e, &e->full_map, st->set, e->scratch, 0);
        if (!c) return match_err(e, "while masking tokens");
    }
    *mask = c->mask;
    return VKF_OK;
}

int vkf_gengine_allows(vkf_gengine *e, const vkf_gstate *st, int32_t token) {
    const vkf_gvocab *v = e->v;
    if (token < 0 || token >= v->n_vocab) return 0;
    uint64_t idx;
    if (!st->partial.n_remain && vkf_u64map_get(&e->full_map, st->set, &idx))
        return (int)((e->ent[idx].mask[token >> 6] >> (token & 63)) & 1);
    if ((v->eog[token >> 6] >> (token & 63)) & 1) return vkf_gmatch_complete(e->m, st);
    if (!((v->usable[token >> 6] >> (token & 63)) & 1)) return 0;
    if (vkf_gmatch_can_accept(e->m, st, piece_of(v, token), v->len[token])) return 1;
    if (st->partial.n_remain) return 0;
    /* token elements: the same rule as add_token_elems, for one token */
    uint32_t n;
    const uint32_t *mem = vkf_gmatch_set(e->m, st->set, &n);
    for (uint32_t i = 0; i < n; i++) {
        const vkf_gelem *top = vkf_gmatch_top(e->m, mem[i]);
        if (top && ((top->type == VKF_G_TOKEN && top->value == (uint32_t)token) ||
                    (top->type == VKF_G_TOKEN_NOT && top->value != (uint32_t)token)))
            return 1;
    }
    return 0;
}

vkf_status vkf_gengine_accept(vkf_gengine *e, vkf_gstate *st, int32_t token) {
    const vkf_gvocab *v = e->v;
    if (token < 0 || token >= v->n_vocab)
        return vkf_error(VKF_ERROR_TOKEN, "grammar: token %d out of range", token);
    if ((v->eog[token >> 6] >> (token & 63)) & 1) {
        if (vkf_gmatch_complete(e->m, st)) return VKF_OK; /* the end: the state stays */
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "grammar: end-of-generation token %d before the grammar is complete",
                         token);
    }
    /* llama_grammar_accept_token: token elements take the token itself, character classes its
     * text; the new state is the union */
    int usable = (int)((v->usable[token >> 6] >> (token & 63)) & 1);
    if (vkf_gmatch_accept_token(e->m, st, token, usable ? piece_of(v, token) : NULL,
                                usable ? v->len[token] : 0) != 0) {
        if (vkf_gmatch_failure(e->m)) return match_err(e, "accepting a token");
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "grammar: token %d ('%.*s') cannot continue the grammar here", token,
                         (int)(v->len[token] > 40 ? 40 : v->len[token]), piece_of(v, token));
    }
    return VKF_OK;
}
