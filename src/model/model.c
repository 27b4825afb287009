/* vkf_model: format detection, load / free, description, info report, tokenization. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf.h"
#include "io/json_config.h"
#include "model/model.h"
#include "model/model_chat.h"
#include "structured/grammar.h"
#include "tokenizer/tokenizer.h"

const char *vkf_model_arch_name(const vkf_model *m) {
    if (m->arch == VKF_ARCH_TRANSFORMER) return "transformer";
    return m->desc ? m->desc->name : "?";
}

/* ------------------------------------------------------------------ paths */

static int path_is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int path_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* ------------------------------------------------------------------ tokenizers */

/* One detector for the CLI's tokenize and the model loader: see vkf_tokenizer_open_auto. */
vkf_status vkf_model_tokenizer_load(const char *path, vkf_tokenizer **out) {
    return vkf_tokenizer_open_auto(path, out);
}

/* ------------------------------------------------------------------ load / free */

/* A directory: config.json decides the architecture. */
static vkf_status model_load_dir(vkf_model *m, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    vkf_json_config *c;
    VKF_TRY(vkf_json_config_load(path, &c));
    const char *arch = NULL, *type = NULL;
    vkf_status s = vkf_json_config_get_str(c, "architecture", NULL, &arch);
    if (s == VKF_OK) s = vkf_json_config_get_str(c, "model_type", NULL, &type);
    char found[128];
    snprintf(found, sizeof found, "%s", arch ? arch : type ? type : "");
    int is_tf = arch && strcmp(arch, "transformer") == 0;
    int is_gpt2 = !arch && type && strcmp(type, "gpt2") == 0;
    /* HF "architectures": ["LlamaForCausalLM"] names a descriptor */
    const vkf_arch_desc *desc = NULL;
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(c), "architectures");
    const cJSON *a0 = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    if (!is_tf && !is_gpt2 && cJSON_IsString(a0)) {
        desc = vkf_arch_by_hf(a0->valuestring);
        if (!type)
            snprintf(found, sizeof found, "%s", a0->valuestring); /* else model_type names it */
    }
    /* encoder-only checkpoints without "architectures": model_type names the descriptor */
    const vkf_arch_desc *by_type = type ? vkf_arch_by_gguf(type) : NULL;
    if (!desc && !is_tf && by_type && by_type->encoder) desc = by_type;
    vkf_json_config_free(c);
    VKF_TRY(s);
    if (is_tf) return vkf_load_transformer(m, dir);
    if (is_gpt2) return vkf_load_gpt2_hf(m, dir);
    if (desc && (desc->pos == VKF_POS_ROPE || desc->encoder)) return vkf_load_hf(m, dir, desc);
    if (!found[0])
        return vkf_error(VKF_ERROR_FORMAT, "%s: neither \"architecture\" nor \"model_type\" is set",
                         path);
    return vkf_error(VKF_ERROR_UNSUPPORTED,
                     "%s: architecture \"%s\" is not supported (directories: \"transformer\", "
                     "model_type \"gpt2\", %s; GGUF: %s)",
                     path, found, vkf_arch_hf_list(), vkf_arch_names());
}

vkf_status vkf_model_set_ctx(vkf_model *m, int computed) {
    vkf_hparams *hp = &m->hp;
    m->ctx_ext = computed;
    if (!computed && m->ctx_req > hp->n_ctx_train)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: n_ctx %d exceeds the %d positions of its learned position table "
                         "(%s); only models with computed positions (RoPE, sinusoidal) run past "
                         "their training context",
                         m->path, m->ctx_req, hp->n_ctx_train, vkf_model_arch_name(m));
    if (!computed)
        hp->n_ctx = hp->n_ctx_train;
    else if (m->ctx_req > 0)
        hp->n_ctx = m->ctx_req;
    else
        hp->n_ctx =
            hp->n_ctx_train > VKF_MODEL_DEFAULT_CTX ? VKF_MODEL_DEFAULT_CTX : hp->n_ctx_train;
    return VKF_OK;
}

