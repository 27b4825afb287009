/* KV cache types (llama.cpp's -ctk / -ctv): names, the bytes a cache of each type takes (closed
 * forms from ggml's block layouts), logits through a quantized cache on the CPU backend within
 * bounds that follow from each type's rounding step, prefix reuse over quantized rows, the
 * ggml-activations mode bit for bit against llama.cpp through every type, and the refusals: a
 * type a backend, an architecture or a head size cannot use is refused by name. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "harness/testutil.h"

static const int32_t toks[] = {1, 45, 300, 17, 222, 90, 8, 411, 3, 77, 128, 500, 64, 255, 19, 32};
#define N_TOKS ((int)(sizeof toks / sizeof toks[0]))

/* Bytes a cache row of 32 elements takes in each type: ggml's block sizes (ggml-common.h:
 * block_q8_0 = f16 d + 32 int8 = 34; q4_0 = 2 + 16 = 18; q4_1 = 2 + 2 + 16 = 20; q5_0 = 2 + 4
 * + 16 = 22; q5_1 = 2 + 2 + 4 + 16 = 24; iq4_nl = 2 + 16 = 18), f32 4 and f16 / bf16 2 bytes an
 * element. Indexed by vkf_cache_type. */
static const struct {
    const char *name;
    int bytes32;
} kinds[VKF_CACHE_COUNT] = {
    [VKF_CACHE_F32] = {"f32", 128},      [VKF_CACHE_F16] = {"f16", 64},
    [VKF_CACHE_BF16] = {"bf16", 64},     [VKF_CACHE_Q8_0] = {"q8_0", 34},
    [VKF_CACHE_Q4_0] = {"q4_0", 18},     [VKF_CACHE_Q4_1] = {"q4_1", 20},
    [VKF_CACHE_IQ4_NL] = {"iq4_nl", 18}, [VKF_CACHE_Q5_0] = {"q5_0", 22},
    [VKF_CACHE_Q5_1] = {"q5_1", 24},
};

static void test_names(void) {
    for (int t = 1; t < VKF_CACHE_COUNT; t++) {
        const char *n = vkf_cache_type_name(t);
        VKT_CHECK(n && strcmp(n, kinds[t].name) == 0, "type %d is named %s, expected %s", t,
                  n ? n : "(null)", kinds[t].name);
        VKT_CHECK(vkf_cache_type_from_name(kinds[t].name) == t, "%s does not name %d",
                  kinds[t].name, t);
    }
    VKT_CHECK(vkf_cache_type_from_name("Q8_0") == VKF_CACHE_Q8_0, "names are case-insensitive");
    VKT_CHECK(vkf_cache_type_from_name("q8") == -1 && vkf_cache_type_from_name(NULL) == -1,
              "a name that is no type gives -1");
    VKT_CHECK(vkf_cache_type_name(VKF_CACHE_COUNT) == NULL, "past the last type: NULL");
}

static vkf_model *load(vkf_context *ctx, const char *rel) {
    vkf_model_params mp = {.path = vkt_fixture(rel)};
    vkf_model *m = NULL;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) VKT_CHECK(0, "load %s: %s", rel, vkf_last_error());
    return m;
}

/* The logits of toks with a K cache of type tk and a V cache of type tv, the prompt in two
 * passes so that the second reads the first's rows back from the cache. */
static float *logits(vkf_model *m, int tk, int tv, int32_t n_vocab) {
    vkf_session_params sp = {.n_ctx = 64, .cache_type_k = tk, .cache_type_v = tv};
    vkf_session *s = NULL;
    if (vkf_session_create(m, &sp, &s) != VKF_OK) {
        VKT_CHECK(0, "session K %s V %s: %s", kinds[tk].name, kinds[tv].name, vkf_last_error());
        return NULL;
    }
    float *lg = malloc((size_t)N_TOKS * (size_t)n_vocab * sizeof *lg);
    int h = N_TOKS / 2;
    if (lg &&
        (vkf_session_eval(s, toks, h, lg) != VKF_OK ||
         vkf_session_eval(s, toks + h, N_TOKS - h, lg + (size_t)h * (size_t)n_vocab) != VKF_OK)) {
        VKT_CHECK(0, "eval K %s V %s: %s", kinds[tk].name, kinds[tv].name, vkf_last_error());
        free(lg);
        lg = NULL;
    }
    vkf_session_free(s);
    return lg;
}

