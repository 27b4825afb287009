/* Loader for GGUF files (llama.cpp's format): architectures "llama" and "gpt2".
 *
 * ggml stores a weight with ne = [in, out]: ne[0] is the row length, so row i is output feature
 * i: exactly the [out, in] layout the MATMUL op wants, with no transpose. Matrices keep their
 * stored type (F32, F16, BF16, Q8_0, Q4_0); 1-D tensors (norms, biases) become F32. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "graph/ops.h"
#include "io/gguf.h"
#include "io/tokenizer.h"
#include "model/model.h"

typedef struct gg_ctx {
    vkf_model *m;
    const vkf_gguf *g;
    const char *arch; /* key prefix: "llama" or "gpt2" */
} gg_ctx;

/* Loads `name`: MATRIX ne [ne0 = in, ne1 = out] -> [out, in]; VECTOR ne [ne0]. An absent
 * optional tensor leaves t empty. */
static vkf_status gg_get(gg_ctx *c, vkf_tensor *t, const char *name, vkf_wkind kind, int64_t ne0,
                         int64_t ne1, int optional) {
    if (optional && !vkf_gguf_find_tensor(c->g, name)) {
        memset(t, 0, sizeof *t);
        return VKF_OK;
    }
    const vkf_gguf_tensor *s;
    int64_t ne[2] = {ne0, ne1};
    int nd = kind == VKF_W_VECTOR ? 1 : 2;
    VKF_TRY(vkf_gguf_get_tensor(c->g, name, -1, nd, ne, &s));
    if (kind == VKF_W_VECTOR) return vkf_model_upload(c->m, t, name, kind, s->dtype, 1, ne0, s->data);
    return vkf_model_upload(c->m, t, name, kind, s->dtype, ne1, ne0, s->data);
}

static vkf_status gg_key_u32(gg_ctx *c, const char *key, int64_t def, int32_t *out) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", c->arch, key);
    uint32_t v;
    if (def < 0)
        VKF_TRY(vkf_gguf_require_u32(c->g, full, &v));
    else
        VKF_TRY(vkf_gguf_get_u32(c->g, full, (uint32_t)def, &v));
    if (v > INT32_MAX) return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: %u is out of range", c->m->path, full, v);
    *out = (int32_t)v;
    return VKF_OK;
}

static vkf_status gg_key_f32(gg_ctx *c, const char *key, float def, int required, float *out) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", c->arch, key);
    if (required) return vkf_gguf_require_f32(c->g, full, out);
    return vkf_gguf_get_f32(c->g, full, def, out);
}

/* ------------------------------------------------------------------ hyperparameters */

