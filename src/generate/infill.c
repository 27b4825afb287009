/* Fill-in-the-middle prompts: llama-server's format_prompt_infill (llama.cpp 0c1e570,
 * tools/server/server-common.cpp), step for step:
 *
 *   [FIM_REP]myproject\n                       when the vocabulary has a repo token
 *   [FIM_SEP]filename\n  text  (each extra chunk; without a sep token:
 *                               "\n\n--- snippet ---\n\n" text)
 *   [FIM_SEP]filename\n                        when the vocabulary has a sep token
 *   (the last n_extra_take tokens of the above, n_extra_take = max(0, n_ctx - n_batch -
 *    2 n_predict))
 *   [BOS] [FIM_PRE] prefix prompt [FIM_SUF] suffix [FIM_MID]   (BOS where the vocabulary adds
 *    one; with spm the suffix part comes first: [BOS] [FIM_SUF] suffix [FIM_PRE] prefix prompt)
 *
 * The prefix keeps its last 3 (n_batch / 4) tokens, the suffix its first n_batch / 4 - 2 -
 * |prompt|. Every text is tokenized without BOS / EOS and with control-token text kept as
 * text (llama.cpp's parse_special false), except prompt, whose control-token text becomes the
 * token (parse_special true, as llama-server tokenizes it). */
#include "generate/infill.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"

typedef struct ibuf {
    int32_t *v;
    size_t n, cap;
} ibuf;

static int ib_push(ibuf *b, const int32_t *ids, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n)
            cap *= 2;
        int32_t *v = realloc(b->v, cap * sizeof *v);
        if (!v) return 0;
        b->v = v, b->cap = cap;
    }
    if (n) memcpy(b->v + b->n, ids, n * sizeof *ids);
    b->n += n;
    return 1;
}

/* appends the tokens of text (no BOS / EOS) */
static vkf_status ib_text(vkf_tokenizer *tok, ibuf *b, const char *text, int parse_special,
                          const char *what) {
    int32_t *ids = NULL;
    size_t n = 0;
    vkf_status s = vkf_tokenizer_encode_ex(tok, text, strlen(text), 0, parse_special, &ids, &n);
    if (s != VKF_OK) return vkf_error_prefix(s, "infill: %s", what);
    int ok = ib_push(b, ids, n);
    free(ids);
    return ok ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "infill: out of host memory");
}

static int32_t imin(int64_t a, int64_t b) { return (int32_t)(a < b ? a : b); }
static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

vkf_status vkf_infill_tokens(vkf_tokenizer *tok, const vkf_infill_params *p, int32_t n_ctx,
                             int32_t **out, int32_t *n) {
    *out = NULL;
    *n = 0;
    int32_t pre = vkf_tokenizer_fim(tok, VKF_FIM_PRE), suf = vkf_tokenizer_fim(tok, VKF_FIM_SUF),
            mid = vkf_tokenizer_fim(tok, VKF_FIM_MID), rep = vkf_tokenizer_fim(tok, VKF_FIM_REP),
            sep = vkf_tokenizer_fim(tok, VKF_FIM_SEP);
    if (pre < 0 || suf < 0 || mid < 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "infill is not supported by this model: its vocabulary has no FIM "
                         "%s%s%stoken (tokenizer.ggml.fim_pre/suf/mid_token_id, or a token "
                         "spelled <|fim_prefix|>, <fim-prefix>, <PRE>, ...)",
                         pre < 0 ? "prefix " : "", suf < 0 ? "suffix " : "",
                         mid < 0 ? "middle " : "");
    if (p->n_extra < 0 || (p->n_extra > 0 && !p->extra))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "infill: %d extra chunks at %p", p->n_extra,
                         (const void *)p->extra);
    int32_t n_batch = p->n_batch > 0 ? p->n_batch : 2048;
    ibuf extra = {0}, prefix = {0}, suffix = {0}, prompt = {0}, res = {0};
    vkf_status s = VKF_OK;
#define STEP(x)                                                                                    \
    do {                                                                                           \
        if (s == VKF_OK) s = (x);                                                                  \
    } while (0)