static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)a[i] - b[i]) <= d)) d = fabs((double)a[i] - b[i]);
    return d;
}

/* The memory a session's cache takes, against the closed form: every layer holds K and V of
 * n_ctx rows of kvd elements, kvd / 32 blocks a row. */
static void test_memory(vkf_context *ctx, int mixed) {
    vkf_model *m = load(ctx, "llama-tiny/llama-tiny-f32.gguf");
    if (!m) return;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    /* llama-tiny: 4 KV heads of head_dim 32 (its generator, tools/refs/make_llama_tiny.py) */
    const uint64_t kvd = 4 * 32, n_ctx = 64;
    uint64_t bytes[VKF_CACHE_COUNT] = {0};
    for (int t = 1; t < VKF_CACHE_COUNT; t++) {
        vkf_session_params sp = {.n_ctx = (int32_t)n_ctx, .cache_type_k = t, .cache_type_v = t};
        vkf_session *s = NULL;
        vkf_memory_info mi;
        if (vkf_session_create(m, &sp, &s) != VKF_OK || vkf_session_memory(s, &mi) != VKF_OK) {
            VKT_CHECK(0, "%s session: %s", kinds[t].name, vkf_last_error());
            vkf_session_free(s);
            continue;
        }
        uint64_t want = 2 * (uint64_t)d.n_layer * n_ctx * kvd / 32 * (uint64_t)kinds[t].bytes32;
        bytes[t] = mi.kv_cache;
        VKT_CHECK(mi.kv_cache == want, "%s cache: %llu bytes, ggml's blocks make %llu",
                  kinds[t].name, (unsigned long long)mi.kv_cache, (unsigned long long)want);
        vkf_memory_fit fit;
        VKT_OK(vkf_session_fit(m, &sp, &fit));
        VKT_CHECK(fit.kv_cache == want, "%s: the fit check counts %llu bytes, the cache takes %llu",
                  kinds[t].name, (unsigned long long)fit.kv_cache, (unsigned long long)want);
        vkf_session_free(s);
    }
    /* K and V of different types: each counted in its own */
    if (!mixed) { /* Vulkan reads K and V in one type */
        vkf_model_free(m);
        return;
    }
    vkf_session_params sp = {
        .n_ctx = (int32_t)n_ctx, .cache_type_k = VKF_CACHE_Q8_0, .cache_type_v = VKF_CACHE_F16};
    vkf_memory_fit fit;
    VKT_OK(vkf_session_fit(m, &sp, &fit));
    VKT_CHECK(fit.kv_cache == (bytes[VKF_CACHE_Q8_0] + bytes[VKF_CACHE_F16]) / 2,
              "K q8_0 + V f16: %llu bytes", (unsigned long long)fit.kv_cache);
    double ratio = (double)bytes[VKF_CACHE_Q8_0] / (double)bytes[VKF_CACHE_F16];
    printf("  q8_0 cache / f16 cache: %.5f (%llu / %llu bytes)\n", ratio,
           (unsigned long long)bytes[VKF_CACHE_Q8_0], (unsigned long long)bytes[VKF_CACHE_F16]);
    VKT_CHECK(ratio <= 0.5313, "q8_0 takes %.4f of f16 (34 / 64 = 0.53125 expected)", ratio);
    /* the load's report counts the types it was given */
    vkf_model_free(m);
    vkf_model_params mp = {.path = vkt_fixture("llama-tiny/llama-tiny-f32.gguf"),
                           .cache_type_k = VKF_CACHE_Q4_0,
                           .cache_type_v = VKF_CACHE_Q8_0};
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        VKT_CHECK(0, "load with q4_0 / q8_0: %s", vkf_last_error());
        return;
    }
    char *info = NULL;
    VKT_OK(vkf_model_info(m, 1, &info));
    /* K in q4_0 (18 bytes a block), V in q8_0 (34) */
    unsigned long long want = (18 + 34) * kvd / 32 * (uint64_t)d.n_layer, got = 0;
    const char *at = info ? strstr(info, "\"kv_bytes_per_token\":") : NULL;
    if (at) got = strtoull(at + strlen("\"kv_bytes_per_token\":"), NULL, 10);
    VKT_CHECK(info && strstr(info, "\"Q4_0\"") && strstr(info, "\"kv_cache_type_k\"") &&
                  strstr(info, "\"Q8_0\"") && got == want,
              "model info lacks the load's KV types or counts %llu bytes a token, not %llu: %s",
              got, want, info ? info : "");
    free(info);
    vkf_model_free(m);
}

