/* Hugging Face encoder-only directories (BertModel; the model/load_hf.c loader reads the weights
 * through the descriptor): config.json's hyperparameters, and what sentence-transformers adds
 * beside them, as its own loader reads it:
 *   modules.json                the pipeline: Transformer, then Pooling (path of its config),
 *                               then Normalize when the vectors are L2-normalized;
 *   <pooling path>/config.json  pooling_mode_mean_tokens / _cls_token / _lasttoken (or
 *                               "pooling_mode"); max and sqrt-length pooling are refused;
 *   sentence_bert_config.json   max_seq_length: inputs are truncated to it.
 * Without modules.json a BertModel is pooled by the mean, unnormalized (sentence-transformers'
 * default for a plain checkpoint). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "graph/ops.h"
#include "io/json_config.h"
#include "io/mapfile.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

static int file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The pooling module's config: one mode of the ones the graph has. */
static vkf_status enc_pooling(vkf_model *m, const char *path) {
    vkf_json_config *pc;
    VKF_TRY(vkf_json_config_load(path, &pc));
    static const struct {
        const char *key;
        int pooling; /* 0: refused */
    } modes[] = {
        {"pooling_mode_mean_tokens", VKF_POOLING_MEAN}, {"pooling_mode_cls_token", VKF_POOLING_CLS},
        {"pooling_mode_lasttoken", VKF_POOLING_LAST},   {"pooling_mode_max_tokens", 0},
        {"pooling_mode_mean_sqrt_len_tokens", 0},       {"pooling_mode_weightedmean_tokens", 0},
    };
    vkf_status s = VKF_OK;
    int found = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0] && s == VKF_OK; i++) {
        int on = 0;
        s = vkf_json_config_get_bool(pc, modes[i].key, 0, &on);
        if (s != VKF_OK || !on) continue;
        if (!modes[i].pooling || found)
            s = vkf_error(VKF_ERROR_UNSUPPORTED,
                          "%s: %s%s is not supported (one of mean, cls, lasttoken)", path,
                          found ? "more than one pooling mode: " : "", modes[i].key);
        found = 1;
        m->hp.pooling = modes[i].pooling;
    }
    const char *mode = NULL;
    if (s == VKF_OK && !found) s = vkf_json_config_get_str(pc, "pooling_mode", NULL, &mode);
    if (s == VKF_OK && !found) {
        if (mode && !strcmp(mode, "mean"))
            m->hp.pooling = VKF_POOLING_MEAN;
        else if (mode && !strcmp(mode, "cls"))
            m->hp.pooling = VKF_POOLING_CLS;
        else if (mode && !strcmp(mode, "lasttoken"))
            m->hp.pooling = VKF_POOLING_LAST;
        else
            s = vkf_error(VKF_ERROR_UNSUPPORTED,
                          "%s: no pooling mode vkformer has (mean, cls, lasttoken)%s%s", path,
                          mode ? ": pooling_mode " : "", mode ? mode : "");
    }
    vkf_json_config_free(pc);
    return s;
}

/* modules.json: Transformer, Pooling, Normalize; any other module changes the vectors in a way
 * the engine does not reproduce, so it is refused. */
static vkf_status enc_modules(vkf_model *m, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/modules.json", dir);
    if (!file_exists(path)) return VKF_OK;
    vkf_mapfile f = {0};
    VKF_TRY(vkf_mapfile_open(path, &f));
    cJSON *root = cJSON_ParseWithLength(f.data ? (const char *)f.data : "", f.size);
    vkf_mapfile_close(&f);
    const cJSON *e;
    vkf_status s = cJSON_IsArray(root)
                       ? VKF_OK
                       : vkf_error(VKF_ERROR_FORMAT, "%s: expected a JSON list of modules", path);
    cJSON_ArrayForEach(e, root) {
        if (s != VKF_OK) break;
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(e, "type");
        const cJSON *mp = cJSON_GetObjectItemCaseSensitive(e, "path");
        const char *t = cJSON_IsString(ty) ? ty->valuestring : "";
        const char *dot = strrchr(t, '.');
        const char *cls = dot ? dot + 1 : t;
        if (!strcmp(cls, "Transformer")) continue;
        if (!strcmp(cls, "Normalize")) {
            m->hp.normalize = 1;
        } else if (!strcmp(cls, "Pooling")) {
            const char *sub = cJSON_IsString(mp) ? mp->valuestring : "";
            if (strstr(sub, "..") || sub[0] == '/') {
                s = vkf_error(VKF_ERROR_FORMAT, "%s: module path \"%s\" leaves the directory", path,
                              sub);
                break;
            }
            char pc[1400];
            snprintf(pc, sizeof pc, "%s/%s%sconfig.json", dir, sub, sub[0] ? "/" : "");
            s = enc_pooling(m, pc);
        } else {
            s = vkf_error(VKF_ERROR_UNSUPPORTED,
                          "%s: module %s is not supported (Transformer, Pooling, Normalize)", path,
                          t[0] ? t : "(no type)");
        }
    }
    cJSON_Delete(root);
    return s;
}

