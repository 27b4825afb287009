/* LoRA adapters (model/lora.c) against the lora set (tools/refs/make_lora.py): llama.cpp's
 * logits of llama-tiny through GGUF adapters (F32, F16, Q8_0; several at once), the same
 * adapters as PEFT directories, and offline merges.
 *
 * - ggml-activation mode (CPU): every row within 1e-5 of llama.cpp (its arithmetic op for op:
 *   last-bit differences of the logits only, as test_ggml_mode).
 * - float path, each backend: within the bound of the adapter's weight type (see bound()).
 * - a PEFT directory gives the same logits bytes as the GGUF adapter converted from it.
 * - merged at load (vkf_lora_merge) gives the same logits bytes as the offline merge's file;
 *   merged and on the fly agree within the F32 bound.
 * - an adapter for another base and a non-finite scale are refused, naming what is wrong; a
 *   changed set never reuses a graph of the old one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "vkformer.h"

#define EXACT_TOL 1e-5 /* ggml mode: last-bit differences of the logits themselves */

typedef struct run_in {
    const char *model;    /* file in the set */
    const char *files[4]; /* adapters (GGUF files or PEFT directories) */
    float scales[4];
    int n;
    int merge; /* merge adapter 0 at load instead of applying on the fly */
    const int32_t *toks, *greedy;
    int n_toks, n_greedy;
} run_in;

static char *fx(const char *file) {
    static char p[4][2048];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s", vkt_fixture(file));
    return p[k];
}

/* The prompt in one eval (every row), then the greedy tokens one at a time: (n_toks + n_greedy)
 * rows of n_vocab logits, or NULL after a failure. */
static float *run(vkf_context *ctx, const run_in *in, int n_vocab) {
    char mpath[2100];
    snprintf(mpath, sizeof mpath, "lora/%s", in->model);
    vkf_model_params mp = {.path = fx(mpath)};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (!m) return NULL;
    vkf_lora *a[4] = {0};
    float *out = NULL;
    int ok = 1;
    for (int i = 0; i < in->n && ok; i++) {
        char ap[2100];
        snprintf(ap, sizeof ap, "lora/%s", in->files[i]);
        ok = vkf_lora_load(m, fx(ap), &a[i]) == VKF_OK;
        VKT_CHECK(ok, "%s: %s", in->files[i], vkf_last_error());
    }
    if (ok && in->merge) {
        ok = vkf_lora_merge(m, a[0], in->scales[0]) == VKF_OK;
        VKT_CHECK(ok, "merge: %s", vkf_last_error());
    }
    vkf_session *s = NULL;
    /* the F32 K and V cache the references were made with (the default is F16 on a GPU) */
    vkf_session_params sp = {.cache_type_k = VKF_CACHE_F32, .cache_type_v = VKF_CACHE_F32};
    if (ok) VKT_OK(vkf_session_create(m, &sp, &s));
    if (s && !in->merge) VKT_OK(vkf_session_set_lora(s, a, in->scales, in->n));
    size_t rows = (size_t)in->n_toks + in->n_greedy;
    out = s ? malloc(rows * n_vocab * sizeof *out) : NULL;
    if (out) VKT_OK(vkf_session_eval(s, in->toks, in->n_toks, out));
    for (int i = 0; out && i < in->n_greedy; i++)
        VKT_OK(vkf_session_eval(s, &in->greedy[i], 1, out + (size_t)(in->n_toks + i) * n_vocab));
    vkf_session_free(s);
    for (int i = 0; i < 4; i++)
        vkf_lora_free(a[i]);
    vkf_model_free(m);
    return out;
}

static double max_diff(const float *x, const float *y, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)x[i] - y[i]));
    return d;
}

/* ------------------------------------------------------------------ the cases */

typedef struct fcase {
    const cJSON *c;
    int32_t toks[256], greedy[64];
    int n_toks, n_greedy, n_vocab;
    float *ref; /* llama.cpp's rows */
    run_in in;
} fcase;