/* Largest logit difference a cache type may cause against an F32 cache, on the fixtures below
 * (random weights, logits of magnitude ~1-10, 16 positions). A cache type rounds each K / V
 * element by at most half its step: f16 2^-11 relative (measured 0.9e-3..4.5e-3 on these
 * models, test_models_arch), bf16 2^-8 relative (8x f16's step), q8_0 a block's max / 254
 * (~16x f16's relative step on these Gaussian-like rows), q5 / iq4_nl / q4 1/32 .. 1/16 of the
 * block's range (~8-16x q8_0's). The logits move in proportion to the step (attention is smooth
 * in K and V), so each bound is the step's ratio to f16's times the f16 bound of test_models_arch
 * (2e-2), and stays below a cache read wrong by a block (O(1) and more). */
static double bound(int t) {
    switch (t) {
    case VKF_CACHE_F16: return 2e-2;
    case VKF_CACHE_BF16: return 8 * 2e-2;
    case VKF_CACHE_Q8_0: return 16 * 2e-2;
    case VKF_CACHE_Q5_0:
    case VKF_CACHE_Q5_1: return 8 * 16 * 2e-2;
    default: return 16 * 16 * 2e-2; /* q4_0, q4_1, iq4_nl */
    }
}

static void test_logits(vkf_context *ctx) {
    static const char *models[] = {"llama-tiny/llama-tiny-f32.gguf", "arch/llama3-f32.gguf",
                                   "arch/qwen3-f32.gguf", "arch/gemma3-f32.gguf",
                                   "arch/phi3-f32.gguf"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        vkf_model *m = load(ctx, models[i]);
        if (!m) continue;
        vkf_model_desc d;
        vkf_model_describe(m, &d);
        size_t n = (size_t)N_TOKS * (size_t)d.n_vocab;
        float *ref = logits(m, VKF_CACHE_F32, VKF_CACHE_F32, d.n_vocab);
        double dq[VKF_CACHE_COUNT] = {0};
        for (int t = VKF_CACHE_F16; t < VKF_CACHE_COUNT && ref; t++) {
            float *a = logits(m, t, t, d.n_vocab);
            if (!a) continue;
            dq[t] = max_diff(a, ref, n);
            printf("  %-32s %-6s cache vs f32: max|d| %.3e (bound %.2e)\n", models[i],
                   kinds[t].name, dq[t], bound(t));
            /* any difference at all shows the rows really were rounded into the type */
            VKT_CHECK(dq[t] > 0 && dq[t] <= bound(t), "%s %s cache moves the logits by %.3e",
                      models[i], kinds[t].name, dq[t]);
            free(a);
        }
        /* 4-bit blocks round more than 8-bit ones: the order of the steps shows */
        VKT_CHECK(dq[VKF_CACHE_Q8_0] < dq[VKF_CACHE_Q4_0], "%s: q8_0 %.3e, q4_0 %.3e", models[i],
                  dq[VKF_CACHE_Q8_0], dq[VKF_CACHE_Q4_0]);
        /* K and V of their own types: each reaches the logits apart */
        float *k4 = ref ? logits(m, VKF_CACHE_Q4_0, VKF_CACHE_F32, d.n_vocab) : NULL;
        float *v4 = ref ? logits(m, VKF_CACHE_F32, VKF_CACHE_Q4_0, d.n_vocab) : NULL;
        if (k4 && v4) {
            double dk = max_diff(k4, ref, n), dv = max_diff(v4, ref, n), dkv = max_diff(k4, v4, n);
            VKT_CHECK(dk > 0 && dv > 0 && dkv > 0 && dk <= bound(VKF_CACHE_Q4_0) &&
                          dv <= bound(VKF_CACHE_Q4_0),
                      "%s: K q4_0 alone %.3e, V q4_0 alone %.3e, apart %.3e", models[i], dk, dv,
                      dkv);
        }
        free(k4);
        free(v4);
        free(ref);
        vkf_model_free(m);
    }
}

