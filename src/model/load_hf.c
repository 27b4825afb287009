/* Loader for Hugging Face checkpoints of the llama family: config.json "architectures" names a
 * descriptor (model/arch/: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
 * Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM, the mixtures of
 * experts Qwen3MoeForCausalLM, Qwen2MoeForCausalLM, OlmoeForCausalLM, MixtralForCausalLM); weights
 * from model.safetensors or the shards that model.safetensors.index.json lists; tokenizer.json
 * beside them when present.
 *
 * What differs from the GGUF of the same model (llama.cpp's converter does the same):
 *   - rope in the adjacent-pair layout (llama): HF splits each head's q/k rows in halves; rows
 *     are permuted at load, row h*hd + 2i + j <- HF row h*hd + j*hd/2 + i;
 *   - Gemma RMSNorm multiplies by (1 + w): 1 is added to every norm weight at load;
 *   - rope scaling comes from config.json rope_scaling (llama3 factors computed here as the
 *     converter does, LongRoPE short/long factor lists, linear factor);
 *   - mixture of experts (Qwen3MoeForCausalLM, Qwen2MoeForCausalLM, OlmoeForCausalLM,
 *     MixtralForCausalLM): one 2-D tensor per expert (mlp.experts.E.*_proj, Mixtral's
 *     block_sparse_moe.experts.E.w1/w3/w2), stacked at load into the 3-D expert slot in expert
 *     order, as the converter stacks them; Qwen2-MoE's shared_expert_gate [1, d] is the vector
 *     ffn_gate_inp_shexp. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/ops.h"
#include "io/json_config.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#define HF_MAX_SHARDS 64

typedef struct hf_ctx {
    vkf_model *m;
    vkf_safetensors *st[HF_MAX_SHARDS];
    int n_st;
    const char *prefix; /* of every name but lm_head: "model.", or the descriptor's hf_prefix */
} hf_ctx;

static int hf_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

