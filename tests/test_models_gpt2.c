/* GPT-2 against the llama.cpp fixtures (gpt2-tiny): the GGUF file and the equivalent Hugging Face
 * checkpoint, on the CPU and on Vulkan, through vkf_verify; the two loads give the same logits;
 * a checkpoint with the "transformer." prefix and attn.bias / attn.masked_bias buffers loads to
 * the same model. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "io/safetensors.h"
#include "testutil.h"
#include "vkformer.h"

#define GPT2_TOL 3e-3 /* llama.cpp's f16 GELU table: exact gelu_new is within 1.5e-3 */

static void check_case(void *user, const vkf_verify_case *c) {
    const char *backend = user;
    printf("  %s %-30s max|d| %.3e rms %.2e tokens %d argmax %d/%d greedy %s %.2fs\n", backend,
           c->name, c->max_abs, c->rms, c->tokens_match, c->argmax_checked - c->argmax_mismatch,
           c->argmax_checked, c->greedy_match ? "match" : "DIFFER", c->seconds);
    VKT_CHECK(c->pass, "%s %s failed", backend, c->name);
    VKT_CHECK(c->max_abs <= GPT2_TOL, "%s %s: max|d| %.3e", backend, c->name, c->max_abs);
    VKT_CHECK(c->tokens_match == 1, "%s %s: tokenization differs from the fixture", backend,
              c->name);
    VKT_CHECK(c->greedy_required && c->greedy_match, "%s %s: free-running greedy differs", backend,
              c->name);
}

/* ------------------------------------------------------------------ logits of one prompt */

static float *prompt_logits(vkf_context *ctx, const char *path, const int32_t *toks, int n,
                            int *vocab) {
    vkf_model_params mp = {.path = path};
    vkf_model *m;
    float *out = NULL;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        VKT_CHECK(0, "load %s: %s", path, vkf_last_error());
        return NULL;
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    *vocab = d.n_vocab;
    vkf_session *s;
    if (vkf_session_create(m, NULL, &s) == VKF_OK) {
        out = malloc((size_t)n * d.n_vocab * sizeof *out);
        if (vkf_session_eval(s, toks, n, out) != VKF_OK) {
            VKT_CHECK(0, "eval %s: %s", path, vkf_last_error());
            free(out);
            out = NULL;
        }
        vkf_session_free(s);
    }
    vkf_model_free(m);
    return out;
}

static double max_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = isnan(d) ? INFINITY : d;
    }
    return m;
}

/* The fixture's "fox" tokens, so the comparison does not depend on the tokenizer. */
static const int32_t fox[] = {464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13};

static void test_hf_equals_gguf(vkf_context *ctx, const char *backend) {
    char hf[1024], gg[1024];
    snprintf(hf, sizeof hf, "%s", vkt_fixture("gpt2-tiny/hf"));
    snprintf(gg, sizeof gg, "%s", vkt_fixture("gpt2-tiny/gpt2-tiny-f32.gguf"));
    int n = (int)(sizeof fox / sizeof fox[0]), v1 = 0, v2 = 0;
    float *a = prompt_logits(ctx, hf, fox, n, &v1), *b = prompt_logits(ctx, gg, fox, n, &v2);
    if (a && b && v1 == v2) {
        /* bitwise-equal weights (after the Conv1D transpose) and the same graph */
        double d = max_diff(a, b, (size_t)n * v1);
        printf("  %s hf vs gguf logits: max|d| %.3e over %d x %d\n", backend, d, n, v1);
        VKT_CHECK(d <= 1e-6, "%s: hf and gguf logits differ by %.3e", backend, d);
    } else {
        VKT_CHECK(0, "%s: hf/gguf logits unavailable (vocab %d / %d)", backend, v1, v2);
    }
    free(a);
    free(b);
}

/* ------------------------------------------------------------------ a prefixed checkpoint */

static int write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Rewrites hf/model.safetensors with "transformer." in front of every name, plus per-layer
 * attn.bias (BOOL [1, 1, 256, 256]) and attn.masked_bias (F32 []) buffers, as real GPT-2
 * checkpoints carry them. */
