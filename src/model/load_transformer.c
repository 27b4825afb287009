/* Loader for the encoder-decoder Transformer ("Attention Is All You Need") in the
 * seed-transformer layout: config.json + model.safetensors with PyTorch nn.Transformer
 * state_dict names (see the seed-transformer sets' README.md, written by
 * tools/refs/make_seed_transformer.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "graph/ops.h"
#include "io/json_config.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

/* ------------------------------------------------------------------ tensors */

/* Loads `name` with its expected shape: MATRIX [d0, d1] or VECTOR [d0]. */
static vkf_status tf_get(vkf_model *m, const vkf_safetensors *st, vkf_tensor *t, const char *name,
                         vkf_wkind kind, int64_t d0, int64_t d1) {
    const vkf_st_tensor *s;
    int64_t dims[2] = {d0, d1};
    int rank = kind == VKF_W_VECTOR ? 1 : 2;
    VKF_TRY(vkf_safetensors_get(st, name, -1, rank, dims, &s));
    return vkf_model_upload(m, t, name, kind, s->dtype, rank == 1 ? 1 : d0, rank == 1 ? d0 : d1,
                            s->data);
}

/* One nn.MultiheadAttention: in_proj (fused Q|K|V rows) and out_proj. */
static vkf_status tf_attn(vkf_model *m, const vkf_safetensors *st, vkf_attn_w *a,
                          const char *prefix, int cross) {
    int64_t d = m->hp.d_model;
    char name[256];
    snprintf(name, sizeof name, "%s.in_proj_weight", prefix);
    VKF_TRY(tf_get(m, st, &a->wqkv, name, VKF_W_MATRIX, 3 * d, d));
    snprintf(name, sizeof name, "%s.in_proj_bias", prefix);
    VKF_TRY(tf_get(m, st, &a->bqkv, name, VKF_W_VECTOR, 3 * d, 0));
    snprintf(name, sizeof name, "%s.out_proj.weight", prefix);
    VKF_TRY(tf_get(m, st, &a->wo, name, VKF_W_MATRIX, d, d));
    snprintf(name, sizeof name, "%s.out_proj.bias", prefix);
    VKF_TRY(tf_get(m, st, &a->bo, name, VKF_W_VECTOR, d, 0));
    /* rows [0, d) of in_proj are Q, [d, 2d) K, [2d, 3d) V */
    a->wq = vkf_tensor_view(&a->wqkv, 0, d, 0, d);
    a->bq = vkf_tensor_view(&a->bqkv, 0, 1, 0, d);
    a->wk = vkf_tensor_view(&a->wqkv, d, d, 0, d);
    a->bk = vkf_tensor_view(&a->bqkv, 0, 1, d, d);
    a->wv = vkf_tensor_view(&a->wqkv, 2 * d, d, 0, d);
    a->bv = vkf_tensor_view(&a->bqkv, 0, 1, 2 * d, d);
    if (cross) { /* K and V of the memory are one [2d, d] matmul, computed once per source */
        a->wkv = vkf_tensor_view(&a->wqkv, d, 2 * d, 0, d);
        a->bkv = vkf_tensor_view(&a->bqkv, 0, 1, d, 2 * d);
    }
    return VKF_OK;
}

static vkf_status tf_norm(vkf_model *m, const vkf_safetensors *st, vkf_tensor *w, vkf_tensor *b,
                          const char *prefix) {
    char name[256];
    snprintf(name, sizeof name, "%s.weight", prefix);
    VKF_TRY(tf_get(m, st, w, name, VKF_W_VECTOR, m->hp.d_model, 0));
    snprintf(name, sizeof name, "%s.bias", prefix);
    return tf_get(m, st, b, name, VKF_W_VECTOR, m->hp.d_model, 0);
}

