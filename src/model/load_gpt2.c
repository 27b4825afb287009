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

extern const vkf_arch_desc vkf_arch_gpt2;

typedef struct g2_ctx {
    vkf_model *m;
    const vkf_safetensors *st;
    const char *prefix; /* "" or "transformer." */
    int tied;           /* tie_word_embeddings */
} g2_ctx;

/* One slot of the descriptor's HF names: Conv1D matrices stored [in, out] (transposed at
 * load), vectors [in]; wpe as an F32 table for ADD_POS; lm_head.weight outside the prefix and
 * only when the embeddings are not tied. */
static vkf_status g2_get(void *user, vkf_arch_t slot, const char *name, vkf_tensor *t,
                         int optional) {
    g2_ctx *c = user;
    vkf_model *m = c->m;
    char full[256];
    snprintf(full, sizeof full, "%s%s", slot == VKF_T_OUTPUT ? "" : c->prefix, name);
    if (slot == VKF_T_OUTPUT) {
        const vkf_st_tensor *head = vkf_safetensors_find(c->st, full);
        if (c->tied) return VKF_OK;
        if (!head)
            return vkf_error(VKF_ERROR_FORMAT, "%s: tie_word_embeddings is false but %s is missing",
                             vkf_safetensors_path(c->st), full);
        optional = 0;
    }
    if (optional && !vkf_safetensors_find(c->st, full)) return VKF_OK;
    int64_t ne0, ne1;
    vkf_arch_slot_shape(m, slot, &ne0, &ne1);
    const vkf_st_tensor *s;
    if (vkf_arch_slots[slot].vector) {
        int64_t dims[1] = {ne0};
        VKF_TRY(vkf_safetensors_get(c->st, full, -1, 1, dims, &s));
        return vkf_model_upload(m, t, full, VKF_W_VECTOR, s->dtype, 1, ne0, s->data);
    }
    int conv = slot != VKF_T_TOK_EMBD && slot != VKF_T_POS_EMBD && slot != VKF_T_OUTPUT;
    int64_t dims[2] = {conv ? ne0 : ne1, conv ? ne1 : ne0};
    VKF_TRY(vkf_safetensors_get(c->st, full, -1, 2, dims, &s));
    if (slot == VKF_T_POS_EMBD) { /* ADD_POS reads an F32 table: converted as a vector, viewed as
                                     [n_ctx_train, d] */
        VKF_TRY(vkf_model_upload(m, t, full, VKF_W_VECTOR, s->dtype, ne1, ne0, s->data));
        t->rows = ne1;
        t->cols = t->row_stride = ne0;
        return VKF_OK;
    }
    if (conv) return vkf_model_upload(m, t, full, VKF_W_CONV1D, s->dtype, ne0, ne1, s->data);
    return vkf_model_upload(m, t, full, VKF_W_MATRIX, s->dtype, ne1, ne0, s->data);
}

/* ------------------------------------------------------------------ config */

/* HF activation names -> our unary ops. */
static vkf_status g2_act(const char *path, const char *name, int32_t *act) {
    static const struct {
        const char *name;
        vkf_unary act;
    } table[] = {
        {"gelu_new", VKF_UNARY_GELU_TANH},  {"gelu_pytorch_tanh", VKF_UNARY_GELU_TANH},
        {"gelu_fast", VKF_UNARY_GELU_TANH}, {"gelu", VKF_UNARY_GELU_ERF},
        {"relu", VKF_UNARY_RELU},           {"silu", VKF_UNARY_SILU},
        {"swish", VKF_UNARY_SILU},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) {
            *act = table[i].act;
            return VKF_OK;
        }
    return vkf_error(VKF_ERROR_UNSUPPORTED,
                     "%s: activation_function \"%s\" is not supported (gelu_new, gelu, relu, silu)",
                     path, name);
}