static int read_case(const cJSON *c, fcase *f) {
    memset(f, 0, sizeof *f);
    f->c = c;
    const cJSON *t, *x;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(c, "tokens")) f->toks[f->n_toks++] = t->valueint;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(c, "greedy_tokens")) f->greedy[f->n_greedy++] =
        t->valueint;
    f->n_vocab = cJSON_GetObjectItem(c, "n_vocab")->valueint;
    f->in.model = cJSON_GetObjectItem(c, "model")->valuestring;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(c, "adapters")) {
        f->in.files[f->in.n] = cJSON_GetObjectItem(x, "file")->valuestring;
        f->in.scales[f->in.n++] = (float)cJSON_GetObjectItem(x, "scale")->valuedouble;
    }
    f->in.toks = f->toks;
    f->in.greedy = f->greedy;
    f->in.n_toks = f->n_toks;
    f->in.n_greedy = f->n_greedy;
    char p[2100];
    size_t np = 0, ng = 0;
    snprintf(p, sizeof p, "lora/%s", cJSON_GetObjectItem(c, "prompt_logits")->valuestring);
    float *a = vkt_read_file(fx(p), &np);
    snprintf(p, sizeof p, "lora/%s", cJSON_GetObjectItem(c, "greedy_logits")->valuestring);
    float *b = vkt_read_file(fx(p), &ng);
    size_t rows = (size_t)f->n_toks + f->n_greedy;
    if (!a || !b || np + ng != rows * f->n_vocab * sizeof(float)) {
        free(a);
        free(b);
        return 0;
    }
    f->ref = malloc(rows * f->n_vocab * sizeof(float));
    memcpy(f->ref, a, np);
    memcpy((char *)f->ref + np, b, ng);
    free(a);
    free(b);
    return 1;
}

/* The float path's bound per case, from the weight types the adapters add (llama.cpp rounds the
 * activations of a matmul to the weight's type: F16 for F16 adapters, q8_0 blocks for Q8_0 ones;
 * this path keeps them F32): F32 adapters f32 rounding only (llama-tiny-f32's 1e-4), F16 the
 * f16 activation noise (llama-tiny-f16's 5e-3), Q8_0 the q8_0 activation noise of the two
 * adapted matrices per layer (8.3e-3 measured on the CPU and lavapipe; 0.03 is 3.5x that, below
 * the 0.1-0.5 an adapter of this size moves the logits). */
static double bound(const fcase *f) {
    double b = 1e-4;
    for (int i = 0; i < f->in.n; i++) {
        if (strstr(f->in.files[i], "f16")) b = fmax(b, 5e-3);
        if (strstr(f->in.files[i], "q8_0")) b = fmax(b, 0.03);
    }
    return b;
}

static cJSON *g_cases;
static fcase g_f[16];
static int g_n;

static void ggml_mode(void) {
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU, .ggml_activations = VKF_GGML_AVX2};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (!ctx) return;
    for (int i = 0; i < g_n; i++) {
        fcase *f = &g_f[i];
        /* several adapters: llama.cpp keeps its set in an unordered_map keyed by the adapter's
         * address and adds the deltas in that map's order, which libstdc++ gives as the
         * reverse of insertion for these two (its order is not part of llama.cpp's API: a
         * case of several adapters is exact only in the order the reference used) */
        run_in rev = f->in;
        for (int k = 0; k < f->in.n; k++) {
            rev.files[k] = f->in.files[f->in.n - 1 - k];
            rev.scales[k] = f->in.scales[f->in.n - 1 - k];
        }
        float *lg = run(ctx, &rev, f->n_vocab);
        size_t n = (size_t)(f->n_toks + f->n_greedy) * f->n_vocab;
        double d = lg ? max_diff(lg, f->ref, n) : INFINITY;
        printf("  ggml %-14s max|d| %.3e (exact within %.0e)\n",
               cJSON_GetObjectItem(f->c, "name")->valuestring, d, EXACT_TOL);
        VKT_CHECK(d <= EXACT_TOL, "ggml mode %s: max|d| %.3e > %.0e",
                  cJSON_GetObjectItem(f->c, "name")->valuestring, d, EXACT_TOL);
        free(lg);
    }
    vkf_context_free(ctx);
}

static const fcase *find(const char *name) {
    for (int i = 0; i < g_n; i++)
        if (strcmp(cJSON_GetObjectItem(g_f[i].c, "name")->valuestring, name) == 0) return &g_f[i];
    VKT_CHECK(0, "no case %s", name);
    return NULL;
}