/* api_public.c: common path mistakes, named; vkf_model_params.progress */
vkf_status vkf_model_path_check(const char *path);
void vkf_load_progress_begin(const vkf_model_params *p);
void vkf_load_progress_end(int ok);

vkf_status vkf_model_load(vkf_context *ctx, const vkf_model_params *p, vkf_model **out) {
    if (!ctx || !p || !p->path || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "model_load: NULL context, params, path or output");
    *out = NULL;
    VKF_TRY(vkf_model_path_check(p->path));
    if (p->n_ctx < 0 || p->n_ctx > VKF_MODEL_MAX_CTX)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "model_load: n_ctx %d outside [0, %d]",
                         p->n_ctx, VKF_MODEL_MAX_CTX);
    if (p->cache_type_k < 0 || p->cache_type_k >= VKF_CACHE_COUNT || p->cache_type_v < 0 ||
        p->cache_type_v >= VKF_CACHE_COUNT)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "model_load: cache_type_k %d / cache_type_v %d: not a vkf_cache_type "
                         "(0 default to %d)",
                         p->cache_type_k, p->cache_type_v, VKF_CACHE_COUNT - 1);
    vkf_model *m = calloc(1, sizeof *m);
    if (!m) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "model_load: out of host memory");
    if (pthread_mutex_init(&m->tok_lock, NULL) != 0) {
        free(m);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "model_load: cannot create a mutex");
    }
    m->ctx = ctx;
    m->be = ctx->be;
    m->n_dev = 1;
    m->ctx_req = p->n_ctx;
    m->cache_type_k = p->cache_type_k;
    m->cache_type_v = p->cache_type_v;
    m->no_mmap = p->no_mmap;
    snprintf(m->path, sizeof m->path, "%s", p->path);
    vkf_context_lock(ctx); /* uploads go through the shared backend */
    vkf_load_progress_begin(p);
    vkf_status s;
    if (path_is_dir(p->path))
        s = model_load_dir(m, p->path);
    else if (path_exists(p->path))
        s = vkf_load_gguf(m, p->path);
    else
        s = vkf_error(VKF_ERROR_IO, "%s: no such file or directory", p->path);
    vkf_model_release_file(m); /* kept only where weights use it in place */
    if (s == VKF_OK && ctx->n_dev > 1 && m->n_dev != ctx->n_dev)
        s = vkf_error(VKF_ERROR_UNSUPPORTED,
                      "%s: a layer split over %d devices runs decoder-only models; this one is "
                      "%s (%s): run it on one device",
                      p->path, ctx->n_dev, vkf_model_arch_name(m),
                      m->arch == VKF_ARCH_TRANSFORMER ? "encoder-decoder" : "encoder-only");
    if (s == VKF_OK && p->tokenizer && m->arch == VKF_ARCH_TRANSFORMER &&
        path_is_dir(p->tokenizer)) {
        /* an encoder-decoder's tokenizer directory: src_vocab.json and tgt_vocab.json */
        char a[1200];
        vkf_tokenizer *t = NULL;
        snprintf(a, sizeof a, "%s/src_vocab.json", p->tokenizer);
        if (path_exists(a)) s = vkf_model_tokenizer_load(a, &t);
        if (t) {
            vkf_tokenizer_free(m->src_tok);
            m->src_tok = t;
            t = NULL;
        }
        snprintf(a, sizeof a, "%s/tgt_vocab.json", p->tokenizer);
        if (s == VKF_OK && !path_exists(a))
            s = vkf_error(VKF_ERROR_IO, "%s: expected src_vocab.json and tgt_vocab.json",
                          p->tokenizer);
        if (s == VKF_OK) s = vkf_model_tokenizer_load(a, &t);
        if (t) {
            vkf_tokenizer_free(m->tok);
            m->tok = t;
        }
    } else if (s == VKF_OK && p->tokenizer) {
        vkf_tokenizer *t;
        s = vkf_model_tokenizer_load(p->tokenizer, &t);
        if (s == VKF_OK) {
            vkf_tokenizer_free(m->tok);
            m->tok = t;
        }
    }
    if (s == VKF_OK && m->tok && vkf_tokenizer_n_vocab(m->tok) > m->hp.n_vocab)
        s = vkf_error(
            VKF_ERROR_FORMAT, "%s: the tokenizer has %d tokens but the model's vocabulary only %d",
            p->tokenizer ? p->tokenizer : p->path, vkf_tokenizer_n_vocab(m->tok), m->hp.n_vocab);
    if (s == VKF_OK && m->tok && m->arch != VKF_ARCH_TRANSFORMER) {
        /* the tokenizer knows the special ids when the config does not */
        if (m->hp.eos_id < 0) m->hp.eos_id = vkf_tokenizer_eos(m->tok);
        if (m->hp.bos_id < 0) m->hp.bos_id = vkf_tokenizer_bos(m->tok);
        if (m->hp.add_bos < 0) m->hp.add_bos = vkf_tokenizer_add_bos(m->tok);
    }
    if (m->hp.add_bos < 0) m->hp.add_bos = 0;
    if (s == VKF_OK) vkf_chat_model_load(m, p->path, p->tokenizer);
    vkf_load_progress_end(s == VKF_OK);
    if (s != VKF_OK) {
        vkf_model_free(m);
        vkf_context_unlock(ctx);
        return s;
    }
    vkf_context_unlock(ctx);
    *out = m;
    return VKF_OK;
}