/* How far the CPU backend's float path may be from llama.cpp's logits through the same cache
 * type (fixtures llama-kv: flash attention on, tools/refs/make_llama_kv.py). Both round each K / V
 * row into the type with ggml's quantizers, so the cache holds the same values (bar a tie rounded
 * the other way: llama.cpp's AVX2 from_float of q8_0 rounds ties to even, the reference away from
 * zero); what differs is llama.cpp's kernel: it rounds q into the type's dot type before the
 * dot products with K (q8_0 / q8_1 for the block types: a q8_0 cache's step on the other operand;
 * f16 / bf16 for those caches) and, for an f16 V, sums the values in f16. Each moves the logits
 * as a cache of that dot type does: bound(Q8_0) for the block types, bound(F16) for f16 (q and
 * the sums each rounded once to f16: twice its one rounding), bound(BF16) for bf16. */
static double bound_llama_cpp(int t) {
    switch (t) {
    case VKF_CACHE_F16: return 2 * bound(VKF_CACHE_F16);
    case VKF_CACHE_BF16: return bound(VKF_CACHE_BF16);
    default: return bound(VKF_CACHE_Q8_0);
    }
}

/* llama.cpp's logits through each cache type against the float path through the same one:
 * within bound_llama_cpp, and for the 4- and 5-bit types much nearer to them than to the F32
 * cache's logits (llama-tiny's own cases: llama.cpp without a quantized cache), which shows the
 * cache rounds as llama.cpp's does rather than merely approximating the exact result. */
static void test_llama_cpp(vkf_context *ctx) {
    char *text = vkt_read_file(vkt_fixture("llama-kv/cases.json"), NULL);
    char *text32 = vkt_read_file(vkt_fixture("llama-tiny/cases.json"), NULL);
    cJSON *cases = text ? cJSON_Parse(text) : NULL, *cases32 = text32 ? cJSON_Parse(text32) : NULL;
    VKT_CHECK(cases && cases32, "llama-kv/cases.json or llama-tiny/cases.json unreadable");
    vkf_model *m = cases ? load(ctx, "llama-kv/llama-tiny-f32.gguf") : NULL;
    int n_cases = 0;
    for (cJSON *c = cases && m ? cases->child : NULL; c; c = c->next) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        int t = vkf_cache_type_from_name(cJSON_GetObjectItem(c, "cache_type")->valuestring);
        cJSON *jt = cJSON_GetObjectItem(c, "tokens"), *jg = cJSON_GetObjectItem(c, "greedy_tokens");
        int nt = cJSON_GetArraySize(jt), ng = cJSON_GetArraySize(jg);
        int32_t nv = cJSON_GetObjectItem(c, "n_vocab")->valueint;
        char path[256];
        snprintf(path, sizeof path, "llama-kv/%s",
                 cJSON_GetObjectItem(c, "prompt_logits")->valuestring);
        size_t nb = 0;
        float *ref = vkt_read_file(vkt_fixture(path), &nb);
        /* the F32 cache's logits of the same prompt (llama-tiny-f32/<prompt>) */
        char want32[64];
        snprintf(want32, sizeof want32, "llama-tiny-f32/%s", strchr(name, '/') + 1);
        float *ref32 = NULL;
        for (cJSON *d = cases32 ? cases32->child : NULL; d; d = d->next)
            if (strcmp(cJSON_GetObjectItem(d, "name")->valuestring, want32) == 0) {
                snprintf(path, sizeof path, "llama-tiny/%s",
                         cJSON_GetObjectItem(d, "prompt_logits")->valuestring);
                ref32 = vkt_read_file(vkt_fixture(path), NULL);
            }
        vkf_session_params sp = {.n_ctx = 128, .cache_type_k = t, .cache_type_v = t};
        vkf_session *s = NULL;
        int32_t toks_c[128], greedy[64];
        float *lg = malloc((size_t)(nt + ng) * (size_t)nv * sizeof *lg);
        for (int i = 0; i < nt && i < 128; i++)
            toks_c[i] = cJSON_GetArrayItem(jt, i)->valueint;
        for (int i = 0; i < ng && i < 64; i++)
            greedy[i] = cJSON_GetArrayItem(jg, i)->valueint;
        if (!ref || !ref32 || !lg || nb != (size_t)nt * (size_t)nv * sizeof(float) || t <= 0 ||
            vkf_session_create(m, &sp, &s) != VKF_OK) {
            VKT_CHECK(0, "%s: fixture or session: %s", name, vkf_last_error());
        } else {
            /* the prompt in one pass, then the greedy tokens teacher-forced one at a time */
            VKT_OK(vkf_session_eval(s, toks_c, nt, lg));
            for (int i = 0; i + 1 < ng; i++)
                VKT_OK(vkf_session_eval(s, &greedy[i], 1, lg + (size_t)(nt + i) * (size_t)nv));
            snprintf(path, sizeof path, "llama-kv/%s",
                     cJSON_GetObjectItem(c, "greedy_logits")->valuestring);
            size_t ngb = 0;
            float *refg = vkt_read_file(vkt_fixture(path), &ngb);
            double d = max_diff(lg, ref, (size_t)nt * (size_t)nv);
            if (refg && ngb >= (size_t)(ng - 1) * (size_t)nv * sizeof(float))
                d = fmax(
                    d, max_diff(lg + (size_t)nt * (size_t)nv, refg, (size_t)(ng - 1) * (size_t)nv));
            else
                VKT_CHECK(0, "%s: greedy logits unreadable", name);
            double d_cache = max_diff(ref, ref32, (size_t)nt * (size_t)nv);
            printf("  %-16s vs llama.cpp's: max|d| %.3e (bound %.2e); llama.cpp's %s vs f32 "
                   "cache %.3e\n",
                   name, d, bound_llama_cpp(t), kinds[t].name, d_cache);
            VKT_CHECK(d <= bound_llama_cpp(t), "%s: %.3e from llama.cpp's logits", name, d);
            if (t >= VKF_CACHE_Q4_0)
                VKT_CHECK(d < d_cache / 2,
                          "%s: %.3e from llama.cpp's through the same cache, which is %.3e from "
                          "the f32 cache's: the rounding is not llama.cpp's",
                          name, d, d_cache);
            free(refg);
            n_cases++;
        }
        vkf_session_free(s);
        free(lg);
        free(ref);
        free(ref32);
    }
    VKT_CHECK(n_cases == 16, "%d llama-kv cases compared, expected 16 (8 types x 2 prompts)",
              n_cases);
    vkf_model_free(m);
    cJSON_Delete(cases);
    cJSON_Delete(cases32);
    free(text);
    free(text32);
}