static vkf_status gg_hparams(gg_ctx *c) {
    vkf_hparams *hp = &c->m->hp;
    const char *path = c->m->path;
    VKF_TRY(gg_key_u32(c, "block_count", -1, &hp->n_layer));
    VKF_TRY(gg_key_u32(c, "embedding_length", -1, &hp->d_model));
    VKF_TRY(gg_key_u32(c, "attention.head_count", -1, &hp->n_head));
    VKF_TRY(gg_key_u32(c, "attention.head_count_kv", hp->n_head, &hp->n_kv_head));
    VKF_TRY(gg_key_u32(c, "feed_forward_length", -1, &hp->n_ff));
    VKF_TRY(gg_key_u32(c, "context_length", -1, &hp->n_ctx));
    if (hp->n_layer <= 0 || hp->d_model <= 0 || hp->n_head <= 0 || hp->n_kv_head <= 0 || hp->n_ff <= 0 || hp->n_ctx <= 0)
        return vkf_error(VKF_ERROR_FORMAT, "%s: block_count, embedding_length, head counts, feed_forward_length and context_length must be > 0", path);
    if (hp->d_model % hp->n_head || hp->n_head % hp->n_kv_head)
        return vkf_error(VKF_ERROR_FORMAT, "%s: %d heads / %d KV heads do not divide embedding_length %d", path,
                         hp->n_head, hp->n_kv_head, hp->d_model);
    /* every layer has several tensors: a corrupt count would size the layer table first */
    if ((size_t)hp->n_layer > vkf_gguf_tensor_count(c->g))
        return vkf_error(VKF_ERROR_FORMAT, "%s: block_count %d exceeds the %zu tensors in the file", path, hp->n_layer,
                         vkf_gguf_tensor_count(c->g));
    if (hp->n_ctx > VKF_MODEL_MAX_CTX)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: context_length %d exceeds the %d tokens this engine supports", path,
                         hp->n_ctx, VKF_MODEL_MAX_CTX);
    hp->head_dim = hp->d_model / hp->n_head;
    VKF_TRY(gg_key_u32(c, "attention.key_length", hp->head_dim, &hp->head_dim));
    if (hp->head_dim <= 0 || hp->head_dim > VKF_MAX_HEAD_DIM)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: head dimension %d outside [1, %d]", path, hp->head_dim, VKF_MAX_HEAD_DIM);
    hp->attn_scale = (float)(1.0 / sqrt((double)hp->head_dim));
    if (c->m->arch == VKF_ARCH_LLAMA) {
        VKF_TRY(gg_key_f32(c, "attention.layer_norm_rms_epsilon", 0, 1, &hp->eps));
        float base;
        VKF_TRY(gg_key_f32(c, "rope.freq_base", 10000.0f, 0, &base));
        hp->rope_base = base;
        VKF_TRY(gg_key_u32(c, "rope.dimension_count", hp->head_dim, &hp->n_rot));
        if (hp->n_rot <= 0 || hp->n_rot % 2 || hp->n_rot > hp->head_dim)
            return vkf_error(VKF_ERROR_FORMAT, "%s: rope.dimension_count %d must be even and <= head dimension %d", path,
                             hp->n_rot, hp->head_dim);
        /* rope scaling keys (linear/yarn) are for context extension beyond training; this
         * engine runs models at their trained context and does not read them. */
    } else {
        VKF_TRY(gg_key_f32(c, "attention.layer_norm_epsilon", 0, 1, &hp->eps));
        hp->act = VKF_UNARY_GELU_TANH; /* llama.cpp's gpt2 graph uses ggml_gelu: the tanh form */
    }
    if (!(hp->eps > 0)) return vkf_error(VKF_ERROR_FORMAT, "%s: norm epsilon %g must be > 0", path, hp->eps);

    /* special tokens; llama.cpp adds BOS by default for SentencePiece ("llama") vocabularies */
    uint32_t bos, eos;
    VKF_TRY(vkf_gguf_get_u32(c->g, "tokenizer.ggml.bos_token_id", UINT32_MAX, &bos));
    VKF_TRY(vkf_gguf_get_u32(c->g, "tokenizer.ggml.eos_token_id", UINT32_MAX, &eos));
    hp->bos_id = bos == UINT32_MAX ? -1 : (int32_t)bos;
    hp->eos_id = eos == UINT32_MAX ? -1 : (int32_t)eos;
    hp->pad_id = -1;
    const char *tm;
    VKF_TRY(vkf_gguf_get_str(c->g, "tokenizer.ggml.model", "", &tm));
    int add_bos;
    VKF_TRY(vkf_gguf_get_bool(c->g, "tokenizer.ggml.add_bos_token", strcmp(tm, "llama") == 0, &add_bos));
    hp->add_bos = add_bos && hp->bos_id >= 0;
    return VKF_OK;
}

/* ------------------------------------------------------------------ weights */