vkf_status vkf_hf_encoder_config(vkf_model *m, const vkf_json_config *c, const char *dir) {
    vkf_hparams *hp = &m->hp;
    const char *path = vkf_json_config_path(c);
    VKF_TRY(
        vkf_json_config_int32(c, "hidden_size", NULL, VKF_JSON_REQUIRED, 1, 1 << 16, &hp->d_model));
    VKF_TRY(vkf_json_config_int32(c, "num_hidden_layers", NULL, VKF_JSON_REQUIRED, 1, 4096,
                                  &hp->n_layer));
    VKF_TRY(vkf_json_config_int32(c, "num_attention_heads", NULL, VKF_JSON_REQUIRED, 1, 4096,
                                  &hp->n_head));
    VKF_TRY(vkf_json_config_int32(c, "intermediate_size", NULL, VKF_JSON_REQUIRED, 1, 1 << 20,
                                  &hp->n_ff));
    VKF_TRY(
        vkf_json_config_int32(c, "vocab_size", NULL, VKF_JSON_REQUIRED, 1, 1 << 24, &hp->n_vocab));
    VKF_TRY(vkf_json_config_int32(c, "max_position_embeddings", NULL, VKF_JSON_REQUIRED, 1,
                                  VKF_MODEL_MAX_CTX, &hp->n_ctx_train));
    VKF_TRY(vkf_json_config_int32(c, "type_vocab_size", NULL, 2, 0, 1024, &hp->n_types));
    if (hp->d_model % hp->n_head)
        return vkf_error(VKF_ERROR_FORMAT, "%s: %d heads do not divide hidden_size %d", path,
                         hp->n_head, hp->d_model);
    hp->n_kv_head = hp->n_head;
    hp->head_dim = hp->d_model / hp->n_head;
    if (hp->head_dim > VKF_MAX_HEAD_DIM)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: head dimension %d exceeds %d", path,
                         hp->head_dim, VKF_MAX_HEAD_DIM);
    hp->n_src_vocab = hp->n_vocab;
    hp->attn_scale = (float)(1.0 / sqrt((double)hp->head_dim));
    double eps;
    VKF_TRY(vkf_json_config_get_float(c, "layer_norm_eps", 1e-12, &eps));
    if (!(eps > 0))
        return vkf_error(VKF_ERROR_FORMAT, "%s: layer_norm_eps %g must be > 0", path, eps);
    hp->eps = (float)eps;
    const char *act, *pet;
    VKF_TRY(vkf_json_config_get_str(c, "hidden_act", "gelu", &act));
    if (!strcmp(act, "gelu"))
        hp->act = VKF_UNARY_GELU_ERF; /* torch's exact GELU */
    else if (!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh"))
        hp->act = VKF_UNARY_GELU_TANH;
    else if (!strcmp(act, "relu"))
        hp->act = VKF_UNARY_RELU;
    else
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: hidden_act \"%s\" is not supported (gelu, gelu_new, relu)", path,
                         act);
    VKF_TRY(vkf_json_config_get_str(c, "position_embedding_type", "absolute", &pet));
    if (strcmp(pet, "absolute"))
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: position_embedding_type \"%s\" is not supported (absolute)", path,
                         pet);
    hp->bos_id = hp->eos_id = hp->pad_id = -1;
    hp->add_bos = -1; /* the tokenizer's post-processor adds [CLS] ... [SEP] */
    int64_t pad;
    VKF_TRY(vkf_json_config_get_int(c, "pad_token_id", -1, &pad));
    if (pad >= 0 && pad < hp->n_vocab) hp->pad_id = (int32_t)pad;

    /* sentence-transformers: pooling, normalization, the truncation length */
    hp->pooling = VKF_POOLING_MEAN;
    hp->normalize = 0;
    hp->n_seq_max = hp->n_ctx_train;
    VKF_TRY(enc_modules(m, dir));
    char p[1200];
    snprintf(p, sizeof p, "%s/sentence_bert_config.json", dir);
    if (file_exists(p)) {
        vkf_json_config *sb;
        VKF_TRY(vkf_json_config_load(p, &sb));
        int32_t msl = 0;
        vkf_status s =
            vkf_json_config_int32(sb, "max_seq_length", NULL, 0, 0, VKF_MODEL_MAX_CTX, &msl);
        vkf_json_config_free(sb);
        VKF_TRY(s);
        if (msl > 0 && msl < hp->n_seq_max) hp->n_seq_max = msl;
    } else { /* else the tokenizer's model_max_length, when smaller */
        snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
        vkf_json_config *tc;
        if (file_exists(p) && vkf_json_config_load(p, &tc) == VKF_OK) {
            double mml = 0;
            const cJSON *v =
                cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(tc), "model_max_length");
            if (cJSON_IsNumber(v)) mml = v->valuedouble;
            if (mml >= 1 && mml < hp->n_seq_max) hp->n_seq_max = (int32_t)mml;
            vkf_json_config_free(tc);
        }
    }
    return VKF_OK;
}

vkf_status vkf_hf_encoder_tokenizer(vkf_model *m, const char *dir) {
    char p[1200];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    if (file_exists(p)) return vkf_tokenizer_from_hf_json(p, &m->tok);
    snprintf(p, sizeof p, "%s/vocab.txt", dir);
    if (file_exists(p)) return vkf_tokenizer_from_bert_vocab(dir, &m->tok);
    return VKF_OK; /* no tokenizer: token ids only (vkf_embed_tokens) */
}
