/* Loader for Hugging Face GPT-2 checkpoints: config.json (model_type "gpt2") + model.safetensors
 * with or without the "transformer." prefix. Conv1D weights are stored [in, out] (y = x W + b)
 * and are transposed at load; attn.bias / attn.masked_bias buffers (the causal mask) are ignored:
 * ATTENTION is causal by itself. The LM head is tied to wte unless lm_head.weight is present. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/json_config.h"
#include "io/safetensors.h"
#include "model/model.h"

typedef struct g2_ctx {
    vkf_model *m;
    const vkf_safetensors *st;
    const char *prefix; /* "" or "transformer." */
} g2_ctx;

/* kind VECTOR: [d0]; MATRIX: [d0, d1] stored as is; CONV1D: stored [d0 = in, d1 = out]. */
static vkf_status g2_get(g2_ctx *c, vkf_tensor *t, const char *name, vkf_wkind kind, int64_t d0, int64_t d1) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", c->prefix, name);
    const vkf_st_tensor *s;
    int64_t dims[2] = {d0, d1};
    int rank = kind == VKF_W_VECTOR ? 1 : 2;
    VKF_TRY(vkf_safetensors_get(c->st, full, -1, rank, dims, &s));
    return vkf_model_upload(c->m, t, full, kind, s->dtype, rank == 1 ? 1 : d0, rank == 1 ? d0 : d1, s->data);
}

/* ------------------------------------------------------------------ config */

static vkf_status g2_int(const vkf_json_config *c, const char *key, const char *alt, int64_t def, int32_t *out) {
    int64_t v;
    if (vkf_json_config_has(c, key) || !alt) {
        if (def < 0)
            VKF_TRY(vkf_json_config_require_int(c, key, &v));
        else
            VKF_TRY(vkf_json_config_get_int(c, key, def, &v));
    } else if (def < 0) {
        VKF_TRY(vkf_json_config_require_int(c, alt, &v));
    } else {
        VKF_TRY(vkf_json_config_get_int(c, alt, def, &v));
    }
    if (v < 0 || v > INT32_MAX)
        return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: %lld is out of range", vkf_json_config_path(c), key, (long long)v);
    *out = (int32_t)v;
    return VKF_OK;
}

/* HF activation names -> our unary ops. */
static vkf_status g2_act(const char *path, const char *name, int32_t *act) {
    static const struct {
        const char *name;
        vkf_unary act;
    } table[] = {
        {"gelu_new", VKF_UNARY_GELU_TANH},          {"gelu_pytorch_tanh", VKF_UNARY_GELU_TANH},
        {"gelu_fast", VKF_UNARY_GELU_TANH},         {"gelu", VKF_UNARY_GELU_ERF},
        {"relu", VKF_UNARY_RELU},                   {"silu", VKF_UNARY_SILU},
        {"swish", VKF_UNARY_SILU},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) {
            *act = table[i].act;
            return VKF_OK;
        }
    return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: activation_function \"%s\" is not supported (gelu_new, gelu, relu, silu)", path, name);
}

