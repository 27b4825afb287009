/* Tool calls, the chat side (vkformer.h): formats from templates, grammars for tool_choice, and
 * conversations prepared for a template (tool_calls arguments as the template wants them, tools
 * described to templates that do not render them). The parsers are in structured/tool_calls.c, the
 * OpenAI message of an answer and the streaming deltas in structured/tool_messages.c. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "generate/chat.h"
#include "model/model.h"
#include "structured/json_schema.h"
#include "structured/tool_calls.h"

/* ------------------------------------------------------------------ formats */

static const char *const k_format_names[] = {"generic", "hermes",   "llama3",
                                             "mistral", "deepseek", "functionary"};

const char *vkf_tool_format_name(vkf_tool_format f) {
    return (unsigned)f < 6 ? k_format_names[f] : "generic";
}

int vkf_tool_format_from_name(const char *name) {
    for (int i = 0; name && i < 6; i++)
        if (!strcmp(name, k_format_names[i])) return i;
    return -1;
}

vkf_tool_format vkf_tool_format_detect(const char *t) {
    if (!t) return VKF_TOOL_FORMAT_GENERIC;
    if (strstr(t, "<tool_call>")) return VKF_TOOL_FORMAT_HERMES;
    if (strstr(t, "tool▁call▁begin") || strstr(t, "tool▁calls▁begin"))
        return VKF_TOOL_FORMAT_DEEPSEEK;
    if (strstr(t, "[TOOL_CALLS]")) return VKF_TOOL_FORMAT_MISTRAL;
    if (strstr(t, ">>>all") || strstr(t, "<function=")) return VKF_TOOL_FORMAT_FUNCTIONARY;
    if (strstr(t, "<|python_tag|>") ||
        (strstr(t, "<|start_header_id|>") && strstr(t, "\"parameters\"")))
        return VKF_TOOL_FORMAT_LLAMA3;
    return VKF_TOOL_FORMAT_GENERIC;
}

vkf_tool_format vkf_model_tool_format(const vkf_model *m) {
    if (!m) return VKF_TOOL_FORMAT_GENERIC;
    return vkf_tool_format_detect(m->chat_template_tool_use ? m->chat_template_tool_use
                                                            : m->chat_template);
}

static char *print_free(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

/* ------------------------------------------------------------------ tool_choice grammars */

/* the function objects of tools: each {"type": "function", "function": {...}} or a bare
 * {"name", "parameters"} */
static const cJSON *tool_function(const cJSON *t) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function");
    return cJSON_IsObject(f) ? f : t;
}

static void literal(vkf_sb *b, const char *s) { vkf_sb_gbnf_literal(b, s, strlen(s)); }

/* the JSON text of a name, as a GBNF literal */
static void json_literal(vkf_sb *b, const char *s) {
    vkf_sb j = {0};
    vkf_sb_json_string(&j, s, strlen(s));
    vkf_sb_gbnf_literal(b, j.p, j.n);
    vkf_sb_free(&j);
}