static const vkf_st_tensor *hf_find(const hf_ctx *c, const char *name, const vkf_safetensors **in) {
    for (int i = 0; i < c->n_st; i++) {
        const vkf_st_tensor *t = vkf_safetensors_find(c->st[i], name);
        if (t) {
            *in = c->st[i];
            return t;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ weights */

void *vkf_hf_permute_rows(const void *src, int64_t rows, size_t row_bytes, int64_t hd) {
    char *dst = malloc((size_t)rows * row_bytes + 1);
    if (!dst) return NULL;
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r / hd, k = r % hd, i = k / 2, j = k % 2;
        memcpy(dst + (size_t)r * row_bytes,
               (const char *)src + (size_t)(h * hd + j * (hd / 2) + i) * row_bytes, row_bytes);
    }
    return dst;
}

/* The n_expert tensors of an expert slot (fmt names expert %d), each [out, in] of one dtype,
 * copied one after the other into one buffer (one slot's experts at a time, freed once
 * uploaded) and uploaded as [n_expert * out, in]; a tensor for expert n_expert means
 * config.json's count is short. */
static vkf_status hf_experts(hf_ctx *c, vkf_arch_t slot, const char *fmt, vkf_tensor *t) {
    vkf_model *m = c->m;
    int64_t ne0, ne1;
    vkf_arch_slot_shape(m, slot, &ne0, &ne1);
    const int n_exp = m->hp.n_expert;
    char name[256];
    char *buf = NULL;
    int dtype = -1;
    size_t each = 0;
    vkf_status r = VKF_OK;
    for (int e = 0; e <= n_exp && r == VKF_OK; e++) {
        snprintf(name, sizeof name, fmt, e);
        const vkf_safetensors *st = NULL;
        const vkf_st_tensor *s = hf_find(c, name, &st);
        if (e == n_exp) {
            if (s)
                r = vkf_error(VKF_ERROR_FORMAT,
                              "%s: tensor %s exists but config.json's expert count "
                              "(num_experts / num_local_experts) is %d",
                              m->path, name, n_exp);
            break;
        }
        if (!s) {
            r = vkf_error(VKF_ERROR_FORMAT,
                          "%s: missing tensor %s (config.json's expert count is %d)", m->path, name,
                          n_exp);
            break;
        }
        int64_t dims[2] = {ne1, ne0};
        r = vkf_safetensors_get(st, name, dtype, 2, dims, &s);
        if (r == VKF_OK && !buf) {
            dtype = s->dtype;
            each = s->nbytes;
            buf = malloc(each * (size_t)n_exp);
            if (!buf) r = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
        }
        if (r == VKF_OK) memcpy(buf + each * (size_t)e, s->data, each);
    }
    if (r == VKF_OK) r = vkf_model_upload(m, t, fmt, VKF_W_MATRIX, dtype, ne1 * n_exp, ne0, buf);
    free(buf);
    return r;
}

static vkf_status hf_slot(void *user, vkf_arch_t slot, const char *name, vkf_tensor *t,
                          int optional) {
    hf_ctx *c = user;
    vkf_model *m = c->m;
    char full[256];
    snprintf(full, sizeof full, "%s%s", slot == VKF_T_OUTPUT ? "" : c->prefix, name);
    if (vkf_arch_slots[slot].experts) return hf_experts(c, slot, full, t);
    const vkf_safetensors *st = NULL;
    const vkf_st_tensor *s = hf_find(c, full, &st);
    if (!s && optional) return VKF_OK;
    if (!s) return vkf_error(VKF_ERROR_FORMAT, "%s: missing tensor %s", m->path, full);
    int64_t ne0, ne1;
    vkf_arch_slot_shape(m, slot, &ne0, &ne1);
    int vec = vkf_arch_slots[slot].vector;
    int64_t dims[2] = {vec ? ne0 : ne1, ne0};
    if (slot == VKF_T_FFN_GATE_INP_SHEXP) { /* nn.Linear(d, 1): [1, d] */
        dims[0] = 1;
        VKF_TRY(vkf_safetensors_get(st, full, -1, 2, dims, &s));
        return vkf_model_upload(m, t, full, VKF_W_VECTOR, s->dtype, 1, ne0, s->data);
    }
    vkf_status got = vkf_safetensors_get(st, full, -1, vec ? 1 : 2, dims, &s);
    if (got != VKF_OK && slot == VKF_T_FFN_GATE_INP) /* the router's rows: name the count */
        return vkf_error_prefix(got,
                                "config.json's expert count (num_experts / "
                                "num_local_experts) %d",
                                m->hp.n_expert);
    VKF_TRY(got);
    if (slot == VKF_T_POS_EMBD || slot == VKF_T_TOKEN_TYPES) { /* tables added as F32 rows */
        VKF_TRY(vkf_model_upload(m, t, full, VKF_W_VECTOR, s->dtype, ne1, ne0, s->data));
        t->rows = ne1;
        t->cols = t->row_stride = ne0;
        return VKF_OK;
    }
    int rope_pairs = m->desc->rope_mode == VKF_ROPE_NORMAL && m->desc->pos == VKF_POS_ROPE;
    int permute = rope_pairs && (slot == VKF_T_ATTN_Q || slot == VKF_T_ATTN_K ||
                                 slot == VKF_T_ATTN_Q_B || slot == VKF_T_ATTN_K_B);
    int plus_one =
        m->desc->hf_norm_plus_one && vec &&
        (slot == VKF_T_ATTN_NORM || slot == VKF_T_FFN_NORM || slot == VKF_T_POST_ATTN_NORM ||
         slot == VKF_T_POST_FFN_NORM || slot == VKF_T_ATTN_Q_NORM || slot == VKF_T_ATTN_K_NORM ||
         slot == VKF_T_OUT_NORM);
    if (plus_one) {
        float *f = malloc((size_t)ne0 * sizeof *f);
        if (!f) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
        vkf_dequantize_row(s->dtype, s->data, f, ne0);
        for (int64_t i = 0; i < ne0; i++)
            f[i] += 1.0f;
        vkf_status r = vkf_model_upload(m, t, full, VKF_W_VECTOR, VKF_DTYPE_F32, 1, ne0, f);
        free(f);
        return r;
    }
    if (permute) {
        int64_t rows = vec ? ne0 : ne1;
        size_t rb = vec ? vkf_dtype_row_bytes(s->dtype, 1) : vkf_dtype_row_bytes(s->dtype, ne0);
        if (m->hp.head_dim % 2 || rows % m->hp.head_dim)
            return vkf_error(VKF_ERROR_FORMAT, "%s: %s: %lld rows are not whole heads of %d",
                             m->path, full, (long long)rows, m->hp.head_dim);
        void *p = vkf_hf_permute_rows(s->data, rows, rb, m->hp.head_dim);
        if (!p) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
        vkf_status r = vec ? vkf_model_upload(m, t, full, VKF_W_VECTOR, s->dtype, 1, ne0, p)
                           : vkf_model_upload(m, t, full, VKF_W_MATRIX, s->dtype, ne1, ne0, p);
        free(p);
        return r;
    }
    if (vec) return vkf_model_upload(m, t, full, VKF_W_VECTOR, s->dtype, 1, ne0, s->data);
    return vkf_model_upload(m, t, full, VKF_W_MATRIX, s->dtype, ne1, ne0, s->data);
}

/* ------------------------------------------------------------------ config */

/* A number in a nested object (rope_scaling), def when absent. */
static double hf_num(const cJSON *o, const char *key, double def) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* llama3 rope scaling as llama.cpp's converter computes rope_freqs: 1 for wavelengths below
 * original/high, factor above original/low, smoothly interpolated between. The converter works
 * on float32 torch tensors from the frequencies on, so every step after the config's numbers is
 * f32 here too (the factors then equal its rope_freqs.weight bit for bit). */
void vkf_hf_llama3_factors(const vkf_hparams *hp, const cJSON *rs, float *f) {
    double factor = hf_num(rs, "factor", 8.0), lo = hf_num(rs, "low_freq_factor", 1.0),
           hi = hf_num(rs, "high_freq_factor", 4.0);
    double old_ctx = hf_num(rs, "original_max_position_embeddings", 8192.0);
    for (int i = 0; i < hp->n_rot / 2; i++) {
        float freq = 1.0f / powf((float)hp->rope_base, (float)(2 * i) / (float)hp->n_rot);
        float wl = (float)(2.0 * M_PI) / freq;
        if (wl < old_ctx / hi)
            f[i] = 1.0f;
        else if (wl > old_ctx / lo)
            f[i] = (float)factor;
        else {
            float s = ((float)old_ctx / wl - (float)lo) / (float)(hi - lo);
            f[i] = 1.0f / ((1.0f - s) / (float)factor + s);
        }
    }
}

/* LongRoPE: short or long factor list by the context the model is loaded for (llama.cpp's rule:
 * long above the original context), attention factor sqrt(1 + ln(trained / original) /
 * ln(original)) by the training context. */
static vkf_status hf_longrope(vkf_model *m, const cJSON *rs, float *f) {
    vkf_hparams *hp = &m->hp;
    const int32_t n_train = hp->n_ctx_train;
    int use_long = hp->n_ctx_orig > 0 && hp->n_ctx > hp->n_ctx_orig;
    const char *key = use_long ? "long_factor" : "short_factor";
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(rs, key);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != hp->n_rot / 2)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s/config.json: rope_scaling.%s must be a list of %d numbers", m->path,
                         key, hp->n_rot / 2);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble > 0))
            return vkf_error(VKF_ERROR_FORMAT,
                             "%s/config.json: rope_scaling.%s[%d] must be a number > 0", m->path,
                             key, i);
        f[i++] = (float)e->valuedouble;
    }
    hp->rope_factors = use_long ? 3 : 2;
    if (hp->n_ctx_orig > 0 && n_train > hp->n_ctx_orig) {
        double scale = (double)n_train / hp->n_ctx_orig;
        hp->rope_attn_factor =
            hf_num(rs, "attention_factor", sqrt(1.0 + log(scale) / log((double)hp->n_ctx_orig)));
    }
    return VKF_OK;
}

