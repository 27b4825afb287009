/* Embeddings (vkf_embed, vkformer.h): encoder-only models over batches of right-padded inputs.
 *
 * Inputs are tokenized (the model's specials: [CLS] ... [SEP]), truncated to the model's limit
 * as sentence-transformers does (the first tokens, the specials kept), sorted by length and cut
 * into batches; each batch runs as one graph (model/graph_encoder.c) of B sequences padded to n
 * rows, with the real lengths masking the padding in every attention and in the pooling. n and
 * B are rounded up (n to a multiple of 16, B to a power of two) so a few cached graphs serve
 * every batch; padding sequences have length 1 and their rows are dropped. L2 normalization is
 * done here, in double, on the pooled vectors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "vkformer.h"

/* Rows of one batched graph at most: bounds a submission (GPU watchdogs) and the activations. */
#define EMBED_MAX_ROWS 8192

void vkf_embeddings_free(vkf_embeddings *e) {
    if (!e) return;
    free(e->data);
    free(e->n_tokens);
    free(e->first);
    free(e->truncated);
    free(e);
}

/* ------------------------------------------------------------------ inputs */

typedef struct emb_input {
    int32_t *ids; /* owned (texts) or borrowed (token ids) */
    int32_t n;    /* after truncation */
    int32_t cut;  /* tokens dropped */
} emb_input;

/* The longest input the session takes: the model's limit within the session's context. */
static int32_t emb_limit(const vkf_session *s) {
    int32_t lim = s->m->hp.n_seq_max > 0 ? s->m->hp.n_seq_max : s->m->hp.n_ctx;
    return lim < s->n_ctx ? lim : s->n_ctx;
}

/* Tokenizes text with the specials; past lim tokens, the text alone is tokenized too so the
 * specials around it (the difference) are kept and the text's tokens cut, as Hugging Face's
 * truncation with add_special_tokens does. */
static vkf_status emb_tokenize(vkf_model *m, const char *text, int32_t lim, int idx,
                               emb_input *in) {
    int32_t *ids = NULL, *bare = NULL;
    size_t n = 0, nb = 0;
    pthread_mutex_lock(&m->tok_lock);
    vkf_status s = vkf_tokenizer_encode(m->tok, text, strlen(text), 1, &ids, &n);
    if (s == VKF_OK && n > (size_t)lim)
        s = vkf_tokenizer_encode(m->tok, text, strlen(text), 0, &bare, &nb);
    pthread_mutex_unlock(&m->tok_lock);
    if (s != VKF_OK) {
        free(ids);
        return vkf_error_prefix(s, "embed: input %d", idx);
    }
    in->ids = ids;
    in->n = (int32_t)n;
    in->cut = 0;
    if (n <= (size_t)lim) return VKF_OK;
    /* ids = prefix + bare + suffix */
    size_t extra = n - nb, pre = 0;
    if (nb > n || extra >= (size_t)lim) {
        free(bare);
        return vkf_error(VKF_ERROR_INTERNAL, "embed: input %d: %zu special tokens leave no room",
                         idx, extra);
    }
    for (size_t k = 0; k <= extra; k++)
        if (memcmp(ids + k, bare, nb * sizeof *bare) == 0) {
            pre = k;
            break;
        }
    size_t keep = (size_t)lim - extra, post = extra - pre;
    memmove(ids + pre + keep, ids + pre + nb, post * sizeof *ids);
    free(bare);
    in->n = lim;
    in->cut = (int32_t)(n - (size_t)lim);
    return VKF_OK;
}

/* ------------------------------------------------------------------ batches */

static int32_t emb_round_n(int32_t len, int32_t lim) {
    int32_t n = len <= 8 ? 8 : (len + 15) / 16 * 16;
    return n < lim ? n : lim;
}

static int32_t emb_round_b(int32_t count, int32_t cap) {
    int32_t b = 1;
    while (b < count)
        b *= 2;
    return b < cap ? b : cap;
}

typedef struct emb_job {
    vkf_session *s;
    const emb_input *in;
    int32_t n_in;
    int pooling;
    vkf_embeddings *e;
    int32_t *ids;   /* [B * n] scratch */
    int32_t *lens;  /* [B] */
    float *out;     /* [rows, d] scratch */
    int32_t pad_id; /* id of the padding rows (never read: masked) */
} emb_job;

