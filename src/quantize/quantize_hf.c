/* Hugging Face GPT-2 directory -> F32 GGUF (see quantize.h), the input side of
 * `vkformer quantize` for safetensors checkpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf_write.h"
#include "io/json_config.h"
#include "io/safetensors.h"
#include "quantize/quantize.h"

typedef struct hf {
    const char *dir;
    vkf_json_config *cfg;
    vkf_safetensors *st;
    const char *prefix; /* "" or "transformer." */
    int64_t n_embd, n_layer, n_head, n_ctx, n_ff, n_vocab, bos, eos;
    double eps;
    char **tokens;
    size_t *tok_len;
    char *merges_text;
    const char **merges;
    size_t *merge_len;
    uint64_t n_merges;
    float *buf;
} hf;

static void hf_free(hf *h) {
    if (h->tokens)
        for (int64_t i = 0; i < h->n_vocab; i++)
            free(h->tokens[i]);
    free(h->tokens);
    free(h->tok_len);
    free(h->merges_text);
    free(h->merges);
    free(h->merge_len);
    free(h->buf);
    vkf_safetensors_close(h->st);
    vkf_json_config_free(h->cfg);
}

static vkf_status read_config(hf *h) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", h->dir);
    VKF_TRY(vkf_json_config_load(path, &h->cfg));
    const char *mt;
    VKF_TRY(vkf_json_config_get_str(h->cfg, "model_type", "", &mt));
    if (strcmp(mt, "gpt2"))
        return vkf_error(
            VKF_ERROR_UNSUPPORTED,
            "%s: model_type '%s': quantize reads Hugging Face directories of model_type gpt2", path,
            mt);
    VKF_TRY(vkf_json_config_require_int(h->cfg, "n_embd", &h->n_embd));
    VKF_TRY(vkf_json_config_require_int(h->cfg, "n_layer", &h->n_layer));
    VKF_TRY(vkf_json_config_require_int(h->cfg, "n_head", &h->n_head));
    VKF_TRY(vkf_json_config_require_int(h->cfg, "n_positions", &h->n_ctx));
    VKF_TRY(vkf_json_config_get_int(h->cfg, "n_inner", 4 * h->n_embd, &h->n_ff));
    VKF_TRY(vkf_json_config_require_int(h->cfg, "vocab_size", &h->n_vocab));
    VKF_TRY(vkf_json_config_get_int(h->cfg, "bos_token_id", 50256, &h->bos));
    VKF_TRY(vkf_json_config_get_int(h->cfg, "eos_token_id", 50256, &h->eos));
    VKF_TRY(vkf_json_config_get_float(h->cfg, "layer_norm_epsilon", 1e-5, &h->eps));
    if (h->n_embd <= 0 || h->n_layer <= 0 || h->n_head <= 0 || h->n_ctx <= 0 || h->n_ff <= 0 ||
        h->n_vocab <= 0 || h->n_vocab > (1 << 24))
        return vkf_error(VKF_ERROR_FORMAT, "%s: sizes out of range", path);
    return VKF_OK;
}