static vkf_status hf_config(vkf_model *m, const vkf_json_config *c, int *tied) {
    const char *path = vkf_json_config_path(c);
    vkf_hparams *hp = &m->hp;
    const vkf_arch_desc *a = m->desc;
    VKF_TRY(vkf_json_config_int32(c, "hidden_size", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX,
                                  &hp->d_model));
    VKF_TRY(vkf_json_config_int32(c, "num_hidden_layers", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX,
                                  &hp->n_layer));
    VKF_TRY(vkf_json_config_int32(c, "num_attention_heads", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX,
                                  &hp->n_head));
    VKF_TRY(vkf_json_config_int32(c, "num_key_value_heads", NULL, hp->n_head, 0, INT32_MAX,
                                  &hp->n_kv_head));
    VKF_TRY(vkf_json_config_int32(c, "intermediate_size", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX,
                                  &hp->n_ff));
    VKF_TRY(vkf_json_config_int32(c, "vocab_size", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX,
                                  &hp->n_vocab));
    VKF_TRY(vkf_json_config_int32(c, "max_position_embeddings", NULL, VKF_JSON_REQUIRED, 0,
                                  INT32_MAX, &hp->n_ctx_train));
    if (hp->d_model <= 0 || hp->n_layer <= 0 || hp->n_head <= 0 || hp->n_kv_head <= 0 ||
        hp->n_ff <= 0 || hp->n_vocab <= 0 || hp->n_ctx_train <= 0 || hp->n_head % hp->n_kv_head)
        return vkf_error(
            VKF_ERROR_FORMAT,
            "%s: sizes must be > 0 and num_key_value_heads must divide num_attention_heads", path);
    if (hp->n_ctx_train > VKF_MODEL_MAX_CTX)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: max_position_embeddings %d exceeds %d", path,
                         hp->n_ctx_train, VKF_MODEL_MAX_CTX);
    hp->n_src_vocab = hp->n_vocab;
    VKF_TRY(vkf_json_config_int32(c, "head_dim", NULL, hp->d_model / hp->n_head, 0, INT32_MAX,
                                  &hp->head_dim));
    if (hp->head_dim <= 0 || hp->head_dim > VKF_MAX_HEAD_DIM || hp->head_dim % 2)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: head_dim %d outside [2, %d] or odd", path,
                         hp->head_dim, VKF_MAX_HEAD_DIM);
    hp->n_rot = hp->head_dim;
    /* NoPE layers (SmolLM3): config.json's list must be the descriptor's fixed pattern */
    const cJSON *nope = cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(c), "no_rope_layers");
    if (a->nope_period > 0 && cJSON_IsArray(nope))
        for (int il = 0; il < cJSON_GetArraySize(nope); il++) {
            const cJSON *e = cJSON_GetArrayItem(nope, il);
            int want = (il + 1) % a->nope_period != 0;
            if (!cJSON_IsNumber(e) || (e->valuedouble != 0) != want)
                return vkf_error(VKF_ERROR_UNSUPPORTED,
                                 "%s: no_rope_layers[%d] must be %d: %s layers il with (il + 1) "
                                 "%% %d == 0 have no RoPE (llama.cpp's fixed pattern)",
                                 path, il, want, a->name, a->nope_period);
        }
    double v;
    VKF_TRY(vkf_json_config_get_float(c, "rms_norm_eps", 1e-6, &v));
    hp->eps = (float)v;
    if (!(hp->eps > 0))
        return vkf_error(VKF_ERROR_FORMAT, "%s: rms_norm_eps %g must be > 0", path, v);
    VKF_TRY(vkf_json_config_get_float(c, "rope_theta", 10000.0, &v));
    hp->rope_base = (float)v; /* f32, as the GGUF key */
    /* transformers' default (Gemma3TextConfig), as llama.cpp's for the GGUF key */
    VKF_TRY(vkf_json_config_get_float(c, "rope_local_base_freq", 10000.0, &v));
    hp->rope_base_swa = (float)v;
    hp->rope_scale = 1.0;
    hp->rope_attn_factor = 1.0;
    double qs;
    VKF_TRY(vkf_json_config_get_float(c, "query_pre_attn_scalar", hp->head_dim, &qs));
    if (!(qs > 0))
        return vkf_error(VKF_ERROR_FORMAT, "%s: query_pre_attn_scalar %g must be > 0", path, qs);
    hp->attn_scale = (float)(1.0 / sqrt(qs));
    hp->act = a->ffn_act;
    hp->emb_scale = a->emb_scale_sqrt_d ? sqrtf((float)hp->d_model) : 1.0f;
    if (a->softcaps) {
        VKF_TRY(vkf_json_config_get_float(c, "attn_logit_softcapping", 0.0, &v));
        hp->attn_softcap = (float)v;
        VKF_TRY(vkf_json_config_get_float(c, "final_logit_softcapping", 0.0, &v));
        hp->final_softcap = (float)v;
        if (hp->attn_softcap < 0 || hp->final_softcap < 0)
            return vkf_error(VKF_ERROR_FORMAT, "%s: soft-caps must be >= 0", path);
    }
    if (a->swa_period > 0) {
        VKF_TRY(vkf_json_config_int32(c, "sliding_window", NULL, 0, 0, INT32_MAX, &hp->swa_window));
        VKF_TRY(vkf_json_config_int32(c, "sliding_window_pattern", NULL, a->swa_period, 0,
                                      INT32_MAX, &hp->swa_period));
    }
    VKF_TRY(vkf_json_config_int32(c, "original_max_position_embeddings", NULL, 0, 0, INT32_MAX,
                                  &hp->n_ctx_orig));
    int64_t bos, eos;
    VKF_TRY(vkf_json_config_get_int(c, "bos_token_id", -1, &bos));
    const cJSON *eo = cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(c), "eos_token_id");
    if (cJSON_IsArray(eo)) { /* Llama-3.x lists several: the first */
        const cJSON *e0 = cJSON_GetArrayItem(eo, 0);
        eos = cJSON_IsNumber(e0) ? (int64_t)e0->valuedouble : -1;
    } else {
        VKF_TRY(vkf_json_config_get_int(c, "eos_token_id", -1, &eos));
    }
    hp->bos_id = bos >= 0 && bos < hp->n_vocab ? (int32_t)bos : -1;
    hp->eos_id = eos >= 0 && eos < hp->n_vocab ? (int32_t)eos : -1;
    hp->pad_id = -1;
    hp->add_bos = -1; /* the tokenizer decides */
    VKF_TRY(vkf_json_config_get_bool(c, "tie_word_embeddings", -1, tied));
    return VKF_OK;
}

