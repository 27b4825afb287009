/* vkformer serve: structured output and tool calls (structured.h). Everything here is the
 * library's (vkformer.h): grammars from JSON Schemas and tool lists, tool-call parsing and its
 * streaming deltas; this file maps OpenAI's and llama-server's request fields onto them. */
#include "serve/structured.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *srv_api_head(const srv_config *c, const srv_req *r, const char *object); /* api.c */
cJSON *srv_api_usage(const srv_req *r);
cJSON *srv_api_timings(const srv_req *r);

static int bad(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

static struct srv_structured *st_of(srv_req *r) {
    if (!r->st) r->st = calloc(1, sizeof *r->st);
    return r->st;
}

void srv_structured_free(struct srv_structured *st) {
    if (!st) return;
    free(st->grammar);
    vkf_tool_parser_free(st->parser);
    free(st);
}

int srv_structured_keep_null(const cJSON *m) {
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(m, "content")) && cJSON_IsArray(tc) &&
           cJSON_GetArraySize(tc) > 0;
}

/* the grammar of a schema (a JSON value), or -1 with the library's message */
static int schema_grammar(const cJSON *schema, const char *field, char **out, char *err,
                          size_t en) {
    char *js = cJSON_PrintUnformatted(schema);
    if (!js) return bad(err, en, "out of host memory");
    vkf_status s = vkf_json_schema_to_grammar(js, out);
    cJSON_free(js);
    if (s != VKF_OK) return bad(err, en, "%s: %s", field, vkf_last_error());
    return 0;
}

int srv_structured_parse(const srv_config *c, const cJSON *j, int chat, srv_req *r, char *err,
                         size_t en) {
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(j, "response_format");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(j, "json_schema");
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(j, "grammar");
    const cJSON *tools = chat ? cJSON_GetObjectItemCaseSensitive(j, "tools") : NULL;
    const cJSON *choice = chat ? cJSON_GetObjectItemCaseSensitive(j, "tool_choice") : NULL;
    const cJSON *par = chat ? cJSON_GetObjectItemCaseSensitive(j, "parallel_tool_calls") : NULL;
    char *g = NULL;
    const char *from = NULL; /* the field the grammar came from */
    if (cJSON_IsNull(rf)) rf = NULL;
    if (cJSON_IsNull(js)) js = NULL;
    if (cJSON_IsNull(gr)) gr = NULL;
    if (cJSON_IsNull(tools)) tools = NULL;
    if (cJSON_IsNull(choice)) choice = NULL;
    if (rf) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
        if (!cJSON_IsObject(rf) || !cJSON_IsString(type))
            return bad(err, en,
                       "response_format: expected {\"type\": \"text\" | \"json_object\" "
                       "| \"json_schema\", ...}");
        if (!strcmp(type->valuestring, "json_object")) {
            /* any object, or llama-server's "schema" beside the type */
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(rf, "schema");
            cJSON *any = s ? NULL : cJSON_Parse("{\"type\": \"object\"}");
            int rc = schema_grammar(s ? s : any, "response_format", &g, err, en);
            cJSON_Delete(any);
            if (rc) return -1;
            from = "response_format";
        } else if (!strcmp(type->valuestring, "json_schema")) {
            const cJSON *w = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(w, "schema");
            const cJSON *strict = cJSON_GetObjectItemCaseSensitive(w, "strict");
            if (!cJSON_IsObject(w) || !s)
                return bad(err, en,
                           "response_format: json_schema needs {\"json_schema\": "
                           "{\"name\": ..., \"schema\": {...}}}");
            if (strict && !cJSON_IsBool(strict) && !cJSON_IsNull(strict))
                return bad(err, en, "response_format.json_schema.strict: expected true or false");
            /* strict or not, the grammar enforces the schema: OpenAI's strict mode guarantee */
            if (schema_grammar(s, "response_format.json_schema.schema", &g, err, en)) return -1;
            from = "response_format";
        } else if (strcmp(type->valuestring, "text") != 0) {
            return bad(err, en,
                       "response_format: type '%s' is not text, json_object or "
                       "json_schema",
                       type->valuestring);
        }
    }
    if (js) {
        if (g) {
            free(g);
            return bad(err, en, "json_schema and %s both constrain the output: give one", from);
        }
        if (schema_grammar(js, "json_schema", &g, err, en)) return -1;
        from = "json_schema";
    }
    if (gr) {
        if (!cJSON_IsString(gr)) {
            free(g);
            return bad(err, en, "grammar: expected a string (GBNF)");
        }
        if (g) {
            free(g);
            return bad(err, en, "grammar and %s both constrain the output: give one", from);
        }
        if (vkf_grammar_check(gr->valuestring, NULL) != VKF_OK) /* "grammar: line ..." */
            return bad(err, en, "%s", vkf_last_error());
        if (!(g = strdup(gr->valuestring))) return bad(err, en, "out of host memory");
        from = "grammar";
    }
    /* tools */
    if (choice && !tools) {
        free(g);
        return bad(err, en, "tool_choice: given without tools");
    }
    if (par && !cJSON_IsBool(par)) {
        free(g);
        return bad(err, en, "parallel_tool_calls: expected true or false");
    }
    int none = cJSON_IsString(choice) && !strcmp(choice->valuestring, "none");
    if (tools && cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0 && !none) {
        struct srv_structured *st = st_of(r);
        if (!st) {
            free(g);
            return bad(err, en, "out of host memory");
        }
        st->tools = 1;
        st->format = vkf_model_tool_format(c->m);
        char *tj = cJSON_PrintUnformatted(tools),
             *cj = choice ? cJSON_PrintUnformatted(choice) : NULL;
        char *tg = NULL;
        vkf_status s =
            tj ? vkf_tool_calls_grammar(st->format, tj, cj, par ? cJSON_IsTrue(par) : 1, &tg)
               : VKF_ERROR_OUT_OF_MEMORY;
        cJSON_free(tj);
        cJSON_free(cj);
        if (s != VKF_OK) {
            free(g);
            return bad(err, en, "%s", vkf_last_error());
        }
        if (tg && g) {
            free(g);
            free(tg);
            return bad(err, en, "tool_choice %s and %s both constrain the output: give one",
                       cJSON_IsString(choice) ? choice->valuestring : "(a function)", from);
        }
        if (tg) g = tg;
    }
    if (g) {
        struct srv_structured *st = st_of(r);
        if (!st) {
            free(g);
            return bad(err, en, "out of host memory");
        }
        st->grammar = g;
        r->sp.grammar = g;
    }
    return 0;
}