/* Prefix reuse (the chat's and the server's prompt cache): rows kept in a quantized cache and a
 * rest evaluated after them give the logits a whole evaluation gives, bit for bit (the CPU
 * backend computes each row on its own and quantizes it the same way either time). */
static void test_prefix_reuse(vkf_context *ctx) {
    vkf_model *m = load(ctx, "llama-tiny/llama-tiny-f32.gguf");
    if (!m) return;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    for (int t = VKF_CACHE_Q8_0; t < VKF_CACHE_COUNT; t++) {
        vkf_session_params sp = {.n_ctx = 64, .n_batch = 2, .cache_type_k = t, .cache_type_v = t};
        vkf_session *s = NULL;
        if (vkf_session_create(m, &sp, &s) != VKF_OK) {
            VKT_CHECK(0, "%s: %s", kinds[t].name, vkf_last_error());
            continue;
        }
        float *a = malloc((size_t)d.n_vocab * sizeof *a),
              *b = malloc((size_t)d.n_vocab * sizeof *b);
        int32_t other[N_TOKS];
        for (int i = 0; i < N_TOKS; i++)
            other[i] = (toks[i] * 7 + 3) % d.n_vocab;
        /* sequence 1: the whole prompt; sequence 0: another prompt, then its first 6 rows
         * replaced... by the prompt's first 6 and the rest evaluated after them */
        VKT_OK(vkf_session_seq_eval(s, 1, 0, toks, N_TOKS, a));
        VKT_OK(vkf_session_seq_eval(s, 0, 0, other, N_TOKS, b));
        VKT_OK(vkf_session_seq_eval(s, 0, 0, toks, 6, b));
        VKT_OK(vkf_session_seq_eval(s, 0, 6, toks + 6, N_TOKS - 6, b));
        VKT_CHECK(a && b && memcmp(a, b, (size_t)d.n_vocab * sizeof *a) == 0,
                  "%s: the reused prefix gives other logits", kinds[t].name);
        free(a);
        free(b);
        vkf_session_free(s);
    }
    vkf_model_free(m);
}

/* A session of types tk / tv is refused with status want and a message holding each of the
 * NULL-terminated words. */
