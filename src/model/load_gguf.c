/* Loader for GGUF files (llama.cpp's format): every decoder architecture of model/arch/, read
 * through its descriptor (tensor names, keys under the "{arch}." prefix, switches).
 *
 * ggml stores a weight with ne = [in, out]: ne[0] is the row length, so row i is output feature
 * i: exactly the [out, in] layout the MATMUL op wants, with no transpose. Matrices keep their
 * stored type (any weight type of src/core/wtype.c); 1-D tensors (norms, biases) become F32. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "graph/ops.h"
#include "io/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

typedef struct gg_ctx {
    vkf_model *m;
    const vkf_gguf *g;
    const char *arch; /* key prefix: the architecture name */
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
    if (kind == VKF_W_VECTOR)
        return vkf_model_upload(c->m, t, name, kind, s->dtype, 1, ne0, s->data);
    return vkf_model_upload(c->m, t, name, kind, s->dtype, ne1, ne0, s->data);
}

static vkf_status gg_key_u32(gg_ctx *c, const char *key, int64_t def, int32_t *out) {
    *out = 0; /* written on every path: callers index tables with it after VKF_TRY */
    char full[128];
    snprintf(full, sizeof full, "%s.%s", c->arch, key);
    uint32_t v;
    if (def < 0)
        VKF_TRY(vkf_gguf_require_u32(c->g, full, &v));
    else
        VKF_TRY(vkf_gguf_get_u32(c->g, full, (uint32_t)def, &v));
    if (v > INT32_MAX)
        return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: %u is out of range", c->m->path, full, v);
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

/* RoPE: base, dimensions, linear scaling, LongRoPE attention factor and original context, the
 * sliding-window layers' base; YaRN (gpt-oss) with its factor and betas. Other scalings are
 * refused (not implemented). */
static vkf_status gg_rope_keys(gg_ctx *c) {
    vkf_hparams *hp = &c->m->hp;
    const char *path = c->m->path;
    float base, base_swa, factor, attn_factor;
    VKF_TRY(gg_key_f32(c, "rope.freq_base", 10000.0f, 0, &base));
    /* absent: 10000, llama.cpp's default (hparams.rope_freq_base_train_swa) and transformers'
     * (Gemma3TextConfig.rope_local_base_freq); files converted before the key existed lack it */
    VKF_TRY(gg_key_f32(c, "rope.freq_base_swa", 10000.0f, 0, &base_swa));
    hp->rope_base = base;
    hp->rope_base_swa = base_swa;
    VKF_TRY(gg_key_u32(c, "rope.dimension_count", hp->head_dim, &hp->n_rot));
    if (hp->n_rot <= 0 || hp->n_rot % 2 || hp->n_rot > hp->head_dim)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: rope.dimension_count %d must be even and <= head dimension %d", path,
                         hp->n_rot, hp->head_dim);
    char full[128];
    snprintf(full, sizeof full, "%s.rope.scaling.type", c->arch);
    const char *type;
    VKF_TRY(vkf_gguf_get_str(c->g, full, "none", &type));
    VKF_TRY(gg_key_f32(c, "rope.scaling.factor", 0.0f, 0, &factor));
    hp->rope_scale = 1.0;
    if (strcmp(type, "linear") == 0 && factor > 0) {
        hp->rope_scale = 1.0 / factor; /* positions divided by the factor */
    } else if (strcmp(type, "yarn") == 0) {
        if (!(factor > 0))
            return vkf_error(VKF_ERROR_FORMAT, "%s: %s.rope.scaling.factor %g must be > 0 (yarn)",
                             path, c->arch, factor);
        hp->rope_yarn = 1;
        hp->yarn_factor = factor;
        hp->rope_scale = 1.0 / factor;
        /* llama.cpp's defaults; it reads rope.scaling.yarn_beta_* for grok and mistral3 only */
        hp->yarn_beta_fast = 32.0f;
        hp->yarn_beta_slow = 1.0f;
    } else if (strcmp(type, "none") != 0 && strcmp(type, "linear") != 0 &&
               strcmp(type, "longrope") != 0) {
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s \"%s\" is not supported (none, linear, longrope, yarn)", path,
                         full, type);
    }
    VKF_TRY(gg_key_f32(c, "rope.scaling.attn_factor", 1.0f, 0, &attn_factor));
    if (!(attn_factor > 0))
        return vkf_error(VKF_ERROR_FORMAT, "%s: rope.scaling.attn_factor %g must be > 0", path,
                         attn_factor);
    hp->rope_attn_factor = attn_factor;
    VKF_TRY(gg_key_u32(c, "rope.scaling.original_context_length", 0, &hp->n_ctx_orig));
    return VKF_OK;
}