static vkf_status g2_config(vkf_model *m, const vkf_json_config *c, int *tied) {
    const char *path = vkf_json_config_path(c);
    vkf_hparams *hp = &m->hp;
    VKF_TRY(g2_int(c, "n_embd", NULL, -1, &hp->d_model));
    VKF_TRY(g2_int(c, "n_layer", NULL, -1, &hp->n_layer));
    VKF_TRY(g2_int(c, "n_head", NULL, -1, &hp->n_head));
    VKF_TRY(g2_int(c, "vocab_size", NULL, -1, &hp->n_vocab));
    VKF_TRY(g2_int(c, "n_positions", "n_ctx", -1, &hp->n_ctx));
    VKF_TRY(g2_int(c, "n_inner", NULL, 4 * (int64_t)hp->d_model, &hp->n_ff)); /* null: 4 n_embd */
    if (hp->d_model <= 0 || hp->n_head <= 0 || hp->n_layer <= 0 || hp->n_vocab <= 0 || hp->n_ctx <= 0 || hp->n_ff <= 0)
        return vkf_error(VKF_ERROR_FORMAT, "%s: n_embd, n_head, n_layer, vocab_size, n_positions and n_inner must be > 0", path);
    if (hp->d_model % hp->n_head)
        return vkf_error(VKF_ERROR_FORMAT, "%s: n_head %d does not divide n_embd %d", path, hp->n_head, hp->d_model);
    if (hp->n_ctx > VKF_MODEL_MAX_CTX)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: n_positions %d exceeds the %d tokens this engine supports", path, hp->n_ctx,
                         VKF_MODEL_MAX_CTX);
    if (hp->d_model / hp->n_head > VKF_MAX_HEAD_DIM)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: head dimension %d exceeds %d", path, hp->d_model / hp->n_head, VKF_MAX_HEAD_DIM);
    hp->n_src_vocab = hp->n_vocab;
    hp->n_kv_head = hp->n_head;
    hp->head_dim = hp->d_model / hp->n_head;
    double eps;
    VKF_TRY(vkf_json_config_get_float(c, "layer_norm_epsilon", 1e-5, &eps));
    if (!(eps > 0) || !((float)eps > 0)) return vkf_error(VKF_ERROR_FORMAT, "%s: layer_norm_epsilon %g must be > 0", path, eps);
    hp->eps = (float)eps;
    const char *act;
    VKF_TRY(vkf_json_config_get_str(c, "activation_function", "gelu_new", &act));
    VKF_TRY(g2_act(path, act, &hp->act));
    int scale_attn, by_layer;
    VKF_TRY(vkf_json_config_get_bool(c, "scale_attn_weights", 1, &scale_attn));
    VKF_TRY(vkf_json_config_get_bool(c, "scale_attn_by_inverse_layer_idx", 0, &by_layer));
    hp->attn_scale = scale_attn ? (float)(1.0 / sqrt((double)hp->head_dim)) : 1.0f;
    hp->attn_scale_by_layer = by_layer;
    int64_t bos, eos;
    VKF_TRY(vkf_json_config_get_int(c, "bos_token_id", -1, &bos));
    VKF_TRY(vkf_json_config_get_int(c, "eos_token_id", -1, &eos));
    hp->bos_id = bos >= 0 && bos < hp->n_vocab ? (int32_t)bos : -1;
    hp->eos_id = eos >= 0 && eos < hp->n_vocab ? (int32_t)eos : -1;
    int64_t pad;
    VKF_TRY(vkf_json_config_get_int(c, "pad_token_id", -1, &pad));
    hp->pad_id = pad >= 0 && pad < hp->n_vocab ? (int32_t)pad : -1;
    /* GPT-2 prompts are not prefixed with <|endoftext|> (llama.cpp agrees); a checkpoint trained
     * with BOS says so with add_bos_token (absent: the tokenizer decides, -1) */
    int add_bos;
    VKF_TRY(vkf_json_config_get_bool(c, "add_bos_token", -1, &add_bos));
    hp->add_bos = add_bos;
    VKF_TRY(vkf_json_config_get_bool(c, "tie_word_embeddings", 1, tied));
    /* attn_pdrop / embd_pdrop / resid_pdrop are not read: dropout is the identity at inference. */
    return VKF_OK;
}

/* ------------------------------------------------------------------ weights */

