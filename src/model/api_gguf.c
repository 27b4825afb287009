/* vkf_gguf_describe (include/vkformer.h): the metadata and tensors of any GGUF file, as text or
 * JSON; `vkformer info`'s listing (llama.cpp's gguf-dump), models and vocabularies alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "io/gguf.h"
#include "vkformer.h"

/* A scalar value read like a one-element array. */
static vkf_gguf_value as_array(const vkf_gguf_value *v) {
    vkf_gguf_value one = *v;
    one.elem_type = v->type, one.count = 1, one.type = VKF_GGUF_TYPE_ARRAY;
    return one;
}

/* A value in one line: scalars as themselves, strings quoted (cut at 60 bytes), arrays as
 * "[type x count]" with their first elements. */
static void value_text(const vkf_gguf_value *v, FILE *f) {
    vkf_gguf_value one = as_array(v);
    switch (v->type) {
    case VKF_GGUF_TYPE_STRING:
        fprintf(f, "\"%.60s%s\"", v->str ? v->str : "", v->count > 60 ? "..." : "");
        return;
    case VKF_GGUF_TYPE_ARRAY:
        fprintf(f, "[%s x %llu]", vkf_gguf_type_name(v->elem_type), (unsigned long long)v->count);
        for (uint64_t i = 0; i < v->count && i < 4; i++) {
            if (v->elem_type == VKF_GGUF_TYPE_STRING) {
                size_t len;
                const char *str = vkf_gguf_arr_str(v, i, &len);
                fprintf(f, " \"%.*s\"", (int)(len > 16 ? 16 : len), str ? str : "");
            } else if (v->elem_type == VKF_GGUF_TYPE_FLOAT32 ||
                       v->elem_type == VKF_GGUF_TYPE_FLOAT64) {
                fprintf(f, " %g", vkf_gguf_arr_float(v, i));
            } else if (v->elem_type != VKF_GGUF_TYPE_ARRAY) {
                fprintf(f, " %lld", (long long)vkf_gguf_arr_int(v, i));
            }
        }
        if (v->count > 4) fprintf(f, " ...");
        return;
    case VKF_GGUF_TYPE_FLOAT32:
    case VKF_GGUF_TYPE_FLOAT64: fprintf(f, "%g", vkf_gguf_arr_float(&one, 0)); return;
    default: fprintf(f, "%lld", (long long)vkf_gguf_arr_int(&one, 0)); return;
    }
}

/* A value as typed JSON: numbers as numbers, booleans, strings; arrays summarised as
 * {"type": T, "count": N, "head": [first 8 elements]}. */
static cJSON *value_json(const vkf_gguf_value *v) {
    vkf_gguf_value one = as_array(v);
    switch (v->type) {
    case VKF_GGUF_TYPE_STRING: return cJSON_CreateString(v->str ? v->str : "");
    case VKF_GGUF_TYPE_BOOL: return cJSON_CreateBool(vkf_gguf_arr_int(&one, 0) != 0);
    case VKF_GGUF_TYPE_FLOAT32:
    case VKF_GGUF_TYPE_FLOAT64: return cJSON_CreateNumber(vkf_gguf_arr_float(&one, 0));
    case VKF_GGUF_TYPE_ARRAY: {
        cJSON *o = cJSON_CreateObject(), *head = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "type", vkf_gguf_type_name(v->elem_type));
        cJSON_AddNumberToObject(o, "count", (double)v->count);
        for (uint64_t i = 0; i < v->count && i < 8; i++) {
            if (v->elem_type == VKF_GGUF_TYPE_STRING) {
                size_t len;
                const char *str = vkf_gguf_arr_str(v, i, &len);
                char buf[64];
                snprintf(buf, sizeof buf, "%.*s", (int)(len > 60 ? 60 : len), str ? str : "");
                cJSON_AddItemToArray(head, cJSON_CreateString(buf));
            } else if (v->elem_type == VKF_GGUF_TYPE_FLOAT32 ||
                       v->elem_type == VKF_GGUF_TYPE_FLOAT64) {
                cJSON_AddItemToArray(head, cJSON_CreateNumber(vkf_gguf_arr_float(v, i)));
            } else if (v->elem_type != VKF_GGUF_TYPE_ARRAY) {
                cJSON_AddItemToArray(head, cJSON_CreateNumber((double)vkf_gguf_arr_int(v, i)));
            }
        }
        cJSON_AddItemToObject(o, "head", head);
        return o;
    }
    default: return cJSON_CreateNumber((double)vkf_gguf_arr_int(&one, 0));
    }
}

static char *describe_json(const vkf_gguf *g) {
    cJSON *gg = cJSON_CreateObject();
    cJSON_AddNumberToObject(gg, "version", vkf_gguf_version(g));
    cJSON_AddNumberToObject(gg, "alignment", vkf_gguf_alignment(g));
    cJSON *kv = cJSON_AddObjectToObject(gg, "metadata"),
          *ts = cJSON_AddArrayToObject(gg, "tensors");
    for (size_t i = 0; i < vkf_gguf_kv_count(g); i++) {
        const vkf_gguf_kv *e = vkf_gguf_kv_at(g, i);
        cJSON_AddItemToObject(kv, e->key, value_json(&e->value));
    }
    for (size_t i = 0; i < vkf_gguf_tensor_count(g); i++) {
        const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
        cJSON *o = cJSON_CreateObject(), *ne = cJSON_AddArrayToObject(o, "ne");
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "type", vkf_dtype_name(t->dtype));
        for (int d = 0; d < t->n_dims; d++)
            cJSON_AddItemToArray(ne, cJSON_CreateNumber((double)t->ne[d]));
        cJSON_AddItemToArray(ts, o);
    }
    char *s = cJSON_PrintUnformatted(gg);
    cJSON_Delete(gg);
    return s;
}

static char *describe_text(const vkf_gguf *g) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fprintf(f, "gguf           version %u, alignment %u, %zu keys, %zu tensors\n",
            vkf_gguf_version(g), vkf_gguf_alignment(g), vkf_gguf_kv_count(g),
            vkf_gguf_tensor_count(g));
    for (size_t i = 0; i < vkf_gguf_kv_count(g); i++) {
        const vkf_gguf_kv *e = vkf_gguf_kv_at(g, i);
        fprintf(f, "  %-40s ", e->key);
        value_text(&e->value, f);
        fputc('\n', f);
    }
    fprintf(f, "tensors%s\n", vkf_gguf_tensor_count(g) ? "" : "        none (a vocabulary only)");
    for (size_t i = 0; i < vkf_gguf_tensor_count(g); i++) {
        const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
        fprintf(f, "  %-40s %-5s ne [", t->name, vkf_dtype_name(t->dtype));
        for (int d = 0; d < t->n_dims; d++)
            fprintf(f, d ? ", %lld" : "%lld", (long long)t->ne[d]);
        fprintf(f, "]\n");
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

vkf_status vkf_gguf_describe(const char *path, int json, char **out) {
    if (!path || !out) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "gguf_describe: NULL argument");
    *out = NULL;
    vkf_gguf *g;
    VKF_TRY(vkf_gguf_open(path, &g));
    *out = json ? describe_json(g) : describe_text(g);
    vkf_gguf_close(g);
    return *out ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf_describe: out of host memory");
}
