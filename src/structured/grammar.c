/* Grammars on a model: the per-model cache and the sampler's grammar (see grammar.h).
 *
 * The cache holds what outlives one request: the vocabulary's trie (built on the first grammar,
 * ~0.1 s for 128k tokens) and engines that finished their request, by grammar text, so the next
 * request with the same grammar (a server's json_object, a tool schema) starts with every mask
 * it already computed. A sampler takes an engine out of the cache and owns it until it is freed:
 * no lock on the sampling path. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "structured/grammar.h"
#include "tokenizer/tokenizer.h"

#define POOL_MAX 8 /* idle engines kept per model */

typedef struct pooled {
    char *text, *root;
    vkf_gengine *e;
} pooled;

struct vkf_gcache {
    pthread_mutex_t mu;
    vkf_gvocab *v;
    pooled pool[POOL_MAX];
    int n_pool;
};

static pthread_mutex_t g_create_mu = PTHREAD_MUTEX_INITIALIZER; /* makes a model's cache once */

void vkf_gcache_free(vkf_gcache *c) {
    if (!c) return;
    for (int i = 0; i < c->n_pool; i++) {
        vkf_gengine_free(c->pool[i].e);
        free(c->pool[i].text);
        free(c->pool[i].root);
    }
    vkf_gvocab_free(c->v);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static vkf_gcache *gcache_of(const vkf_grammar_vocab *v) {
    pthread_mutex_lock(&g_create_mu);
    if (!*v->cache) {
        vkf_gcache *c = calloc(1, sizeof *c);
        if (c && pthread_mutex_init(&c->mu, NULL) != 0) {
            free(c);
            c = NULL;
        }
        *v->cache = c;
    }
    pthread_mutex_unlock(&g_create_mu);
    return *v->cache;
}

/* The text a token adds after others: decode(r, t) less decode(r), with r a plain letter, so
 * SentencePiece spaces and byte tokens come out as they do mid-text (llama.cpp's
 * token_to_piece with special tokens rendered). */
static vkf_status build_vocab(const vkf_grammar_vocab *v, vkf_gvocab **out) {
    vkf_tokenizer *tok = v->tok;
    const int32_t n_vocab = v->n_vocab;
    int32_t n = n_vocab;
    if (!tok) return vkf_error(VKF_ERROR_UNSUPPORTED, "grammar: %s has no tokenizer", v->name);
    if (vkf_tokenizer_n_vocab(tok) < n) n = vkf_tokenizer_n_vocab(tok);
    char **piece = calloc((size_t)n_vocab, sizeof *piece);
    size_t *len = calloc((size_t)n_vocab, sizeof *len);
    uint8_t *eog = calloc((size_t)n_vocab, 1);
    vkf_status s = VKF_OK;
    if (!piece || !len || !eog) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
        goto done;
    }
    /* the reference letter */
    int32_t ref = -1;
    char *rtext = NULL;
    size_t rlen = 0;
    {
        int32_t *ids = NULL;
        size_t k = 0;
        pthread_mutex_lock(v->tok_lock);
        vkf_status ts = vkf_tokenizer_encode_ex(tok, "a", 1, 0, 0, &ids, &k);
        pthread_mutex_unlock(v->tok_lock);
        if (ts == VKF_OK && k >= 1) ref = ids[k - 1];
        free(ids);
        if (ref >= 0 &&
            vkf_tokenizer_decode_ex(tok, &ref, 1, VKF_DECODE_SPECIAL | VKF_DECODE_NO_STRIP, &rtext,
                                    &rlen) != VKF_OK) {
            rtext = NULL;
            ref = -1;
        }
    }
    for (int32_t t = 0; t < n && s == VKF_OK; t++) {
        int32_t ids[2] = {ref, t};
        char *txt = NULL;
        size_t tl = 0;
        int flags = VKF_DECODE_SPECIAL | VKF_DECODE_NO_STRIP;
        if (ref >= 0 && vkf_tokenizer_decode_ex(tok, ids, 2, flags, &txt, &tl) == VKF_OK &&
            tl >= rlen && memcmp(txt, rtext, rlen) == 0) {
            memmove(txt, txt + rlen, tl - rlen);
            tl -= rlen;
        } else {
            free(txt);
            txt = NULL;
            s = vkf_tokenizer_decode_ex(tok, &t, 1, flags, &txt, &tl);
        }
        piece[t] = txt;
        len[t] = tl;
        eog[t] = (uint8_t)(v->is_eog(v->user, t) != 0);
    }
    for (int32_t t = n; t < n_vocab; t++) /* ids past the tokenizer: no text, never drawn */
        piece[t] = NULL;
    free(rtext);
    if (s == VKF_OK) {
        static const char empty[1] = "";
        for (int32_t t = 0; t < n_vocab; t++)
            if (!piece[t]) piece[t] = (char *)empty, len[t] = 0;
        s = vkf_gvocab_create(n_vocab, (const char *const *)piece, len, eog, out);
        for (int32_t t = 0; t < n_vocab; t++)
            if (piece[t] == empty) piece[t] = NULL;
    }
done:
    for (int32_t t = 0; piece && t < n_vocab; t++)
        free(piece[t]);
    free(piece);
    free(len);
    free(eog);
    return s;
}