/* Encoder-only: the pooling (llama.cpp's {arch}.pooling_type: 0 none, 1 mean, 2 cls, 3 last,
 * 4 rank (the classifier head: gg_cls_head);
 * absent: mean, sentence-transformers' default), L2 normalization on (llama-embedding's and
 * llama-server's default: a GGUF does not say), token types from token_types.weight. */
static vkf_status gg_encoder_keys(gg_ctx *c) {
    vkf_hparams *hp = &c->m->hp;
    int32_t pt;
    VKF_TRY(gg_key_u32(c, "pooling_type", 1, &pt));
    static const int32_t map[5] = {VKF_POOLING_NONE, VKF_POOLING_MEAN, VKF_POOLING_CLS,
                                   VKF_POOLING_LAST, VKF_POOLING_RANK};
    if (pt > 4)
        return vkf_error(
            VKF_ERROR_UNSUPPORTED,
            "%s: %s.pooling_type %d is not supported (0 none, 1 mean, 2 cls, 3 last, 4 rank)",
            c->m->path, c->arch, pt);
    hp->pooling = map[pt];
    hp->normalize = hp->pooling != VKF_POOLING_RANK; /* scores are not normalized */
    hp->n_seq_max = hp->n_ctx_train;
    vkf_arch_tensor_names names;
    vkf_arch_tensor_names_get(c->m->desc, VKF_ARCH_GGUF, &names);
    const char *tn = names.name[VKF_T_TOKEN_TYPES];
    const vkf_gguf_tensor *tt = tn ? vkf_gguf_find_tensor(c->g, tn) : NULL;
    if (tt && (tt->rows < 1 || tt->rows > 1024))
        return vkf_error(VKF_ERROR_FORMAT, "%s: %s has %lld rows (token types)", c->m->path, tn,
                         (long long)tt->rows);
    hp->n_types = tt ? (int32_t)tt->rows : 0;
    return VKF_OK;
}

/* Mixture of experts: {arch}.expert_count (required for VKF_MOE_ALWAYS, else 0: a dense FFN),
 * expert_used_count, expert_feed_forward_length, expert_shared_feed_forward_length,
 * expert_weights_scale, expert_gating_func (absent: softmax, what llama.cpp's graphs of these
 * architectures use). */
static vkf_status gg_moe_keys(gg_ctx *c) {
    vkf_hparams *hp = &c->m->hp;
    const vkf_arch_desc *a = c->m->desc;
    const char *path = c->m->path;
    if (a->moe == VKF_MOE_NONE) return VKF_OK;
    VKF_TRY(gg_key_u32(c, "expert_count", a->moe == VKF_MOE_ALWAYS ? -1 : 0, &hp->n_expert));
    if (hp->n_expert == 0) {
        if (a->moe == VKF_MOE_ALWAYS)
            return vkf_error(VKF_ERROR_FORMAT, "%s: %s.expert_count is 0 (%s routes every layer)",
                             path, c->arch, c->arch);
        return VKF_OK;
    }
    VKF_TRY(gg_key_u32(c, "expert_used_count", -1, &hp->n_expert_used));
    if (hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: %s.expert_used_count %d must be in [1, %s.expert_count = %d]", path,
                         c->arch, hp->n_expert_used, c->arch, hp->n_expert);
    VKF_TRY(gg_key_u32(c, "expert_feed_forward_length",
                       a->moe_ff_per_k ? hp->n_ff / hp->n_expert_used : hp->n_ff, &hp->n_ff_exp));
    VKF_TRY(gg_key_u32(c, "expert_shared_feed_forward_length", hp->n_ff, &hp->n_ff_shexp));
    if (hp->n_ff_exp <= 0 || hp->n_ff_shexp <= 0)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: %s.expert_feed_forward_length %d and "
                         "expert_shared_feed_forward_length %d must be > 0",
                         path, c->arch, hp->n_ff_exp, hp->n_ff_shexp);
    VKF_TRY(gg_key_f32(c, "expert_weights_scale", 0.0f, 0, &hp->expert_weights_scale));
    VKF_TRY(gg_key_u32(c, "expert_gating_func", VKF_GATING_SOFTMAX, &hp->gating));
    if (a->moe_gating) hp->gating = a->moe_gating; /* gpt-oss: llama.cpp's graph fixes it */
    if (hp->gating < VKF_GATING_SOFTMAX || hp->gating > VKF_GATING_SOFTMAX_WEIGHT)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s.expert_gating_func %d is not a gating function this engine "
                         "knows (1 softmax, 2 sigmoid, 3 softmax over the top k)",
                         path, c->arch, hp->gating);
    return VKF_OK;
}

