/* vkformer info -m PATH [--json]: architecture, hyperparameters, parameters, dtypes, memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "io/gguf.h"

/* ------------------------------------------------------------------ GGUF metadata and tensors */

/* A value in one line: scalars as themselves, strings quoted (cut at 60 bytes), arrays as
 * "[type x count]" with their first elements. */
static void gguf_value_text(const vkf_gguf_value *v, char *buf, size_t n) {
    switch (v->type) {
    case VKF_GGUF_TYPE_STRING:
        snprintf(buf, n, "\"%.60s%s\"", v->str ? v->str : "", v->count > 60 ? "..." : "");
        return;
    case VKF_GGUF_TYPE_ARRAY: {
        int k = snprintf(buf, n, "[%s x %llu]", vkf_gguf_type_name(v->elem_type), (unsigned long long)v->count);
        for (uint64_t i = 0; i < v->count && i < 4 && k > 0 && (size_t)k < n; i++) {
            if (v->elem_type == VKF_GGUF_TYPE_STRING) {
                size_t len;
                const char *str = vkf_gguf_arr_str(v, i, &len);
                k += snprintf(buf + k, n - (size_t)k, " \"%.*s\"", (int)(len > 16 ? 16 : len), str ? str : "");
            } else if (v->elem_type == VKF_GGUF_TYPE_FLOAT32 || v->elem_type == VKF_GGUF_TYPE_FLOAT64) {
                k += snprintf(buf + k, n - (size_t)k, " %g", vkf_gguf_arr_float(v, i));
            } else if (v->elem_type != VKF_GGUF_TYPE_ARRAY) {
                k += snprintf(buf + k, n - (size_t)k, " %lld", (long long)vkf_gguf_arr_int(v, i));
            }
        }
        if (v->count > 4 && k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, " ...");
        return;
    }
    case VKF_GGUF_TYPE_FLOAT32:
    case VKF_GGUF_TYPE_FLOAT64: {
        vkf_gguf_value one = *v; /* a scalar reads like a one-element array */
        one.elem_type = v->type, one.count = 1, one.type = VKF_GGUF_TYPE_ARRAY;
        snprintf(buf, n, "%g", vkf_gguf_arr_float(&one, 0));
        return;
    }
    default: {
        vkf_gguf_value one = *v;
        one.elem_type = v->type, one.count = 1, one.type = VKF_GGUF_TYPE_ARRAY;
        snprintf(buf, n, "%lld", (long long)vkf_gguf_arr_int(&one, 0));
        return;
    }
    }
}

/* The activation memory of a one-token decode step (decoder-only models): built by running one
 * step, since the graph's arena is planned when it is built. */
static void info_activations(vkf_model *m) {
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    if (md.encoder_decoder) return;
    vkf_session_params sp = {.n_ctx = md.n_ctx < 16 ? md.n_ctx : 16, .n_batch = 1};
    vkf_session *s = NULL;
    float *logits = malloc(sizeof *logits * (size_t)md.n_vocab);
    int32_t tok = md.bos_id >= 0 ? md.bos_id : 0;
    vkf_memory_info mi;
    if (logits && vkf_session_create(m, &sp, &s) == VKF_OK &&
        vkf_session_eval_last(s, &tok, 1, logits) == VKF_OK && vkf_session_memory(s, &mi) == VKF_OK)
        printf(
            "activations    %.2f MiB per sequence for a one-token step (prompt chunks take more)\n",
            (double)mi.activations / 1048576.0);
    vkf_session_free(s);
    free(logits);
}

/* Appends the metadata keys and the tensor list of a GGUF file to the report. */
static int gguf_listing(const char *path, int json) {
    vkf_gguf *g;
    if (vkf_gguf_open(path, &g) != VKF_OK) return vkf_cli_fail("info");
    char val[512];
    if (json) {
        cJSON *root = cJSON_CreateObject(), *kv = cJSON_AddObjectToObject(root, "metadata"),
              *ts = cJSON_AddArrayToObject(root, "tensors");
        for (size_t i = 0; i < vkf_gguf_kv_count(g); i++) {
            const vkf_gguf_kv *e = vkf_gguf_kv_at(g, i);
            gguf_value_text(&e->value, val, sizeof val);
            cJSON_AddStringToObject(kv, e->key, val);
        }
        for (size_t i = 0; i < vkf_gguf_tensor_count(g); i++) {
            const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
            cJSON *o = cJSON_CreateObject(), *ne = cJSON_AddArrayToObject(o, "ne");
            cJSON_AddStringToObject(o, "name", t->name);
            cJSON_AddStringToObject(o, "type", vkf_dtype_name(t->dtype));
            for (int d = 0; d < t->n_dims; d++) cJSON_AddItemToArray(ne, cJSON_CreateNumber((double)t->ne[d]));
            cJSON_AddItemToArray(ts, o);
        }
        char *text = cJSON_PrintUnformatted(root);
        if (text) printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(root);
    } else {
        printf("gguf           version %u, alignment %u, %zu keys, %zu tensors\n", vkf_gguf_version(g),
               vkf_gguf_alignment(g), vkf_gguf_kv_count(g), vkf_gguf_tensor_count(g));
        for (size_t i = 0; i < vkf_gguf_kv_count(g); i++) {
            const vkf_gguf_kv *e = vkf_gguf_kv_at(g, i);
            gguf_value_text(&e->value, val, sizeof val);
            printf("  %-40s %s\n", e->key, val);
        }
        printf("tensors\n");
        for (size_t i = 0; i < vkf_gguf_tensor_count(g); i++) {
            const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
            printf("  %-40s %-5s ne [", t->name, vkf_dtype_name(t->dtype));
            for (int d = 0; d < t->n_dims; d++) printf(d ? ", %lld" : "%lld", (long long)t->ne[d]);
            printf("]\n");
        }
    }
    vkf_gguf_close(g);
    return 0;
}

int vkf_cmd_info(int argc, char **argv) {
    /* the report needs no GPU: load on the CPU unless a device is asked for */
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_model_params mp = {0};
    int json = 0;
    for (int i = 1; i < argc; i++) {
        int r = vkf_cli_backend_opt(argc, argv, &i, &cp);
        if (r < 0) {
            fprintf(stderr, "vkformer info: %s needs a value\n", argv[i]);
            return 2;
        }
        if (r) continue;
        if ((strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--model") == 0) && i + 1 < argc) {
            mp.path = argv[++i];
        } else if (strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc) {
            mp.tokenizer = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "vkformer info: unknown option '%s'\nusage: vkformer info -m PATH [--json] [--tokenizer PATH]\n", argv[i]);
            return 2;
        }
    }
    if (!mp.path) {
        fprintf(stderr, "usage: vkformer info -m PATH [--json] [--tokenizer PATH]\n");
        return 2;
    }
    vkf_context *ctx;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) return vkf_cli_fail("info");
    vkf_model *m;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        vkf_context_free(ctx);
        return vkf_cli_fail("info");
    }
    char *text;
    vkf_status s = vkf_model_info(m, json, &text);
    if (s == VKF_OK) {
        fputs(text, stdout);
        if (json) fputc('\n', stdout);
        free(text);
    }
    if (s == VKF_OK && !json) info_activations(m);
    vkf_model_free(m);
    vkf_context_free(ctx);
    if (s != VKF_OK) return vkf_cli_fail("info");
    size_t len = strlen(mp.path);
    /* GGUF files also list their metadata keys and tensor types (JSON: a second line) */
    if (len > 5 && strcmp(mp.path + len - 5, ".gguf") == 0) return gguf_listing(mp.path, json);
    return 0;
}