/* <text> in a grammar: the one token text tokenizes to (control tokens included) */
static int32_t token_of(void *user, const char *text, size_t len) {
    const vkf_grammar_vocab *v = user;
    int32_t *ids = NULL, id = -1;
    size_t n = 0;
    pthread_mutex_lock(v->tok_lock);
    vkf_status s = vkf_tokenizer_encode_ex(v->tok, text, len, 0, 1, &ids, &n);
    pthread_mutex_unlock(v->tok_lock);
    if (s == VKF_OK && n == 1) id = ids[0];
    free(ids);
    return id;
}

/* ------------------------------------------------------------------ the sampler's grammar */

struct vkf_grammar {
    const char *name; /* the model's, for messages */
    vkf_gcache *c;
    char *text, *root;
    vkf_gengine *e;
    vkf_gstate st;
};

vkf_status vkf_grammar_create(const vkf_grammar_vocab *from, const char *text, const char *root,
                              vkf_grammar **out) {
    *out = NULL;
    if (!from || !text) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "grammar: NULL model or text");
    if (!from->tok)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "grammar: %s has no tokenizer: a grammar constrains text", from->name);
    vkf_gcache *c = gcache_of(from);
    vkf_grammar *g = calloc(1, sizeof *g);
    if (!c || !g) {
        free(g);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    g->name = from->name;
    g->c = c;
    g->text = strdup(text);
    g->root = strdup(root && *root ? root : "root");
    if (!g->text || !g->root) {
        vkf_grammar_free(g);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    vkf_status s = VKF_OK;
    pthread_mutex_lock(&c->mu);
    if (!c->v) s = build_vocab(from, &c->v);
    for (int i = 0; s == VKF_OK && i < c->n_pool; i++)
        if (strcmp(c->pool[i].text, g->text) == 0 && strcmp(c->pool[i].root, g->root) == 0) {
            g->e = c->pool[i].e;
            free(c->pool[i].text);
            free(c->pool[i].root);
            c->pool[i] = c->pool[--c->n_pool];
            break;
        }
    const vkf_gvocab *v = c->v;
    pthread_mutex_unlock(&c->mu);
    if (s == VKF_OK && !g->e)
        s = vkf_gengine_create(v, g->text, strlen(g->text), g->root, token_of, (void *)from,
                               VKF_GRAMMAR_CTX_DEPTH, &g->e);
    if (s != VKF_OK) {
        vkf_grammar_free(g);
        return s;
    }
    g->st = vkf_gengine_start(g->e);
    *out = g;
    return VKF_OK;
}

void vkf_grammar_free(vkf_grammar *g) {
    if (!g) return;
    if (g->e) { /* back to the model's cache, the oldest idle engine out when it is full */
        vkf_gcache *c = g->c;
        pthread_mutex_lock(&c->mu);
        if (c->n_pool == POOL_MAX) {
            vkf_gengine_free(c->pool[0].e);
            free(c->pool[0].text);
            free(c->pool[0].root);
            memmove(c->pool, c->pool + 1, (POOL_MAX - 1) * sizeof *c->pool);
            c->n_pool--;
        }
        c->pool[c->n_pool++] = (pooled){g->text, g->root, g->e};
        g->text = g->root = NULL;
        pthread_mutex_unlock(&c->mu);
    }
    free(g->text);
    free(g->root);
    free(g);
}

void vkf_grammar_reset(vkf_grammar *g) { g->st = vkf_gengine_start(g->e); }

vkf_status vkf_grammar_apply(vkf_grammar *g, float *logits, int32_t n_vocab) {
    const uint64_t *mask;
    VKF_TRY(vkf_gengine_mask(g->e, &g->st, &mask));
    int any = 0;
    int32_t nv = vkf_gvocab_n_vocab(g->c->v);
    for (int32_t t = 0; t < n_vocab; t++) {
        if (t < nv && ((mask[t >> 6] >> (t & 63)) & 1)) {
            any = 1;
            continue;
        }
        logits[t] = -INFINITY;
    }
    if (!any)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "grammar: no token of %s can continue the grammar here (it needs text "
                         "the vocabulary cannot spell, or an end-of-generation token the model "
                         "lacks)",
                         g->name);
    return VKF_OK;
}

int vkf_grammar_allows(vkf_grammar *g, int32_t token) {
    return vkf_gengine_allows(g->e, &g->st, token);
}

vkf_status vkf_grammar_accept(vkf_grammar *g, int32_t token) {
    return vkf_gengine_accept(g->e, &g->st, token);
}

int vkf_grammar_state(const vkf_grammar *g) {
    vkf_gmatch *mt = vkf_gengine_matcher(g->e);
    if (vkf_gmatch_only_complete(mt, &g->st)) return VKF_GRAMMAR_MUST_END;
    if (vkf_gmatch_complete(mt, &g->st)) return VKF_GRAMMAR_MAY_END;
    return VKF_GRAMMAR_OPEN;
}

/* ------------------------------------------------------------------ public */

/* without a vocabulary, <text> tokens are taken on trust (resolved when sampling) */
static int32_t any_token(void *user, const char *text, size_t len) {
    (void)user;
    (void)text;
    (void)len;
    return 0;
}

vkf_status vkf_grammar_check(const char *gbnf, const char *root) {
    if (!gbnf) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "grammar: NULL text");
    vkf_gbnf *g;
    VKF_TRY(vkf_gbnf_parse(gbnf, strlen(gbnf), root, any_token, NULL, &g));
    vkf_gbnf_free(g);
    return VKF_OK;
}
