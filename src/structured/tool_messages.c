/* Tool calls, the answer's side (vkformer.h): the OpenAI message of a whole answer
 * (vkf_tool_calls_parse) and the streaming parser's chat.completion.chunk deltas, both over the
 * parsers of tool_calls.c. Nothing here needs a model (fuzz_tool_calls builds it alone). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "structured/tool_calls.h"

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

/* text[0..len) appended to b without its NUL bytes: the messages are JSON read as C strings
 * (cJSON, the server), where a NUL would cut the content or arguments short; a model writes one
 * only through a byte-fallback token, never as part of a call */
static void put_without_nul(vkf_sb *b, const char *text, size_t len) {
    for (size_t i = 0; i < len;) {
        const char *z = memchr(text + i, 0, len - i);
        size_t k = z ? (size_t)(z - (text + i)) : len - i;
        vkf_sb_put(b, text + i, k);
        i += k + (z != NULL);
    }
}

vkf_status vkf_tool_calls_parse(vkf_tool_format f, const char *text, size_t len,
                                char **message_json) {
    if (!text || !message_json)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tool calls: NULL text or output");
    vkf_sb clean = {0};
    if (memchr(text, 0, len)) {
        put_without_nul(&clean, text, len);
        if (clean.oom) {
            vkf_sb_free(&clean);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tool calls: out of memory");
        }
        text = clean.p ? clean.p : "";
        len = clean.n;
    }
    vkf_tparse p;
    int r = vkf_tool_parse_text(f, text, len, 0, &p);
    vkf_sb_free(&clean);
    if (r != 0) {
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
    put_without_nul(&p->text, text ? text : "", len);
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
