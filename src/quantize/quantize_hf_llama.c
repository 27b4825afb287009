/* Hugging Face llama-family directory -> F32/F16 GGUF (see quantize.h), the input side of
 * `vkformer quantize` for the architectures load_hf.c reads.
 *
 * The directory is loaded by the engine's own HF loader (model/load_hf.c) on a CPU context, so
 * the converter's transforms are the loader's: the q/k row permutation of adjacent-pair rope
 * (llama), Gemma's 1 + w norm weights, shards, tie_word_embeddings. Every tensor the
 * descriptor names (model/arch/) is then read back and written under its GGUF name, with the
 * hyperparameters as the {arch}.* keys llama.cpp's convert_hf_to_gguf.py writes and the rope
 * scaling as its tensors (rope_freqs for llama3, rope_factors_short/long for LongRoPE) or keys
 * (linear). Host memory: the whole model once (the CPU backend's copy) plus one tensor. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/wtype.h"
#include "io/gguf_write.h"
#include "io/json_config.h"
#include "model/model.h"
#include "quantize/quantize.h"

typedef struct hq_tensor {
    char name[96];
    const vkf_tensor *t; /* NULL: host data in f (rope factors) */
    const float *f;
    int64_t n; /* elements of f */
    int vec;   /* 1-D in the GGUF */
} hq_tensor;

typedef struct hq {
    const vkf_model *m;
    vkf_gguf_writer *w;
    char key[160];
} hq;

static const char *hq_key(hq *h, const char *k) {
    snprintf(h->key, sizeof h->key, "%s.%s", h->m->desc->name, k);
    return h->key;
}

/* The {arch}.* keys the GGUF loader (load_gguf.c) reads, as the converter names them. */
static vkf_status hq_keys(hq *h, const char *dir, const cJSON *cfg) {
    const vkf_hparams *hp = &h->m->hp;
    const vkf_arch_desc *a = h->m->desc;
    vkf_gguf_writer *w = h->w;
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    VKF_TRY(vkf_gguf_writer_set_str(w, "general.architecture", a->name));
    VKF_TRY(vkf_gguf_writer_set_str(w, "general.name", base));
    VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "context_length"), (uint32_t)hp->n_ctx_train));
    VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "embedding_length"), (uint32_t)hp->d_model));
    VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "block_count"), (uint32_t)hp->n_layer));
    VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "feed_forward_length"), (uint32_t)hp->n_ff));
    VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "attention.head_count"), (uint32_t)hp->n_head));
    VKF_TRY(
        vkf_gguf_writer_set_u32(w, hq_key(h, "attention.head_count_kv"), (uint32_t)hp->n_kv_head));
    VKF_TRY(vkf_gguf_writer_set_f32(w, hq_key(h, "attention.layer_norm_rms_epsilon"), hp->eps));
    VKF_TRY(vkf_gguf_writer_set_f32(w, hq_key(h, "rope.freq_base"), (float)hp->rope_base));
    VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "rope.dimension_count"), (uint32_t)hp->n_rot));
    VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "attention.key_length"), (uint32_t)hp->head_dim));
    VKF_TRY(
        vkf_gguf_writer_set_u32(w, hq_key(h, "attention.value_length"), (uint32_t)hp->head_dim));
    VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "vocab_size"), (uint32_t)hp->n_vocab));
    if (a->swa_rope_unscaled)
        VKF_TRY(
            vkf_gguf_writer_set_f32(w, hq_key(h, "rope.freq_base_swa"), (float)hp->rope_base_swa));
    if (a->softcaps) {
        VKF_TRY(vkf_gguf_writer_set_f32(w, hq_key(h, "attn_logit_softcapping"), hp->attn_softcap));
        VKF_TRY(
            vkf_gguf_writer_set_f32(w, hq_key(h, "final_logit_softcapping"), hp->final_softcap));
    }
    /* phi3: the converter writes config.json's window though llama.cpp ignores it (the loader
     * does too: hp has none) */
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(cfg, "sliding_window");
    if (hp->swa_window > 0)
        VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "attention.sliding_window"),
                                        (uint32_t)hp->swa_window));
    else if (!strcmp(a->name, "phi3") && cJSON_IsNumber(sw) && sw->valuedouble > 0 &&
             sw->valuedouble <= UINT32_MAX)
        VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "attention.sliding_window"),
                                        (uint32_t)sw->valuedouble));
    if (a->swa_period > 0 && hp->swa_period != a->swa_period)
        VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "attention.sliding_window_pattern"),
                                        (uint32_t)hp->swa_period));
    if (hp->rope_scale != 1.0) {
        VKF_TRY(vkf_gguf_writer_set_str(w, hq_key(h, "rope.scaling.type"), "linear"));
        VKF_TRY(vkf_gguf_writer_set_f32(w, hq_key(h, "rope.scaling.factor"),
                                        (float)(1.0 / hp->rope_scale)));
    }
    if (hp->n_ctx_orig > 0)
        VKF_TRY(vkf_gguf_writer_set_u32(w, hq_key(h, "rope.scaling.original_context_length"),
                                        (uint32_t)hp->n_ctx_orig));
    if (hp->rope_attn_factor != 1.0)
        VKF_TRY(vkf_gguf_writer_set_f32(w, hq_key(h, "rope.scaling.attn_factor"),
                                        (float)hp->rope_attn_factor));
    VKF_TRY(vkf_gguf_writer_set_u32(w, "general.file_type", 0));
    if (hp->bos_id >= 0)
        VKF_TRY(vkf_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)hp->bos_id));
    if (hp->eos_id >= 0)
        VKF_TRY(vkf_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)hp->eos_id));
    return VKF_OK;
}

