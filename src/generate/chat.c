/* Chat templates: rendering conversations with a model's template (read from its files by
 * model/model_chat.c), or with ChatML when it has none. */
#include "generate/chat.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "structured/tool_calls.h"
#include "template/jinja.h"

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

vkf_status vkf_chat_apply(const vkf_model *m, const char *messages_json, int add_generation_prompt,
                          char **out, int *used_default) {
    return vkf_chat_apply_ex(m, messages_json, NULL, NULL, add_generation_prompt, out,
                             used_default);
}

/* messages through template t (NULL: ChatML) with tools and tool calls prepared as t wants them
 * (generate/tool_chat.c): the one rendering path of vkf_chat_apply_ex and
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