void vkf_model_free(vkf_model *m) {
    if (!m) return;
    vkf_context_lock(m->ctx);
    for (int i = 0; i < m->n_bufs; i++)
        m->buf_be[i]->i->buffer_free(m->buf_be[i], m->bufs[i]);
    vkf_context_unlock(m->ctx);
    vkf_mapfile_close(&m->file); /* after the buffers that used it in place */
    free(m->bufs);
    free(m->buf_be);
    free(m->w.enc);
    free(m->w.dec);
    vkf_gcache_free(m->gcache);
    vkf_tokenizer_free(m->tok);
    vkf_tokenizer_free(m->src_tok);
    pthread_mutex_destroy(&m->tok_lock);
    free(m->chat_template);
    free(m->chat_template_tool_use);
    free(m->chat_bos);
    free(m->chat_eos);
    free(m);
}

/* ------------------------------------------------------------------ description */

void vkf_model_describe(const vkf_model *m, vkf_model_desc *d) {
    memset(d, 0, sizeof *d);
    d->architecture = vkf_model_arch_name(m);
    d->format = m->format;
    d->encoder_decoder = m->arch == VKF_ARCH_TRANSFORMER;
    d->n_vocab = m->hp.n_vocab;
    d->n_src_vocab = m->hp.n_src_vocab;
    d->n_ctx = m->hp.n_ctx;
    d->n_ctx_train = m->hp.n_ctx_train;
    d->ctx_extendable = m->ctx_ext;
    d->d_model = m->hp.d_model;
    d->n_layer = m->hp.n_layer;
    d->n_enc_layer = m->hp.n_enc_layer;
    d->n_head = m->hp.n_head;
    d->n_kv_head = m->hp.n_kv_head;
    d->n_ff = m->hp.n_ff;
    d->bos_id = m->hp.bos_id;
    d->eos_id = m->hp.eos_id;
    d->pad_id = m->hp.pad_id;
    d->has_tokenizer = m->tok != NULL;
    d->has_src_tokenizer = m->src_tok != NULL;
    d->n_params = m->n_params;
    d->wtype = m->wtype;
    d->weight_bytes = m->weight_bytes;
    d->encoder_only = m->arch == VKF_ARCH_ENCODER;
    d->pooling = m->hp.pooling;
    d->normalize = m->hp.normalize;
    d->n_embd_max = m->hp.n_seq_max;
    d->n_cls_out = m->hp.n_cls_out;
}

/* the KV cache's dtypes the load was given (vkf_model_params.cache_type_k / _v; the device's
 * default for DEFAULT): what the sessions the CLI and the server make use (model/memory.c sizes
 * it) */