vkf_status vkf_tool_calls_grammar(vkf_tool_format f, const char *tools_json,
                                  const char *tool_choice_json, int parallel, char **gbnf) {
    if (!gbnf) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tool calls: NULL output");
    *gbnf = NULL;
    cJSON *choice = tool_choice_json ? cJSON_Parse(tool_choice_json) : NULL;
    if (tool_choice_json && !choice)
        return vkf_error(VKF_ERROR_FORMAT, "tool_choice: not valid JSON");
    const char *named = NULL;
    if (!choice || (cJSON_IsString(choice) && (!strcmp(choice->valuestring, "auto") ||
                                               !strcmp(choice->valuestring, "none")))) {
        cJSON_Delete(choice);
        return VKF_OK; /* no constraint */
    }
    if (cJSON_IsString(choice) && strcmp(choice->valuestring, "required") != 0) {
        vkf_status st = vkf_error(VKF_ERROR_FORMAT,
                                  "tool_choice: '%s' is not none, auto, required or a function",
                                  choice->valuestring);
        cJSON_Delete(choice);
        return st;
    }
    if (cJSON_IsObject(choice)) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(choice, "function");
        const cJSON *nm =
            cJSON_GetObjectItemCaseSensitive(cJSON_IsObject(fn) ? fn : choice, "name");
        if (!cJSON_IsString(nm)) {
            cJSON_Delete(choice);
            return vkf_error(VKF_ERROR_FORMAT,
                             "tool_choice: expected {\"type\": \"function\", \"function\": "
                             "{\"name\": \"...\"}}");
        }
        named = nm->valuestring;
    } else if (!cJSON_IsString(choice)) {
        cJSON_Delete(choice);
        return vkf_error(VKF_ERROR_FORMAT, "tool_choice: expected a string or an object");
    }
    cJSON *tools = tools_json ? cJSON_Parse(tools_json) : NULL;
    vkf_status st = VKF_OK;
    vkf_jconv *j = NULL;
    vkf_sb any = {0};
    int n_sel = 0;
    if (!cJSON_IsArray(tools) || cJSON_GetArraySize(tools) == 0) {
        st = vkf_error(VKF_ERROR_FORMAT, "tools: tool_choice %s needs a non-empty array of tools",
                       named ? "names a function and" : "required");
        goto done;
    }
    if ((st = vkf_json_check_utf8(tools, "tools")) != VKF_OK) goto done;
    if ((st = vkf_jconv_create(&j)) != VKF_OK) goto done;
    const char *space = vkf_jconv_prim(j, "space");
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *fn = tool_function(t), *nm = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(nm)) {
            st = vkf_error(VKF_ERROR_FORMAT, "tools[%d]: no function name", i);
            goto done;
        }
        i++;
        if (named && strcmp(named, nm->valuestring) != 0) continue;
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        cJSON *empty = NULL;
        if (!params) /* no parameters: an empty argument object */
            params = empty = cJSON_Parse("{\"type\": \"object\", \"properties\": {}, "
                                         "\"additionalProperties\": false}");
        char rname[160];
        snprintf(rname, sizeof rname, "%s-args", nm->valuestring);
        const char *args_rule;
        st = vkf_jconv_add(j, params, rname, &args_rule);
        cJSON_Delete(empty);
        if (st != VKF_OK) {
            vkf_error_prefix(st, "tools: function '%s' parameters", nm->valuestring);
            goto done;
        }
        /* the call in the family's syntax */
        vkf_sb b = {0};
        switch (f) {
        case VKF_TOOL_FORMAT_DEEPSEEK:
            literal(&b, "<｜tool▁call▁begin｜>function<｜tool▁sep｜>");
            vkf_sb_putc(&b, ' ');
            literal(&b, nm->valuestring);
            vkf_sb_printf(&b, " \"\\n```json\\n\" %s \"\\n```<｜tool▁call▁end｜>\"", args_rule);
            break;
        case VKF_TOOL_FORMAT_FUNCTIONARY:
            literal(&b, nm->valuestring);
            vkf_sb_printf(&b, " \"\\n\" %s", args_rule);
            break;
        default:
            vkf_sb_printf(&b, "\"{\" %s \"\\\"name\\\"\" %s \":\" %s ", space, space, space);
            json_literal(&b, nm->valuestring);
            vkf_sb_printf(&b, " \",\" %s \"\\\"%s\\\"\" %s \":\" %s %s %s \"}\"", space,
                          f == VKF_TOOL_FORMAT_LLAMA3 ? "parameters" : "arguments", space, space,
                          args_rule, space);
        }
        char cname[160];
        snprintf(cname, sizeof cname, "%s-call", nm->valuestring);
        const char *call_rule = NULL;
        st = b.oom ? VKF_ERROR_OUT_OF_MEMORY : vkf_jconv_rule(j, cname, b.p, &call_rule);
        vkf_sb_free(&b);
        if (st != VKF_OK) goto done;
        vkf_sb_printf(&any, "%s%s", n_sel++ ? " | " : "", call_rule);
    }
    if (!n_sel) {
        st =
            vkf_error(VKF_ERROR_FORMAT, "tool_choice: function '%s' is not among the tools", named);
        goto done;
    }
    const char *call;
    if ((st = vkf_jconv_rule(j, "tool-call", any.p, &call)) != VKF_OK) goto done;
    vkf_sb root = {0};
    const char *sep = f == VKF_TOOL_FORMAT_MISTRAL || f == VKF_TOOL_FORMAT_GENERIC ? "\",\" space"
                      : f == VKF_TOOL_FORMAT_LLAMA3                                ? "\";\" space"
                      : f == VKF_TOOL_FORMAT_FUNCTIONARY                           ? "\">>>\""
                      : f == VKF_TOOL_FORMAT_DEEPSEEK                              ? "\"\\n\"?"
                                                                                   : "\"\\n\"?";
    char more[256];
    snprintf(more, sizeof more, "%s (%s %s)*", call, sep, call);
    const char *calls = parallel ? more : call;
    switch (f) {
    case VKF_TOOL_FORMAT_HERMES: {
        vkf_sb one = {0};
        vkf_sb_printf(&one, "\"<tool_call>\" \"\\n\"? %s \"\\n\"? \"</tool_call>\"", call);
        const char *tc;
        st = vkf_jconv_rule(j, "tool-call-block", one.p, &tc);
        vkf_sb_free(&one);
        if (st != VKF_OK) break;
        vkf_sb_printf(&root, parallel ? "%s (\"\\n\"? %s)*" : "%s", tc, tc);
        break;
    }
    case VKF_TOOL_FORMAT_MISTRAL:
        vkf_sb_printf(&root, "\"[TOOL_CALLS]\" \"[\" %s \"]\"", calls);
        break;
    case VKF_TOOL_FORMAT_DEEPSEEK:
        vkf_sb_printf(&root, "\"<｜tool▁calls▁begin｜>\" %s \"<｜tool▁calls▁end｜>\"", calls);
        break;
    case VKF_TOOL_FORMAT_GENERIC:
        vkf_sb_printf(&root,
                      "\"{\" space \"\\\"tool_calls\\\"\" space \":\" space \"[\" space %s space "
                      "\"]\" space \"}\"",
                      calls);
        break;
    default: vkf_sb_puts(&root, calls); break;
    }
    if (st == VKF_OK)
        st = root.oom ? VKF_ERROR_OUT_OF_MEMORY : vkf_jconv_rule(j, "root", root.p, NULL);
    vkf_sb_free(&root);
    if (st == VKF_OK) {
        st = vkf_jconv_finish(j, gbnf);
        j = NULL;
    }
