/* Tool calls, the public side (vkformer.h): formats from templates, the OpenAI message of an
 * answer, streaming deltas, grammars for tool_choice, and conversations prepared for a
 * template (tool_calls arguments as the template wants them, tools described to templates
 * that do not render them). The parsers are in tool_calls.c. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
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

/* ------------------------------------------------------------------ messages */

/* content as OpenAI gives it beside tool calls: trailing blanks off, null when nothing is
 * left; without calls, the text as it is */
static size_t visible_len(const char *s, size_t n, int with_calls) {
    if (!with_calls) return n;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    return n;
}

static cJSON *call_json(const char *id, const char *name, const char *args) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "id", id);
    cJSON_AddStringToObject(c, "type", "function");
    cJSON *f = cJSON_AddObjectToObject(c, "function");
    cJSON_AddStringToObject(f, "name", name);
    cJSON_AddStringToObject(f, "arguments", args);
    return c;
}

static char *print_free(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

vkf_status vkf_tool_calls_parse(vkf_tool_format f, const char *text, size_t len,
                                char **message_json) {
    if (!text || !message_json)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tool calls: NULL text or output");
    vkf_tparse p;
    if (vkf_tool_parse_text(f, text, len, 0, &p) != 0) {
        vkf_tparse_free(&p);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tool calls: out of memory");
    }
    int n = 0;
    for (int i = 0; i < p.n_calls; i++)
        n += p.calls[i].complete;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "assistant");
    size_t vl = visible_len(p.content.p, p.content.n, n > 0);
    if (n > 0 && vl == 0) {
        cJSON_AddNullToObject(m, "content");
    } else {
        char *c = malloc(vl + 1);
        if (c) {
            memcpy(c, p.content.p, vl);
            c[vl] = 0;
            cJSON_AddStringToObject(m, "content", c);
            free(c);
        }
    }
    if (n > 0) {
        cJSON *a = cJSON_AddArrayToObject(m, "tool_calls");
        for (int i = 0; i < p.n_calls; i++) {
            if (!p.calls[i].complete) continue;
            char id[64];
            if (p.calls[i].id)
                snprintf(id, sizeof id, "%s", p.calls[i].id);
            else
                vkf_tool_call_id(f, id, sizeof id);
            cJSON_AddItemToArray(a, call_json(id, p.calls[i].name, p.calls[i].args));
        }
    }
    vkf_tparse_free(&p);
    *message_json = print_free(m);
    return *message_json ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tool calls: out of memory");
}

/* ------------------------------------------------------------------ streaming */

typedef struct sent_call {
    char id[64];
    char *name;
    vkf_sb args; /* the arguments text sent so far */
} sent_call;

struct vkf_tool_parser {
    vkf_tool_format f;
    vkf_sb text;
    vkf_sb content; /* content sent */
    sent_call *calls;
    int n_calls, cap_calls;
    int done;
};

vkf_status vkf_tool_parser_create(vkf_tool_format f, vkf_tool_parser **out) {
    vkf_tool_parser *p = calloc(1, sizeof *p);
    if (!p) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tool calls: out of memory");
    p->f = f;
    vkf_sb_put(&p->text, "", 0);
    vkf_sb_put(&p->content, "", 0);
    *out = p;
    return VKF_OK;
}

void vkf_tool_parser_free(vkf_tool_parser *p) {
    if (!p) return;
    for (int i = 0; i < p->n_calls; i++) {
        free(p->calls[i].name);
        vkf_sb_free(&p->calls[i].args);
    }
    free(p->calls);
    vkf_sb_free(&p->text);
    vkf_sb_free(&p->content);
    free(p);
}

int vkf_tool_parser_n_calls(const vkf_tool_parser *p) { return p ? p->n_calls : 0; }

static void add_text_delta(cJSON *deltas, const char *s, size_t n) {
    char *t = malloc(n + 1);
    if (!t) return;
    memcpy(t, s, n);
    t[n] = 0;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "content", t);
    cJSON_AddItemToArray(deltas, d);
    free(t);
}

static void add_call_delta(cJSON *deltas, int index, const char *id, const char *name,
                           const char *args, size_t args_len) {
    cJSON *d = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(d, "tool_calls");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", index);
    if (id) {
        cJSON_AddStringToObject(c, "id", id);
        cJSON_AddStringToObject(c, "type", "function");
    }
    cJSON *f = cJSON_AddObjectToObject(c, "function");
    if (name) cJSON_AddStringToObject(f, "name", name);
    char *t = malloc(args_len + 1);
    if (t) {
        memcpy(t, args, args_len);
        t[args_len] = 0;
        cJSON_AddStringToObject(f, "arguments", t);
        free(t);
    }
    cJSON_AddItemToArray(a, c);
    cJSON_AddItemToArray(deltas, d);
}

