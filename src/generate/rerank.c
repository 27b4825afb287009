/* Reranking (vkf_rerank, vkformer.h): query-document pairs through a cross-encoder's rank
 * pooling (vkf_embed_tokens with VKF_POOLING_RANK). The pair's tokens are llama-server's
 * format_prompt_rerank (tools/server/server-common.cpp of llama.cpp 0c1e570) for a model
 * without a "rerank" chat template:
 *   [BOS if add_bos] query [EOS if add_eos] [SEP if add_sep] document [EOS if add_eos]
 * with llama.cpp's vocabulary flags: a WordPiece (BERT) vocabulary adds BOS = [CLS] and
 * SEP = [SEP] but no EOS; others add BOS / EOS as their add_bos / add_eos say, and a t5 (UGM)
 * GGUF vocabulary SEP when its add_sep_token says (an XLM-RoBERTa cross-encoder as llama.cpp's
 * converter writes it: <s> query </s> </s> document </s>). The
 * texts are tokenized without specials and with control-token text kept as text. A Hugging Face
 * directory gets the same layout, so a model scores the same from either file: that is not
 * transformers' own pair ([CLS] query [SEP] document [SEP], the document's token type 1); like
 * llama.cpp, every token has type 0. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "vkformer.h"

static vkf_status rr_encode(vkf_tokenizer *tok, const char *text, int32_t **ids, size_t *n) {
    return vkf_tokenizer_encode_ex(tok, text, strlen(text), 0, 0, ids, n);
}

vkf_status vkf_rerank(vkf_session *s, const char *query, const char *const *docs, int32_t n_docs,
                      float *scores, int32_t *n_tokens) {
    if (!s || !query || n_docs < 0 || (n_docs > 0 && (!docs || !scores)))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "rerank: NULL session, query, documents or scores, or %d documents",
                         n_docs);
    vkf_model *m = s->m;
    if (m->arch != VKF_ARCH_ENCODER || m->hp.n_cls_out < 1)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "rerank: %s has no classifier head: reranking needs a cross-encoder (a "
                         "GGUF with pooling_type 4 / cls.output.weight, or a Hugging Face "
                         "*ForSequenceClassification directory)",
                         m->path);
    if (!m->tok) return vkf_error(VKF_ERROR_UNSUPPORTED, "rerank: %s has no tokenizer", m->path);
    for (int32_t i = 0; i < n_docs; i++)
        if (!docs[i])
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "rerank: document %d is NULL", i);
    if (n_docs == 0) return VKF_OK;
    vkf_tokenizer *tok = m->tok;
    /* WordPiece: a GGUF's (llama.cpp's "bert") or a Hugging Face directory's vocab.txt /
     * tokenizer.json (the same pair layout for the same model) */
    const char *kind = vkf_tokenizer_kind(tok);
    int wpm = !strcmp(kind, "bert") || !strcmp(kind, "hf-wordpiece");
    int32_t bos = vkf_tokenizer_bos(tok), eos = vkf_tokenizer_eos(tok);
    int add_bos = vkf_tokenizer_add_bos(tok) && bos >= 0;
    int add_eos = !wpm && vkf_tokenizer_add_eos(tok) && eos >= 0;
    /* WordPiece: llama.cpp's sep is [SEP] (our eos id); a t5 (UGM) vocabulary: its
     * seperator_token_id when add_sep_token is set (XLM-RoBERTa's </s>) */
    int32_t sep = wpm ? eos : vkf_tokenizer_sep(tok);
    int add_sep = (wpm || vkf_tokenizer_add_sep(tok)) && sep >= 0;
    int32_t **pairs = calloc((size_t)n_docs, sizeof *pairs);
    int32_t *lens = calloc((size_t)n_docs, sizeof *lens);
    int32_t *q = NULL;
    size_t nq = 0;
    vkf_status st =
        pairs && lens ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "rerank: out of host memory");
    pthread_mutex_lock(&m->tok_lock);
    if (st == VKF_OK) st = rr_encode(tok, query, &q, &nq);
    for (int32_t i = 0; i < n_docs && st == VKF_OK; i++) {
        int32_t *d = NULL;
        size_t nd = 0;
        st = rr_encode(tok, docs[i], &d, &nd);
        if (st != VKF_OK) break;
        int32_t *p = malloc((nq + nd + 4) * sizeof *p);
        if (!p) {
            free(d);
            st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "rerank: out of host memory");
            break;
        }
        int32_t k = 0;
        if (add_bos) p[k++] = bos;
        memcpy(p + k, q, nq * sizeof *p);
        k += (int32_t)nq;
        if (add_eos) p[k++] = eos;
        if (add_sep) p[k++] = sep;
        memcpy(p + k, d, nd * sizeof *p);
        k += (int32_t)nd;
        if (add_eos) p[k++] = eos;
        free(d);
        pairs[i] = p;
        lens[i] = k;
        if (k == 0) st = vkf_error(VKF_ERROR_INVALID_ARGUMENT, "rerank: document %d: no tokens", i);
    }
    pthread_mutex_unlock(&m->tok_lock);
    vkf_embeddings *e = NULL;
    vkf_embed_params ep = {.pooling = VKF_POOLING_RANK};
    if (st == VKF_OK)
        st = vkf_embed_tokens(s, (const int32_t *const *)pairs, lens, n_docs, &ep, &e);
    if (st == VKF_OK) {
        for (int32_t i = 0; i < n_docs; i++) {
            scores[i] = e->data[(size_t)e->first[i] * (size_t)e->dim];
            if (n_tokens) n_tokens[i] = e->n_tokens[i];
        }
    }
    vkf_embeddings_free(e);
    for (int32_t i = 0; pairs && i < n_docs; i++)
        free(pairs[i]);
    free(pairs);
    free(lens);
    free(q);
    return st;
}