static vkf_status tf_layer(vkf_model *m, const vkf_safetensors *st, vkf_layer_w *L,
                           const char *prefix, int decoder) {
    int64_t d = m->hp.d_model, ff = m->hp.n_ff;
    char name[256];
    snprintf(name, sizeof name, "%s.self_attn", prefix);
    VKF_TRY(tf_attn(m, st, &L->self, name, 0));
    if (decoder) {
        snprintf(name, sizeof name, "%s.multihead_attn", prefix);
        VKF_TRY(tf_attn(m, st, &L->cross, name, 1));
    }
    snprintf(name, sizeof name, "%s.linear1.weight", prefix);
    VKF_TRY(tf_get(m, st, &L->w_up, name, VKF_W_MATRIX, ff, d));
    snprintf(name, sizeof name, "%s.linear1.bias", prefix);
    VKF_TRY(tf_get(m, st, &L->b_up, name, VKF_W_VECTOR, ff, 0));
    snprintf(name, sizeof name, "%s.linear2.weight", prefix);
    VKF_TRY(tf_get(m, st, &L->w_down, name, VKF_W_MATRIX, d, ff));
    snprintf(name, sizeof name, "%s.linear2.bias", prefix);
    VKF_TRY(tf_get(m, st, &L->b_down, name, VKF_W_VECTOR, d, 0));
    snprintf(name, sizeof name, "%s.norm1", prefix);
    VKF_TRY(tf_norm(m, st, &L->norm1_w, &L->norm1_b, name));
    snprintf(name, sizeof name, "%s.norm2", prefix);
    VKF_TRY(tf_norm(m, st, &L->norm2_w, &L->norm2_b, name));
    if (decoder) {
        snprintf(name, sizeof name, "%s.norm3", prefix);
        VKF_TRY(tf_norm(m, st, &L->norm3_w, &L->norm3_b, name));
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ config */

static vkf_status tf_config(vkf_model *m, const vkf_json_config *c) {
    const char *path = vkf_json_config_path(c);
    vkf_hparams *hp = &m->hp;
    VKF_TRY(vkf_json_config_int32(c, "d_model", NULL, VKF_JSON_REQUIRED, 1, 1 << 16, &hp->d_model));
    VKF_TRY(vkf_json_config_int32(c, "nhead", NULL, VKF_JSON_REQUIRED, 1, 1 << 12, &hp->n_head));
    VKF_TRY(vkf_json_config_int32(c, "num_encoder_layers", NULL, VKF_JSON_REQUIRED, 1, 1024,
                                  &hp->n_enc_layer));
    VKF_TRY(vkf_json_config_int32(c, "num_decoder_layers", NULL, VKF_JSON_REQUIRED, 1, 1024,
                                  &hp->n_layer));
    VKF_TRY(vkf_json_config_int32(c, "dim_feedforward", NULL, VKF_JSON_REQUIRED, 1, 1 << 20,
                                  &hp->n_ff));
    VKF_TRY(vkf_json_config_int32(c, "src_vocab_size", NULL, VKF_JSON_REQUIRED, 1, INT32_MAX,
                                  &hp->n_src_vocab));
    VKF_TRY(vkf_json_config_int32(c, "tgt_vocab_size", NULL, VKF_JSON_REQUIRED, 1, INT32_MAX,
                                  &hp->n_vocab));
    VKF_TRY(
        vkf_json_config_int32(c, "max_len", NULL, VKF_JSON_REQUIRED, 1, 1 << 20, &hp->n_ctx_train));
    if (hp->d_model % hp->n_head)
        return vkf_error(VKF_ERROR_FORMAT, "%s: nhead %d does not divide d_model %d", path,
                         hp->n_head, hp->d_model);
    hp->n_kv_head = hp->n_head;
    hp->head_dim = hp->d_model / hp->n_head;
    if (hp->head_dim > VKF_MAX_HEAD_DIM)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: head dimension %d exceeds %d", path,
                         hp->head_dim, VKF_MAX_HEAD_DIM);
    hp->attn_scale = (float)(1.0 / sqrt((double)hp->head_dim));

    const char *act;
    VKF_TRY(vkf_json_config_get_str(c, "activation", "relu", &act));
    if (strcmp(act, "relu") == 0)
        hp->act = VKF_UNARY_RELU;
    else if (strcmp(act, "gelu") == 0) /* PyTorch's F.gelu default: the exact erf form */
        hp->act = VKF_UNARY_GELU_ERF;
    else
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: activation \"%s\": expected \"relu\" or \"gelu\"", path, act);

    double eps;
    VKF_TRY(vkf_json_config_get_float(c, "layer_norm_eps", 1e-5, &eps));
    if (!(eps > 0))
        return vkf_error(VKF_ERROR_FORMAT, "%s: layer_norm_eps %g must be > 0", path, eps);
    hp->eps = (float)eps;
    int norm_first;
    VKF_TRY(vkf_json_config_get_bool(c, "norm_first", 0, &norm_first));
    hp->norm_first = norm_first;

    const char *pe;
    VKF_TRY(vkf_json_config_get_str(c, "positional_encoding", "sinusoidal", &pe));
    if (strcmp(pe, "sinusoidal") != 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: positional_encoding \"%s\": only \"sinusoidal\" is supported", path,
                         pe);
    double scale;
    VKF_TRY(vkf_json_config_get_float(c, "embedding_scale", sqrt((double)hp->d_model), &scale));
    hp->emb_scale = (float)scale; /* float32(sqrt(d)) as the reference multiplies in f32 */

    int64_t pad, bos, eos;
    VKF_TRY(vkf_json_config_get_int(c, "pad_id", 0, &pad));
    VKF_TRY(vkf_json_config_get_int(c, "bos_id", 1, &bos));
    VKF_TRY(vkf_json_config_get_int(c, "eos_id", 2, &eos));
    if (bos < 0 || bos >= hp->n_vocab || eos < 0 || eos >= hp->n_vocab)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: bos_id %lld / eos_id %lld outside the target vocabulary [0, %d)",
                         path, (long long)bos, (long long)eos, hp->n_vocab);
    hp->pad_id = (int32_t)pad;
    hp->bos_id = (int32_t)bos;
    hp->eos_id = (int32_t)eos;
    hp->add_bos = 0; /* the decoder input starts with BOS; sources are fed as tokenized */
    /* "dropout" (and any *_dropout key) is read by nobody on purpose: dropout is the identity
     * at inference time, so a trained model's dropout rate does not change the computation. */
    return VKF_OK;
}