static void same_bytes(vkf_context *ctx, const char *backend, const char *what, const run_in *x,
                       const run_in *y, int n_vocab) {
    float *a = run(ctx, x, n_vocab), *b = run(ctx, y, n_vocab);
    size_t n = (size_t)(x->n_toks + x->n_greedy) * n_vocab;
    int same = a && b && memcmp(a, b, n * sizeof *a) == 0;
    printf("  %s %s: %s (max|d| %.3e)\n", backend, what, same ? "identical bytes" : "DIFFER",
           a && b ? max_diff(a, b, n) : INFINITY);
    VKT_CHECK(same, "%s %s: logits differ", backend, what);
    free(a);
    free(b);
}

static void per_backend(vkf_context *ctx, const char *backend, void *user) {
    (void)user;
    /* llama.cpp's logits through each adapter set, float path */
    for (int i = 0; i < g_n; i++) {
        fcase *f = &g_f[i];
        float *lg = run(ctx, &f->in, f->n_vocab);
        size_t n = (size_t)(f->n_toks + f->n_greedy) * f->n_vocab;
        double d = lg ? max_diff(lg, f->ref, n) : INFINITY, b = bound(f);
        printf("  %s %-14s max|d| %.3e (bound %.0e)\n", backend,
               cJSON_GetObjectItem(f->c, "name")->valuestring, d, b);
        VKT_CHECK(d <= b, "%s %s: max|d| %.3e > %.0e", backend,
                  cJSON_GetObjectItem(f->c, "name")->valuestring, d, b);
        free(lg);
    }
    /* a PEFT directory == the GGUF adapter converted from it (F32; F16 with two at once) */
    const fcase *fa = find("a/fox"), *fab = find("a+b/fox"), *fm = find("merged-a/fox");
    if (!fa || !fab || !fm) return;
    run_in peft = fa->in;
    peft.files[0] = "peft-a";
    same_bytes(ctx, backend, "peft-a == lora-a-f32.gguf", &fa->in, &peft, fa->n_vocab);
    run_in peft2 = fab->in;
    peft2.files[0] = "peft-a";
    peft2.files[1] = "peft-b";
    same_bytes(ctx, backend, "peft-a+peft-b == lora-a+lora-b", &fab->in, &peft2, fa->n_vocab);
    /* merged at load == merged offline, F32 and F16 bases */
    for (int k = 0; k < 2; k++) {
        run_in ml = fa->in, mo = fa->in;
        ml.model = k ? "llama-tiny-f16.gguf" : "llama-tiny-f32.gguf";
        ml.merge = 1;
        mo.model = k ? "llama-tiny-f16-merged-a.gguf" : "llama-tiny-f32-merged-a.gguf";
        mo.n = 0;
        same_bytes(ctx, backend,
                   k ? "f16 merged at load == offline" : "f32 merged at load == offline", &ml, &mo,
                   fa->n_vocab);
    }
    /* merged == on the fly, within f32 rounding (the delta's sum order differs) */
    run_in mo = fa->in;
    mo.model = "llama-tiny-f32-merged-a.gguf";
    mo.n = 0;
    float *x = run(ctx, &fa->in, fa->n_vocab), *y = run(ctx, &mo, fa->n_vocab);
    size_t n = (size_t)(fa->n_toks + fa->n_greedy) * fa->n_vocab;
    double d = x && y ? max_diff(x, y, n) : INFINITY;
    printf("  %s merged vs on the fly: max|d| %.3e (bound 1e-4)\n", backend, d);
    VKT_CHECK(d <= 1e-4, "%s: merged vs on the fly %.3e", backend, d);
    free(x);
    free(y);
    (void)fm;
}

/* ------------------------------------------------------------------ refusals, sets */