static vkf_status gg_llama_layer(gg_ctx *c, int l) {
    vkf_hparams *hp = &c->m->hp;
    vkf_layer_w *L = &c->m->w.dec[l];
    int64_t d = hp->d_model, q = (int64_t)hp->n_head * hp->head_dim, kv = (int64_t)hp->n_kv_head * hp->head_dim;
    char n[128];
#define GG(field, suffix, kind, a, b, opt)                                                         \
    do {                                                                                           \
        snprintf(n, sizeof n, "blk.%d.%s", l, suffix);                                             \
        VKF_TRY(gg_get(c, &L->field, n, kind, a, b, opt));                                         \
    } while (0)
    GG(norm1_w, "attn_norm.weight", VKF_W_VECTOR, d, 0, 0);
    GG(self.wq, "attn_q.weight", VKF_W_MATRIX, d, q, 0);
    GG(self.wk, "attn_k.weight", VKF_W_MATRIX, d, kv, 0);
    GG(self.wv, "attn_v.weight", VKF_W_MATRIX, d, kv, 0);
    GG(self.bq, "attn_q.bias", VKF_W_VECTOR, q, 0, 1);
    GG(self.bk, "attn_k.bias", VKF_W_VECTOR, kv, 0, 1);
    GG(self.bv, "attn_v.bias", VKF_W_VECTOR, kv, 0, 1);
    GG(self.wo, "attn_output.weight", VKF_W_MATRIX, q, d, 0);
    GG(self.bo, "attn_output.bias", VKF_W_VECTOR, d, 0, 1);
    GG(norm2_w, "ffn_norm.weight", VKF_W_VECTOR, d, 0, 0);
    GG(w_gate, "ffn_gate.weight", VKF_W_MATRIX, d, hp->n_ff, 0);
    GG(w_up, "ffn_up.weight", VKF_W_MATRIX, d, hp->n_ff, 0);
    GG(w_down, "ffn_down.weight", VKF_W_MATRIX, hp->n_ff, d, 0);
    return VKF_OK;
}

static vkf_status gg_gpt2_layer(gg_ctx *c, int l) {
    vkf_hparams *hp = &c->m->hp;
    vkf_layer_w *L = &c->m->w.dec[l];
    int64_t d = hp->d_model, qkv = (int64_t)(hp->n_head + 2 * hp->n_kv_head) * hp->head_dim;
    char n[128];
    GG(norm1_w, "attn_norm.weight", VKF_W_VECTOR, d, 0, 0);
    GG(norm1_b, "attn_norm.bias", VKF_W_VECTOR, d, 0, 0);
    GG(self.wqkv, "attn_qkv.weight", VKF_W_MATRIX, d, qkv, 0);
    GG(self.bqkv, "attn_qkv.bias", VKF_W_VECTOR, qkv, 0, 0);
    GG(self.wo, "attn_output.weight", VKF_W_MATRIX, (int64_t)hp->n_head * hp->head_dim, d, 0);
    GG(self.bo, "attn_output.bias", VKF_W_VECTOR, d, 0, 0);
    GG(norm2_w, "ffn_norm.weight", VKF_W_VECTOR, d, 0, 0);
    GG(norm2_b, "ffn_norm.bias", VKF_W_VECTOR, d, 0, 0);
    GG(w_up, "ffn_up.weight", VKF_W_MATRIX, d, hp->n_ff, 0);
    GG(b_up, "ffn_up.bias", VKF_W_VECTOR, hp->n_ff, 0, 0);
    GG(w_down, "ffn_down.weight", VKF_W_MATRIX, hp->n_ff, d, 0);
    GG(b_down, "ffn_down.bias", VKF_W_VECTOR, d, 0, 0);
#undef GG
    return VKF_OK;
}