done:
    vkf_jconv_free(j);
    vkf_sb_free(&any);
    cJSON_Delete(tools);
    cJSON_Delete(choice);
    return st;
}

/* ------------------------------------------------------------------ conversations for templates */

/* Does the template take tool-call arguments as objects? Rendered with an object, a template
 * that writes them with tojson shows "probe_key"; one that concatenates strings (DeepSeek,
 * Functionary) fails or does not, and keeps the JSON strings OpenAI sends. The call's content
 * is null as OpenAI sends it, then "" for templates that test it as a string (gpt-oss's harmony
 * template: `"..." in message.content` raises on None, as in jinja2). */
static int template_takes_objects(const char *tmpl, const char *bos, const char *eos) {
    static const char *probe[2] = {
        "[{\"role\": \"user\", \"content\": \"probe\"}, {\"role\": \"assistant\", \"content\": "
        "null, \"tool_calls\": [{\"id\": \"probe0001\", \"type\": \"function\", \"function\": "
        "{\"name\": \"probe_fn\", \"arguments\": {\"probe_key\": \"probe_value\"}}}]}, {\"role\": "
        "\"tool\", \"tool_call_id\": \"probe0001\", \"name\": \"probe_fn\", \"content\": \"ok\"}]",
        "[{\"role\": \"user\", \"content\": \"probe\"}, {\"role\": \"assistant\", \"content\": "
        "\"\", \"tool_calls\": [{\"id\": \"probe0001\", \"type\": \"function\", \"function\": "
        "{\"name\": \"probe_fn\", \"arguments\": {\"probe_key\": \"probe_value\"}}}]}, {\"role\": "
        "\"tool\", \"tool_call_id\": \"probe0001\", \"name\": \"probe_fn\", \"content\": \"ok\"}]"};
    static const char *tools =
        "[{\"type\": \"function\", \"function\": {\"name\": \"probe_fn\", \"description\": "
        "\"probe\", \"parameters\": {\"type\": \"object\", \"properties\": {\"probe_key\": "
        "{\"type\": \"string\", \"description\": \"probe\"}}, \"required\": [\"probe_key\"]}}}]";
    int ok = 0;
    for (int i = 0; i < 2 && !ok; i++) {
        char *out = NULL;
        vkf_status st = vkf_chat_template_render(tmpl, probe[i], tools, NULL, bos, eos, 1, &out);
        ok = st == VKF_OK && out && strstr(out, "\"probe_key\"") != NULL;
        free(out);
    }
    vkf_error_clear();
    return ok;
}

static char *tools_description(const cJSON *tools) {
    char *tj = cJSON_PrintUnformatted(tools);
    vkf_sb b = {0};
    vkf_sb_puts(&b, "Tools (parameters as JSON Schema): ");
    vkf_sb_puts(&b, tj ? tj : "[]");
    vkf_sb_puts(&b, "\nTo call tools, reply only {\"tool_calls\": [{\"name\": NAME, "
                    "\"arguments\": {...}}]}; else answer directly.");
    cJSON_free(tj);
    return vkf_sb_take(&b);
}