static vkf_status gg_hparams(gg_ctx *c) {
    vkf_hparams *hp = &c->m->hp;
    const char *path = c->m->path;
    VKF_TRY(gg_key_u32(c, "block_count", -1, &hp->n_layer));
    VKF_TRY(gg_key_u32(c, "embedding_length", -1, &hp->d_model));
    VKF_TRY(gg_key_u32(c, "attention.head_count", -1, &hp->n_head));
    VKF_TRY(gg_key_u32(c, "attention.head_count_kv", hp->n_head, &hp->n_kv_head));
    VKF_TRY(gg_key_u32(c, "feed_forward_length", -1, &hp->n_ff));
    VKF_TRY(gg_key_u32(c, "context_length", -1, &hp->n_ctx_train));
    if (hp->n_layer <= 0 || hp->d_model <= 0 || hp->n_head <= 0 || hp->n_kv_head <= 0 ||
        hp->n_ff <= 0 || hp->n_ctx_train <= 0)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: block_count, embedding_length, head counts, feed_forward_length and "
                         "context_length must be > 0",
                         path);
    if (hp->n_head % hp->n_kv_head)
        return vkf_error(VKF_ERROR_FORMAT, "%s: %d KV heads do not divide %d heads", path,
                         hp->n_kv_head, hp->n_head);
    /* every layer has several tensors: a corrupt count would size the layer table first */
    if ((size_t)hp->n_layer > vkf_gguf_tensor_count(c->g))
        return vkf_error(VKF_ERROR_FORMAT, "%s: block_count %d exceeds the %zu tensors in the file",
                         path, hp->n_layer, vkf_gguf_tensor_count(c->g));
    if (hp->n_ctx_train > VKF_MODEL_MAX_CTX)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: context_length %d exceeds the %d tokens this engine supports", path,
                         hp->n_ctx_train, VKF_MODEL_MAX_CTX);
    /* head_dim: attention.key_length (qwen3, gemma: n_head * head_dim may differ from d_model) */
    hp->head_dim = -1;
    VKF_TRY(gg_key_u32(c, "attention.key_length", INT32_MAX, &hp->head_dim));
    if (hp->head_dim == INT32_MAX) {
        if (hp->d_model % hp->n_head)
            return vkf_error(
                VKF_ERROR_FORMAT,
                "%s: %d heads do not divide embedding_length %d (and no attention.key_length)",
                path, hp->n_head, hp->d_model);
        hp->head_dim = hp->d_model / hp->n_head;
    }
    if (hp->head_dim <= 0 || hp->head_dim > VKF_MAX_HEAD_DIM)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: head dimension %d outside [1, %d]", path,
                         hp->head_dim, VKF_MAX_HEAD_DIM);
    const vkf_arch_desc *a = c->m->desc;
    int by_d = a->scale_by_d_layers > 0 && hp->n_layer == a->scale_by_d_layers;
    hp->attn_scale =
        (float)(1.0 / sqrt(by_d ? (double)(hp->d_model / hp->n_head) : (double)hp->head_dim));
    hp->act = a->ffn_act; /* gpt2: ggml_gelu, the tanh form */
    /* llama.cpp builds BERT's FFN with ggml_gelu (the tanh form, through ggml's f16 table), not
     * Hugging Face's erf GELU the float path keeps: the ggml-activation mode computes what
     * llama.cpp computes (measured on the rerank set: scores 1.2e-7 from llama.cpp's, 1.8e-4
     * with the erf form) */
    if (hp->act == VKF_UNARY_GELU_ERF && c->m->ctx && c->m->ctx->ggml_activations)
        hp->act = VKF_UNARY_GELU_TANH;
    if (a->norm == VKF_NORM_RMS)
        VKF_TRY(gg_key_f32(c, "attention.layer_norm_rms_epsilon", 0, 1, &hp->eps));
    else
        VKF_TRY(gg_key_f32(c, "attention.layer_norm_epsilon", 0, 1, &hp->eps));
    hp->emb_scale = a->emb_scale_sqrt_d ? sqrtf((float)hp->d_model) : 1.0f; /* f32, as llama.cpp */
    if (a->pos == VKF_POS_ROPE) VKF_TRY(gg_rope_keys(c));
    if (a->softcaps) {
        VKF_TRY(gg_key_f32(c, "attn_logit_softcapping", 0.0f, 0, &hp->attn_softcap));
        VKF_TRY(gg_key_f32(c, "final_logit_softcapping", 0.0f, 0, &hp->final_softcap));
        if (hp->attn_softcap < 0 || hp->final_softcap < 0)
            return vkf_error(VKF_ERROR_FORMAT, "%s: soft-cap values %g / %g must be >= 0", path,
                             hp->attn_softcap, hp->final_softcap);
    }
    if (a->granite_scales) { /* llama.cpp: logit_scale required, the others 0 when absent */
        float es = 0.0f, as = 0.0f;
        VKF_TRY(gg_key_f32(c, "logit_scale", 0.0f, 1, &hp->logit_scale));
        VKF_TRY(gg_key_f32(c, "embedding_scale", 0.0f, 0, &es));
        VKF_TRY(gg_key_f32(c, "residual_scale", 0.0f, 0, &hp->res_scale));
        VKF_TRY(gg_key_f32(c, "attention.scale", 0.0f, 0, &as));
        if (!(hp->logit_scale != 0.0f && isfinite(hp->logit_scale)) || !isfinite(es) ||
            !isfinite(hp->res_scale) || !isfinite(as))
            return vkf_error(VKF_ERROR_FORMAT,
                             "%s: %s.logit_scale %g must be finite and nonzero, and "
                             "embedding_scale %g, residual_scale %g, attention.scale %g finite",
                             path, c->arch, hp->logit_scale, es, hp->res_scale, as);
        if (es != 0.0f) hp->emb_scale = es;
        if (as != 0.0f) hp->attn_scale = as;
    }
    if (a->swa_period > 0) {
        VKF_TRY(gg_key_u32(c, "attention.sliding_window", 0, &hp->swa_window));
        hp->swa_period = a->swa_period;
        char full[128]; /* the file's own pattern, when it has one: a period */
        snprintf(full, sizeof full, "%s.attention.sliding_window_pattern", c->arch);
        const vkf_gguf_kv *kv = vkf_gguf_find(c->g, full);
        if (kv && kv->value.type == VKF_GGUF_TYPE_ARRAY)
            return vkf_error(VKF_ERROR_UNSUPPORTED,
                             "%s: %s as an array is not supported (a period is)", path, full);
        if (kv) VKF_TRY(gg_key_u32(c, "attention.sliding_window_pattern", 0, &hp->swa_period));
    }
    if (!(hp->eps > 0))
        return vkf_error(VKF_ERROR_FORMAT, "%s: norm epsilon %g must be > 0", path, hp->eps);
    if (a->encoder) VKF_TRY(gg_encoder_keys(c));
    VKF_TRY(gg_moe_keys(c));

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
    VKF_TRY(vkf_gguf_get_bool(c->g, "tokenizer.ggml.add_bos_token", strcmp(tm, "llama") == 0,
                              &add_bos));
    hp->add_bos = add_bos && hp->bos_id >= 0;
    return VKF_OK;
}