static void refused(vkf_context *ctx, const char *rel, int tk, int tv, vkf_status want, ...) {
    vkf_model *m = load(ctx, rel);
    if (!m) return;
    vkf_session_params sp = {.n_ctx = 32, .cache_type_k = tk, .cache_type_v = tv};
    vkf_session *s = NULL;
    vkf_status st = vkf_session_create(m, &sp, &s);
    const char *msg = vkf_last_error();
    VKT_CHECK(st == want && !s, "%s K %d V %d: %s (%s), expected %s", rel, tk, tv,
              vkf_status_name(st), msg, vkf_status_name(want));
    va_list ap;
    va_start(ap, want);
    for (const char *w; (w = va_arg(ap, const char *));)
        VKT_CHECK(strstr(msg, w), "%s K %d V %d: the refusal does not say '%s': %s", rel, tk, tv, w,
                  msg);
    va_end(ap);
    vkf_session_free(s);
    vkf_model_free(m);
}

static void test_refusals_cpu(vkf_context *ctx) {
    /* head_dim 16 (qwen2) and 48 (gemma2): a 32-element block would straddle two heads */
    refused(ctx, "arch/qwen2-f32.gguf", VKF_CACHE_Q8_0, VKF_CACHE_F32, VKF_ERROR_UNSUPPORTED,
            "K cache type q8_0", "head_dim", "16", NULL);
    refused(ctx, "arch/gemma2-f32.gguf", VKF_CACHE_F32, VKF_CACHE_IQ4_NL, VKF_ERROR_UNSUPPORTED,
            "V cache type iq4_nl", "48", NULL);
    /* the encoder-decoder keeps F32 caches */
    refused(ctx, "seed-transformer-tiny", VKF_CACHE_Q4_0, VKF_CACHE_Q4_0, VKF_ERROR_UNSUPPORTED,
            "q4_0", "encoder-decoder", NULL);
    /* no vkf_cache_type */
    refused(ctx, "arch/llama3-f32.gguf", VKF_CACHE_COUNT, VKF_CACHE_F32, VKF_ERROR_INVALID_ARGUMENT,
            "cache_type_k", NULL);
    refused(ctx, "arch/llama3-f32.gguf", VKF_CACHE_F32, -1, VKF_ERROR_INVALID_ARGUMENT,
            "cache_type_v", NULL);
}

/* How far the Vulkan kernels' logits through a cache of type t may be from the CPU backend's
 * through the same type. Both write each row with ggml's reference quantizer of the type (the
 * Vulkan one in copy_rows.comp, float arithmetic that IEEE rounds alike but for the division)
 * and decode the same values, so they differ by the attention's float sums in another order
 * (test_models_arch: 5e-5 on the F32 cache, 7e-3 for gemma's wider logits) and, where a value
 * lands within an ulp of a rounding boundary, by one element moved one step of the type: a
 * fraction of bound(t), the effect of rounding every element. bound(t) / 8 holds that and stays
 * below the type's own effect against f32 (checked apart: the rounding is the type's). */
static double bound_vulkan(int t) { return bound(t) / 8; }

/* The Vulkan kernels through every cache type against the CPU backend's through the same one,
 * on llama-tiny (8 query heads, 4 KV heads), llama3 (2 / 1) and gemma3 (4 / 1, sliding-window
 * layers), head_dim 32 each: within bound_vulkan, and for bf16 and the block types nearer
 * to the CPU's through that type than the CPU's through the type is to its F32 cache. */
static void test_vulkan_types(vkf_context *vk) {
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *cpu = NULL;
    if (vkf_context_create(&cp, &cpu) != VKF_OK) {
        VKT_CHECK(0, "cpu context: %s", vkf_last_error());
        return;
    }
    static const char *models[] = {"llama-tiny/llama-tiny-f32.gguf", "arch/llama3-f32.gguf",
                                   "arch/gemma3-f32.gguf"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        vkf_model *mv = load(vk, models[i]), *mc = load(cpu, models[i]);
        if (!mv || !mc) {
            vkf_model_free(mv);
            vkf_model_free(mc);
            continue;
        }
        vkf_model_desc d;
        vkf_model_describe(mc, &d);
        size_t n = (size_t)N_TOKS * (size_t)d.n_vocab;
        float *c32 = logits(mc, VKF_CACHE_F32, VKF_CACHE_F32, d.n_vocab);
        for (int t = VKF_CACHE_F16; t < VKF_CACHE_COUNT && c32; t++) {
            float *a = logits(mv, t, t, d.n_vocab), *c = logits(mc, t, t, d.n_vocab);
            if (a && c) {
                double dv = max_diff(a, c, n), dt = max_diff(c, c32, n);
                printf("  %-32s %-6s Vulkan vs CPU: max|d| %.3e (bound %.2e); CPU %s vs f32 "
                       "%.3e\n",
                       models[i], kinds[t].name, dv, bound_vulkan(t), kinds[t].name, dt);
                VKT_CHECK(dv <= bound_vulkan(t), "%s %s: Vulkan %.3e from the CPU backend",
                          models[i], kinds[t].name, dv);
                if (t >= VKF_CACHE_BF16)
                    VKT_CHECK(dv < dt / 2,
                              "%s %s: Vulkan %.3e from the CPU through the same type, which is "
                              "%.3e from f32: the rounding is not the type's",
                              models[i], kinds[t].name, dv, dt);
            }
            free(a);
            free(c);
        }
        free(c32);
        vkf_model_free(mv);
        vkf_model_free(mc);
    }
    vkf_context_free(cpu);
}