/* Runs inputs order[0..count) (lengths descending) as one graph and scatters the vectors. */
static vkf_status emb_batch(emb_job *j, const int32_t *order, int32_t count) {
    vkf_session *s = j->s;
    vkf_model *m = s->m;
    int64_t d = j->e->dim;
    int32_t n = emb_round_n(j->in[order[0]].n, emb_limit(s));
    int32_t B = emb_round_b(count, s->n_batch);
    for (int64_t i = 0; i < (int64_t)B * n; i++)
        j->ids[i] = j->pad_id;
    for (int32_t b = 0; b < B; b++) {
        const emb_input *in = b < count ? &j->in[order[b]] : NULL;
        j->lens[b] = in ? in->n : 1;
        if (in) memcpy(j->ids + (size_t)b * n, in->ids, (size_t)in->n * sizeof *j->ids);
    }
    vkf_sgraph *sg;
    VKF_TRY(vkf_session_graph(s, VKF_SG_EMBED, n, B, j->pooling, &sg));
    VKF_TRY(vkf_tensor_write(m->be, &sg->ids, j->ids));
    VKF_TRY(vkf_tensor_write(m->be, &sg->lens, j->lens));
    VKF_TRY(vkf_session_graph_compute(s, sg));
    VKF_TRY(vkf_tensor_read(m->be, &sg->out, j->out));
    for (int32_t b = 0; b < count; b++) {
        int32_t i = order[b];
        float *dst = j->e->data + (size_t)j->e->first[i] * d;
        if (j->pooling == VKF_POOLING_NONE)
            memcpy(dst, j->out + (size_t)b * n * d, (size_t)j->in[i].n * d * sizeof *dst);
        else
            memcpy(dst, j->out + (size_t)b * d, (size_t)d * sizeof *dst);
    }
    return VKF_OK;
}

typedef struct emb_key {
    int32_t len, idx;
} emb_key;

/* longest first, then input order */
static int emb_cmp(const void *a, const void *b) {
    const emb_key *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void emb_normalize(vkf_embeddings *e) {
    for (int32_t r = 0; r < e->n_vectors; r++) {
        float *v = e->data + (size_t)r * e->dim;
        double ss = 0;
        for (int32_t c = 0; c < e->dim; c++)
            ss += (double)v[c] * v[c];
        double norm = sqrt(ss);
        if (norm < 1e-12) norm = 1e-12; /* torch.nn.functional.normalize's eps */
        for (int32_t c = 0; c < e->dim; c++)
            v[c] = (float)(v[c] / norm);
    }
}

/* The shared body: inputs tokenized and truncated, checked; runs every batch. */
static vkf_status emb_run(vkf_session *s, emb_input *in, int32_t n_in, const vkf_embed_params *p,
                          vkf_embeddings **out) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    int pooling = p && p->pooling != VKF_POOLING_DEFAULT ? (int)p->pooling : hp->pooling;
    int norm = p && p->normalize != VKF_NORMALIZE_DEFAULT ? p->normalize == VKF_NORMALIZE_ON
                                                          : hp->normalize != 0;
    if (pooling == VKF_POOLING_RANK) {
        if (hp->n_cls_out < 1)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "embed: %s has no classifier head (rank pooling needs a "
                             "cross-encoder: GGUF cls.output.weight, HF "
                             "*ForSequenceClassification)",
                             m->path);
        /* scores, not directions: normalized only when asked (llama.cpp never does) */
        norm = p && p->normalize == VKF_NORMALIZE_ON;
    }
    for (int32_t i = 0; i < n_in; i++) {
        char what[48];
        snprintf(what, sizeof what, "embed: input %d", i);
        VKF_TRY(vkf_check_tokens(in[i].ids, in[i].n, hp->n_vocab, what));
    }
    vkf_embeddings *e = calloc(1, sizeof *e);
    if (!e) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "embed: out of host memory");
    e->n_inputs = n_in;
    e->dim = pooling == VKF_POOLING_RANK ? hp->n_cls_out : hp->d_model;
    e->pooling = (vkf_pooling)pooling;
    e->normalized = norm;
    e->n_tokens = calloc((size_t)n_in + 1, sizeof *e->n_tokens);
    e->first = calloc((size_t)n_in + 1, sizeof *e->first);
    e->truncated = calloc((size_t)n_in + 1, sizeof *e->truncated);
    int32_t *order = calloc((size_t)n_in + 1, sizeof *order);
    int64_t rows = 0;
    for (int32_t i = 0; e->n_tokens && e->first && e->truncated && i < n_in; i++) {
        e->n_tokens[i] = in[i].n;
        e->truncated[i] = in[i].cut;
        e->n_truncated += in[i].cut > 0;
        e->total_tokens += in[i].n;
        e->first[i] = (int32_t)rows;
        rows += pooling == VKF_POOLING_NONE ? in[i].n : 1;
    }
    if (rows > INT32_MAX / 2) {
        free(order);
        vkf_embeddings_free(e);
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "embed: %lld vectors are too many",
                         (long long)rows);
    }
    e->n_vectors = (int32_t)rows;
    e->data = malloc(((size_t)rows * (size_t)e->dim + 1) * sizeof *e->data);
    int32_t lim = emb_limit(s);
    int32_t bmax = s->n_batch;
    emb_job j = {.s = s,
                 .in = in,
                 .n_in = n_in,
                 .pooling = pooling,
                 .e = e,
                 .pad_id = hp->pad_id >= 0 ? hp->pad_id : 0};
    j.ids = malloc((size_t)bmax * (size_t)lim * sizeof *j.ids);
    j.lens = malloc((size_t)bmax * sizeof *j.lens);
    j.out = malloc((size_t)bmax * (size_t)lim * (size_t)e->dim * sizeof *j.out);
    vkf_status st = VKF_OK;
    if (!e->n_tokens || !e->first || !e->truncated || !order || !e->data || !j.ids || !j.lens ||
        !j.out)
        st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "embed: out of host memory");
    emb_key *keys = st == VKF_OK ? malloc(((size_t)n_in + 1) * sizeof *keys) : NULL;
    if (st == VKF_OK && !keys) st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "embed: out of host memory");
    if (st == VKF_OK) {
        for (int32_t i = 0; i < n_in; i++)
            keys[i] = (emb_key){in[i].n, i};
        qsort(keys, (size_t)n_in, sizeof *keys, emb_cmp);
        for (int32_t i = 0; i < n_in; i++)
            order[i] = keys[i].idx;
    }
    free(keys);
    vkf_context_lock(m->ctx);
    for (int32_t i0 = 0; i0 < n_in && st == VKF_OK;) {
        int32_t n = emb_round_n(in[order[i0]].n, lim);
        int32_t cap = EMBED_MAX_ROWS / n;
        if (cap > bmax) cap = bmax;
        if (cap < 1) cap = 1;
        /* a batch ends where its padding would more than double the next input's rows */
        int32_t count = 1;
        while (count < cap && i0 + count < n_in &&
               2 * emb_round_n(in[order[i0 + count]].n, lim) >= n)
            count++;
        st = emb_batch(&j, order + i0, count);
        i0 += count;
    }
    vkf_context_unlock(m->ctx);
    free(j.ids);
    free(j.lens);
    free(j.out);
    free(order);
    if (st != VKF_OK) {
        vkf_embeddings_free(e);
        return st;
    }
    if (norm) emb_normalize(e);
    *out = e;
    return VKF_OK;
}