static int write_prefixed(const char *dir) {
    vkf_safetensors *st;
    if (vkf_safetensors_open(vkt_fixture("gpt2-tiny/hf/model.safetensors"), &st) != VKF_OK)
        return 0;
    cJSON *h = cJSON_CreateObject();
    size_t total = 0, nt = vkf_safetensors_count(st);
    for (size_t i = 0; i < nt; i++)
        total += vkf_safetensors_tensor(st, i)->nbytes;
    const size_t mask_bytes = 256 * 256;
    total += 2 * (mask_bytes + 4);
    char *data = calloc(1, total);
    size_t off = 0;
    char name[256];
    for (size_t i = 0; i < nt && data; i++) {
        const vkf_st_tensor *t = vkf_safetensors_tensor(st, i);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "dtype", t->dtype_name);
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        for (int r = 0; r < t->rank; r++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[r]));
        cJSON *offs = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + t->nbytes)));
        memcpy(data + off, t->data, t->nbytes);
        off += t->nbytes;
        snprintf(name, sizeof name, "transformer.%s", t->name);
        cJSON_AddItemToObject(h, name, e);
    }
    for (int l = 0; l < 2 && data; l++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "dtype", "BOOL");
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        int dims[4] = {1, 1, 256, 256};
        for (int r = 0; r < 4; r++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber(dims[r]));
        cJSON *offs = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + mask_bytes)));
        for (size_t q = 0; q < 256; q++)
            memset(data + off + q * 256, 1, q + 1); /* lower-triangular */
        off += mask_bytes;
        snprintf(name, sizeof name, "transformer.h.%d.attn.bias", l);
        cJSON_AddItemToObject(h, name, e);
        e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "dtype", "F32");
        cJSON_AddArrayToObject(e, "shape");
        offs = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + 4)));
        float mb = -1e4f;
        memcpy(data + off, &mb, 4);
        off += 4;
        snprintf(name, sizeof name, "transformer.h.%d.attn.masked_bias", l);
        cJSON_AddItemToObject(h, name, e);
    }
    char *hj = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    vkf_safetensors_close(st);
    int ok = data && hj;
    if (ok) {
        size_t hl = strlen(hj), padded = (hl + 8 + 7) / 8 * 8 - 8;
        size_t fsize = 8 + padded + off;
        char *file = malloc(fsize);
        ok = file != NULL;
        if (ok) {
            uint64_t n64 = padded;
            memcpy(file, &n64, 8);
            memset(file + 8, ' ', padded);
            memcpy(file + 8, hj, hl);
            memcpy(file + 8 + padded, data, off);
            char p[512];
            snprintf(p, sizeof p, "%s/model.safetensors", dir);
            ok = write_file(p, file, fsize);
            free(file);
        }
    }
    free(hj);
    free(data);
    size_t cn;
    char *cfg = vkt_read_file(vkt_fixture("gpt2-tiny/hf/config.json"), &cn);
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", dir);
    ok = ok && cfg && write_file(p, cfg, cn);
    free(cfg);
    return ok;
}

static void test_prefixed_checkpoint(vkf_context *ctx) {
    char dir[] = "/tmp/vkf_gpt2_XXXXXX";
    VKT_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    VKT_CHECK(write_prefixed(dir), "writing the prefixed checkpoint failed");
    int n = (int)(sizeof fox / sizeof fox[0]), v1 = 0, v2 = 0;
    float *a = prompt_logits(ctx, vkt_fixture("gpt2-tiny/hf"), fox, n, &v1);
    float *b = prompt_logits(ctx, dir, fox, n, &v2);
    if (a && b && v1 == v2) {
        double d = max_diff(a, b, (size_t)n * v1);
        printf("  prefixed checkpoint vs plain: max|d| %.3e\n", d);
        VKT_CHECK(d == 0.0, "prefixed checkpoint logits differ by %.3e", d);
    }
    free(a);
    free(b);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    rmdir(dir);
}

/* ------------------------------------------------------------------ main */

static void run_backend(vkf_context *ctx, const char *backend) {
    vkf_verify_summary sum;
    VKT_OK(vkf_verify(ctx, vkt_fixture("gpt2-tiny"), NULL, check_case, (void *)backend, &sum));
    VKT_CHECK(sum.n_cases == 6 && sum.n_failed == 0, "%s: %d cases, %d failed", backend,
              sum.n_cases, sum.n_failed);
    test_hf_equals_gguf(ctx, backend);
}

static void per_backend(vkf_context *ctx, const char *backend, void *user) {
    run_backend(ctx, backend);
    if (strcmp(backend, "cpu") == 0) test_prefixed_checkpoint(ctx);
}

int main(void) {
    if (!vkt_need_fixtures("gpt2-tiny")) return vkt_finish();
    vkt_for_each_backend(per_backend, NULL);
    return vkt_finish();
}