/* Mixture of experts (descriptors with .moe): num_experts (Qwen, OLMoE) or num_local_experts
 * (Mixtral), required where the descriptor routes every layer, else 0 means a dense FFN;
 * num_experts_per_tok; moe_intermediate_size (absent: intermediate_size, OLMoE's and Mixtral's
 * expert width); shared_expert_intermediate_size (absent: intermediate_size). The gating is the
 * softmax of these architectures; norm_topk_prob, when given, must be the descriptor's fixed
 * renormalisation (llama.cpp fixes it per architecture); every layer must be sparse
 * (decoder_sparse_step 1, mlp_only_layers empty). */
static vkf_status hf_moe_config(vkf_model *m, const vkf_json_config *c) {
    const char *path = vkf_json_config_path(c);
    vkf_hparams *hp = &m->hp;
    const vkf_arch_desc *a = m->desc;
    if (a->moe == VKF_MOE_NONE) return VKF_OK;
    VKF_TRY(vkf_json_config_int32(c, "num_experts", "num_local_experts",
                                  a->moe == VKF_MOE_ALWAYS ? VKF_JSON_REQUIRED : 0, 0, 4096,
                                  &hp->n_expert));
    if (hp->n_expert == 0) {
        if (a->moe == VKF_MOE_ALWAYS)
            return vkf_error(VKF_ERROR_FORMAT, "%s: num_experts is 0 (%s routes every layer)", path,
                             a->name);
        return VKF_OK;
    }
    VKF_TRY(vkf_json_config_int32(c, "num_experts_per_tok", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX,
                                  &hp->n_expert_used));
    if (hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert)
        return vkf_error(VKF_ERROR_FORMAT, "%s: num_experts_per_tok %d must be in [1, %d]", path,
                         hp->n_expert_used, hp->n_expert);
    VKF_TRY(vkf_json_config_int32(c, "moe_intermediate_size", NULL, hp->n_ff, 1, INT32_MAX,
                                  &hp->n_ff_exp));
    VKF_TRY(vkf_json_config_int32(c, "shared_expert_intermediate_size", NULL, hp->n_ff, 1,
                                  INT32_MAX, &hp->n_ff_shexp));
    int norm = -1;
    VKF_TRY(vkf_json_config_get_bool(c, "norm_topk_prob", -1, &norm));
    if (norm >= 0 && norm != (a->moe_norm_w != 0))
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: norm_topk_prob %s: %s %s the chosen experts' weights", path,
                         norm ? "true" : "false", a->name,
                         a->moe_norm_w ? "always renormalises" : "never renormalises");
    int32_t step = 1;
    VKF_TRY(vkf_json_config_int32(c, "decoder_sparse_step", NULL, 1, 0, INT32_MAX, &step));
    const cJSON *dense =
        cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(c), "mlp_only_layers");
    if (step != 1 || (cJSON_IsArray(dense) && cJSON_GetArraySize(dense) > 0))
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: decoder_sparse_step %d / mlp_only_layers: dense layers among the "
                         "routed ones are not supported (every layer routed: step 1, no "
                         "mlp_only_layers)",
                         path, step);
    hp->gating = VKF_GATING_SOFTMAX;
    hp->expert_weights_scale = 0.0f;
    return VKF_OK;
}