vkf_status vkf_tool_parser_push(vkf_tool_parser *p, const char *text, size_t len, int last,
                                char **deltas_json) {
    if (!p || !deltas_json || (len && !text))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tool parser: NULL argument");
    *deltas_json = NULL;
    cJSON *deltas = cJSON_CreateArray();
    if (p->done) {
        *deltas_json = print_free(deltas);
        return VKF_OK;
    }
    vkf_sb_put(&p->text, text ? text : "", len);
    vkf_tparse r;
    if (p->text.oom || vkf_tool_parse_text(p->f, p->text.p, p->text.n, !last, &r) != 0) {
        cJSON_Delete(deltas);
        vkf_tparse_free(&r);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tool parser: out of memory");
    }
    int named = 0;
    for (int i = 0; i < r.n_calls; i++)
        named += r.calls[i].name != NULL;
    if (last && named < p->n_calls) {
        /* a call announced while streaming did not finish well-formed (cut off, or bad JSON
         * after its name): it stays as sent, and its text is not sent again as content */
        vkf_tparse_free(&r);
        if (vkf_tool_parse_text(p->f, p->text.p, p->text.n, 1, &r) != 0) {
            cJSON_Delete(deltas);
            vkf_tparse_free(&r);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tool parser: out of memory");
        }
    }
    int any_calls = p->n_calls > 0;
    for (int i = 0; i < r.n_calls; i++)
        any_calls |= r.calls[i].name != NULL;
    /* content: while text may follow, trailing blanks wait (they go when calls follow) */
    size_t vl = last ? visible_len(r.content.p, r.content.n, any_calls)
                     : visible_len(r.content.p, r.content.n, 1);
    if (vl > p->content.n && memcmp(r.content.p, p->content.p, p->content.n) == 0) {
        add_text_delta(deltas, r.content.p + p->content.n, vl - p->content.n);
        vkf_sb_put(&p->content, r.content.p + p->content.n, vl - p->content.n);
    }
    /* calls, in order: announced once the name is known, then their arguments as they grow */
    for (int i = 0; i < r.n_calls; i++) {
        const vkf_tcall *c = &r.calls[i];
        if (!c->name || (last && !c->complete && i >= p->n_calls)) break;
        if (i == p->n_calls) {
            if (p->n_calls == p->cap_calls) {
                int nc = p->cap_calls ? 2 * p->cap_calls : 4;
                sent_call *s = realloc(p->calls, (size_t)nc * sizeof *s);
                if (!s) break;
                p->calls = s;
                p->cap_calls = nc;
            }
            sent_call *s = &p->calls[p->n_calls++];
            memset(s, 0, sizeof *s);
            if (c->id)
                snprintf(s->id, sizeof s->id, "%s", c->id);
            else
                vkf_tool_call_id(p->f, s->id, sizeof s->id);
            s->name = strdup(c->name);
            vkf_sb_put(&s->args, "", 0);
            add_call_delta(deltas, i, s->id, c->name, "", 0);
        }
        if (i >= p->n_calls) break;
        sent_call *s = &p->calls[i];
        const char *a = c->args ? c->args : "";
        size_t al = strlen(a);
        if (last && c->complete && !c->args) a = "{}", al = 2;
        if (al > s->args.n && memcmp(a, s->args.p, s->args.n) == 0) {
            add_call_delta(deltas, i, NULL, NULL, a + s->args.n, al - s->args.n);
            vkf_sb_put(&s->args, a + s->args.n, al - s->args.n);
        }
    }
    vkf_tparse_free(&r);
    if (last) p->done = 1;
    *deltas_json = print_free(deltas);
    return *deltas_json ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tool parser: out of memory");
}

vkf_status vkf_tool_parser_message(const vkf_tool_parser *p, char **message_json) {
    if (!p || !message_json)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tool parser: NULL argument");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "assistant");
    if (p->n_calls && p->content.n == 0)
        cJSON_AddNullToObject(m, "content");
    else
        cJSON_AddStringToObject(m, "content", p->content.p ? p->content.p : "");
    if (p->n_calls) {
        cJSON *a = cJSON_AddArrayToObject(m, "tool_calls");
        for (int i = 0; i < p->n_calls; i++)
            cJSON_AddItemToArray(a, call_json(p->calls[i].id, p->calls[i].name,
                                              p->calls[i].args.p ? p->calls[i].args.p : ""));
    }
    *message_json = print_free(m);
    return *message_json ? VKF_OK
                         : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tool parser: out of memory");
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
 * Functionary) fails or does not, and keeps the JSON strings OpenAI sends. */
static int template_takes_objects(const char *tmpl, const char *bos, const char *eos) {
    static const char *probe =
        "[{\"role\": \"user\", \"content\": \"probe\"}, {\"role\": \"assistant\", \"content\": "
        "null, \"tool_calls\": [{\"id\": \"probe0001\", \"type\": \"function\", \"function\": "
        "{\"name\": \"probe_fn\", \"arguments\": {\"probe_key\": \"probe_value\"}}}]}, {\"role\": "
        "\"tool\", \"tool_call_id\": \"probe0001\", \"name\": \"probe_fn\", \"content\": \"ok\"}]";
    static const char *tools =
        "[{\"type\": \"function\", \"function\": {\"name\": \"probe_fn\", \"description\": "
        "\"probe\", \"parameters\": {\"type\": \"object\", \"properties\": {\"probe_key\": "
        "{\"type\": \"string\", \"description\": \"probe\"}}, \"required\": [\"probe_key\"]}}}]";
    char *out = NULL;
    vkf_status st = vkf_chat_template_render(tmpl, probe, tools, NULL, bos, eos, 1, &out);
    int ok = st == VKF_OK && out && strstr(out, "\"probe_key\"") != NULL;
    free(out);
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
