/* tokenizer.json -> GGUF tokenizer.* keys (see quantize.h), as llama.cpp's convert_hf_to_gguf.py
 * writes them for byte-level BPE tokenizers (its get_vocab_base / SpecialVocab):
 *   tokenizer.ggml.model "gpt2"; tokenizer.ggml.pre named by the pre-tokenizer's split regex
 *   (llama.cpp identifies it by hashing a tokenization; the regexes here are the ones of the
 *   names it gives: Llama-3 "llama-bpe", Qwen2/2.5/3 "qwen2", plain ByteLevel "gpt-2");
 *   tokens by id (model.vocab, then added_tokens), ids without a token "[PAD<id>]" (UNUSED);
 *   types NORMAL, CONTROL for special added tokens and those that look special, USER_DEFINED
 *   for the other added tokens (U+2581 -> space); merges as "a b";
 *   tokenizer_config.json's chat_template and add_bos_token / add_eos_token.
 * Other tokenizers (SentencePiece-style BPE with byte fallback, Unigram, WordPiece; llama.cpp
 * reads tokenizer.model for most of them) and unknown regexes are not converted: nothing is
 * written and *written is 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "io/gguf_write.h"
#include "io/json_config.h"
#include "quantize/quantize.h"

enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5 };

#define RX_HEAD "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
#define RX_TAIL "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
static const struct {
    const char *regex, *pre;
} k_pre[] = {
    {RX_HEAD "\\p{N}{1,3}" RX_TAIL, "llama-bpe"},
    {RX_HEAD "\\p{N}" RX_TAIL, "qwen2"},
};

/* The GGUF pre-tokenizer name of a byte-level BPE pre_tokenizer, or NULL. */
static const char *pre_name(const cJSON *pt) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
    const char *regex = NULL;
    int bytelevel_regex = 0, n = 0;
    const cJSON *e;
    if (!cJSON_IsArray(list)) list = NULL;
    for (e = list ? list->child : pt; e; e = list ? e->next : NULL) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(e, "type");
        if (!cJSON_IsString(ty)) return NULL;
        n++;
        if (!strcmp(ty->valuestring, "Split")) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "pattern");
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "Regex");
            if (!cJSON_IsString(r) || regex) return NULL;
            regex = r->valuestring;
        } else if (!strcmp(ty->valuestring, "ByteLevel")) {
            bytelevel_regex = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "use_regex"));
        } else {
            return NULL;
        }
        if (!list) break;
    }
    if (!regex) return n == 1 && bytelevel_regex ? "gpt-2" : NULL;
    if (bytelevel_regex) return NULL;
    for (size_t i = 0; i < sizeof k_pre / sizeof k_pre[0]; i++)
        if (!strcmp(regex, k_pre[i].regex)) return k_pre[i].pre;
    return NULL;
}

/* llama.cpp's does_token_look_special. */
static int looks_special(const char *t) {
    size_t n = strlen(t);
    if (!strcmp(t, "<pad>") || !strcmp(t, "<mask>") || !strcmp(t, "<2mass>") ||
        !strcmp(t, "[@BOS@]"))
        return 1;
    if (n >= 4 && !strncmp(t, "<|", 2) && !strcmp(t + n - 2, "|>")) return 1;
    if (n >= 8 && !strncmp(t, "<\xef\xbd\x9c", 4) && !strcmp(t + n - 4, "\xef\xbd\x9c>")) return 1;
    return !strncmp(t, "<start_of_", 10) || !strncmp(t, "<end_of_", 8);
}

typedef struct tokv {
    char **tok;
    int32_t *type;
    int64_t n;
    const char **merges;
    char **merge_own;
    uint64_t n_merges;
} tokv;

static void tokv_free(tokv *v) {
    if (v->tok)
        for (int64_t i = 0; i < v->n; i++)
            free(v->tok[i]);
    if (v->merge_own)
        for (uint64_t i = 0; i < v->n_merges; i++)
            free(v->merge_own[i]);
    free(v->tok);
    free(v->type);
    free(v->merges);
    free(v->merge_own);
}

static vkf_status set_token(tokv *v, const char *path, int64_t id, const char *text, int type) {
    if (id < 0 || id >= v->n)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: token '%s': id %lld outside the vocabulary [0, %lld)", path, text,
                         (long long)id, (long long)v->n);
    char *c = strdup(text);
    if (!c) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    free(v->tok[id]);
    v->tok[id] = c;
    v->type[id] = type;
    return VKF_OK;
}