static void test_refusals_vulkan(vkf_context *ctx) {
    /* the Vulkan kernels read K and V in one type: different ones are refused by name, never
     * converted */
    refused(ctx, "arch/llama3-f32.gguf", VKF_CACHE_F16, VKF_CACHE_F32, VKF_ERROR_UNSUPPORTED,
            "K cache type F16 and V cache type F32", "one type", NULL);
    refused(ctx, "arch/llama3-f32.gguf", VKF_CACHE_Q8_0, VKF_CACHE_Q4_0, VKF_ERROR_UNSUPPORTED,
            "K cache type Q8_0 and V cache type Q4_0", "one type", NULL);
    /* a block type still needs whole blocks in a head (qwen2's head_dim 16) */
    refused(ctx, "arch/qwen2-f32.gguf", VKF_CACHE_Q8_0, VKF_CACHE_Q8_0, VKF_ERROR_UNSUPPORTED,
            "K cache type q8_0", "head_dim", "16", NULL);
}

/* The ggml-activations mode through each cache type against llama.cpp's logits (llama-kv:
 * flash attention on, AVX2 build): bit for bit, every prompt row and every teacher-forced greedy
 * row. Its attention reproduces llama.cpp's flash attention kernel for caches other than F32
 * (backend/cpu/cpu_ggml.c: q in the K type's dot type, the online softmax, f16 sums for an f16
 * V) and its Q8_0 cache rows are written by the x86 quantizer, as llama.cpp's set_rows does. */