/* rope_scaling's tensors: llama3 -> rope_freqs (the loader's factors), longrope / su ->
 * rope_factors_long / rope_factors_short (config.json's lists). *f holds the values. */
static vkf_status hq_rope(const vkf_model *m, const char *path, const cJSON *cfg, hq_tensor *list,
                          size_t *k, float **f) {
    const vkf_hparams *hp = &m->hp;
    *f = NULL;
    if (!hp->rope_factors) return VKF_OK;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_scaling");
    int64_t n = hp->n_rot / 2;
    vkf_status s = VKF_OK;
    *f = calloc(2 * (size_t)n, sizeof **f);
    if (!*f) s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    if (s == VKF_OK && hp->rope_factors == 1) {
        vkf_hf_llama3_factors(hp, rs, *f);
        list[*k] = (hq_tensor){.name = "rope_freqs.weight", .f = *f, .n = n, .vec = 1};
        ++*k;
    } else if (s == VKF_OK) { /* the loader checked both lists */
        static const char *const keys[2] = {"long_factor", "short_factor"};
        static const char *const names[2] = {"rope_factors_long.weight",
                                             "rope_factors_short.weight"};
        for (int i = 0; i < 2 && s == VKF_OK; i++) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(rs, keys[i]);
            if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) {
                s = vkf_error(VKF_ERROR_FORMAT,
                              "%s: rope_scaling.%s must be a list of %lld numbers", path, keys[i],
                              (long long)n);
                break;
            }
            int64_t j = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, a) {
                if (!cJSON_IsNumber(e)) {
                    s = vkf_error(VKF_ERROR_FORMAT, "%s: rope_scaling.%s[%lld] must be a number",
                                  path, keys[i], (long long)j);
                    break;
                }
                (*f)[i * n + j++] = (float)e->valuedouble;
            }
            if (s != VKF_OK) break;
            hq_tensor *t = &list[(*k)++];
            *t = (hq_tensor){.f = *f + i * n, .n = n, .vec = 1};
            snprintf(t->name, sizeof t->name, "%s", names[i]);
        }
    }
    return s;
}