/* rope_scaling: llama3 (factors), longrope / su (phi3 lists), linear; none otherwise. */
static vkf_status hf_rope(vkf_model *m, const vkf_json_config *c, float **factors) {
    vkf_hparams *hp = &m->hp;
    *factors = NULL;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(c), "rope_scaling");
    if (!cJSON_IsObject(rs)) return VKF_OK;
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(ty)) ty = cJSON_GetObjectItemCaseSensitive(rs, "type");
    const char *type = cJSON_IsString(ty) ? ty->valuestring : "default";
    if (strcmp(type, "default") == 0) return VKF_OK;
    if (strcmp(type, "linear") == 0) {
        double f = hf_num(rs, "factor", 1.0);
        if (!(f > 0))
            return vkf_error(VKF_ERROR_FORMAT, "%s/config.json: rope_scaling.factor %g must be > 0",
                             m->path, f);
        hp->rope_scale = 1.0 / f;
        return VKF_OK;
    }
    if (strcmp(type, "llama3") != 0 && strcmp(type, "longrope") != 0 && strcmp(type, "su") != 0)
        return vkf_error(
            VKF_ERROR_UNSUPPORTED,
            "%s/config.json: rope_scaling type \"%s\" is not supported (linear, llama3, longrope)",
            m->path, type);
    float *f = malloc((size_t)(hp->n_rot / 2) * sizeof *f);
    if (!f) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
    vkf_status s = VKF_OK;
    if (strcmp(type, "llama3") == 0) {
        vkf_hf_llama3_factors(hp, rs, f);
        hp->rope_factors = 1;
    } else {
        s = hf_longrope(m, rs, f);
    }
    if (s != VKF_OK) {
        free(f);
        return s;
    }
    *factors = f;
    return VKF_OK;
}