vkf_status vkf_tool_messages_prepare(const char *tmpl, const char *bos, const char *eos,
                                     const char *messages_json, const char *tools_json,
                                     char **out) {
    *out = NULL;
    cJSON *msgs = cJSON_Parse(messages_json);
    if (!cJSON_IsArray(msgs)) { /* the renderer reports it */
        cJSON_Delete(msgs);
        return VKF_OK;
    }
    cJSON *tools = tools_json ? cJSON_Parse(tools_json) : NULL;
    int changed = 0, has_string_args = 0, takes_objects = -1;
    int renders_calls = tmpl && strstr(tmpl, "tool_calls") != NULL;
    cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), *c;
        cJSON_ArrayForEach(c, tc) {
            cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
            has_string_args |= cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "arguments"));
        }
    }
    if (has_string_args && renders_calls) takes_objects = template_takes_objects(tmpl, bos, eos);
    cJSON_ArrayForEach(m, msgs) {
        cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), *c;
        if (!cJSON_IsArray(tc) || cJSON_GetArraySize(tc) == 0) continue;
        if (!renders_calls) { /* the calls as the generic JSON answer, in content */
            cJSON *g = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(g, "tool_calls");
            cJSON_ArrayForEach(c, tc) {
                cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function"),
                      *x = cJSON_CreateObject();
                cJSON *nm = cJSON_GetObjectItemCaseSensitive(fn, "name"),
                      *ar = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
                cJSON_AddItemToObject(x, "name", cJSON_Duplicate(nm, 1));
                cJSON *parsed = cJSON_IsString(ar) ? cJSON_Parse(ar->valuestring) : NULL;
                cJSON_AddItemToObject(x, "arguments",
                                      parsed ? parsed
                                      : ar   ? cJSON_Duplicate(ar, 1)
                                             : cJSON_CreateObject());
                cJSON_AddItemToArray(a, x);
            }
            char *txt = print_free(g);
            cJSON_DeleteItemFromObjectCaseSensitive(m, "tool_calls");
            cJSON_DeleteItemFromObjectCaseSensitive(m, "content");
            cJSON_AddStringToObject(m, "content", txt ? txt : "");
            free(txt);
            changed = 1;
            continue;
        }
        if (takes_objects != 1) continue;
        cJSON_ArrayForEach(c, tc) { /* arguments strings -> objects, as the template wants */
            cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
            cJSON *ar = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
            if (!cJSON_IsString(ar)) continue;
            cJSON *parsed = cJSON_Parse(ar->valuestring);
            if (!cJSON_IsObject(parsed)) {
                cJSON_Delete(parsed);
                continue;
            }
            cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", parsed);
            changed = 1;
        }
    }
    /* a template that does not render tools (or none: ChatML) is told about them in the system
     * message, with the generic JSON answer format */
    if (cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0 &&
        (!tmpl || !strstr(tmpl, "tools"))) {
        char *desc = tools_description(tools);
        cJSON *first = cJSON_GetArrayItem(msgs, 0);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(first, "role");
        if (desc && cJSON_IsString(role) && !strcmp(role->valuestring, "system")) {
            const cJSON *ct = cJSON_GetObjectItemCaseSensitive(first, "content");
            vkf_sb b = {0};
            if (cJSON_IsString(ct) && ct->valuestring[0]) {
                vkf_sb_puts(&b, ct->valuestring);
                vkf_sb_puts(&b, "\n\n");
            }
            vkf_sb_puts(&b, desc);
            char *merged = vkf_sb_take(&b);
            cJSON_ReplaceItemInObjectCaseSensitive(first, "content",
                                                   cJSON_CreateString(merged ? merged : desc));
            free(merged);
        } else if (desc) {
            cJSON *sys = cJSON_CreateObject();
            cJSON_AddStringToObject(sys, "role", "system");
            cJSON_AddStringToObject(sys, "content", desc);
            cJSON_InsertItemInArray(msgs, 0, sys);
        }
        free(desc);
        changed = 1;
    }
    if (changed) *out = cJSON_PrintUnformatted(msgs);
    cJSON_Delete(msgs);
    cJSON_Delete(tools);
    if (changed && !*out) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "chat: out of memory");
    return VKF_OK;
}