/* vocab.json (token -> id) as a table by id; merges.txt lines after the "#version" header. */
static vkf_status read_vocab(hf *h) {
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.json", h->dir);
    vkf_json_config *v;
    VKF_TRY(vkf_json_config_load(path, &v));
    h->tokens = calloc((size_t)h->n_vocab, sizeof *h->tokens);
    h->tok_len = calloc((size_t)h->n_vocab, sizeof *h->tok_len);
    if (!h->tokens || !h->tok_len) {
        vkf_json_config_free(v);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, vkf_json_config_root(v)) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= (double)h->n_vocab) {
            vkf_status s = vkf_error(VKF_ERROR_FORMAT, "%s: token '%s': id outside [0, %lld)", path,
                                     e->string, (long long)h->n_vocab);
            vkf_json_config_free(v);
            return s;
        }
        int64_t id = (int64_t)e->valuedouble;
        free(h->tokens[id]);
        h->tokens[id] = strdup(e->string);
        if (!h->tokens[id]) {
            vkf_json_config_free(v);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
        }
        h->tok_len[id] = strlen(e->string);
    }
    vkf_json_config_free(v);
    for (int64_t i = 0; i < h->n_vocab; i++)
        if (!h->tokens[i])
            return vkf_error(VKF_ERROR_FORMAT, "%s: no token has id %lld", path, (long long)i);

    snprintf(path, sizeof path, "%s/merges.txt", h->dir);
    FILE *f = fopen(path, "rb");
    if (!f) return vkf_error(VKF_ERROR_IO, "%s: cannot open", path);
    size_t cap = 1 << 20, n = 0;
    h->merges_text = malloc(cap + 1);
    for (size_t r; h->merges_text && (r = fread(h->merges_text + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            char *p = realloc(h->merges_text, 2 * cap + 1);
            if (!p) {
                free(h->merges_text);
                h->merges_text = NULL;
                break;
            }
            h->merges_text = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (!h->merges_text) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    h->merges_text[n] = 0;
    size_t lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += h->merges_text[i] == '\n';
    h->merges = malloc(lines * sizeof *h->merges);
    h->merge_len = malloc(lines * sizeof *h->merge_len);
    if (!h->merges || !h->merge_len)
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    for (char *p = h->merges_text, *end = h->merges_text + n; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (len && p[len - 1] == '\r') len--;
        if (len && !(p == h->merges_text && !strncmp(p, "#version", 8))) {
            h->merges[h->n_merges] = p;
            h->merge_len[h->n_merges++] = len;
        }
        p += (nl ? (size_t)(nl - p) + 1 : len);
    }
    return VKF_OK;
}

/* A weight as F32 rows: HF Conv1D [in, out] transposed to [out, in] when transpose. */
static vkf_status get_f32(hf *h, const char *name, int rank, int64_t d0, int64_t d1, int transpose,
                          const float **out) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", h->prefix, name);
    if (!strcmp(name, "lm_head.weight")) snprintf(full, sizeof full, "%s", name);
    const vkf_st_tensor *t;
    int64_t dims[2] = {d0, d1};
    VKF_TRY(vkf_safetensors_get(h->st, full, -1, rank, dims, &t));
    int64_t n = t->n_elems;
    for (int64_t i = 0; i < n; i++) {
        float v;
        if (t->dtype == VKF_DTYPE_F32) {
            memcpy(&v, (const char *)t->data + 4 * i, 4);
        } else {
            uint16_t b;
            memcpy(&b, (const char *)t->data + 2 * i, 2);
            v = t->dtype == VKF_DTYPE_F16 ? vkf_f16_to_f32(b) : vkf_bf16_to_f32(b);
        }
        if (transpose)
            h->buf[(i % d1) * d0 + i / d1] = v;
        else
            h->buf[i] = v;
    }
    *out = h->buf;
    return VKF_OK;
}

typedef struct wt {
    char gguf[96];
    char hf[96];
    int rank;
    int64_t ne0, ne1; /* ggml order */
    int transpose;
} wt;

vkf_status vkf_hf_gpt2_to_gguf(const char *dir, const char *out_path) {
    hf h = {.dir = dir, .prefix = ""};
    vkf_gguf_writer *w = NULL;
    wt *list = NULL;
    vkf_status s;
    if ((s = read_config(&h)) != VKF_OK || (s = read_vocab(&h)) != VKF_OK) goto done;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if ((s = vkf_safetensors_open(path, &h.st)) != VKF_OK) goto done;
    if (!vkf_safetensors_find(h.st, "wte.weight") &&
        vkf_safetensors_find(h.st, "transformer.wte.weight"))
        h.prefix = "transformer.";
    const int64_t d = h.n_embd, ff = h.n_ff;
    size_t n_t = 2 + 12 * (size_t)h.n_layer + 3, k = 0;
    list = calloc(n_t, sizeof *list);
    size_t big = (size_t)(h.n_vocab > h.n_ctx ? h.n_vocab : h.n_ctx) * (size_t)d;
    if ((size_t)(ff > 3 * d ? ff : 3 * d) * (size_t)d > big)
        big = (size_t)(ff > 3 * d ? ff : 3 * d) * (size_t)d;
    h.buf = malloc(big * sizeof *h.buf);
    if (!list || !h.buf) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", dir);
        goto done;
    }
#define ADD(G, H, R, A, B, T)                                                                      \
    do {                                                                                           \
        snprintf(list[k].gguf, sizeof list[k].gguf, "%s", G);                                      \
        snprintf(list[k].hf, sizeof list[k].hf, "%s", H);                                          \
        list[k].rank = R, list[k].ne0 = A, list[k].ne1 = B, list[k].transpose = T;                 \
        k++;                                                                                       \
    } while (0)
    ADD("token_embd.weight", "wte.weight", 2, d, h.n_vocab, 0);
    ADD("position_embd.weight", "wpe.weight", 2, d, h.n_ctx, 0);
    for (int64_t l = 0; l < h.n_layer; l++) {
        char g[96], f[96];
        static const struct {
            const char *g, *f;
            int rank, transpose;
            int ne0, ne1; /* 0: d, 1: 3d, 2: ff, -1: none */
        } L[] = {
            {"attn_norm.weight", "ln_1.weight", 1, 0, 0, -1},
            {"attn_norm.bias", "ln_1.bias", 1, 0, 0, -1},
            {"attn_qkv.weight", "attn.c_attn.weight", 2, 1, 0, 1},
            {"attn_qkv.bias", "attn.c_attn.bias", 1, 0, 1, -1},
            {"attn_output.weight", "attn.c_proj.weight", 2, 1, 0, 0},
            {"attn_output.bias", "attn.c_proj.bias", 1, 0, 0, -1},
            {"ffn_norm.weight", "ln_2.weight", 1, 0, 0, -1},
            {"ffn_norm.bias", "ln_2.bias", 1, 0, 0, -1},
            {"ffn_up.weight", "mlp.c_fc.weight", 2, 1, 0, 2},
            {"ffn_up.bias", "mlp.c_fc.bias", 1, 0, 2, -1},
            {"ffn_down.weight", "mlp.c_proj.weight", 2, 1, 2, 0},
            {"ffn_down.bias", "mlp.c_proj.bias", 1, 0, 0, -1},
        };
        for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
            const int64_t sz[3] = {d, 3 * d, ff};
            snprintf(g, sizeof g, "blk.%lld.%s", (long long)l, L[i].g);
            snprintf(f, sizeof f, "h.%lld.%s", (long long)l, L[i].f);
            if (L[i].rank == 1)
                ADD(g, f, 1, sz[L[i].ne0], 1, 0);
            else
                ADD(g, f, 2, sz[L[i].ne0], sz[L[i].ne1], 1);
        }
    }
    ADD("output_norm.weight", "ln_f.weight", 1, d, 1, 0);
    ADD("output_norm.bias", "ln_f.bias", 1, d, 1, 0);
    if (vkf_safetensors_find(h.st, "lm_head.weight"))
        ADD("output.weight", "lm_head.weight", 2, d, h.n_vocab, 0);
    else
        ADD("output.weight", "wte.weight", 2, d, h.n_vocab,
            0); /* tied: the converter writes a copy */