/* ------------------------------------------------------------------ shards */

static vkf_status hf_open_shards(hf_ctx *c, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (hf_exists(path)) {
        c->n_st = 1;
        return vkf_safetensors_open(path, &c->st[0]);
    }
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (!hf_exists(path))
        return vkf_error(VKF_ERROR_IO,
                         "%s: neither model.safetensors nor model.safetensors.index.json", dir);
    vkf_json_config *idx;
    VKF_TRY(vkf_json_config_load(path, &idx));
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(idx), "weight_map");
    vkf_status s = cJSON_IsObject(wm)
                       ? VKF_OK
                       : vkf_error(VKF_ERROR_FORMAT, "%s: no \"weight_map\" object", path);
    const cJSON *e;
    cJSON_ArrayForEach(e, wm) {
        if (s != VKF_OK) break;
        if (!cJSON_IsString(e) || strchr(e->valuestring, '/') || e->valuestring[0] == '.') {
            s = vkf_error(VKF_ERROR_FORMAT,
                          "%s: weight_map[\"%s\"] must name a file in the directory", path,
                          e->string);
            break;
        }
        char shard[1200];
        snprintf(shard, sizeof shard, "%s/%s", dir, e->valuestring);
        int seen = 0;
        for (int i = 0; i < c->n_st && !seen; i++)
            seen = strcmp(vkf_safetensors_path(c->st[i]), shard) == 0;
        if (seen) continue;
        if (c->n_st == HF_MAX_SHARDS) {
            s = vkf_error(VKF_ERROR_UNSUPPORTED, "%s: more than %d shards", path, HF_MAX_SHARDS);
            break;
        }
        s = vkf_safetensors_open(shard, &c->st[c->n_st]);
        if (s == VKF_OK) c->n_st++;
    }
    vkf_json_config_free(idx);
    return s;
}