static vkf_status gg_weights(gg_ctx *c) {
    vkf_model *m = c->m;
    vkf_hparams *hp = &m->hp;
    int64_t d = hp->d_model;
    const vkf_gguf_tensor *te;
    int64_t ne[2] = {d, -1};
    VKF_TRY(vkf_gguf_get_tensor(c->g, "token_embd.weight", -1, 2, ne, &te));
    if (te->rows > INT32_MAX) return vkf_error(VKF_ERROR_FORMAT, "%s: token_embd.weight has %lld rows", m->path, (long long)te->rows);
    hp->n_vocab = hp->n_src_vocab = (int32_t)te->rows;
    VKF_TRY(gg_get(c, &m->w.tok_embd, "token_embd.weight", VKF_W_MATRIX, d, hp->n_vocab, 0));
    if (m->arch == VKF_ARCH_GPT2) {
        const vkf_gguf_tensor *pe;
        int64_t pne[2] = {d, hp->n_ctx};
        VKF_TRY(vkf_gguf_get_tensor(c->g, "position_embd.weight", -1, 2, pne, &pe));
        /* ADD_POS reads an F32 table: converted as a vector, then viewed as [n_ctx, d] */
        VKF_TRY(vkf_model_upload(m, &m->w.pos_embd, "position_embd.weight", VKF_W_VECTOR, pe->dtype, hp->n_ctx, d, pe->data));
        m->w.pos_embd.rows = hp->n_ctx;
        m->w.pos_embd.cols = m->w.pos_embd.row_stride = d;
    }
    m->w.dec = calloc((size_t)hp->n_layer, sizeof *m->w.dec);
    if (!m->w.dec) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
    for (int l = 0; l < hp->n_layer; l++) {
        if (m->arch == VKF_ARCH_LLAMA)
            VKF_TRY(gg_llama_layer(c, l));
        else
            VKF_TRY(gg_gpt2_layer(c, l));
    }
    m->wtype = m->arch == VKF_ARCH_LLAMA ? m->w.dec[0].self.wq.dtype : m->w.dec[0].self.wqkv.dtype;
    VKF_TRY(gg_get(c, &m->w.out_norm_w, "output_norm.weight", VKF_W_VECTOR, d, 0, 0));
    if (m->arch == VKF_ARCH_GPT2) VKF_TRY(gg_get(c, &m->w.out_norm_b, "output_norm.bias", VKF_W_VECTOR, d, 0, 0));
    if (vkf_gguf_find_tensor(c->g, "output.weight"))
        VKF_TRY(gg_get(c, &m->w.output, "output.weight", VKF_W_MATRIX, d, hp->n_vocab, 0));
    else
        m->w.output = m->w.tok_embd; /* tied embeddings */

    if (m->arch == VKF_ARCH_LLAMA) { /* the rotation table, in double on the host, for every position asked for */
        vkf_model_extend_ctx(m);
        float *rt = malloc((size_t)hp->n_ctx * (size_t)hp->n_rot * sizeof *rt);
        if (!rt) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
        vkf_rope_table(rt, hp->n_ctx, hp->n_rot, hp->rope_base);
        vkf_status s = vkf_model_upload_table(m, &m->w.rope, "rope_table", hp->n_ctx, hp->n_rot, rt);
        free(rt);
        VKF_TRY(s);
    }
    return VKF_OK;
}

vkf_status vkf_load_gguf(vkf_model *m, const char *path) {
    vkf_gguf *g;
    /* the model keeps the file's memory: its weights may be used in place (model/weights.c) */
    VKF_TRY(vkf_model_open_file(m, path));
    VKF_TRY(vkf_gguf_open_memory(m->file.data, m->file.size, path, &g));
    gg_ctx c = {m, g, vkf_gguf_architecture(g)};
    vkf_status s = VKF_OK;
    if (!c.arch)
        s = vkf_error(VKF_ERROR_FORMAT, "%s: missing key general.architecture", path);
    else if (strcmp(c.arch, "llama") == 0)
        m->arch = VKF_ARCH_LLAMA;
    else if (strcmp(c.arch, "gpt2") == 0)
        m->arch = VKF_ARCH_GPT2;
    else
        s = vkf_error(VKF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (llama, gpt2)", path, c.arch);
    snprintf(m->format, sizeof m->format, "gguf");
    /* the tensor data must fit the device: refused before the first upload */
    if (s == VKF_OK)
        s = vkf_memory_check_fit(m, m->file.size - vkf_gguf_data_offset(g), "the weight data",
                                 "use a smaller or more quantized model");
    if (s == VKF_OK) s = gg_hparams(&c);
    if (s == VKF_OK) s = gg_weights(&c);
    /* a special id past the embedding rows would fail every prompt that uses it: reject the file */
    if (s == VKF_OK && (m->hp.bos_id >= m->hp.n_vocab || m->hp.eos_id >= m->hp.n_vocab))
        s = vkf_error(VKF_ERROR_FORMAT, "%s: tokenizer.ggml.bos_token_id %d / eos_token_id %d outside the vocabulary [0, %d)", path,
                      m->hp.bos_id, m->hp.eos_id, m->hp.n_vocab);
    if (s == VKF_OK && vkf_gguf_find(g, "tokenizer.ggml.tokens")) s = vkf_tokenizer_from_gguf(g, &m->tok);
    if (s == VKF_OK && m->tok && vkf_tokenizer_n_vocab(m->tok) > m->hp.n_vocab)
        s = vkf_error(VKF_ERROR_FORMAT, "%s: the tokenizer has %d tokens, token_embd.weight only %d rows", path,
                      vkf_tokenizer_n_vocab(m->tok), m->hp.n_vocab);
    vkf_gguf_close(g);
    return s;
}