static vkf_status read_vocab(tokv *v, const cJSON *root, const char *path, int64_t n_vocab) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const cJSON *e;
    if (n_vocab <= 0) { /* the largest id + 1 */
        cJSON_ArrayForEach(e, vocab) {
            if (cJSON_IsNumber(e) && e->valuedouble >= (double)n_vocab)
                n_vocab = (int64_t)e->valuedouble + 1;
        }
        cJSON_ArrayForEach(e, added) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
            if (cJSON_IsNumber(id) && id->valuedouble >= (double)n_vocab)
                n_vocab = (int64_t)id->valuedouble + 1;
        }
    }
    if (n_vocab <= 0 || n_vocab > (1 << 24))
        return vkf_error(VKF_ERROR_FORMAT, "%s: vocabulary size %lld out of range", path,
                         (long long)n_vocab);
    v->n = n_vocab;
    v->tok = calloc((size_t)n_vocab, sizeof *v->tok);
    v->type = calloc((size_t)n_vocab, sizeof *v->type);
    if (!v->tok || !v->type) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e))
            return vkf_error(VKF_ERROR_FORMAT, "%s: model.vocab[\"%s\"] must be an id", path,
                             e->string);
        VKF_TRY(set_token(v, path, (int64_t)e->valuedouble, e->string, TT_NORMAL));
    }
    cJSON_ArrayForEach(e, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsNumber(id) || !cJSON_IsString(c))
            return vkf_error(VKF_ERROR_FORMAT, "%s: added_tokens: each needs an id and a content",
                             path);
        int special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special"));
        int ctl = special || looks_special(c->valuestring);
        VKF_TRY(set_token(v, path, (int64_t)id->valuedouble, c->valuestring,
                          ctl ? TT_CONTROL : TT_USER));
        if (!ctl) { /* user-defined tokens are matched pre-normalized: U+2581 -> space */
            char *t = v->tok[(int64_t)id->valuedouble], *p;
            while ((p = strstr(t, "\xe2\x96\x81"))) {
                *p = ' ';
                memmove(p + 1, p + 3, strlen(p + 3) + 1);
            }
        }
    }
    for (int64_t i = 0; i < n_vocab; i++)
        if (!v->tok[i]) {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%lld]", (long long)i);
            VKF_TRY(set_token(v, path, i, pad, TT_UNUSED));
        }
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    int n_m = cJSON_IsArray(merges) ? cJSON_GetArraySize(merges) : 0;
    v->merges = calloc((size_t)n_m + 1, sizeof *v->merges);
    v->merge_own = calloc((size_t)n_m + 1, sizeof *v->merge_own);
    if (!v->merges || !v->merge_own)
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    cJSON_ArrayForEach(e, merges) {
        uint64_t i = v->n_merges++;
        if (cJSON_IsString(e)) {
            v->merges[i] = e->valuestring;
            continue;
        }
        const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(a) ||
            !cJSON_IsString(b))
            return vkf_error(VKF_ERROR_FORMAT, "%s: model.merges[%llu] must be \"a b\" or [a, b]",
                             path, (unsigned long long)i);
        size_t la = strlen(a->valuestring), lb = strlen(b->valuestring);
        char *m = malloc(la + lb + 2);
        if (!m) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
        memcpy(m, a->valuestring, la);
        m[la] = ' ';
        memcpy(m + la + 1, b->valuestring, lb + 1);
        v->merge_own[i] = m;
        v->merges[i] = m;
    }
    return VKF_OK;
}

/* tokenizer_config.json: chat_template (a string) and add_bos_token / add_eos_token. */
static vkf_status config_keys(vkf_gguf_writer *w, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return VKF_OK;
    fclose(f);
    vkf_json_config *c;
    VKF_TRY(vkf_json_config_load(path, &c));
    const cJSON *root = vkf_json_config_root(c);
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    const cJSON *ab = cJSON_GetObjectItemCaseSensitive(root, "add_bos_token");
    const cJSON *ae = cJSON_GetObjectItemCaseSensitive(root, "add_eos_token");
    vkf_status s = VKF_OK;
    if (cJSON_IsBool(ab))
        s = vkf_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", cJSON_IsTrue(ab));
    if (s == VKF_OK && cJSON_IsBool(ae))
        s = vkf_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", cJSON_IsTrue(ae));
    if (s == VKF_OK && cJSON_IsString(ct))
        s = vkf_gguf_writer_set_str(w, "tokenizer.chat_template", ct->valuestring);
    vkf_json_config_free(c);
    return s;
}

vkf_status vkf_hf_tokenizer_keys(vkf_gguf_writer *w, const char *dir, int64_t n_vocab,
                                 int *written) {
    *written = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return VKF_OK;
    fclose(f);
    vkf_json_config *c;
    VKF_TRY(vkf_json_config_load(path, &c));
    const cJSON *root = vkf_json_config_root(c);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(model, "type");
    const char *pre = pre_name(cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"));
    tokv v = {0};
    vkf_status s = VKF_OK;
    if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "BPE") ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback")) || !pre)
        goto done; /* not converted (see the top) */
    s = read_vocab(&v, root, path, n_vocab);
    if (s == VKF_OK) s = vkf_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (s == VKF_OK) s = vkf_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    if (s == VKF_OK)
        s = vkf_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v.tok,
                                        NULL, (uint64_t)v.n);
    if (s == VKF_OK)
        s = vkf_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", v.type, (uint64_t)v.n);
    if (s == VKF_OK)
        s = vkf_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", v.merges, NULL, v.n_merges);
    if (s == VKF_OK) s = config_keys(w, dir);
    if (s == VKF_OK) *written = 1;
done:
    tokv_free(&v);
    vkf_json_config_free(c);
    return s;
}