/* ------------------------------------------------------------------ load */

/* A *ForSequenceClassification encoder (a cross-encoder): Hugging Face's head on the [CLS] row,
 * BertPooler's dense layer + tanh ("<prefix>pooler.dense", llama.cpp's cls) and the classifier
 * ("classifier", its cls.output, num_labels rows); rank pooling, scores not normalized. Other
 * architectures: nothing (a BertModel's pooler is not used for embeddings). */
static vkf_status hf_cls_head(hf_ctx *c, const vkf_json_config *cfg) {
    vkf_model *m = c->m;
    const cJSON *archs =
        cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(cfg), "architectures");
    const cJSON *a0 = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    if (!cJSON_IsString(a0) || !strstr(a0->valuestring, "ForSequenceClassification")) return VKF_OK;
    int64_t d = m->hp.d_model;
    static const struct {
        const char *name;
        int prefixed, vector, required;
    } parts[4] = {{"pooler.dense.weight", 1, 0, 1},
                  {"pooler.dense.bias", 1, 1, 1},
                  {"classifier.weight", 0, 0, 1},
                  {"classifier.bias", 0, 1, 0}};
    vkf_tensor *dst[4] = {&m->w.cls_w, &m->w.cls_b, &m->w.cls_out_w, &m->w.cls_out_b};
    const vkf_safetensors *in = NULL;
    const vkf_st_tensor *cw = hf_find(c, "classifier.weight", &in);
    int64_t n_out = cw && cw->rank == 2 ? cw->shape[0] : 0;
    if (cw && (n_out < 1 || n_out > 65536))
        return vkf_error(VKF_ERROR_FORMAT, "%s: classifier.weight: %lld outputs", m->path,
                         (long long)n_out);
    for (int i = 0; i < 4; i++) {
        char full[256];
        snprintf(full, sizeof full, "%s%s", parts[i].prefixed ? c->prefix : "", parts[i].name);
        const vkf_safetensors *st = NULL;
        const vkf_st_tensor *s = hf_find(c, full, &st);
        if (!s && !parts[i].required) continue;
        if (!s)
            return vkf_error(VKF_ERROR_FORMAT, "%s: %s: missing tensor %s (the classifier head)",
                             m->path, a0->valuestring, full);
        int64_t rows = i < 2 ? d : n_out;
        int64_t dims[2] = {rows, d};
        VKF_TRY(vkf_safetensors_get(st, full, -1, parts[i].vector ? 1 : 2, dims, &s));
        VKF_TRY(vkf_model_upload(m, dst[i], full, parts[i].vector ? VKF_W_VECTOR : VKF_W_MATRIX,
                                 s->dtype, parts[i].vector ? 1 : rows, parts[i].vector ? rows : d,
                                 s->data));
    }
    m->hp.n_cls_out = (int32_t)n_out;
    m->hp.pooling = VKF_POOLING_RANK;
    m->hp.normalize = 0;
    return VKF_OK;
}