static void test_ggml_exact(void) {
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU, .ggml_activations = VKF_GGML_AVX2};
    vkf_context *ctx = NULL;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) {
        VKT_CHECK(0, "ggml context: %s", vkf_last_error());
        return;
    }
    char *text = vkt_read_file(vkt_fixture("llama-kv/cases.json"), NULL);
    cJSON *cases = text ? cJSON_Parse(text) : NULL;
    VKT_CHECK(cases != NULL, "llama-kv/cases.json unreadable");
    vkf_model *m = cases ? load(ctx, "llama-kv/llama-tiny-f32.gguf") : NULL;
    int n_cases = 0, n_exact = 0;
    for (cJSON *c = cases && m ? cases->child : NULL; c; c = c->next) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *isa = cJSON_GetStringValue(cJSON_GetObjectItem(c, "ggml_isa"));
        if (isa && strcmp(isa, "avx2") != 0) continue; /* the target reproduced here */
        int t = vkf_cache_type_from_name(cJSON_GetObjectItem(c, "cache_type")->valuestring);
        cJSON *jt = cJSON_GetObjectItem(c, "tokens"), *jg = cJSON_GetObjectItem(c, "greedy_tokens");
        int nt = cJSON_GetArraySize(jt), ng = cJSON_GetArraySize(jg);
        int32_t nv = cJSON_GetObjectItem(c, "n_vocab")->valueint, toks_c[128], greedy[64];
        for (int i = 0; i < nt && i < 128; i++)
            toks_c[i] = cJSON_GetArrayItem(jt, i)->valueint;
        for (int i = 0; i < ng && i < 64; i++)
            greedy[i] = cJSON_GetArrayItem(jg, i)->valueint;
        char path[256];
        size_t nb = 0, ngb = 0;
        snprintf(path, sizeof path, "llama-kv/%s",
                 cJSON_GetObjectItem(c, "prompt_logits")->valuestring);
        float *ref = vkt_read_file(vkt_fixture(path), &nb);
        snprintf(path, sizeof path, "llama-kv/%s",
                 cJSON_GetObjectItem(c, "greedy_logits")->valuestring);
        float *refg = vkt_read_file(vkt_fixture(path), &ngb);
        float *lg = malloc((size_t)(nt + ng) * (size_t)nv * sizeof *lg);
        vkf_session_params sp = {.n_ctx = 128, .cache_type_k = t, .cache_type_v = t};
        vkf_session *s = NULL;
        if (!ref || !refg || !lg || nb != (size_t)nt * (size_t)nv * sizeof(float) ||
            ngb < (size_t)(ng - 1) * (size_t)nv * sizeof(float) || t <= 0 ||
            vkf_session_create(m, &sp, &s) != VKF_OK) {
            VKT_CHECK(0, "%s: fixture or session: %s", name, vkf_last_error());
        } else {
            VKT_OK(vkf_session_eval(s, toks_c, nt, lg));
            for (int i = 0; i + 1 < ng; i++)
                VKT_OK(vkf_session_eval(s, &greedy[i], 1, lg + (size_t)(nt + i) * (size_t)nv));
            size_t n_p = (size_t)nt * (size_t)nv, n_g = (size_t)(ng - 1) * (size_t)nv, bad = 0;
            double d = fmax(max_diff(lg, ref, n_p), max_diff(lg + n_p, refg, n_g));
            for (size_t i = 0; i < n_p; i++)
                bad += memcmp(&lg[i], &ref[i], sizeof(float)) != 0;
            for (size_t i = 0; i < n_g; i++)
                bad += memcmp(&lg[n_p + i], &refg[i], sizeof(float)) != 0;
            printf("  ggml mode %-16s vs llama.cpp's: %zu of %zu logits differ, max|d| %.3e\n",
                   name, bad, n_p + n_g, d);
            VKT_CHECK(bad == 0,
                      "%s: the ggml-activations mode is %zu logits (max|d| %.3e) from "
                      "llama.cpp's through the same cache",
                      name, bad, d);
            n_exact += bad == 0;
            n_cases++;
        }
        vkf_session_free(s);
        free(lg);
        free(ref);
        free(refg);
    }
    VKT_CHECK(n_cases == 16, "%d llama-kv cases in the ggml mode, expected 16", n_cases);
    printf("  ggml mode: %d of %d llama-kv cases bit for bit\n", n_exact, n_cases);
    vkf_model_free(m);
    /* head_dim 64 (llama-kq): llama.cpp rotates q, k and v by a Hadamard matrix for a quantized
     * cache there, which the mode does not reproduce: refused by name, K or V; bf16 (not a
     * quantized type to llama.cpp) is kept */
    refused(ctx, "llama-kq/llama-kq-f32.gguf", VKF_CACHE_Q8_0, VKF_CACHE_F16, VKF_ERROR_UNSUPPORTED,
            "K cache type q8_0 with head_dim 64", "Walsh-Hadamard", NULL);
    refused(ctx, "llama-kq/llama-kq-f32.gguf", VKF_CACHE_F16, VKF_CACHE_Q4_0, VKF_ERROR_UNSUPPORTED,
            "V cache type q4_0 with head_dim 64", NULL);
    vkf_model *k64 = load(ctx, "llama-kq/llama-kq-f32.gguf");
    vkf_session_params sp = {
        .n_ctx = 32, .cache_type_k = VKF_CACHE_BF16, .cache_type_v = VKF_CACHE_BF16};
    vkf_session *s = NULL;
    VKT_CHECK(k64 && vkf_session_create(k64, &sp, &s) == VKF_OK,
              "ggml mode, bf16 cache at head_dim 64: %s", vkf_last_error());
    vkf_session_free(s);
    vkf_model_free(k64);
    cJSON_Delete(cases);
    free(text);
    vkf_context_free(ctx);
}

static void per_backend(vkf_context *ctx, const char *backend, void *user) {
    (void)user;
    if (strcmp(backend, "cpu") == 0) {
        test_memory(ctx, 1);
        test_logits(ctx);
        test_prefix_reuse(ctx);
        test_llama_cpp(ctx);
        test_refusals_cpu(ctx);
    } else { /* the same bytes on Vulkan: the cache's buffers, the memory line, the fit check */
        test_memory(ctx, 0);
        test_vulkan_types(ctx);
        test_refusals_vulkan(ctx);
    }
}

int main(void) {
    test_names();
    if (!vkt_need_fixtures("arch llama-tiny llama-kv llama-kq seed-transformer-tiny"))
        return vkt_finish();
    vkt_for_each_backend(per_backend, NULL);
    test_ggml_exact();
    return vkt_finish();
}
