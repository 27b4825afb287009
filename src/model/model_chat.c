/* A model's chat template, bos and eos texts read from its files (GGUF metadata,
 * tokenizer_config.json, chat_template.jinja): what vkf_model_load keeps of them, and what the
 * front ends read without loading weights (vkf_chat_template_read). Rendering is generate/chat.c.
 */
#include "model/model_chat.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

/* ------------------------------------------------------------------ model files */

static char *dup_str(const char *s, size_t n) {
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = 0;
    }
    return r;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
        }
        size_t r = fread(b + n, 1, cap - n - 1, f);
        if (r == 0) break;
        n += r;
    }
    fclose(f);
    if (b) b[n] = 0;
    return b;
}

/* A special token in tokenizer_config.json: a string or {"content": "..."}. */
static char *token_text(const cJSON *t) {
    if (cJSON_IsObject(t)) t = cJSON_GetObjectItemCaseSensitive(t, "content");
    return cJSON_IsString(t) ? dup_str(t->valuestring, strlen(t->valuestring)) : NULL;
}

/* name: "default" (a string chat_template, the list entry "default", or chat_template.jinja) or
 * another named template (its list entry, or additional_chat_templates/NAME.jinja) */
static vkf_status hf_dir_files(const char *dir, const char *name, char **tmpl, char **bos,
                               char **eos) {
    char path[1200];
    int is_default = strcmp(name, "default") == 0;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    char *text = read_text(path);
    if (text) {
        cJSON *root = cJSON_Parse(text);
        free(text);
        if (!cJSON_IsObject(root)) {
            cJSON_Delete(root);
            return vkf_error(VKF_ERROR_FORMAT, "%s: not a JSON object", path);
        }
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
        if (cJSON_IsArray(ct)) { /* named templates */
            const cJSON *e, *found = NULL;
            cJSON_ArrayForEach(e, ct) {
                const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
                if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
                    found = cJSON_GetObjectItemCaseSensitive(e, "template");
            }
            ct = found;
        } else if (!is_default) {
            ct = NULL;
        }
        if (tmpl && cJSON_IsString(ct)) *tmpl = dup_str(ct->valuestring, strlen(ct->valuestring));
        if (bos) *bos = token_text(cJSON_GetObjectItemCaseSensitive(root, "bos_token"));
        if (eos) *eos = token_text(cJSON_GetObjectItemCaseSensitive(root, "eos_token"));
        cJSON_Delete(root);
    }
    if (tmpl && !*tmpl) {
        if (is_default)
            snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
        else
            snprintf(path, sizeof path, "%s/additional_chat_templates/%s.jinja", dir, name);
        *tmpl = read_text(path);
    }
    return VKF_OK;
}

static char *gguf_token(const vkf_gguf *g, const char *id_key) {
    uint32_t id;
    const vkf_gguf_value *toks;
    if (vkf_gguf_get_u32(g, id_key, UINT32_MAX, &id) != VKF_OK || id == UINT32_MAX) return NULL;
    if (vkf_gguf_get_arr(g, "tokenizer.ggml.tokens", -1, &toks) != VKF_OK || !toks) return NULL;
    size_t n = 0;
    const char *s = vkf_gguf_arr_str(toks, id, &n);
    return s ? dup_str(s, n) : NULL;
}

static vkf_status model_files(const char *path, const char *name, char **tmpl, char **bos,
                              char **eos) {
    if (tmpl) *tmpl = NULL;
    if (bos) *bos = NULL;
    if (eos) *eos = NULL;
    if (!path) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "chat template: NULL model path");
    struct stat sb;
    if (stat(path, &sb) != 0) return vkf_error(VKF_ERROR_IO, "%s: no such file or directory", path);
    if (S_ISDIR(sb.st_mode)) return hf_dir_files(path, name, tmpl, bos, eos);
    vkf_gguf *g;
    VKF_TRY(vkf_gguf_open(path, &g));
    char key[128];
    if (strcmp(name, "default") == 0)
        snprintf(key, sizeof key, "tokenizer.chat_template");
    else
        snprintf(key, sizeof key, "tokenizer.chat_template.%s", name);
    const char *t = NULL;
    vkf_status s = vkf_gguf_get_str(g, key, NULL, &t);
    if (s == VKF_OK && t && tmpl) *tmpl = dup_str(t, strlen(t));
    if (s == VKF_OK && bos) *bos = gguf_token(g, "tokenizer.ggml.bos_token_id");
    if (s == VKF_OK && eos) *eos = gguf_token(g, "tokenizer.ggml.eos_token_id");
    vkf_gguf_close(g);
    vkf_error_clear();
    return s;
}

vkf_status vkf_chat_model_files(const char *path, char **tmpl, char **bos, char **eos) {
    return model_files(path, "default", tmpl, bos, eos);
}

vkf_status vkf_chat_model_named_template(const char *path, const char *name, char **tmpl) {
    return model_files(path, name, tmpl, NULL, NULL);
}

/* ------------------------------------------------------------------ model */

void vkf_chat_model_load(vkf_model *m, const char *path, const char *tokenizer) {
    const char *paths[2] = {path, tokenizer};
    for (int i = 0; i < 2 && !m->chat_template_tool_use; i++) {
        char *t = NULL;
        if (paths[i] && vkf_chat_model_named_template(paths[i], "tool_use", &t) == VKF_OK)
            m->chat_template_tool_use = t;
    }
    for (int i = 0; i < 2; i++) {
        char *t = NULL, *b = NULL, *e = NULL;
        if (!paths[i] || vkf_chat_model_files(paths[i], &t, &b, &e) != VKF_OK) continue;
        if (!m->chat_template) m->chat_template = t, t = NULL;
        if (!m->chat_bos) m->chat_bos = b, b = NULL;
        if (!m->chat_eos) m->chat_eos = e, e = NULL;
        free(t);
        free(b);
        free(e);
    }
    const char *tb =
        m->tok && m->hp.bos_id >= 0 ? vkf_tokenizer_token_text(m->tok, m->hp.bos_id) : NULL;
    const char *te =
        m->tok && m->hp.eos_id >= 0 ? vkf_tokenizer_token_text(m->tok, m->hp.eos_id) : NULL;
    if (!m->chat_bos && tb) m->chat_bos = dup_str(tb, strlen(tb));
    if (!m->chat_eos && te) m->chat_eos = dup_str(te, strlen(te));
    vkf_error_clear();
}

const char *vkf_model_chat_template(const vkf_model *m) { return m ? m->chat_template : NULL; }