static void test_errors(void) {
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    vkf_model_params mp = {.path = fx("lora/llama-tiny-f32.gguf")};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (!m) return;
    vkf_lora *a = NULL;
    vkf_status st = vkf_lora_load(m, fx("lora/lora-other-base.gguf"), &a);
    const char *msg = vkf_last_error();
    printf("  other base: %s: %s\n", vkf_status_name(st), msg);
    VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT && strstr(msg, "blk.0.attn_q.weight") &&
                  strstr(msg, "[256, 256]") && strstr(msg, "[8, 128]") && strstr(msg, "[128, 8]"),
              "another base's adapter: %s: %s", vkf_status_name(st), msg);
    st = vkf_lora_load(m, fx("lora/lora-other-arch.gguf"), &a);
    VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT && strstr(vkf_last_error(), "\"qwen2\"") &&
                  strstr(vkf_last_error(), "\"llama\""),
              "another architecture's adapter: %s: %s", vkf_status_name(st), vkf_last_error());
    st = vkf_lora_load(m, fx("lora/lora-alpha-nan.gguf"), &a);
    VKT_CHECK(st == VKF_ERROR_FORMAT && strstr(vkf_last_error(), "alpha is not finite"),
              "alpha NaN: %s: %s", vkf_status_name(st), vkf_last_error());
    st = vkf_lora_load(m, fx("lora/llama-tiny-f32.gguf"), &a);
    VKT_CHECK(st == VKF_ERROR_FORMAT && strstr(vkf_last_error(), "general.type"),
              "a model as adapter: %s: %s", vkf_status_name(st), vkf_last_error());
    VKT_OK(vkf_lora_load(m, fx("lora/lora-a-f32.gguf"), &a));
    VKT_CHECK(vkf_lora_n_tensors(a) == 28 && vkf_lora_alpha(a) == 16.0f,
              "lora-a: %d pairs, alpha %g", vkf_lora_n_tensors(a), (double)vkf_lora_alpha(a));
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    float nan_scale = NAN, inf_scale = INFINITY;
    st = vkf_session_set_lora(s, &a, &nan_scale, 1);
    VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT && strstr(vkf_last_error(), "not finite"),
              "NaN scale: %s", vkf_status_name(st));
    st = vkf_lora_merge(m, a, inf_scale);
    VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT && strstr(vkf_last_error(), "not finite"),
              "inf merge scale: %s", vkf_status_name(st));
    /* a set, then none, on one session: the second run is the base's (no graph of the first
     * set reused), and scale 0 is the base too */
    const fcase *fb = find("base/fox"), *fa = find("a/fox");
    if (fb && fa && s) {
        size_t n = (size_t)fb->n_toks * fb->n_vocab;
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
        float one = 1.0f, zero = 0.0f;
        VKT_OK(vkf_session_eval(s, fb->toks, fb->n_toks, x)); /* base */
        vkf_session_reset(s);
        VKT_OK(vkf_session_set_lora(s, &a, &one, 1));
        VKT_OK(vkf_session_eval(s, fb->toks, fb->n_toks, y));
        double dy = max_diff(y, fa->ref, n);
        vkf_session_reset(s);
        VKT_OK(vkf_session_set_lora(s, &a, &zero, 1));
        VKT_OK(vkf_session_eval(s, fb->toks, fb->n_toks, z));
        int zero_is_base = memcmp(x, z, n * sizeof *x) == 0;
        vkf_session_reset(s);
        VKT_OK(vkf_session_set_lora(s, NULL, NULL, 0));
        VKT_OK(vkf_session_eval(s, fb->toks, fb->n_toks, z));
        int none_is_base = memcmp(x, z, n * sizeof *x) == 0;
        printf("  set a: max|d| to llama.cpp %.3e; scale 0 %s, none %s the base\n", dy,
               zero_is_base ? "==" : "!=", none_is_base ? "==" : "!=");
        VKT_CHECK(dy <= 1e-4 && zero_is_base && none_is_base && max_diff(x, y, n) > 0.1,
                  "changing the set on a session");
        free(x);
        free(y);
        free(z);
    }
    vkf_session_free(s);
    vkf_lora_free(a);
    vkf_model_free(m);
    vkf_context_free(ctx);
}

int main(void) {
    if (!vkt_need_fixtures("lora")) return vkt_finish();
    char *text = vkt_read_file(fx("lora/cases.json"), NULL);
    g_cases = text ? cJSON_Parse(text) : NULL;
    VKT_CHECK(g_cases != NULL, "lora/cases.json unreadable");
    if (!g_cases) return vkt_finish();
    const cJSON *c;
    cJSON_ArrayForEach(c, g_cases) {
        VKT_CHECK(g_n < 16 && read_case(c, &g_f[g_n]), "case %d unreadable", g_n);
        g_n++;
    }
    VKT_CHECK(g_n == 7, "%d cases", g_n);
    ggml_mode();
    test_errors();
    vkt_for_each_backend(per_backend, NULL);
    for (int i = 0; i < g_n; i++)
        free(g_f[i].ref);
    cJSON_Delete(g_cases);
    free(text);
    return vkt_finish();
}
