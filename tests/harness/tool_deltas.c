#include "tool_deltas.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "structured/sbuf.h"

static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *x = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* one delta object added to content / calls; NULL when it keeps the rules, else the rule */
static const char *add_delta(const cJSON *d, vkf_sb *text, int *have_text, cJSON *calls) {
    if (!cJSON_IsObject(d)) return "a delta is not an object";
    const cJSON *ct = cJSON_GetObjectItem(d, "content"), *tc = cJSON_GetObjectItem(d, "tool_calls");
    if (ct) {
        if (!cJSON_IsString(ct)) return "a content delta is not a string";
        vkf_sb_puts(text, ct->valuestring);
        *have_text = 1;
    }
    if (tc && !cJSON_IsArray(tc)) return "tool_calls in a delta is not an array";
    const cJSON *e;
    cJSON_ArrayForEach(e, tc) {
        const cJSON *ix = cJSON_GetObjectItem(e, "index"), *fn = cJSON_GetObjectItem(e, "function");
        if (!cJSON_IsNumber(ix) || !cJSON_IsObject(fn))
            return "a call delta without index or function";
        int idx = ix->valueint, n = cJSON_GetArraySize(calls);
        if (idx == n) { /* a call's first delta: id, type, name */
            const char *id = str_of(e, "id"), *name = str_of(fn, "name");
            if (!id || !name) return "the first delta of a call lacks its id or name";
            cJSON *call = cJSON_CreateObject();
            cJSON_AddStringToObject(call, "id", id);
            cJSON_AddStringToObject(call, "type", "function");
            cJSON *f = cJSON_AddObjectToObject(call, "function");
            cJSON_AddStringToObject(f, "name", name);
            cJSON_AddStringToObject(f, "arguments", "");
            cJSON_AddItemToArray(calls, call);
        } else if (idx < 0 || idx > n) {
            return "a call delta's index skips a call";
        } else if (cJSON_GetObjectItem(e, "id")) {
            return "a later delta of a call carries an id";
        }
        cJSON *f = cJSON_GetObjectItem(cJSON_GetArrayItem(calls, idx), "function");
        const char *a = str_of(fn, "arguments");
        if (a) {
            vkf_sb s = {0};
            vkf_sb_puts(&s, str_of(f, "arguments"));
            vkf_sb_puts(&s, a);
            cJSON_ReplaceItemInObject(f, "arguments", cJSON_CreateString(s.p ? s.p : ""));
            vkf_sb_free(&s);
        }
    }
    return NULL;
}

char *vkt_tool_stream(vkf_tool_format f, const char *text, size_t len, size_t (*next)(void *),
                      void *user, char **own, int *n_deltas, const char **why) {
    *own = NULL;
    *n_deltas = 0;
    *why = NULL;
    vkf_tool_parser *p;
    if (vkf_tool_parser_create(f, &p) != VKF_OK) {
        *why = "vkf_tool_parser_create failed";
        return NULL;
    }
    cJSON *calls = cJSON_CreateArray();
    vkf_sb t = {0};
    int have_text = 0;
    for (size_t i = 0; !*why;) {
        size_t k = next(user);
        if (k == 0) k = 1;
        if (k > len - i) k = len - i;
        int last = i + k >= len;
        char *d = NULL;
        if (vkf_tool_parser_push(p, text + i, k, last, &d) != VKF_OK) {
            *why = "vkf_tool_parser_push failed";
            break;
        }
        cJSON *arr = cJSON_Parse(d), *x;
        free(d);
        if (!cJSON_IsArray(arr)) *why = "the deltas are not a JSON array";
        cJSON_ArrayForEach(x, arr) {
            if (*why) break;
            (*n_deltas)++;
            *why = add_delta(x, &t, &have_text, calls);
        }
        cJSON_Delete(arr);
        i += k;
        if (last) break;
    }
    char *sum = NULL;
    if (!*why && vkf_tool_parser_message(p, own) != VKF_OK) *why = "vkf_tool_parser_message failed";
    if (!*why) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "assistant");
        if (have_text || !cJSON_GetArraySize(calls))
            cJSON_AddStringToObject(m, "content", t.p ? t.p : "");
        else
            cJSON_AddNullToObject(m, "content");
        if (cJSON_GetArraySize(calls)) {
            cJSON_AddItemToObject(m, "tool_calls", calls);
            calls = NULL;
        }
        sum = cJSON_PrintUnformatted(m);
        cJSON_Delete(m);
        if (!sum) *why = "out of memory";
    }
    cJSON_Delete(calls);
    vkf_sb_free(&t);
    vkf_tool_parser_free(p);
    return sum;
}