/* ------------------------------------------------------------------ weights */

/* One slot of the descriptor: matrices ne [in, out] -> [out, in]; vectors [in]; the position
 * table as F32 [n_ctx_train, d] for ADD_POS. */
static vkf_status gg_slot(void *user, vkf_arch_t slot, const char *name, vkf_tensor *t,
                          int optional) {
    gg_ctx *c = user;
    if (optional && !vkf_gguf_find_tensor(c->g, name)) return VKF_OK;
    int64_t ne0, ne1;
    vkf_arch_slot_shape(c->m, slot, &ne0, &ne1);
    if (slot == VKF_T_POS_EMBD || slot == VKF_T_TOKEN_TYPES) { /* tables added as F32 rows */
        const vkf_gguf_tensor *pe;
        int64_t pne[2] = {ne0, ne1};
        VKF_TRY(vkf_gguf_get_tensor(c->g, name, -1, 2, pne, &pe));
        VKF_TRY(vkf_model_upload(c->m, t, name, VKF_W_VECTOR, pe->dtype, ne1, ne0, pe->data));
        t->rows = ne1;
        t->cols = t->row_stride = ne0;
        return VKF_OK;
    }
    if (vkf_arch_slots[slot].experts) { /* ne [in, out, n_expert] -> [n_expert * out, in] */
        const vkf_gguf_tensor *s;
        int64_t ne[3] = {ne0, ne1, c->m->hp.n_expert};
        vkf_status st = vkf_gguf_get_tensor(c->g, name, -1, 3, ne, &s);
        if (st != VKF_OK && vkf_gguf_find_tensor(c->g, name)) /* the shape: name the count */
            return vkf_error_prefix(st, "%s.expert_count %d", c->arch, c->m->hp.n_expert);
        VKF_TRY(st);
        return vkf_model_upload(c->m, t, name, VKF_W_MATRIX, s->dtype, ne1 * ne[2], ne0, s->data);
    }
    vkf_status st =
        gg_get(c, t, name, vkf_arch_slots[slot].vector ? VKF_W_VECTOR : VKF_W_MATRIX, ne0, ne1, 0);
    if (st != VKF_OK && slot == VKF_T_FFN_GATE_INP && vkf_gguf_find_tensor(c->g, name))
        return vkf_error_prefix(st, "%s.expert_count %d", c->arch, c->m->hp.n_expert);
    return st;
}