static vkf_status g2_config(vkf_model *m, const vkf_json_config *c, int *tied) {
    const char *path = vkf_json_config_path(c);
    vkf_hparams *hp = &m->hp;
    VKF_TRY(
        vkf_json_config_int32(c, "n_embd", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX, &hp->d_model));
    VKF_TRY(
        vkf_json_config_int32(c, "n_layer", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX, &hp->n_layer));
    VKF_TRY(vkf_json_config_int32(c, "n_head", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX, &hp->n_head));
    VKF_TRY(vkf_json_config_int32(c, "vocab_size", NULL, VKF_JSON_REQUIRED, 0, INT32_MAX,
                                  &hp->n_vocab));
    VKF_TRY(vkf_json_config_int32(c, "n_positions", "n_ctx", VKF_JSON_REQUIRED, 0, INT32_MAX,
                                  &hp->n_ctx_train));
    VKF_TRY(vkf_json_config_int32(c, "n_inner", NULL, 4 * (int64_t)hp->d_model, 0, INT32_MAX,
                                  &hp->n_ff)); /* null: 4 n_embd */
    if (hp->d_model <= 0 || hp->n_head <= 0 || hp->n_layer <= 0 || hp->n_vocab <= 0 ||
        hp->n_ctx_train <= 0 || hp->n_ff <= 0)
        return vkf_error(
            VKF_ERROR_FORMAT,
            "%s: n_embd, n_head, n_layer, vocab_size, n_positions and n_inner must be > 0", path);
    if (hp->d_model % hp->n_head)
        return vkf_error(VKF_ERROR_FORMAT, "%s: n_head %d does not divide n_embd %d", path,
                         hp->n_head, hp->d_model);
    if (hp->n_ctx_train > VKF_MODEL_MAX_CTX)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: n_positions %d exceeds the %d tokens this engine supports", path,
                         hp->n_ctx_train, VKF_MODEL_MAX_CTX);
    if (hp->d_model / hp->n_head > VKF_MAX_HEAD_DIM)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: head dimension %d exceeds %d", path,
                         hp->d_model / hp->n_head, VKF_MAX_HEAD_DIM);
    hp->n_src_vocab = hp->n_vocab;
    hp->n_kv_head = hp->n_head;
    hp->head_dim = hp->d_model / hp->n_head;
    double eps;
    VKF_TRY(vkf_json_config_get_float(c, "layer_norm_epsilon", 1e-5, &eps));
    if (!(eps > 0) || !((float)eps > 0))
        return vkf_error(VKF_ERROR_FORMAT, "%s: layer_norm_epsilon %g must be > 0", path, eps);
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
    if (s == VKF_OK) s = vkf_model_set_ctx(m, 0); /* learned positions */
    const char *tf = NULL;
    if (s == VKF_OK) s = vkf_json_config_get_str(cfg, "tokenizer", NULL, &tf);
    if (s == VKF_OK && tf) snprintf(tok_file, sizeof tok_file, "%s", tf);
    vkf_json_config_free(cfg);
    VKF_TRY(s);
    m->arch = VKF_ARCH_DECODER;
    m->desc = &vkf_arch_gpt2;
    m->hp.emb_scale = 1.0f;
    snprintf(m->format, sizeof m->format, "safetensors");

    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    vkf_safetensors *st;
    VKF_TRY(vkf_safetensors_open(path, &st));
    size_t n_tensors = vkf_safetensors_count(st);
    if ((size_t)m->hp.n_layer > n_tensors) { /* a corrupt count would size the layer table first */
        vkf_safetensors_close(st);
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s/config.json: n_layer %d exceeds the %zu tensors of %s", dir,
                         m->hp.n_layer, n_tensors, path);
    }
    g2_ctx c = {m, st, "", tied};
    if (!vkf_safetensors_find(st, "wte.weight") &&
        vkf_safetensors_find(st, "transformer.wte.weight"))
        c.prefix = "transformer.";
    vkf_arch_tensor_names names;
    vkf_arch_tensor_names_get(m->desc, VKF_ARCH_HF, &names);
    s = vkf_model_load_slots(m, &names, g2_get, &c);
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