#undef ADD

    if ((s = vkf_gguf_writer_create(&w)) != VKF_OK) goto done;
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    int32_t *types = malloc((size_t)h.n_vocab * sizeof *types);
    if (!types) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", dir);
        goto done;
    }
    for (int64_t i = 0; i < h.n_vocab; i++)
        types[i] = i == h.bos || i == h.eos ? 3 : 1; /* control : normal */
    s = vkf_gguf_writer_set_str(w, "general.architecture", "gpt2");
    if (!s) s = vkf_gguf_writer_set_str(w, "general.name", base);
    if (!s) s = vkf_gguf_writer_set_u32(w, "gpt2.context_length", (uint32_t)h.n_ctx);
    if (!s) s = vkf_gguf_writer_set_u32(w, "gpt2.embedding_length", (uint32_t)d);
    if (!s) s = vkf_gguf_writer_set_u32(w, "gpt2.feed_forward_length", (uint32_t)ff);
    if (!s) s = vkf_gguf_writer_set_u32(w, "gpt2.block_count", (uint32_t)h.n_layer);
    if (!s) s = vkf_gguf_writer_set_u32(w, "gpt2.attention.head_count", (uint32_t)h.n_head);
    if (!s) s = vkf_gguf_writer_set_f32(w, "gpt2.attention.layer_norm_epsilon", (float)h.eps);
    if (!s) s = vkf_gguf_writer_set_u32(w, "general.file_type", 0);
    if (!s) s = vkf_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (!s) s = vkf_gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt-2");
    if (!s)
        s = vkf_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)h.tokens,
                                        h.tok_len, (uint64_t)h.n_vocab);
    if (!s)
        s = vkf_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, (uint64_t)h.n_vocab);
    if (!s)
        s = vkf_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", h.merges, h.merge_len,
                                        h.n_merges);
    if (!s) s = vkf_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)h.bos);
    if (!s) s = vkf_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)h.eos);
    if (!s) s = vkf_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)h.eos);
    free(types);
    for (size_t i = 0; i < k && s == VKF_OK; i++) {
        int64_t ne[2] = {list[i].ne0, list[i].ne1};
        s = vkf_gguf_writer_add_tensor(w, list[i].gguf, 0, list[i].rank, ne,
                                       (uint64_t)(list[i].ne0 * list[i].ne1) * 4);
    }
    if (s == VKF_OK) s = vkf_gguf_writer_begin(w, out_path);
    for (size_t i = 0; i < k && s == VKF_OK; i++) {
        const float *data;
        /* HF shapes: Conv1D [in, out] = [ne0, ne1]; embeddings [rows, d]; vectors [n] */
        if (list[i].rank == 1)
            s = get_f32(&h, list[i].hf, 1, list[i].ne0, -1, 0, &data);
        else if (list[i].transpose)
            s = get_f32(&h, list[i].hf, 2, list[i].ne0, list[i].ne1, 1, &data);
        else
            s = get_f32(&h, list[i].hf, 2, list[i].ne1, list[i].ne0, 0, &data);
        if (s == VKF_OK)
            s = vkf_gguf_writer_write(w, data, (uint64_t)(list[i].ne0 * list[i].ne1) * 4);
    }
    if (s == VKF_OK) s = vkf_gguf_writer_finish(w);
done:
    vkf_gguf_writer_free(w);
    free(list);
    hf_free(&h);
    return s;
}