/* The rope factor tensor in use (llama3 rope_freqs, or phi3's short/long factors by the chosen
 * context, as llama.cpp: long when n_ctx exceeds the original context), as host floats. */
static vkf_status gg_rope_factors(gg_ctx *c, float **out) {
    vkf_model *m = c->m;
    vkf_hparams *hp = &m->hp;
    vkf_arch_tensor_names nm;
    vkf_arch_tensor_names_get(m->desc, VKF_ARCH_GGUF, &nm);
    vkf_arch_t slot = VKF_T_ROPE_FREQS;
    hp->rope_factors = 1;
    if (nm.name[VKF_T_ROPE_SHORT] && vkf_gguf_find_tensor(c->g, nm.name[VKF_T_ROPE_SHORT])) {
        int use_long = hp->n_ctx_orig > 0 && hp->n_ctx > hp->n_ctx_orig;
        slot = use_long ? VKF_T_ROPE_LONG : VKF_T_ROPE_SHORT;
        hp->rope_factors = use_long ? 3 : 2;
    }
    *out = NULL;
    const char *name = nm.name[slot];
    if (!name || !vkf_gguf_find_tensor(c->g, name)) {
        hp->rope_factors = 0;
        return VKF_OK;
    }
    const vkf_gguf_tensor *t;
    int64_t ne[1] = {hp->n_rot / 2};
    VKF_TRY(vkf_gguf_get_tensor(c->g, name, -1, 1, ne, &t));
    if (t->dtype != VKF_DTYPE_F32)
        return vkf_error(VKF_ERROR_FORMAT, "%s: %s must be F32", m->path, name);
    float *f = malloc((size_t)ne[0] * sizeof *f);
    if (!f) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
    memcpy(f, t->data, (size_t)ne[0] * sizeof *f);
    for (int64_t i = 0; i < ne[0]; i++)
        if (!(f[i] > 0)) {
            double bad = f[i];
            free(f);
            return vkf_error(VKF_ERROR_FORMAT, "%s: %s[%lld] = %g must be > 0", m->path, name,
                             (long long)i, bad);
        }
    *out = f;
    return VKF_OK;
}

/* An encoder's classifier head (llama.cpp's cls.weight [d, d] + cls.bias, cls.output.weight
 * [d, n_cls_out] + cls.output.bias; every one optional, as there): n_cls_out is the output
 * layer's rows (without it, d: the dense layer's vector). Rank pooling needs one of the two. */