static vkf_status emb_check(vkf_session *s, int32_t n, const vkf_embed_params *p,
                            vkf_embeddings **out, const char *what) {
    if (!s || !out || n < 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: NULL session or output, or n %d < 0",
                         what, n);
    *out = NULL;
    if (s->m->arch != VKF_ARCH_ENCODER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: %s (%s) is not an encoder-only (embedding) model", what, s->m->path,
                         vkf_model_arch_name(s->m));
    if (p &&
        ((unsigned)p->pooling > VKF_POOLING_RANK || (unsigned)p->normalize > VKF_NORMALIZE_OFF))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: pooling %d / normalize %d out of range",
                         what, (int)p->pooling, (int)p->normalize);
    return VKF_OK;
}

vkf_status vkf_embed(vkf_session *s, const char *const *texts, int32_t n_texts,
                     const vkf_embed_params *p, vkf_embeddings **out) {
    VKF_TRY(emb_check(s, n_texts, p, out, "embed"));
    if (n_texts > 0 && !texts) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "embed: NULL texts");
    vkf_model *m = s->m;
    if (!m->tok)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "embed: %s has no tokenizer (give token ids: vkf_embed_tokens)", m->path);
    emb_input *in = calloc((size_t)n_texts + 1, sizeof *in);
    if (!in) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "embed: out of host memory");
    vkf_status st = VKF_OK;
    int32_t lim = emb_limit(s);
    for (int32_t i = 0; i < n_texts && st == VKF_OK; i++) {
        if (!texts[i])
            st = vkf_error(VKF_ERROR_INVALID_ARGUMENT, "embed: input %d is NULL", i);
        else
            st = emb_tokenize(m, texts[i], lim, i, &in[i]);
    }
    for (int32_t i = 0; i < n_texts && st == VKF_OK; i++)
        if (in[i].n == 0) /* a tokenizer that adds no specials, on an empty text */
            st = vkf_error(VKF_ERROR_INVALID_ARGUMENT, "embed: input %d gives no tokens", i);
    if (st == VKF_OK) st = emb_run(s, in, n_texts, p, out);
    for (int32_t i = 0; i < n_texts; i++)
        free(in[i].ids);
    free(in);
    return st;
}

vkf_status vkf_embed_tokens(vkf_session *s, const int32_t *const *tokens, const int32_t *n_tokens,
                            int32_t n_inputs, const vkf_embed_params *p, vkf_embeddings **out) {
    VKF_TRY(emb_check(s, n_inputs, p, out, "embed_tokens"));
    if (n_inputs > 0 && (!tokens || !n_tokens))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "embed_tokens: NULL tokens or lengths");
    emb_input *in = calloc((size_t)n_inputs + 1, sizeof *in);
    if (!in) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "embed: out of host memory");
    int32_t lim = emb_limit(s);
    vkf_status st = VKF_OK;
    for (int32_t i = 0; i < n_inputs && st == VKF_OK; i++) {
        if (n_tokens[i] < 1 || !tokens[i]) {
            st = vkf_error(VKF_ERROR_INVALID_ARGUMENT, "embed_tokens: input %d is empty", i);
            break;
        }
        in[i].ids = (int32_t *)tokens[i]; /* read only */
        in[i].n = n_tokens[i] < lim ? n_tokens[i] : lim;
        in[i].cut = n_tokens[i] - in[i].n;
    }
    if (st == VKF_OK) st = emb_run(s, in, n_inputs, p, out);
    free(in);
    return st;
}