static vkf_dtype model_kv_k(const vkf_model *m) {
    return vkf_session_cache_dtype(m, m->cache_type_k);
}
static vkf_dtype model_kv_v(const vkf_model *m) {
    return vkf_session_cache_dtype(m, m->cache_type_v);
}

/* self-attention K/V per token: what one more position adds (the encoder-decoder's source memory
 * does not grow with the target) */
static size_t model_kv_bytes_per_token(const vkf_model *m) {
    vkf_dtype k = model_kv_k(m), v = model_kv_v(m);
    return (size_t)(vkf_kv_cache_bytes(m, 2, 1, k, v) - vkf_kv_cache_bytes(m, 1, 1, k, v));
}

static const char *rope_factors_name(int f) {
    return f == 1   ? "frequency factors (rope_freqs)"
           : f == 2 ? "LongRoPE short factors"
                    : "LongRoPE long factors";
}

/* KV cache bytes per sequence at the model's chosen context, in the load's cache types */
static size_t model_kv_bytes(const vkf_model *m) {
    return (size_t)vkf_kv_cache_bytes(m, m->hp.n_ctx, 1, model_kv_k(m), model_kv_v(m));
}

static const char *act_name(const vkf_model *m) {
    if (m->desc && m->desc->ffn != VKF_FFN_PLAIN)
        return m->hp.act == VKF_UNARY_SILU ? "swiglu" : "geglu";
    return vkf_unary_name((vkf_unary)m->hp.act);
}

static int model_rms(const vkf_model *m) { return m->desc && m->desc->norm == VKF_NORM_RMS; }
static int model_rope(const vkf_model *m) { return m->desc && m->desc->pos == VKF_POS_ROPE; }