static vkf_status gg_cls_head(gg_ctx *c) {
    vkf_model *m = c->m;
    int64_t d = m->hp.d_model;
    VKF_TRY(gg_get(c, &m->w.cls_w, "cls.weight", VKF_W_MATRIX, d, d, 1));
    VKF_TRY(gg_get(c, &m->w.cls_b, "cls.bias", VKF_W_VECTOR, d, 0, 1));
    const vkf_gguf_tensor *o = vkf_gguf_find_tensor(c->g, "cls.output.weight");
    if (o && (o->rows < 1 || o->rows > 65536))
        return vkf_error(VKF_ERROR_FORMAT, "%s: cls.output.weight has %lld outputs", m->path,
                         (long long)o->rows);
    int64_t n_out = o ? o->rows : d;
    VKF_TRY(gg_get(c, &m->w.cls_out_w, "cls.output.weight", VKF_W_MATRIX, d, n_out, 1));
    VKF_TRY(gg_get(c, &m->w.cls_out_b, "cls.output.bias", VKF_W_VECTOR, n_out, 0, 1));
    int head = vkf_tensor_present(&m->w.cls_w) || vkf_tensor_present(&m->w.cls_out_w);
    m->hp.n_cls_out = head ? (int32_t)n_out : 0;
    if (m->hp.pooling == VKF_POOLING_RANK && !head)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: %s.pooling_type 4 (rank) without a classifier head: expected "
                         "cls.output.weight or cls.weight",
                         m->path, c->arch);
    return VKF_OK;
}

static vkf_status gg_weights(gg_ctx *c) {
    vkf_model *m = c->m;
    vkf_hparams *hp = &m->hp;
    const vkf_gguf_tensor *te;
    int64_t ne[2] = {hp->d_model, -1};
    VKF_TRY(vkf_gguf_get_tensor(c->g, "token_embd.weight", -1, 2, ne, &te));
    if (te->rows > INT32_MAX)
        return vkf_error(VKF_ERROR_FORMAT, "%s: token_embd.weight has %lld rows", m->path,
                         (long long)te->rows);
    hp->n_vocab = hp->n_src_vocab = (int32_t)te->rows;
    VKF_TRY(vkf_model_set_ctx(m, m->desc->pos == VKF_POS_ROPE));
    /* the weights, tables and a context asked for must fit: refused before the first upload */
    VKF_TRY(vkf_model_check_load(m, m->file.size - vkf_gguf_data_offset(c->g)));
    vkf_arch_tensor_names names;
    vkf_arch_tensor_names_get(m->desc, VKF_ARCH_GGUF, &names);
    /* a routed FFN has the router and experts, a dense one gate / up / down */
    uint64_t drop = hp->n_expert > 0 ? VKF_TS_DENSE_FFN : VKF_TS_MOE | VKF_TS_SHEXP;
    for (int t = 0; t < VKF_T_COUNT; t++)
        if (drop & VKF_TS(t)) names.name[t] = NULL;
    VKF_TRY(vkf_model_load_slots(m, &names, gg_slot, c));
    if (m->desc->encoder) VKF_TRY(gg_cls_head(c));
    if (m->desc->pos != VKF_POS_ROPE) return VKF_OK;
    float *factors;
    VKF_TRY(gg_rope_factors(c, &factors));
    vkf_status s = vkf_model_rope_tables(m, factors);
    free(factors);
    return s;
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
    else if (!(m->desc = vkf_arch_by_gguf(c.arch)))
        s = vkf_error(VKF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (%s)", path,
                      c.arch, vkf_arch_names());
    m->arch = m->desc && m->desc->encoder ? VKF_ARCH_ENCODER : VKF_ARCH_DECODER;
    snprintf(m->format, sizeof m->format, "gguf");
    if (s == VKF_OK) s = gg_hparams(&c);
    if (s == VKF_OK) s = gg_weights(&c);
    /* a special id past the embedding rows would fail every prompt that uses it: reject the file */
    if (s == VKF_OK && (m->hp.bos_id >= m->hp.n_vocab || m->hp.eos_id >= m->hp.n_vocab))
        s = vkf_error(
            VKF_ERROR_FORMAT,
            "%s: tokenizer.ggml.bos_token_id %d / eos_token_id %d outside the vocabulary [0, %d)",
            path, m->hp.bos_id, m->hp.eos_id, m->hp.n_vocab);
    if (s == VKF_OK && vkf_gguf_find(g, "tokenizer.ggml.tokens"))
        s = vkf_tokenizer_from_gguf(g, &m->tok);
    if (s == VKF_OK && m->tok && vkf_tokenizer_n_vocab(m->tok) > m->hp.n_vocab)
        s = vkf_error(VKF_ERROR_FORMAT,
                      "%s: the tokenizer has %d tokens, token_embd.weight only %d rows", path,
                      vkf_tokenizer_n_vocab(m->tok), m->hp.n_vocab);
    vkf_gguf_close(g);
    return s;
}
