/* Grammars bound to a vocabulary: the token masks constrained sampling applies.
 *
 *   gbnf_vocab.c  vkf_gvocab (every token's text, in a byte trie: once per model) and
 *                 vkf_gengine (one grammar's matcher and mask caches over one vocabulary)
 *   grammar.c     the per-model cache (the vocabulary, engines reused across requests) and the
 *                 sampler's grammar (state, mask, accept); the public entry points
 *
 * Semantics are llama.cpp's (src/llama-grammar.cpp): a token is allowed when its text (control
 * tokens as their text) can continue some stack; end-of-generation tokens only when a stack
 * is empty (the grammar is complete); tokens with an empty text (or a NUL byte) never. */
#ifndef VKF_STRUCTURED_GRAMMAR_H
#define VKF_STRUCTURED_GRAMMAR_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "structured/gbnf.h"
#include "vkformer.h"

/* ------------------------------------------------------------------ vocabulary */

typedef struct vkf_gvocab vkf_gvocab;

/* From token texts: piece[t][0..len[t]) for t < n_vocab; eog[t] != 0 for end-of-generation
 * tokens (eog may be NULL). Everything is copied. */
vkf_status vkf_gvocab_create(int32_t n_vocab, const char *const *piece, const size_t *len,
                             const uint8_t *eog, vkf_gvocab **out);
void vkf_gvocab_free(vkf_gvocab *v);
int32_t vkf_gvocab_n_vocab(const vkf_gvocab *v);
/* Trie nodes (a measure of the vocabulary, for the benchmark). */
uint32_t vkf_gvocab_n_nodes(const vkf_gvocab *v);

/* ------------------------------------------------------------------ engine */

typedef struct vkf_gengine vkf_gengine;

/* Parses text (GBNF; root NULL: "root") against v (which must outlive the engine). tok
 * resolves <text> tokens (may be NULL). ctx_depth: the stack frames a cached mask may depend on
 * (0: whole stacks, nothing shared between contexts). */
vkf_status vkf_gengine_create(const vkf_gvocab *v, const char *text, size_t len, const char *root,
                              vkf_gbnf_token_fn tok, void *tok_user, int ctx_depth,
                              vkf_gengine **out);
void vkf_gengine_free(vkf_gengine *e);
vkf_gmatch *vkf_gengine_matcher(vkf_gengine *e);
vkf_gstate vkf_gengine_start(vkf_gengine *e);
/* The tokens allowed after st: a bitmap of n_vocab bits (bit t of word t / 64), valid until the
 * next call on e. */
vkf_status vkf_gengine_mask(vkf_gengine *e, const vkf_gstate *st, const uint64_t **mask);
/* 1 when token is allowed after st (the test the mask caches, for one token). */
int vkf_gengine_allows(vkf_gengine *e, const vkf_gstate *st, int32_t token);
/* Advances st over token (which must be allowed). */
vkf_status vkf_gengine_accept(vkf_gengine *e, vkf_gstate *st, int32_t token);
/* Cache statistics since creation (benchmarks, tests). */
typedef struct vkf_gengine_stats {
    long masks, hits_full, hits_ctx, walks, uncertain_checked;
    size_t cache_bytes;
} vkf_gengine_stats;
void vkf_gengine_get_stats(const vkf_gengine *e, vkf_gengine_stats *s);

/* The default ctx_depth (chosen with bench --grammar; see bench/RESULTS.md). */
#define VKF_GRAMMAR_CTX_DEPTH 3

/* ------------------------------------------------------------------ per model (grammar.c) */

/* What a grammar needs of a model, given by the model's side (generate/sampling.c): the
 * vocabulary is read through its tokenizer, the end-of-generation tokens through is_eog, and
 * the cache lives in a slot the model owns and frees with vkf_gcache_free. The grammar code
 * knows no model. */
typedef struct vkf_gcache vkf_gcache;
typedef struct vkf_grammar_vocab {
    const char *name;          /* the model, for messages (its path) */
    vkf_tokenizer *tok;        /* NULL: the model has none, and a grammar is refused */
    pthread_mutex_t *tok_lock; /* held around every encode (the tokenizer's scratch) */
    int32_t n_vocab;           /* logits per step, tokens (may exceed the tokenizer's) */
    int (*is_eog)(const void *user, int32_t token); /* 1: the token ends generation */
    const void *user;                               /* is_eog's */
    vkf_gcache **cache; /* the model's slot: made on the first grammar, under a lock */
} vkf_grammar_vocab;
void vkf_gcache_free(vkf_gcache *c);

/* A sampler's grammar: an engine taken from the model's cache and a state. v is read during
 * the call only. */
typedef struct vkf_grammar vkf_grammar;
vkf_status vkf_grammar_create(const vkf_grammar_vocab *v, const char *text, const char *root,
                              vkf_grammar **out);
/* Gives the engine back to the model's cache. */
void vkf_grammar_free(vkf_grammar *g);
void vkf_grammar_reset(vkf_grammar *g);
/* logits[t] = -inf for every token the grammar does not allow; VKF_ERROR_INVALID_ARGUMENT when
 * none is allowed (the grammar needs text no token spells). */
vkf_status vkf_grammar_apply(vkf_grammar *g, float *logits, int32_t n_vocab);
int vkf_grammar_allows(vkf_grammar *g, int32_t token);
vkf_status vkf_grammar_accept(vkf_grammar *g, int32_t token);
/* VKF_GRAMMAR_* of vkformer.h */
int vkf_grammar_state(const vkf_grammar *g);

#endif