vkf_status vkf_model_info(const vkf_model *m, int json, char **out) {
    const vkf_hparams *hp = &m->hp;
    char dtypes[256] = "";
    size_t dl = 0;
    for (int t = 0; t < VKF_DTYPE_COUNT; t++)
        if (m->n_by_dtype[t])
            dl += (size_t)snprintf(dtypes + dl, sizeof dtypes - dl, "%s%s x %d", dl ? ", " : "",
                                   vkf_dtype_name((vkf_dtype)t), m->n_by_dtype[t]);
    const char *tok = m->tok ? vkf_tokenizer_kind(m->tok) : "none";
    size_t kv = model_kv_bytes(m);
    char kv_types[96];
    if (model_kv_k(m) == model_kv_v(m))
        snprintf(kv_types, sizeof kv_types, "%s", vkf_dtype_name(model_kv_k(m)));
    else
        snprintf(kv_types, sizeof kv_types, "K %s, V %s", vkf_dtype_name(model_kv_k(m)),
                 vkf_dtype_name(model_kv_v(m)));
    if (!json) {
        char buf[4096];
        size_t n = 0;
#define P(...) n += (size_t)snprintf(buf + n, sizeof buf - n, __VA_ARGS__)
        P("architecture   %s (%s)\n", vkf_model_arch_name(m),
          m->arch == VKF_ARCH_TRANSFORMER ? "encoder-decoder"
          : m->arch == VKF_ARCH_ENCODER   ? "encoder-only"
                                          : "decoder-only");
        if (m->arch == VKF_ARCH_ENCODER)
            P("embeddings     %d floats, pooling %s, %snormalized, inputs up to %d tokens\n",
              hp->d_model, vkf_pooling_name((vkf_pooling)hp->pooling),
              hp->normalize ? "L2-" : "not ", hp->n_seq_max);
        P("file           %s (%s)\n", m->path, m->format);
        if (m->arch == VKF_ARCH_TRANSFORMER) {
            P("vocabulary     source %d, target %d tokens (tokenizers: source %s, target %s)\n",
              hp->n_src_vocab, hp->n_vocab, m->src_tok ? vkf_tokenizer_kind(m->src_tok) : "none",
              tok);
            P("layers         %d encoder + %d decoder (%s)\n", hp->n_enc_layer, hp->n_layer,
              hp->norm_first ? "pre-LN" : "post-LN");
        } else {
            P("vocabulary     %d tokens (tokenizer: %s)\n", hp->n_vocab, tok);
            P("layers         %d\n", hp->n_layer);
        }
        if (hp->n_ctx > hp->n_ctx_train)
            P("context        %d tokens (extended; trained on %d)\n", hp->n_ctx, hp->n_ctx_train);
        else if (hp->n_ctx < hp->n_ctx_train)
            P("context        %d tokens (of the %d it was trained on; -c to change)\n", hp->n_ctx,
              hp->n_ctx_train);
        else
            P("context        %d tokens\n", hp->n_ctx);
        P("d_model        %d\n", hp->d_model);
        P("heads          %d query, %d key/value, head_dim %d\n", hp->n_head, hp->n_kv_head,
          hp->head_dim);
        P("feed-forward   %d (%s)\n", hp->n_ff, act_name(m));
        if (hp->n_expert > 0) { /* the experts not chosen for a token are not read for it */
            int64_t idle = (int64_t)(hp->n_expert - hp->n_expert_used) * 3 * hp->n_ff_exp *
                           hp->d_model * hp->n_layer;
            P("experts        %d, %d per token (%s%s), expert FFN %d", hp->n_expert,
              hp->n_expert_used,
              hp->gating == VKF_GATING_SIGMOID          ? "sigmoid"
              : hp->gating == VKF_GATING_SOFTMAX_WEIGHT ? "softmax over the top k"
                                                        : "softmax",
              m->desc->moe_norm_w ? ", renormalised" : "", hp->n_ff_exp);
            if (vkf_tensor_present(&m->w.dec[0].gate_shexp))
                P(", shared expert FFN %d", hp->n_ff_shexp);
            P("; active parameters %lld of %lld\n", (long long)(m->n_params - idle),
              (long long)m->n_params);
        }
        P("norm           %s, eps %g\n", model_rms(m) ? "RMSNorm" : "LayerNorm", (double)hp->eps);
        if (model_rope(m)) {
            P("rope           %s, %d dims, base %g", m->desc->rope_mode ? "neox" : "normal",
              hp->n_rot, hp->rope_base);
            if (hp->rope_yarn) /* over rope.scaling.original_context_length, else n_ctx_train */
                P(", YaRN scaling x%g over %d", (double)hp->yarn_factor,
                  hp->n_ctx_orig > 0 ? hp->n_ctx_orig : hp->n_ctx_train);
            else if (hp->rope_scale != 1.0)
                P(", linear scaling x%g", 1.0 / hp->rope_scale);
            if (hp->rope_factors) P(", %s", rope_factors_name(hp->rope_factors));
            if (hp->rope_attn_factor != 1.0) P(", attention factor %g", hp->rope_attn_factor);
            if (m->desc->nope_period > 0) /* layer indices from 0, as llama.cpp's il */
                P(", none on 1 layer in %d (NoPE: layers %d, %d, ...)", m->desc->nope_period,
                  m->desc->nope_period - 1, 2 * m->desc->nope_period - 1);
            P("\n");
        }
        if (hp->swa_window > 0) {
            char pat[160] = "";
            size_t pl = 0;
            for (int l = 0; l < hp->n_layer && pl + 3 < sizeof pat; l++)
                pl += (size_t)snprintf(pat + pl, sizeof pat - pl, "%c",
                                       vkf_layer_swa(hp, l) ? 'L' : 'G');
            P("window         %d tokens on local layers (L local, G global: %s)", hp->swa_window,
              pat);
            if (m->desc->swa_rope_unscaled) P(", local rope base %g", hp->rope_base_swa);
            P("\n");
        }
        if (hp->attn_softcap > 0 || hp->final_softcap > 0)
            P("soft-caps      attention %g, final %g\n", (double)hp->attn_softcap,
              (double)hp->final_softcap);
        if (m->desc && (m->desc->post_norms || m->desc->emb_scale_sqrt_d))
            P("extras         %s%s\n", m->desc->post_norms ? "post-attention/post-FFN norms; " : "",
              m->desc->emb_scale_sqrt_d ? "embeddings x sqrt(d_model)" : "");
        P("special ids    bos %d, eos %d, pad %d\n", hp->bos_id, hp->eos_id, hp->pad_id);
        if (m->tok) { /* generation stops at any of these (generate.c) */
            const int32_t *eog;
            size_t n_eog = vkf_tokenizer_eog(m->tok, &eog);
            P("end of gen.    ");
            for (size_t i = 0; i < n_eog && i < 12; i++) /* bounded: buf is 4 KiB */
                P("%s%.40s (%d)", i ? ", " : "", vkf_tokenizer_token_text(m->tok, eog[i]), eog[i]);
            P("%s\n", n_eog ? "" : "eos only");
        }
        P("parameters     %lld (%.2f M)\n", (long long)m->n_params, (double)m->n_params / 1e6);
        P("weight dtypes  %s (matrices %s)\n", dtypes, vkf_dtype_name(m->wtype));
        P("memory         weights %.2f MiB (%.2f MiB used in place from the file, %.2f MiB "
          "copied); KV cache %zu "
          "bytes per token, %.2f MiB per sequence at %d tokens (%s)\n",
          (double)m->weight_bytes / 1048576.0, (double)m->weight_bytes_in_place / 1048576.0,
          (double)(m->weight_bytes - m->weight_bytes_in_place) / 1048576.0,
          model_kv_bytes_per_token(m), (double)kv / 1048576.0, hp->n_ctx, kv_types);
        if (n < sizeof buf) n += vkf_model_split_text(m, buf + n, sizeof buf - n);
#undef P
        *out = strdup(buf);
        return *out ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "model_info: out of host memory");
    }
    cJSON *j = cJSON_CreateObject();
    if (!j) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "model_info: out of host memory");
    cJSON_AddStringToObject(j, "architecture", vkf_model_arch_name(m));
    cJSON_AddBoolToObject(j, "encoder_decoder", m->arch == VKF_ARCH_TRANSFORMER);
    cJSON_AddBoolToObject(j, "encoder_only", m->arch == VKF_ARCH_ENCODER);
    if (m->arch == VKF_ARCH_ENCODER) {
        cJSON_AddStringToObject(j, "pooling", vkf_pooling_name((vkf_pooling)hp->pooling));
        cJSON_AddBoolToObject(j, "normalize", hp->normalize != 0);
        cJSON_AddNumberToObject(j, "max_input_tokens", hp->n_seq_max);
    }
    cJSON_AddStringToObject(j, "path", m->path);
    cJSON_AddStringToObject(j, "format", m->format);
    cJSON_AddNumberToObject(j, "n_vocab", hp->n_vocab);
    if (m->arch == VKF_ARCH_TRANSFORMER) {
        cJSON_AddNumberToObject(j, "n_src_vocab", hp->n_src_vocab);
        cJSON_AddNumberToObject(j, "n_enc_layer", hp->n_enc_layer);
        cJSON_AddBoolToObject(j, "norm_first", hp->norm_first);
        cJSON_AddNumberToObject(j, "embedding_scale", hp->emb_scale);
        cJSON_AddStringToObject(j, "src_tokenizer",
                                m->src_tok ? vkf_tokenizer_kind(m->src_tok) : "none");
    }
    cJSON_AddStringToObject(j, "tokenizer", tok);
    cJSON_AddNumberToObject(j, "n_ctx", hp->n_ctx);
    cJSON_AddNumberToObject(j, "n_ctx_train", hp->n_ctx_train);
    cJSON_AddNumberToObject(j, "n_layer", hp->n_layer);
    cJSON_AddNumberToObject(j, "d_model", hp->d_model);
    cJSON_AddNumberToObject(j, "n_head", hp->n_head);
    cJSON_AddNumberToObject(j, "n_kv_head", hp->n_kv_head);
    cJSON_AddNumberToObject(j, "head_dim", hp->head_dim);
    cJSON_AddNumberToObject(j, "n_ff", hp->n_ff);
    cJSON_AddStringToObject(j, "activation", act_name(m));
    cJSON_AddStringToObject(j, "norm", model_rms(m) ? "rmsnorm" : "layernorm");
    cJSON_AddNumberToObject(j, "norm_eps", hp->eps);
    if (model_rope(m)) {
        cJSON_AddNumberToObject(j, "rope_dims", hp->n_rot);
        cJSON_AddNumberToObject(j, "rope_freq_base", hp->rope_base);
        cJSON_AddStringToObject(j, "rope_mode", m->desc->rope_mode ? "neox" : "normal");
        cJSON_AddNumberToObject(j, "rope_linear_factor",
                                hp->rope_yarn ? 1.0 : 1.0 / hp->rope_scale);
        if (hp->rope_yarn) cJSON_AddNumberToObject(j, "rope_yarn_factor", hp->yarn_factor);
        cJSON_AddStringToObject(j, "rope_factors",
                                hp->rope_factors ? rope_factors_name(hp->rope_factors) : "none");
        cJSON_AddNumberToObject(j, "rope_attn_factor", hp->rope_attn_factor);
        cJSON_AddNumberToObject(j, "sliding_window", hp->swa_window);
        cJSON *pat = cJSON_AddArrayToObject(j, "local_layers");
        for (int l = 0; l < hp->n_layer && pat; l++)
            if (vkf_layer_swa(hp, l)) cJSON_AddItemToArray(pat, cJSON_CreateNumber(l));
        cJSON_AddNumberToObject(j, "attn_softcap", hp->attn_softcap);
        cJSON_AddNumberToObject(j, "final_softcap", hp->final_softcap);
    }
    cJSON_AddNumberToObject(j, "bos_id", hp->bos_id);
    cJSON_AddNumberToObject(j, "eos_id", hp->eos_id);
    cJSON_AddNumberToObject(j, "pad_id", hp->pad_id);
    if (m->tok) {
        const int32_t *eog;
        size_t n_eog = vkf_tokenizer_eog(m->tok, &eog);
        cJSON *e = cJSON_AddArrayToObject(j, "eog_ids");
        for (size_t i = 0; e && i < n_eog; i++)
            cJSON_AddItemToArray(e, cJSON_CreateNumber(eog[i]));
    }
    cJSON_AddNumberToObject(j, "n_params", (double)m->n_params);
    cJSON_AddStringToObject(j, "matrix_dtype", vkf_dtype_name(m->wtype));
    cJSON *dt = cJSON_AddObjectToObject(j, "weight_dtypes");
    for (int t = 0; t < VKF_DTYPE_COUNT; t++)
        if (m->n_by_dtype[t] && dt)
            cJSON_AddNumberToObject(dt, vkf_dtype_name((vkf_dtype)t), m->n_by_dtype[t]);
    cJSON_AddNumberToObject(j, "weight_bytes", (double)m->weight_bytes);
    cJSON_AddNumberToObject(j, "weight_bytes_in_place", (double)m->weight_bytes_in_place);
    cJSON_AddStringToObject(j, "kv_cache_type_k", vkf_dtype_name(model_kv_k(m)));
    cJSON_AddStringToObject(j, "kv_cache_type_v", vkf_dtype_name(model_kv_v(m)));
    cJSON_AddNumberToObject(j, "kv_bytes_per_token", (double)model_kv_bytes_per_token(m));
    cJSON_AddNumberToObject(j, "kv_bytes_per_sequence", (double)kv);
    vkf_split_device sd[VKF_MAX_DEVICES];
    int nsd = vkf_model_split(m, sd, VKF_MAX_DEVICES);
    cJSON *sp = cJSON_AddArrayToObject(j, "devices"); /* the layer split: what went where */
    for (int i = 0; i < nsd && sp; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        cJSON_AddStringToObject(e, "device", sd[i].device);
        cJSON_AddNumberToObject(e, "layer0", sd[i].layer0);
        cJSON_AddNumberToObject(e, "n_layers", sd[i].n_layers);
        cJSON_AddNumberToObject(e, "weight_bytes", (double)sd[i].weight_bytes);
        cJSON_AddNumberToObject(e, "kv_bytes_per_token", (double)sd[i].kv_bytes_per_token);
        cJSON_AddBoolToObject(e, "embeddings", sd[i].embeddings);
        cJSON_AddBoolToObject(e, "output", sd[i].output);
        cJSON_AddItemToArray(sp, e);
    }
    *out = cJSON_Print(j);
    cJSON_Delete(j);
    return *out ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "model_info: out of host memory");
}