#define PUSH(b, ids, k)                                                                            \
    do {                                                                                           \
        if (s == VKF_OK && !ib_push(b, ids, k))                                                    \
            s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "infill: out of host memory");                  \
    } while (0)
    STEP(ib_text(tok, &prefix, p->prefix ? p->prefix : "", 0, "input_prefix"));
    STEP(ib_text(tok, &suffix, p->suffix ? p->suffix : "", 0, "input_suffix"));
    STEP(ib_text(tok, &prompt, p->prompt ? p->prompt : "", 1, "prompt"));
    if (rep >= 0) {
        PUSH(&extra, &rep, 1);
        STEP(ib_text(tok, &extra, "myproject\n", 0, "the project name"));
    }
    for (int32_t i = 0; i < p->n_extra && s == VKF_OK; i++) {
        const vkf_infill_chunk *c = &p->extra[i];
        if (sep >= 0) {
            const char *fn = c->filename ? c->filename : "tmp";
            size_t l = strlen(fn);
            char *line = malloc(l + 2);
            if (!line) {
                s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "infill: out of host memory");
                break;
            }
            memcpy(line, fn, l);
            memcpy(line + l, "\n", 2);
            PUSH(&extra, &sep, 1);
            STEP(ib_text(tok, &extra, line, 0, "input_extra filename"));
            free(line);
        } else {
            STEP(ib_text(tok, &extra, "\n\n--- snippet ---\n\n", 0, "the chunk separator"));
        }
        STEP(ib_text(tok, &extra, c->text ? c->text : "", 0, "input_extra text"));
    }
    if (sep >= 0) {
        PUSH(&extra, &sep, 1);
        STEP(ib_text(tok, &extra, "filename\n", 0, "the file name"));
    }
    if (s == VKF_OK) {
        int32_t n_prefix_take = imin((int64_t)prefix.n, 3 * (n_batch / 4));
        int32_t n_suffix_take =
            imin((int64_t)suffix.n, imax(0, n_batch / 4 - (2 + (int64_t)prompt.n)));
        int32_t n_extra_take =
            imin(imax(0, (int64_t)n_ctx - n_batch - 2 * (int64_t)p->n_predict), (int64_t)extra.n);
        /* the prefix's last tokens, the suffix's first */
        const int32_t *pre_ids = prefix.v + (prefix.n - (size_t)n_prefix_take);
        ibuf part_pre = {0}, part_suf = {0};
        PUSH(&part_pre, &pre, 1);
        PUSH(&part_pre, pre_ids, (size_t)n_prefix_take);
        PUSH(&part_pre, prompt.v, prompt.n);
        PUSH(&part_suf, &suf, 1);
        PUSH(&part_suf, suffix.v, (size_t)n_suffix_take);
        const ibuf *first = p->spm ? &part_suf : &part_pre, *last = p->spm ? &part_pre : &part_suf;
        PUSH(&res, extra.v + (extra.n - (size_t)n_extra_take), (size_t)n_extra_take);
        int32_t bos = vkf_tokenizer_bos(tok);
        if (vkf_tokenizer_add_bos(tok) && bos >= 0) PUSH(&res, &bos, 1);
        PUSH(&res, first->v, first->n);
        PUSH(&res, last->v, last->n);
        PUSH(&res, &mid, 1);
        free(part_pre.v);
        free(part_suf.v);
    }
#undef STEP
#undef PUSH
    free(extra.v);
    free(prefix.v);
    free(suffix.v);
    free(prompt.v);
    if (s != VKF_OK) {
        free(res.v);
        return s;
    }
    *out = res.v;
    *n = (int32_t)res.n;
    return VKF_OK;
}

vkf_status vkf_model_infill(vkf_model *m, const vkf_infill_params *p, int32_t **tokens,
                            int32_t *n) {
    if (!m || !p || !tokens || !n)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "infill: NULL model, parameters or output");
    *tokens = NULL;
    *n = 0;
    if (!m->tok) return vkf_error(VKF_ERROR_UNSUPPORTED, "infill: the model has no tokenizer");
    int32_t n_ctx = p->n_ctx > 0 ? p->n_ctx : m->hp.n_ctx;
    pthread_mutex_lock(&m->tok_lock);
    vkf_status s = vkf_infill_tokens(m->tok, p, n_ctx, tokens, n);
    pthread_mutex_unlock(&m->tok_lock);
    return s;
}