static vkf_status g2_weights(g2_ctx *c, int tied) {
    vkf_model *m = c->m;
    vkf_hparams *hp = &m->hp;
    int64_t d = hp->d_model, ff = hp->n_ff;
    VKF_TRY(g2_get(c, &m->w.tok_embd, "wte.weight", VKF_W_MATRIX, hp->n_vocab, d));
    /* positions go through ADD_POS, which reads an F32 table: converted as a vector, then
     * viewed as [n_ctx, d] */
    {
        char full[256];
        snprintf(full, sizeof full, "%swpe.weight", c->prefix);
        const vkf_st_tensor *s;
        int64_t dims[2] = {hp->n_ctx, d};
        VKF_TRY(vkf_safetensors_get(c->st, full, -1, 2, dims, &s));
        VKF_TRY(vkf_model_upload(m, &m->w.pos_embd, full, VKF_W_VECTOR, s->dtype, hp->n_ctx, d, s->data));
    }
    m->w.pos_embd.rows = hp->n_ctx;
    m->w.pos_embd.cols = m->w.pos_embd.row_stride = d;
    m->w.dec = calloc((size_t)hp->n_layer, sizeof *m->w.dec);
    if (!m->w.dec) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
    char name[128];
    for (int l = 0; l < hp->n_layer; l++) {
        vkf_layer_w *L = &m->w.dec[l];
#define G2(field, suffix, kind, a, b)                                                              \
    do {                                                                                           \
        snprintf(name, sizeof name, "h.%d.%s", l, suffix);                                         \
        VKF_TRY(g2_get(c, &L->field, name, kind, a, b));                                           \
    } while (0)
        G2(norm1_w, "ln_1.weight", VKF_W_VECTOR, d, 0);
        G2(norm1_b, "ln_1.bias", VKF_W_VECTOR, d, 0);
        G2(self.wqkv, "attn.c_attn.weight", VKF_W_CONV1D, d, 3 * d);
        G2(self.bqkv, "attn.c_attn.bias", VKF_W_VECTOR, 3 * d, 0);
        G2(self.wo, "attn.c_proj.weight", VKF_W_CONV1D, d, d);
        G2(self.bo, "attn.c_proj.bias", VKF_W_VECTOR, d, 0);
        G2(norm2_w, "ln_2.weight", VKF_W_VECTOR, d, 0);
        G2(norm2_b, "ln_2.bias", VKF_W_VECTOR, d, 0);
        G2(w_up, "mlp.c_fc.weight", VKF_W_CONV1D, d, ff);
        G2(b_up, "mlp.c_fc.bias", VKF_W_VECTOR, ff, 0);
        G2(w_down, "mlp.c_proj.weight", VKF_W_CONV1D, ff, d);
        G2(b_down, "mlp.c_proj.bias", VKF_W_VECTOR, d, 0);
#undef G2
    }
    m->wtype = m->w.dec[0].self.wqkv.dtype;
    VKF_TRY(g2_get(c, &m->w.out_norm_w, "ln_f.weight", VKF_W_VECTOR, d, 0));
    VKF_TRY(g2_get(c, &m->w.out_norm_b, "ln_f.bias", VKF_W_VECTOR, d, 0));
    /* lm_head.weight is outside the "transformer." prefix in GPT2LMHeadModel */
    const vkf_st_tensor *head = vkf_safetensors_find(c->st, "lm_head.weight");
    if (!head && !tied)
        return vkf_error(VKF_ERROR_FORMAT, "%s: tie_word_embeddings is false but lm_head.weight is missing", vkf_safetensors_path(c->st));
    if (head && !tied) {
        int64_t dims[2] = {hp->n_vocab, d};
        VKF_TRY(vkf_safetensors_get(c->st, "lm_head.weight", -1, 2, dims, &head));
        VKF_TRY(vkf_model_upload(m, &m->w.output, "lm_head.weight", VKF_W_MATRIX, head->dtype, hp->n_vocab, d, head->data));
    } else {
        m->w.output = m->w.tok_embd; /* tied: the same buffer */
    }
    return VKF_OK;
}

static int g2_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

vkf_status vkf_load_gpt2_hf(vkf_model *m, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    vkf_json_config *cfg;
    VKF_TRY(vkf_json_config_load(path, &cfg));
    int tied = 1;
    char tok_file[256] = "";
    vkf_status s = g2_config(m, cfg, &tied);
    const char *tf = NULL;
    if (s == VKF_OK) s = vkf_json_config_get_str(cfg, "tokenizer", NULL, &tf);
    if (s == VKF_OK && tf) snprintf(tok_file, sizeof tok_file, "%s", tf);
    vkf_json_config_free(cfg);
    VKF_TRY(s);
    m->arch = VKF_ARCH_GPT2;
    snprintf(m->format, sizeof m->format, "safetensors");

    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    vkf_safetensors *st;
    VKF_TRY(vkf_safetensors_open(path, &st));
    size_t n_tensors = vkf_safetensors_count(st);
    if ((size_t)m->hp.n_layer > n_tensors) { /* a corrupt count would size the layer table first */
        vkf_safetensors_close(st);
        return vkf_error(VKF_ERROR_FORMAT, "%s/config.json: n_layer %d exceeds the %zu tensors of %s", dir, m->hp.n_layer,
                         n_tensors, path);
    }
    g2_ctx c = {m, st, ""};
    if (!vkf_safetensors_find(st, "wte.weight") && vkf_safetensors_find(st, "transformer.wte.weight"))
        c.prefix = "transformer.";
    s = g2_weights(&c, tied);
    vkf_safetensors_close(st);
    VKF_TRY(s);

    /* tokenizer: config "tokenizer" (a file in the directory), else vocab.json + merges.txt
     * (byte-level BPE) or char_vocab.json */
    if (tok_file[0]) {
        snprintf(path, sizeof path, "%s/%s", dir, tok_file);
        return vkf_model_tokenizer_load(path, &m->tok);
    }
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    char alt[1200];
    snprintf(alt, sizeof alt, "%s/char_vocab.json", dir);
    if (g2_exists(path) || g2_exists(alt)) VKF_TRY(vkf_model_tokenizer_load(dir, &m->tok));
    return VKF_OK;
}