/* ------------------------------------------------------------------ answers */

const char *srv_structured_message(const srv_config *c, const srv_req *r, cJSON *ch,
                                   const char *text, const char *fin) {
    (void)c;
    char *mj = NULL;
    cJSON *msg = NULL;
    if (vkf_tool_calls_parse(r->st->format, text, strlen(text), &mj) == VKF_OK)
        msg = cJSON_Parse(mj);
    free(mj);
    if (!msg) { /* cannot happen but out of memory: the text as it is */
        msg = cJSON_CreateObject();
        cJSON_AddStringToObject(msg, "role", "assistant");
        cJSON_AddStringToObject(msg, "content", text);
    }
    int calls = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(msg, "tool_calls")) > 0;
    cJSON_AddItemToObject(ch, "message", msg);
    /* OpenAI: "tool_calls" when the model called tools (length wins when it was cut off) */
    return calls && strcmp(fin, "length") != 0 ? "tool_calls" : fin;
}

/* one chunk with delta d (taken) and finish_reason fin (NULL: null) */
static void chunk_into(const srv_config *c, const srv_req *r, cJSON *d, const char *fin,
                       int with_usage, char **acc, size_t *n) {
    cJSON *o = srv_api_head(c, r, "chat.completion.chunk");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    cJSON_AddItemToObject(ch, "delta", d);
    cJSON_AddNullToObject(ch, "logprobs");
    if (fin)
        cJSON_AddStringToObject(ch, "finish_reason", fin);
    else
        cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    if (with_usage) cJSON_AddItemToObject(o, "usage", srv_api_usage(r));
    if (fin) cJSON_AddItemToObject(o, "timings", srv_api_timings(r)); /* the last chunk's */
    char *js = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!js) return;
    size_t k = strlen(js);
    char *a = realloc(*acc, *n + k + 9);
    if (a) {
        snprintf(a + *n, k + 9, "data: %s\n\n", js);
        *acc = a;
        *n += k + 8;
    }
    free(js);
}

char *srv_structured_chunk(const srv_config *c, srv_req *r, int i, const char *fin) {
    struct srv_structured *st = r->st;
    char *acc = calloc(1, 1);
    size_t n = 0;
    if (!acc) return NULL;
    if (!st->parser && vkf_tool_parser_create(st->format, &st->parser) != VKF_OK) return acc;
    if (!st->role_sent) { /* OpenAI's first chunk: the role */
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "role", "assistant");
        cJSON_AddStringToObject(d, "content", "");
        chunk_into(c, r, d, NULL, 0, &acc, &n);
        st->role_sent = 1;
    }
    const char *text = i >= 0 && r->ev[i].text ? r->ev[i].text : "";
    size_t len = i >= 0 ? r->ev[i].len : 0;
    char *deltas = NULL;
    if (vkf_tool_parser_push(st->parser, text, len, i < 0, &deltas) == VKF_OK) {
        cJSON *arr = cJSON_Parse(deltas), *d;
        while (arr && (d = cJSON_DetachItemFromArray(arr, 0)))
            chunk_into(c, r, d, NULL, 0, &acc, &n);
        cJSON_Delete(arr);
    }
    free(deltas);
    if (i < 0) { /* the last chunk: finish_reason and usage */
        const char *f = vkf_tool_parser_n_calls(st->parser) > 0 && strcmp(fin, "length") != 0
                            ? "tool_calls"
                            : fin;
        chunk_into(c, r, cJSON_CreateObject(), f, 1, &acc, &n);
    }
    return acc;
}