/* ------------------------------------------------------------------ tokenization */

static vkf_tokenizer *model_tok(const vkf_model *m, int flags, const char *what) {
    vkf_tokenizer *t =
        (flags & VKF_TOKENIZE_SOURCE) && m->arch == VKF_ARCH_TRANSFORMER ? m->src_tok : m->tok;
    if (!t)
        vkf_error(VKF_ERROR_UNSUPPORTED,
                  "%s: %s has no %stokenizer (vkf_model_params.tokenizer gives one)", what, m->path,
                  (flags & VKF_TOKENIZE_SOURCE) ? "source " : "");
    return t;
}

vkf_status vkf_model_tokenize(vkf_model *m, const char *text, int flags, int32_t *tokens,
                              int32_t cap, int32_t *n) {
    vkf_tokenizer *t = model_tok(m, flags, "tokenize");
    if (!t) return VKF_ERROR_UNSUPPORTED;
    if (!text || !n || (cap > 0 && !tokens))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tokenize: NULL text, output buffer or count");
    int add_special = (flags & VKF_TOKENIZE_ADD_SPECIAL) != 0;
    int32_t *ids;
    size_t count;
    pthread_mutex_lock(&m->tok_lock);
    vkf_status es = vkf_tokenizer_encode_ex(t, text, strlen(text), add_special,
                                            !(flags & VKF_TOKENIZE_LITERAL), &ids, &count);
    pthread_mutex_unlock(&m->tok_lock);
    VKF_TRY(es);
    /* the model's conventions on top of the tokenizer's own: an encoder-decoder's sources end
     * with EOS and its targets start with BOS (the seed-transformer / dates-transformer layout);
     * a decoder-only model whose config asks for BOS (HF add_bos_token) gets it in front */
    int32_t bos = m->hp.bos_id, eos = m->hp.eos_id;
    int prepend = 0, append = 0;
    if (add_special && m->arch == VKF_ARCH_TRANSFORMER) {
        if (flags & VKF_TOKENIZE_SOURCE)
            append = eos >= 0 && (count == 0 || ids[count - 1] != eos);
        else
            prepend = bos >= 0 && (count == 0 || ids[0] != bos);
    } else if (add_special && m->hp.add_bos && bos >= 0) {
        prepend = count == 0 || ids[0] != bos;
    }
    size_t total = count + (size_t)prepend + (size_t)append;
    *n = (int32_t)total;
    if (total > (size_t)(cap > 0 ? cap : 0)) {
        free(ids);
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "tokenize: %zu tokens do not fit a buffer of %d", total, cap);
    }
    if (prepend) tokens[0] = bos;
    memcpy(tokens + prepend, ids, count * sizeof *ids);
    if (append) tokens[total - 1] = eos;
    free(ids);
    return VKF_OK;
}

vkf_status vkf_model_detokenize(const vkf_model *m, const int32_t *tokens, int32_t n, int flags,
                                char **out) {
    vkf_tokenizer *t = model_tok(m, flags, "detokenize");
    if (!t) return VKF_ERROR_UNSUPPORTED;
    size_t len;
    int dflags = ((flags & VKF_DETOKENIZE_SPECIAL) ? VKF_DECODE_SPECIAL : 0) |
                 ((flags & VKF_DETOKENIZE_CONTINUATION) ? VKF_DECODE_NO_STRIP : 0);
    return vkf_tokenizer_decode_ex(t, tokens, (size_t)(n > 0 ? n : 0), dflags, out, &len);
}