/* ------------------------------------------------------------------ tokenizers */

static int tf_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* dates-transformer style directories carry src_vocab.json / tgt_vocab.json (character
 * vocabularies); the seed fixtures carry none (token ids only). */
static vkf_status tf_tokenizers(vkf_model *m, const char *dir) {
    char p[1200];
    snprintf(p, sizeof p, "%s/src_vocab.json", dir);
    if (tf_exists(p)) VKF_TRY(vkf_model_tokenizer_load(p, &m->src_tok));
    snprintf(p, sizeof p, "%s/tgt_vocab.json", dir);
    if (tf_exists(p)) VKF_TRY(vkf_model_tokenizer_load(p, &m->tok));
    if (m->src_tok && vkf_tokenizer_n_vocab(m->src_tok) > m->hp.n_src_vocab)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s/src_vocab.json: %d tokens, but the model's source vocabulary has %d",
                         dir, vkf_tokenizer_n_vocab(m->src_tok), m->hp.n_src_vocab);
    if (m->tok && vkf_tokenizer_n_vocab(m->tok) > m->hp.n_vocab)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s/tgt_vocab.json: %d tokens, but the model's target vocabulary has %d",
                         dir, vkf_tokenizer_n_vocab(m->tok), m->hp.n_vocab);
    return VKF_OK;
}

/* ------------------------------------------------------------------ load */

static vkf_status tf_weights(vkf_model *m, const vkf_safetensors *st) {
    vkf_hparams *hp = &m->hp;
    int64_t d = hp->d_model;
    VKF_TRY(tf_get(m, st, &m->w.src_embd, "src_embed.weight", VKF_W_MATRIX, hp->n_src_vocab, d));
    VKF_TRY(tf_get(m, st, &m->w.tok_embd, "tgt_embed.weight", VKF_W_MATRIX, hp->n_vocab, d));
    m->wtype = m->w.tok_embd.dtype;
    m->w.enc = calloc((size_t)hp->n_enc_layer, sizeof *m->w.enc);
    m->w.dec = calloc((size_t)hp->n_layer, sizeof *m->w.dec);
    if (!m->w.enc || !m->w.dec)
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
    char prefix[128];
    for (int l = 0; l < hp->n_enc_layer; l++) {
        snprintf(prefix, sizeof prefix, "transformer.encoder.layers.%d", l);
        VKF_TRY(tf_layer(m, st, &m->w.enc[l], prefix, 0));
    }
    for (int l = 0; l < hp->n_layer; l++) {
        snprintf(prefix, sizeof prefix, "transformer.decoder.layers.%d", l);
        VKF_TRY(tf_layer(m, st, &m->w.dec[l], prefix, 1));
    }
    if (hp->n_enc_layer > 0) m->wtype = m->w.enc[0].self.wqkv.dtype;
    VKF_TRY(tf_norm(m, st, &m->w.enc_norm_w, &m->w.enc_norm_b, "transformer.encoder.norm"));
    VKF_TRY(tf_norm(m, st, &m->w.out_norm_w, &m->w.out_norm_b, "transformer.decoder.norm"));
    VKF_TRY(tf_get(m, st, &m->w.output, "generator.weight", VKF_W_MATRIX, hp->n_vocab, d));
    VKF_TRY(tf_get(m, st, &m->w.output_b, "generator.bias", VKF_W_VECTOR, hp->n_vocab, 0));

    /* the sinusoidal table, computed in double (float32 angles drift by 2e-5 at position 300),
     * for every position asked for */
    VKF_TRY(vkf_model_set_ctx(m, 1));
    float *pe = malloc((size_t)hp->n_ctx * (size_t)d * sizeof *pe);
    if (!pe) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
    vkf_sinusoidal_table(pe, hp->n_ctx, (int)d);
    vkf_status s = vkf_model_upload_table(m, &m->w.pos_embd, "sinusoidal_pe", hp->n_ctx, d, pe);
    free(pe);
    return s;
}

vkf_status vkf_load_transformer(vkf_model *m, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    vkf_json_config *c;
    VKF_TRY(vkf_json_config_load(path, &c));
    vkf_status s = tf_config(m, c);
    vkf_json_config_free(c);
    VKF_TRY(s);
    m->arch = VKF_ARCH_TRANSFORMER;
    snprintf(m->format, sizeof m->format, "safetensors");

    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    vkf_safetensors *st;
    VKF_TRY(vkf_safetensors_open(path, &st));
    s = tf_weights(m, st);
    vkf_safetensors_close(st);
    VKF_TRY(s);
    return tf_tokenizers(m, dir);
}