static vkf_status hq_write(const vkf_model *m, const char *dir, const char *out_path) {
    const vkf_arch_desc *a = m->desc;
    size_t cap = (size_t)m->hp.n_layer * VKF_T_LAYER_COUNT + VKF_T_COUNT + 6, k = 0;
    hq_tensor *list = calloc(cap, sizeof *list);
    float *factors = NULL;
    void *buf = NULL;
    size_t buf_cap = 0;
    hq h = {.m = m};
    vkf_json_config *cfg = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    vkf_status s = list ? vkf_json_config_load(path, &cfg)
                        : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", dir);
    /* every tensor the descriptor names that the model holds, under its GGUF name */
    vkf_arch_tensor_names gg;
    vkf_arch_tensor_names_get(a, VKF_ARCH_GGUF, &gg);
    for (int l = -1; l < m->hp.n_layer && s == VKF_OK; l++) {
        int t0 = l < 0 ? VKF_T_TOK_EMBD : 0, t1 = l < 0 ? VKF_T_COUNT : VKF_T_LAYER_COUNT;
        for (int t = t0; t < t1; t++) {
            const char *nm = gg.name[t];
            if (!nm || t == VKF_T_ROPE_FREQS || t == VKF_T_ROPE_SHORT || t == VKF_T_ROPE_LONG)
                continue;
            const char *base = l < 0 ? (const char *)&m->w : (const char *)&m->w.dec[l];
            const vkf_tensor *x = (const vkf_tensor *)(base + vkf_arch_slots[t].offset);
            if (!vkf_tensor_present(x)) continue;
            if (t == VKF_T_OUTPUT && x->buf == m->w.tok_embd.buf &&
                x->offset == m->w.tok_embd.offset)
                continue; /* tied: the GGUF has no output.weight */
            hq_tensor *e = &list[k++];
            e->t = x;
            e->vec = vkf_arch_slots[t].vector;
            snprintf(e->name, sizeof e->name, nm, l);
        }
    }
    /* a cross-encoder's classifier head under llama.cpp's names (BertPooler's dense layer as
     * cls, the classifier as cls.output: llama.cpp computes HF's head from them; its own
     * converter drops the pooler) */
    static const struct {
        const char *name;
        size_t offset;
        int vec;
    } head[4] = {{"cls.weight", offsetof(vkf_model_w, cls_w), 0},
                 {"cls.bias", offsetof(vkf_model_w, cls_b), 1},
                 {"cls.output.weight", offsetof(vkf_model_w, cls_out_w), 0},
                 {"cls.output.bias", offsetof(vkf_model_w, cls_out_b), 1}};
    for (int i = 0; i < 4 && s == VKF_OK && a->encoder; i++) {
        const vkf_tensor *x = (const vkf_tensor *)((const char *)&m->w + head[i].offset);
        if (!vkf_tensor_present(x)) continue;
        hq_tensor *e = &list[k++];
        e->t = x;
        e->vec = head[i].vec;
        snprintf(e->name, sizeof e->name, "%s", head[i].name);
    }
    if (s == VKF_OK) s = hq_rope(m, path, vkf_json_config_root(cfg), list, &k, &factors);
    if (s == VKF_OK) s = vkf_gguf_writer_create(&h.w);
    int tok_written = 0;
    if (s == VKF_OK && a->encoder) { /* bert: its own keys and WordPiece vocabulary */
        s = vkf_hf_encoder_keys(h.w, m, dir);
    } else {
        if (s == VKF_OK) s = hq_keys(&h, dir, vkf_json_config_root(cfg));
        if (s == VKF_OK) s = vkf_hf_tokenizer_keys(h.w, dir, m->hp.n_vocab, &tok_written);
    }
    for (size_t i = 0; i < k && s == VKF_OK; i++) {
        const vkf_tensor *x = list[i].t;
        if (!x) {
            int64_t ne[1] = {list[i].n};
            s = vkf_gguf_writer_add_tensor(h.w, list[i].name, 0, 1, ne, (uint64_t)list[i].n * 4);
            continue;
        }
        const vkf_wtype *wt = vkf_wtype_of(x->dtype);
        if (!wt || wt->gguf_type < 0 ||
            (x->dtype != VKF_DTYPE_F32 && x->dtype != VKF_DTYPE_F16 &&
             x->dtype != VKF_DTYPE_BF16)) {
            s = vkf_error(VKF_ERROR_UNSUPPORTED, "%s: tensor %s is %s: expected F32, F16 or BF16",
                          dir, list[i].name, vkf_dtype_name(x->dtype));
            break;
        }
        int64_t ne[2] = {x->cols, x->rows};
        s = vkf_gguf_writer_add_tensor(h.w, list[i].name, (uint32_t)wt->gguf_type,
                                       list[i].vec ? 1 : 2, ne, (uint64_t)vkf_tensor_nbytes(x));
    }
    if (s == VKF_OK) s = vkf_gguf_writer_begin(h.w, out_path);
    for (size_t i = 0; i < k && s == VKF_OK; i++) {
        const vkf_tensor *x = list[i].t;
        if (!x) {
            s = vkf_gguf_writer_write(h.w, list[i].f, (uint64_t)list[i].n * 4);
            continue;
        }
        size_t nb = vkf_tensor_nbytes(x);
        if (nb > buf_cap) {
            void *p = realloc(buf, nb);
            if (!p) {
                s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: tensor %s: out of memory", dir,
                              list[i].name);
                break;
            }
            buf = p;
            buf_cap = nb;
        }
        s = vkf_tensor_read(m->be, x, buf);
        if (s == VKF_OK) s = vkf_gguf_writer_write(h.w, buf, nb);
    }
    if (s == VKF_OK) s = vkf_gguf_writer_finish(h.w);
    vkf_gguf_writer_free(h.w);
    vkf_json_config_free(cfg);
    free(buf);
    free(factors);
    free(list);
    return s;
}

vkf_status vkf_hf_to_gguf(const char *dir, const char *out_path) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    vkf_json_config *cfg;
    VKF_TRY(vkf_json_config_load(path, &cfg));
    const char *mt;
    vkf_status s = vkf_json_config_get_str(cfg, "model_type", "", &mt);
    int gpt2 = s == VKF_OK && strcmp(mt, "gpt2") == 0;
    vkf_json_config_free(cfg);
    VKF_TRY(s);
    if (gpt2) return vkf_hf_gpt2_to_gguf(dir, out_path);

    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    VKF_TRY(vkf_context_create(&cp, &ctx));
    vkf_model_params mp = {.path = dir, .n_ctx = 1}; /* positions are not used here */
    s = vkf_model_load(ctx, &mp, &m);
    if (s == VKF_OK &&
        (m->arch == VKF_ARCH_TRANSFORMER || !m->desc || strcmp(m->format, "safetensors")))
        s = vkf_error(VKF_ERROR_UNSUPPORTED,
                      "%s: quantize reads Hugging Face directories of the llama family, gpt2 and "
                      "bert",
                      dir);
    if (s == VKF_OK) s = hq_write(m, dir, out_path);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return s;
}
