/* Chat templates: finding a model's template and rendering conversations with it. */
#include "model/chat.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/gguf.h"
#include "model/model.h"
#include "structured/tool_calls.h"
#include "template/jinja.h"
#include "tokenizer/tokenizer.h"

/* ------------------------------------------------------------------ rendering */

static vkf_status parse_json(const char *what, const char *text, int want, cJSON **out) {
    const char *end = NULL;
    *out = cJSON_ParseWithOpts(text, &end, 0);
    if (!*out)
        return vkf_error(VKF_ERROR_FORMAT, "chat template: %s is not valid JSON (at byte %zu)",
                         what, end ? (size_t)(end - text) : 0);
    if ((want == cJSON_Array && !cJSON_IsArray(*out)) ||
        (want == cJSON_Object && !cJSON_IsObject(*out))) {
        cJSON_Delete(*out);
        *out = NULL;
        return vkf_error(VKF_ERROR_FORMAT, "chat template: %s must be a JSON %s", what,
                         want == cJSON_Array ? "array" : "object");
    }
    return VKF_OK;
}

vkf_status vkf_chat_template_render(const char *tmpl, const char *messages_json,
                                    const char *tools_json, const char *context_json,
                                    const char *bos, const char *eos, int add_generation_prompt,
                                    char **out) {
    if (!tmpl || !messages_json || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "chat_template_render: NULL template, messages or output");
    *out = NULL;
    /* inputs are checked here (clear messages, right types); the interpreter reads the texts */
    const char *texts[3] = {messages_json, tools_json, context_json};
    static const char *const what[3] = {"messages", "tools", "context"};
    for (int i = 0; i < 3; i++) {
        cJSON *v = NULL;
        if (!texts[i]) continue;
        VKF_TRY(parse_json(what[i], texts[i], i == 2 ? cJSON_Object : cJSON_Array, &v));
        cJSON_Delete(v);
    }
    /* the variables transformers passes: {**special_tokens_map, **kwargs} */
    cJSON *sb = cJSON_CreateString(bos ? bos : ""), *se = cJSON_CreateString(eos ? eos : "");
    char *bos_json = sb ? cJSON_PrintUnformatted(sb) : NULL,
         *eos_json = se ? cJSON_PrintUnformatted(se) : NULL;
    cJSON_Delete(sb);
    cJSON_Delete(se);
    vkf_status s;
    if (!bos_json || !eos_json) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "chat template: out of memory");
    } else {
        vkf_jinja_var vars[] = {
            {"bos_token", bos_json},
            {"eos_token", eos_json},
            {"messages", messages_json},
            {"tools", tools_json ? tools_json : "null"},
            {"documents", "null"},
            {"add_generation_prompt", add_generation_prompt ? "true" : "false"},
            {NULL, context_json ? context_json : "{}"},
        };
        s = vkf_jinja_render(tmpl, strlen(tmpl), vars, (int)(sizeof vars / sizeof vars[0]), out);
    }
    cJSON_free(bos_json);
    cJSON_free(eos_json);
    return s;
}

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

/* llama.cpp's default when a model has no template (llama_chat_apply_template's "chatml"):
 * "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, then "<|im_start|>assistant\n". A
 * content that is not a string is written as its JSON text. */
vkf_status vkf_chat_chatml(const char *messages_json, int add_generation_prompt, char **out) {
    cJSON *msgs;
    VKF_TRY(parse_json("messages", messages_json, cJSON_Array, &msgs));
    size_t cap = 0, n = 0;
    const cJSON *msg;
    char *buf = NULL;
    vkf_status s = VKF_OK;
    for (int pass = 0; pass < 2 && s == VKF_OK; pass++) { /* pass 0 measures, pass 1 writes */
        n = 0;
        cJSON_ArrayForEach(msg, msgs) {
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
            const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
            if (!cJSON_IsString(role)) {
                s = vkf_error(VKF_ERROR_FORMAT, "chat template: a message has no string \"role\"");
                break;
            }
            char *ctext = cJSON_IsString(content) ? NULL
                          : content               ? cJSON_PrintUnformatted(content)
                                                  : NULL;
            const char *c = cJSON_IsString(content) ? content->valuestring : ctext ? ctext : "";
            int k = snprintf(buf ? buf + n : NULL, buf ? cap - n : 0,
                             "<|im_start|>%s\n%s<|im_end|>\n", role->valuestring, c);
            free(ctext);
            n += (size_t)k;
        }
        if (s == VKF_OK && add_generation_prompt)
            n += (size_t)snprintf(buf ? buf + n : NULL, buf ? cap - n : 0,
                                  "<|im_start|>assistant\n");
        if (s == VKF_OK && pass == 0) {
            cap = n + 1;
            if (!(buf = malloc(cap)))
                s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "chat template: out of memory");
        }
    }
    cJSON_Delete(msgs);
    if (s != VKF_OK) {
        free(buf);
        return s;
    }
    *out = buf;
    return VKF_OK;
}

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

vkf_status vkf_chat_apply(const vkf_model *m, const char *messages_json, int add_generation_prompt,
                          char **out, int *used_default) {
    return vkf_chat_apply_ex(m, messages_json, NULL, NULL, add_generation_prompt, out,
                             used_default);
}

/* messages through template t (NULL: ChatML) with tools and tool calls prepared as t wants them
 * (structured/tool_chat.c): the one rendering path of vkf_chat_apply_ex and
 * vkf_chat_apply_template */
static vkf_status chat_render(const vkf_model *m, const char *t, const char *messages_json,
                              const char *tools_json, const char *context_json,
                              int add_generation_prompt, char **out) {
    char *prepared = NULL;
    VKF_TRY(vkf_tool_messages_prepare(t, m->chat_bos, m->chat_eos, messages_json, tools_json,
                                      &prepared));
    if (prepared) messages_json = prepared;
    vkf_status s =
        t ? vkf_chat_template_render(t, messages_json, tools_json, context_json, m->chat_bos,
                                     m->chat_eos, add_generation_prompt, out)
          : vkf_chat_chatml(messages_json, add_generation_prompt, out);
    free(prepared);
    return s;
}

vkf_status vkf_chat_apply_ex(const vkf_model *m, const char *messages_json, const char *tools_json,
                             const char *context_json, int add_generation_prompt, char **out,
                             int *used_default) {
    if (out) *out = NULL;
    if (!m || !messages_json || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "chat_apply: NULL model, messages or output");
    if (used_default) *used_default = m->chat_template == NULL;
    /* as transformers and llama.cpp do: the "tool_use" template when tools are given */
    const char *t =
        tools_json && m->chat_template_tool_use ? m->chat_template_tool_use : m->chat_template;
    return chat_render(m, t, messages_json, tools_json, context_json, add_generation_prompt, out);
}

vkf_status vkf_chat_apply_template(const vkf_model *m, const char *tmpl, const char *messages_json,
                                   const char *tools_json, const char *context_json,
                                   int add_generation_prompt, char **out) {
    if (out) *out = NULL;
    if (!m || !messages_json || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "chat_apply_template: NULL model, messages or output");
    return chat_render(m, tmpl, messages_json, tools_json, context_json, add_generation_prompt,
                       out);
}
