/* The GGUF keys of an encoder-only HF directory (bert) as llama.cpp's convert_hf_to_gguf.py
 * writes them (its BertModel class): the bert.* hyperparameters, attention.causal = false,
 * pooling_type from sentence-transformers' modules (the loader's reading,
 * model/load_hf_encoder.c), and the WordPiece vocabulary in llama.cpp's "phantom space" form:
 * a word-initial token gets U+2581 in front, a "##" continuation loses its "##", control tokens
 * stay as they are; the [UNK] / [SEP] / [PAD] / [CLS] / [MASK] ids. The tensors are written by
 * quantize_hf_llama.c from the descriptor's GGUF names, like every architecture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/gguf_write.h"
#include "model/model.h"
#include "quantize/quantize.h"
#include "tokenizer/tokenizer.h"

static vkf_status bert_vocab(vkf_gguf_writer *w, const vkf_model *m) {
    const vkf_tokenizer *t = m->tok;
    int64_t n = m->hp.n_vocab;
    char **tok = calloc((size_t)n, sizeof *tok);
    int32_t *type = calloc((size_t)n, sizeof *type);
    vkf_status s = tok && type ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < n && s == VKF_OK; i++) {
        const char *p =
            i < vkf_tokenizer_n_vocab(t) ? vkf_tokenizer_token_text(t, (int32_t)i) : NULL;
        int ty = p ? vkf_tokenizer_token_type(t, (int32_t)i) : VKF_TOKEN_UNUSED;
        char buf[64];
        if (!p || !p[0]) { /* an id the tokenizer does not have: the converter's filler */
            ty = VKF_TOKEN_UNUSED;
            snprintf(buf, sizeof buf, "[PAD%lld]", (long long)i);
            p = buf;
        }
        size_t len = strlen(p);
        tok[i] = malloc(len + 4);
        if (!tok[i]) {
            s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        if (ty == VKF_TOKEN_CONTROL || ty == VKF_TOKEN_UNUSED)
            memcpy(tok[i], p, len + 1);
        else if (len >= 2 && p[0] == '#' && p[1] == '#')
            memcpy(tok[i], p + 2, len - 1);
        else
            snprintf(tok[i], len + 4, "\xe2\x96\x81%s", p);
        type[i] = ty == VKF_TOKEN_CONTROL  ? VKF_TOKEN_CONTROL
                  : ty == VKF_TOKEN_UNUSED ? VKF_TOKEN_UNUSED
                                           : VKF_TOKEN_NORMAL;
    }
    if (s == VKF_OK) s = vkf_gguf_writer_set_str(w, "tokenizer.ggml.model", "bert");
    if (s == VKF_OK) s = vkf_gguf_writer_set_str(w, "tokenizer.ggml.pre", "bert-bge");
    if (s == VKF_OK)
        s = vkf_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok, NULL,
                                        (uint64_t)n);
    if (s == VKF_OK)
        s = vkf_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", type, (uint64_t)n);
    static const struct {
        const char *key, *text;
    } ids[] = {{"tokenizer.ggml.unknown_token_id", "[UNK]"},
               {"tokenizer.ggml.seperator_token_id", "[SEP]"},
               {"tokenizer.ggml.padding_token_id", "[PAD]"},
               {"tokenizer.ggml.cls_token_id", "[CLS]"},
               {"tokenizer.ggml.mask_token_id", "[MASK]"}};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0] && s == VKF_OK; k++) {
        int32_t id = vkf_tokenizer_find(t, ids[k].text, strlen(ids[k].text));
        if (k == 0 && id < 0) id = vkf_tokenizer_unk(t);
        if (k == 1 && id < 0) id = vkf_tokenizer_eos(t);
        if (k == 2 && id < 0) id = vkf_tokenizer_pad(t);
        if (k == 3 && id < 0) id = vkf_tokenizer_bos(t);
        if (id >= 0) s = vkf_gguf_writer_set_u32(w, ids[k].key, (uint32_t)id);
    }
    for (int64_t i = 0; tok && i < n; i++)
        free(tok[i]);
    free(tok);
    free(type);
    return s;
}

vkf_status vkf_hf_encoder_keys(vkf_gguf_writer *w, const vkf_model *m, const char *dir) {
    const vkf_hparams *hp = &m->hp;
    const char *a = m->desc->name;
    char key[128];
#define KEY(k) (snprintf(key, sizeof key, "%s.%s", a, k), key)
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    VKF_TRY(vkf_gguf_writer_set_str(w, "general.architecture", a));
    VKF_TRY(vkf_gguf_writer_set_str(w, "general.name", base));
    VKF_TRY(vkf_gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)hp->n_layer));
    VKF_TRY(vkf_gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)hp->n_ctx_train));
    VKF_TRY(vkf_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)hp->d_model));
    VKF_TRY(vkf_gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)hp->n_ff));
    VKF_TRY(vkf_gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)hp->n_head));
    VKF_TRY(vkf_gguf_writer_set_f32(w, KEY("attention.layer_norm_epsilon"), hp->eps));
    VKF_TRY(vkf_gguf_writer_set_u32(w, "general.file_type", 0));
    VKF_TRY(vkf_gguf_writer_set_bool(w, KEY("attention.causal"), 0));
    /* llama.cpp's pooling numbers: 0 none, 1 mean, 2 cls, 3 last, 4 rank */
    uint32_t pt = hp->pooling == VKF_POOLING_MEAN   ? 1
                  : hp->pooling == VKF_POOLING_CLS  ? 2
                  : hp->pooling == VKF_POOLING_LAST ? 3
                  : hp->pooling == VKF_POOLING_RANK ? 4
                                                    : 0;
    VKF_TRY(vkf_gguf_writer_set_u32(w, KEY("pooling_type"), pt));
#undef KEY
    VKF_TRY(vkf_gguf_writer_set_u32(w, "tokenizer.ggml.token_type_count",
                                    (uint32_t)(hp->n_types > 0 ? hp->n_types : 1)));
    if (!m->tok)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: no tokenizer.json or vocab.txt to write as the GGUF's vocabulary",
                         dir);
    return bert_vocab(w, m);
}
