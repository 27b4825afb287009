/* vkformer info -m PATH [--json]: architecture, hyperparameters, parameters, dtypes, memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/args.h"
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
        int k = snprintf(buf, n, "[%s x %llu]", vkf_gguf_type_name(v->elem_type),
                         (unsigned long long)v->count);
        for (uint64_t i = 0; i < v->count && i < 4 && k > 0 && (size_t)k < n; i++) {
            if (v->elem_type == VKF_GGUF_TYPE_STRING) {
                size_t len;
                const char *str = vkf_gguf_arr_str(v, i, &len);
                k += snprintf(buf + k, n - (size_t)k, " \"%.*s\"", (int)(len > 16 ? 16 : len),
                              str ? str : "");
            } else if (v->elem_type == VKF_GGUF_TYPE_FLOAT32 ||
                       v->elem_type == VKF_GGUF_TYPE_FLOAT64) {
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
static double info_activations(vkf_model *m) {
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    if (md.encoder_decoder) return -1;
    vkf_session_params sp = {.n_ctx = md.n_ctx < 16 ? md.n_ctx : 16, .n_batch = 1};
    vkf_session *s = NULL;
    float *logits = malloc(sizeof *logits * (size_t)md.n_vocab);
    int32_t tok = md.bos_id >= 0 ? md.bos_id : 0;
    vkf_memory_info mi;
    double mib = -1;
    if (logits && vkf_session_create(m, &sp, &s) == VKF_OK &&
        vkf_session_eval_last(s, &tok, 1, logits) == VKF_OK && vkf_session_memory(s, &mi) == VKF_OK)
        mib = (double)mi.activations / 1048576.0;
    vkf_session_free(s);
    free(logits);
    return mib;
}

/* A metadata value as typed JSON: numbers as numbers, booleans, strings; arrays summarised as
 * {"type": T, "count": N, "head": [first 8 elements]}. */
static cJSON *gguf_value_json(const vkf_gguf_value *v) {
    vkf_gguf_value one = *v; /* a scalar reads like a one-element array */
    one.elem_type = v->type, one.count = 1, one.type = VKF_GGUF_TYPE_ARRAY;
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

/* Adds "gguf": {version, metadata, tensors} to root (JSON), or prints the listing (text). */
static int gguf_listing(const char *path, int json, cJSON *root) {
    vkf_gguf *g;
    if (vkf_gguf_open(path, &g) != VKF_OK) return vkf_cli_fail("info");
    char val[512];
    if (json) {
        cJSON *gg = cJSON_AddObjectToObject(root, "gguf");
        cJSON_AddNumberToObject(gg, "version", vkf_gguf_version(g));
        cJSON *kv = cJSON_AddObjectToObject(gg, "metadata"),
              *ts = cJSON_AddArrayToObject(gg, "tensors");
        for (size_t i = 0; i < vkf_gguf_kv_count(g); i++) {
            const vkf_gguf_kv *e = vkf_gguf_kv_at(g, i);
            cJSON_AddItemToObject(kv, e->key, gguf_value_json(&e->value));
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
    } else {
        printf("gguf           version %u, alignment %u, %zu keys, %zu tensors\n",
               vkf_gguf_version(g), vkf_gguf_alignment(g), vkf_gguf_kv_count(g),
               vkf_gguf_tensor_count(g));
        for (size_t i = 0; i < vkf_gguf_kv_count(g); i++) {
            const vkf_gguf_kv *e = vkf_gguf_kv_at(g, i);
            gguf_value_text(&e->value, val, sizeof val);
            printf("  %-40s %s\n", e->key, val);
        }
        printf("tensors\n");
        for (size_t i = 0; i < vkf_gguf_tensor_count(g); i++) {
            const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
            printf("  %-40s %-5s ne [", t->name, vkf_dtype_name(t->dtype));
            for (int d = 0; d < t->n_dims; d++)
                printf(d ? ", %lld" : "%lld", (long long)t->ne[d]);
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
    vkf_arg args[] = {{"-m|--model", VKF_ARG_STR, &mp.path, .metavar = "PATH", .required = 1,
                       .help = "model directory or .gguf file"},
                      {"--json", VKF_ARG_SET, &json, .help = "one JSON document"},
                      {"--tokenizer", VKF_ARG_STR, &mp.tokenizer, .metavar = "PATH",
                       .help = "a tokenizer replacing the model's"},
                      VKF_ARGS_BACKEND(&cp),
                      {0}};
    vkf_cmd_spec spec = {"info", "-m PATH [--json]",
                         "Describes a model: architecture, hyperparameters, parameters, dtypes, "
                         "the memory a session "
                         "needs;\nfor a GGUF file also its metadata keys and tensors.",
                         args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    vkf_context *ctx;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) return vkf_cli_fail("info");
    vkf_model *m;
    mp.progress = vkf_cli_progress;
    mp.progress_user = "loading the model";
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        vkf_context_free(ctx);
        return vkf_cli_fail("info");
    }
    char *text;
    vkf_status s = vkf_model_info(m, json, &text);
    double act_mib = s == VKF_OK && !json ? info_activations(m) : -1;
    vkf_model_free(m);
    vkf_context_free(ctx);
    if (s != VKF_OK) return vkf_cli_fail("info");
    /* a GGUF file (by its magic, whatever its name) also lists its metadata and tensors */
    int is_gguf = 0;
    FILE *f = fopen(mp.path, "rb");
    if (f) {
        char magic[4];
        is_gguf = fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
        fclose(f);
    }
    rc = 0;
    if (json) { /* one JSON document: the model report, with "gguf" added for GGUF files */
        cJSON *root = cJSON_Parse(text);
        free(text);
        if (!root) {
            fprintf(stderr, "vkformer: info: internal error: the model report is not JSON\n");
            return 1;
        }
        if (is_gguf) rc = gguf_listing(mp.path, 1, root);
        char *out = rc ? NULL : cJSON_PrintUnformatted(root);
        if (out) printf("%s\n", out);
        cJSON_free(out);
        cJSON_Delete(root);
    } else {
        fputs(text, stdout);
        free(text);
        if (act_mib >= 0)
            printf("activations    %.2f MiB per sequence for a one-token step (prompt chunks take "
                   "more)\n",
                   act_mib);
        if (is_gguf) rc = gguf_listing(mp.path, 0, NULL);
    }
    return vkf_cli_stdout_flush("info") ? 1 : rc;
}