static vkf_status hf_load(vkf_model *m, hf_ctx *c, const vkf_json_config *cfg, const char *dir) {
    int tied = -1;
    if (m->desc->encoder)
        VKF_TRY(vkf_hf_encoder_config(m, cfg, dir));
    else
        VKF_TRY(hf_config(m, cfg, &tied));
    VKF_TRY(hf_moe_config(m, cfg));
    VKF_TRY(hf_open_shards(c, dir));
    vkf_arch_tensor_names names;
    vkf_arch_tensor_names_get(m->desc, VKF_ARCH_HF, &names);
    c->prefix = "model.";
    for (int i = 0; i < 3 && m->desc->hf_prefix[i]; i++) { /* where the token embedding is */
        char nm[256];
        const vkf_safetensors *in;
        c->prefix = m->desc->hf_prefix[i];
        snprintf(nm, sizeof nm, "%s%s", c->prefix, names.name[VKF_T_TOK_EMBD]);
        if (hf_find(c, nm, &in)) break;
        c->prefix = m->desc->hf_prefix[0];
    }
    size_t n_tensors = 0;
    for (int i = 0; i < c->n_st; i++)
        n_tensors += vkf_safetensors_count(c->st[i]);
    if ((size_t)m->hp.n_layer > n_tensors)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s/config.json: num_hidden_layers %d exceeds the %zu tensors", dir,
                         m->hp.n_layer, n_tensors);
    VKF_TRY(vkf_model_set_ctx(m, m->desc->pos == VKF_POS_ROPE));
    /* the weights, tables and a context asked for must fit: refused before the first upload */
    uint64_t data = 0;
    for (int i = 0; i < c->n_st; i++)
        for (size_t t = 0; t < vkf_safetensors_count(c->st[i]); t++)
            data += vkf_safetensors_tensor(c->st[i], t)->nbytes;
    VKF_TRY(vkf_model_check_load(m, data));
    /* tie_word_embeddings true: an lm_head.weight in the files is the same matrix; false: it
     * must be there; absent: the files decide */
    /* a routed FFN has the router and experts, a dense one gate / up / down */
    uint64_t drop = m->hp.n_expert > 0 ? VKF_TS_DENSE_FFN : VKF_TS_MOE | VKF_TS_SHEXP;
    for (int t = 0; t < VKF_T_COUNT; t++)
        if (drop & VKF_TS(t)) names.name[t] = NULL;
    if (tied == 1) names.name[VKF_T_OUTPUT] = NULL;
    if (tied == 0) {
        names.name[VKF_T_OUTPUT] = vkf_arch_hf_names[VKF_T_OUTPUT];
        names.opt[VKF_T_OUTPUT] = 0;
    }
    VKF_TRY(vkf_model_load_slots(m, &names, hf_slot, c));
    if (m->desc->encoder) {
        VKF_TRY(hf_cls_head(c, cfg));
        return vkf_hf_encoder_tokenizer(m, dir);
    }
    float *factors;
    VKF_TRY(hf_rope(m, cfg, &factors));
    vkf_status s = vkf_model_rope_tables(m, factors);
    free(factors);
    VKF_TRY(s);
    char path[1200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (hf_exists(path)) VKF_TRY(vkf_tokenizer_from_hf_json(path, &m->tok));
    return VKF_OK;
}

vkf_status vkf_load_hf(vkf_model *m, const char *dir, const vkf_arch_desc *desc) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    vkf_json_config *cfg;
    VKF_TRY(vkf_json_config_load(path, &cfg));
    m->arch = desc->encoder ? VKF_ARCH_ENCODER : VKF_ARCH_DECODER;
    m->desc = desc;
    snprintf(m->format, sizeof m->format, "safetensors");
    hf_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    vkf_status s = hf_load(m, &c, cfg, dir);
    for (int i = 0; i < c.n_st; i++)
        vkf_safetensors_close(c.st[i]);
    vkf_json_config_free(cfg);
    return s;
}
