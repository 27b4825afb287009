/* vkformer info -m PATH [--json]: architecture, hyperparameters, parameters, dtypes, memory; for a
 * GGUF also its metadata and tensors, and for a GGUF without tensors (a vocabulary) what is
 * there: the tokenizer and the metadata (llama.cpp's gguf-dump). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "frontend/args.h"

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

/* Adds "gguf": {version, metadata, tensors} to root (JSON), or prints the listing (text). */
static int gguf_listing(const char *path, int json, cJSON *root) {
    char *text = NULL;
    if (vkf_gguf_describe(path, json, &text) != VKF_OK) return vkf_cli_fail("info");
    if (json) {
        cJSON *gg = cJSON_Parse(text);
        if (gg) cJSON_AddItemToObject(root, "gguf", gg);
    } else {
        fputs(text, stdout);
    }
    free(text);
    return 0;
}

/* A GGUF without tensors (a vocabulary alone, as llama.cpp's ggml-vocab-*.gguf): what is there,
 * the tokenizer and the metadata, instead of a model that cannot load. 1: it is not one. */
static int vocab_only(const char *path, int json, int *rc) {
    char *js = NULL;
    if (vkf_gguf_describe(path, 1, &js) != VKF_OK) return 1;
    cJSON *gg = cJSON_Parse(js);
    free(js);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(gg, "tensors");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(gg, "metadata"), "general.architecture");
    if (!cJSON_IsArray(ts) || cJSON_GetArraySize(ts) > 0) {
        cJSON_Delete(gg);
        return 1;
    }
    vkf_tokenizer *t = NULL;
    int have_tok = vkf_tokenizer_open(path, &t) == VKF_OK;
    const char *why = have_tok ? NULL : vkf_last_error();
    int32_t bos = -1, eos = -1;
    if (have_tok) vkf_tokenizer_specials(t, &bos, &eos);
    if (json) {
        cJSON *root = cJSON_CreateObject(), *tj = cJSON_CreateObject();
        cJSON_AddBoolToObject(root, "vocab_only", 1);
        if (cJSON_IsString(arch)) cJSON_AddStringToObject(root, "architecture", arch->valuestring);
        if (have_tok) {
            cJSON_AddStringToObject(tj, "algorithm", vkf_tokenizer_algorithm(t));
            cJSON_AddNumberToObject(tj, "n_vocab", vkf_tokenizer_vocab_size(t));
            cJSON_AddNumberToObject(tj, "bos_id", bos);
            cJSON_AddNumberToObject(tj, "eos_id", eos);
            cJSON_AddItemToObject(root, "tokenizer", tj);
        } else {
            cJSON_Delete(tj);
            cJSON_AddStringToObject(root, "tokenizer_error", why);
        }
        cJSON_AddItemToObject(root, "gguf", gg);
        char *out = cJSON_PrintUnformatted(root);
        if (out) printf("%s\n", out);
        cJSON_free(out);
        cJSON_Delete(root);
    } else {
        printf("vocab only     %s: metadata and a tokenizer, no tensors (nothing to run: a "
               "tokenizer for --tokenizer, tokenize, template)\n",
               path);
        if (cJSON_IsString(arch))
            printf("architecture   %s (from the metadata)\n", arch->valuestring);
        if (have_tok) {
            const char *bp = bos >= 0 ? vkf_tokenizer_piece(t, bos) : NULL;
            const char *ep = eos >= 0 ? vkf_tokenizer_piece(t, eos) : NULL;
            printf("tokenizer      %s, %d tokens, BOS %d%s%s%s, EOS %d%s%s%s\n",
                   vkf_tokenizer_algorithm(t), vkf_tokenizer_vocab_size(t), bos, bp ? " '" : "",
                   bp ? bp : "", bp ? "'" : "", eos, ep ? " '" : "", ep ? ep : "", ep ? "'" : "");
        } else {
            printf("tokenizer      none vkformer reads: %s\n", why);
        }
        cJSON_Delete(gg);
        *rc = gguf_listing(path, 0, NULL);
    }
    vkf_tokenizer_close(t);
    *rc = *rc ? *rc : vkf_cli_stdout_flush("info");
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
                      VKF_ARGS_SPLIT(&cp),
                      {0}};
    vkf_cmd_spec spec = {"info", "-m PATH [--json]",
                         "Describes a model: architecture, hyperparameters, parameters, dtypes, "
                         "the memory a session "
                         "needs;\nfor a GGUF file also its metadata keys and tensors.",
                         args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    /* a GGUF file (by its magic, whatever its name) also lists its metadata and tensors */
    int is_gguf = 0;
    FILE *f = fopen(mp.path, "rb");
    if (f) {
        char magic[4];
        is_gguf = fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
        fclose(f);
    }
    rc = 0;
    if (is_gguf && !vocab_only(mp.path, json, &rc)) return rc;
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
