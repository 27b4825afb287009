/* The ggml-activation reference mode (vkf_context_params.ggml_activations) against llama.cpp's
 * own logits: every row of every case (the prompt in one batch, then the greedy tokens one step
 * at a time, teacher-forced) is compared with the fixture's, each fixture with the llama.cpp
 * build that made it (vkf_ggml_target: case_target reads the build from the case, "ggml_isa" and
 * "llama_cpp", as the sets of tools/refs/make_all.py carry them; a case without them was made
 * where its set's README says). In this mode the CPU backend does llama.cpp's arithmetic
 * operation for operation (see cpu_ggml.c, quant_dot.c).
 *
 * Threshold: every row of every case within 1e-5 of llama.cpp (bit-identical up to the last
 * float rounding of the logits; measured on the AVX-512 sets: all 36 cases of llama-kq and
 * llama-tiny, all 12 of arch and all 6 of gpt2-tiny exactly 0.0; here every llama-kq and arch
 * case and the longest llama-tiny and gpt2-tiny prompt of each file).
 * One activation rounding to the other side of a quantization boundary makes a row differ by
 * 0.01-0.06; the plain float-activation path differs by 1e-3..9e-2 on every row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/quant_dot.h"
#include "testutil.h"

#define EXACT_TOL 1e-5 /* last-bit differences of the logits themselves */

typedef struct stats {
    int rows, exact;
    double max_abs;
} stats;

static void compare_rows(const float *a, const float *b, int rows, int n_vocab, stats *st) {
    for (int r = 0; r < rows; r++) {
        double m = 0;
        for (int j = 0; j < n_vocab; j++)
            m = fmax(m, fabs((double)a[(size_t)r * n_vocab + j] - b[(size_t)r * n_vocab + j]));
        st->rows++;
        st->exact += m <= EXACT_TOL;
        st->max_abs = fmax(st->max_abs, m);
    }
}

/* dir in the shared fixtures, or an absolute path */
static const char *fixture_file(const char *dir, const char *file) {
    static char path[2048];
    char rel[1024];
    snprintf(rel, sizeof rel, "%s/%s", dir, file);
    snprintf(path, sizeof path, "%s", dir[0] == '/' ? rel : vkt_fixture(rel));
    return path;
}

/* The llama.cpp builds the targets reproduce: a case's "ggml_isa" and the commit that begins its
 * "llama_cpp" (include/vkformer.h, vkf_ggml_target). */
static const struct {
    const char *isa, *commit;
    vkf_ggml_target target;
} k_builds[] = {
    {"avx2", "0c1e570", VKF_GGML_AVX2},
    {"avx512", "dc02e1f", VKF_GGML_AVX512_2026},
    {"avx512", "c392e50", VKF_GGML_AVX512_2025},
};

/* The target of the build that made case c; readme: the build of a case that names none (its
 * set's README). VKF_GGML_OFF when no target reproduces the build it names. */
static vkf_ggml_target case_target(const cJSON *c, vkf_ggml_target readme) {
    const cJSON *isa = cJSON_GetObjectItemCaseSensitive(c, "ggml_isa"),
                *build = cJSON_GetObjectItemCaseSensitive(c, "llama_cpp");
    if (!isa && !build) return readme;
    if (!cJSON_IsString(isa) || !cJSON_IsString(build)) return VKF_GGML_OFF;
    for (size_t i = 0; i < sizeof k_builds / sizeof k_builds[0]; i++)
        if (strcmp(isa->valuestring, k_builds[i].isa) == 0 &&
            strncmp(build->valuestring, k_builds[i].commit, strlen(k_builds[i].commit)) == 0)
            return k_builds[i].target;
    return VKF_GGML_OFF;
}

/* A CPU context computing as the llama.cpp build target does. */
static vkf_context *target_ctx(vkf_ggml_target t) {
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU, .ggml_activations = t};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    return ctx;
}

/* One CPU context per target, made when first needed. */
static vkf_context *g_ctx[4];

static vkf_context *ctx_for(vkf_ggml_target t) {
    if (!g_ctx[t]) g_ctx[t] = target_ctx(t);
    return g_ctx[t];
}

/* dir/cases.json (NULL when it cannot be read: a failure); *text to free with it. */
static cJSON *read_cases(const char *dir, char **text) {
    char path[2048];
    snprintf(path, sizeof path, "%s", fixture_file(dir, "cases.json"));
    *text = vkt_read_file(path, NULL);
    cJSON *cases = *text ? cJSON_Parse(*text) : NULL;
    VKT_CHECK(cases != NULL, "read %s", path);
    return cases;
}

/* 1 if some case of dir names the build that made it (a set of tools/refs/make_all.py). */
static int names_build(const char *dir) {
    char *text;
    cJSON *cases = read_cases(dir, &text), *c;
    int named = 0;
    cJSON_ArrayForEach(c, cases) named |= cJSON_GetObjectItemCaseSensitive(c, "ggml_isa") != NULL;
    cJSON_Delete(cases);
    free(text);
    return named;
}

/* Runs every case of dir/cases.json whose model name contains only, each on the target of the
 * build that made it (readme: the build of a case that names none). */
static void run_fixture(const char *dir, const char *only, vkf_ggml_target readme) {
    char path[2048];
    char *text;
    cJSON *cases = read_cases(dir, &text);
    cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *model = cJSON_GetObjectItem(c, "model")->valuestring;
        if (only && !strstr(name, only)) continue;
        vkf_ggml_target t = case_target(c, readme);
        const cJSON *isa = cJSON_GetObjectItemCaseSensitive(c, "ggml_isa"),
                    *build = cJSON_GetObjectItemCaseSensitive(c, "llama_cpp");
        VKT_CHECK(t != VKF_GGML_OFF, "%s: no --ggml-target reproduces llama.cpp %s on %s", name,
                  cJSON_IsString(build) ? build->valuestring : "(no llama_cpp)",
                  cJSON_IsString(isa) ? isa->valuestring : "(no ggml_isa)");
        vkf_context *ctx = t != VKF_GGML_OFF ? ctx_for(t) : NULL;
        if (!ctx) continue;
        snprintf(path, sizeof path, "%s", fixture_file(dir, model));
        vkf_model_params mp = {.path = path};
        vkf_model *m = NULL;
        VKT_OK(vkf_model_load(ctx, &mp, &m));
        if (!m) continue;
        vkf_model_desc d;
        vkf_model_describe(m, &d);
        cJSON *toks = cJSON_GetObjectItem(c, "tokens"),
              *greedy = cJSON_GetObjectItem(c, "greedy_tokens");
        int n = cJSON_GetArraySize(toks), ng = cJSON_GetArraySize(greedy);
        int32_t *ids = malloc(sizeof *ids * (size_t)(n + ng));
        for (int i = 0; i < n; i++)
            ids[i] = cJSON_GetArrayItem(toks, i)->valueint;
        for (int i = 0; i < ng; i++)
            ids[n + i] = cJSON_GetArrayItem(greedy, i)->valueint;
        float *ours = malloc(sizeof *ours * (size_t)(n + ng) * d.n_vocab);
        vkf_session *s = NULL;
        VKT_OK(vkf_session_create(m, NULL, &s));
        stats st = {0};
        if (s && vkf_session_eval(s, ids, n, ours) == VKF_OK) {
            for (int i = 0; i < ng; i++)
                VKT_OK(vkf_session_eval(s, &ids[n + i], 1, ours + (size_t)(n + i) * d.n_vocab));
            float *rp = vkt_read_file(
                fixture_file(dir, cJSON_GetObjectItem(c, "prompt_logits")->valuestring), NULL);
            float *rg = vkt_read_file(
                fixture_file(dir, cJSON_GetObjectItem(c, "greedy_logits")->valuestring), NULL);
            VKT_CHECK(rp && rg, "%s: reference logits", name);
            if (rp && rg) {
                compare_rows(ours, rp, n, d.n_vocab, &st);
                compare_rows(ours + (size_t)n * d.n_vocab, rg, ng, d.n_vocab, &st);
            }
            free(rp);
            free(rg);
        }
        printf("%-28s %3d/%3d rows exact, max|d| %.3e (%s)\n", name, st.exact, st.rows, st.max_abs,
               vkf_ggml_target_name(t));
        VKT_CHECK(st.rows > 0 && st.exact == st.rows, "%s: only %d of %d rows exact", name,
                  st.exact, st.rows);
        vkf_session_free(s);
        vkf_model_free(m);
        free(ids);
        free(ours);
    }
    cJSON_Delete(cases);
    free(text);
}

/* ------------------------------------------------------------------ avx2: hashed references
 *
 * tests/data/ggml-avx2/refs.json (tools/make_ggml_refs.py): llama.cpp 0c1e570's logits on an
 * AVX2 machine for the models of the older outside fixture sets (VKF_FIXTURES; the sets of
 * tools/refs carry that build's logits themselves), one 64-bit FNV-1a hash per row of float32
 * bytes, with llama.cpp's own greedy tokens. Equal hashes: bit-identical rows. */

static uint64_t fnv1a64(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The hashed cases of one shared fixture set whose name contains only (NULL: all). */
static void run_hashed(vkf_context *ctx, const char *fixture, const char *only) {
    char *text = vkt_read_file(VKF_SOURCE_DIR "/tests/data/ggml-avx2/refs.json", NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    VKT_CHECK(root != NULL, "read tests/data/ggml-avx2/refs.json");
    int cases = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        if (strcmp(cJSON_GetObjectItem(c, "fixture")->valuestring, fixture) != 0 ||
            (only && !strstr(name, only)))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", cJSON_GetObjectItem(c, "fixture")->valuestring,
                 cJSON_GetObjectItem(c, "model")->valuestring);
        vkf_model_params mp = {.path = vkt_fixture(path)};
        vkf_model *m = NULL;
        VKT_OK(vkf_model_load(ctx, &mp, &m));
        if (!m) continue;
        cJSON *toks = cJSON_GetObjectItem(c, "tokens"),
              *greedy = cJSON_GetObjectItem(c, "greedy_tokens"),
              *rows = cJSON_GetObjectItem(c, "rows");
        int n = cJSON_GetArraySize(toks), ng = cJSON_GetArraySize(greedy);
        int64_t V = cJSON_GetObjectItem(c, "n_vocab")->valueint;
        int32_t *ids = malloc(sizeof *ids * (size_t)(n + ng));
        float *lg = malloc(sizeof *lg * (size_t)(n + ng) * (size_t)V);
        for (int i = 0; i < n + ng; i++)
            ids[i] = cJSON_GetArrayItem(i < n ? toks : greedy, i < n ? i : i - n)->valueint;
        vkf_session *s = NULL;
        VKT_OK(vkf_session_create(m, NULL, &s));
        int exact = 0, first_bad = -1;
        if (s && vkf_session_eval(s, ids, n, lg) == VKF_OK) {
            for (int i = n; i < n + ng; i++)
                VKT_OK(vkf_session_eval(s, &ids[i], 1, lg + (size_t)i * V));
            for (int r = 0; r < n + ng && r < cJSON_GetArraySize(rows); r++) {
                char hex[17];
                snprintf(hex, sizeof hex, "%016llx",
                         (unsigned long long)fnv1a64(lg + (size_t)r * V, (size_t)V * sizeof *lg));
                if (strcmp(hex, cJSON_GetArrayItem(rows, r)->valuestring) == 0)
                    exact++;
                else if (first_bad < 0)
                    first_bad = r;
            }
        }
        printf("%-28s %3d/%3d rows bit-identical (avx2)\n", name, exact, n + ng);
        VKT_CHECK(exact == n + ng, "%s: %d of %d rows bit-identical, row %d differs", name, exact,
                  n + ng, first_bad);
        cases++;
        vkf_session_free(s);
        vkf_model_free(m);
        free(ids);
        free(lg);
    }
    VKT_CHECK(cases > 0, "no hashed case ran");
    printf("avx2 hashed: %d cases, all required exact\n", cases);
    cJSON_Delete(root);
    free(text);
}

/* Activation quantizers: ggml's x86 rounding (half to even, scale 127 / max multiplied in). */
static void test_act_quant(void) {
    float x[32] = {0};
    x[0] = 1.27f;  /* max: d = 0.01, id = 127 / 1.27 */
    x[1] = 0.025f; /* 0.025 * 100 = 2.5 (up to f32 rounding of id): */
    x[2] = -0.635f;
    vkf_block_q8_0 b;
    vkf_act_quantize(VKF_ACT_Q8_0, x, &b, 32);
    VKT_CHECK(b.qs[0] == 127 && b.qs[2] == (int8_t)nearbyintf(-0.635f * (127.f / 1.27f)),
              "q8_0 levels");
    VKT_CHECK(b.qs[1] == (int8_t)nearbyintf(0.025f * (127.f / 1.27f)),
              "q8_0 rounds x * (127 / max)");
    VKT_CHECK(b.d == vkf_f32_to_f16(1.27f / 127.f), "q8_0 scale");
    vkf_block_q8_1 b1;
    vkf_act_quantize(VKF_ACT_Q8_1, x, &b1, 32);
    int sum = 0;
    for (int j = 0; j < 32; j++)
        sum += b1.qs[j];
    VKT_CHECK(b1.s == vkf_f32_to_f16(vkf_f16_to_f32(b1.d) == 0 ? 0 : (1.27f / 127.f) * (float)sum),
              "q8_1 sum");
    /* Q8_K: scale -127 / max: the largest magnitude maps to -127, d = 1 / scale */
    float y[256];
    for (int j = 0; j < 256; j++)
        y[j] = (float)(j % 17) - 8.0f;
    y[5] = -20.0f;
    vkf_block_q8_k k;
    vkf_act_quantize(VKF_ACT_Q8_K, y, &k, 256);
    VKT_CHECK(k.qs[5] == -127 && fabsf(k.d - 20.0f / 127.f) < 1e-7f, "q8_k scale %g", (double)k.d);
    int bs = 0;
    for (int j = 0; j < 16; j++)
        bs += k.qs[j];
    VKT_CHECK(k.bsums[0] == bs, "q8_k sums");
}

/* Each integer dot product equals the float dot of the dequantized operands up to float
 * rounding (relative 1e-5 of sum |w| |a|): the block decoding and scales are right. */
static void test_dots(void) {
    static const vkf_dtype types[] = {
        VKF_DTYPE_Q8_0,   VKF_DTYPE_Q4_0,   VKF_DTYPE_Q4_1, VKF_DTYPE_Q5_0, VKF_DTYPE_Q5_1,
        VKF_DTYPE_Q2_K,   VKF_DTYPE_Q3_K,   VKF_DTYPE_Q4_K, VKF_DTYPE_Q5_K, VKF_DTYPE_Q6_K,
        VKF_DTYPE_IQ4_NL, VKF_DTYPE_IQ4_XS, VKF_DTYPE_MXFP4};
    const int64_t K = 512;
    float w[512], x[512], wd[512], xd[512];
    uint32_t seed = 12345;
    for (int i = 0; i < K; i++) {
        seed = seed * 1664525u + 1013904223u;
        w[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.2f;
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 4.0f;
    }
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        vkf_dtype ty = types[t];
        /* only the types the engine stores and dequantizes (all of them with the weight types) */
        if (vkf_dtype_row_bytes(ty, K) != vkf_quant_row_bytes(ty, K)) continue;
        unsigned char wq[2048], aq[2048];
        vkf_quantize_rows(ty, w, wq, 1, K);
        vkf_act_type at = vkf_act_type_of(ty);
        vkf_act_quantize(at, x, aq, K);
        /* dequantize the activation (d * q) and the weight (vkf_dequantize_row) */
        for (int64_t i = 0; i < K; i++) {
            if (at == VKF_ACT_Q8_K) {
                const vkf_block_q8_k *b = (const vkf_block_q8_k *)aq + i / 256;
                xd[i] = b->d * b->qs[i % 256];
            } else if (at == VKF_ACT_Q8_1) {
                const vkf_block_q8_1 *b = (const vkf_block_q8_1 *)aq + i / 32;
                xd[i] = vkf_f16_to_f32(b->d) * b->qs[i % 32];
            } else {
                const vkf_block_q8_0 *b = (const vkf_block_q8_0 *)aq + i / 32;
                xd[i] = vkf_f16_to_f32(b->d) * b->qs[i % 32];
            }
        }
        vkf_dequantize_row(ty, wq, wd, K);
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < K; i++) {
            ref += (double)wd[i] * xd[i];
            mag += fabs((double)wd[i] * xd[i]);
        }
        if (at == VKF_ACT_Q8_1) { /* ggml's min term is m * s, s = f16(d_a * sum q_a) */
            ref = 0;
            for (int64_t i = 0; i < K; i++) {
                const uint16_t mh = ty == VKF_DTYPE_Q4_1 ? ((const vkf_block_q4_1 *)wq)[i / 32].m
                                                         : ((const vkf_block_q5_1 *)wq)[i / 32].m;
                ref += ((double)wd[i] - vkf_f16_to_f32(mh)) * xd[i];
                if (i % 32 == 0)
                    ref += (double)vkf_f16_to_f32(mh) *
                           vkf_f16_to_f32(((const vkf_block_q8_1 *)aq)[i / 32].s);
            }
        }
        for (int flags = 0; flags < 16; flags++) { /* every VKF_DOT_* kernel order */
            float got = vkf_act_dot(ty, wq, aq, K, flags);
            VKT_CHECK(fabs(got - ref) <= 1e-5 * mag + 1e-6, "%s dot %g vs dequantized %g",
                      vkf_dtype_name(ty), (double)got, ref);
        }
    }
}

/* hex digits -> bytes; the count, or -1 */
static int unhex(const char *h, unsigned char *out, size_t cap) {
    size_t n = strlen(h) / 2;
    if (n > cap) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1) return -1;
        out[i] = (unsigned char)v;
    }
    return (int)n;
}

/* tests/data/ggml-avx2/dots.json (tools/make_ggml_dots.py): llama.cpp's own single-row vec_dot
 * of MXFP4 and IQ4_NL weights (not repacked: pairs of blocks in two lane sets, an odd last block
 * in a scalar tail) on 1..8 blocks, with ggml's quantized weight and Q8_0 activation rows. The
 * quantizers must give the same bytes and the dot the same float, bit for bit. */
static void test_dots_llama(void) {
    char *text = vkt_read_file(VKF_SOURCE_DIR "/tests/data/ggml-avx2/dots.json", NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    cJSON *cases = root ? cJSON_GetObjectItem(root, "cases") : NULL;
    VKT_CHECK(cJSON_GetArraySize(cases) == 8, "read tests/data/ggml-avx2/dots.json");
    cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *tn = cJSON_GetObjectItem(c, "type")->valuestring;
        const int k = cJSON_GetObjectItem(c, "k")->valueint;
        vkf_dtype t = strcmp(tn, "MXFP4") ? VKF_DTYPE_IQ4_NL : VKF_DTYPE_MXFP4;
        float w[256], x[256];
        unsigned char wq[256], aq[512], wr[256], ar[512];
        if (k > 256) continue;
        for (int i = 0; i < k; i++) {
            uint32_t a = (uint32_t)cJSON_GetArrayItem(cJSON_GetObjectItem(c, "w"), i)->valuedouble,
                     b = (uint32_t)cJSON_GetArrayItem(cJSON_GetObjectItem(c, "x"), i)->valuedouble;
            memcpy(&w[i], &a, 4);
            memcpy(&x[i], &b, 4);
        }
        int nw = unhex(cJSON_GetObjectItem(c, "wq")->valuestring, wr, sizeof wr),
            na = unhex(cJSON_GetObjectItem(c, "aq")->valuestring, ar, sizeof ar);
        vkf_quantize_rows(t, w, wq, 1, k);
        vkf_act_quantize(VKF_ACT_Q8_0, x, aq, k);
        VKT_CHECK(nw == (int)vkf_dtype_row_bytes(t, k) && !memcmp(wq, wr, (size_t)nw),
                  "%s k=%d: the weight row differs from ggml's", tn, k);
        VKT_CHECK(na == (int)vkf_act_row_bytes(VKF_ACT_Q8_0, k) && !memcmp(aq, ar, (size_t)na),
                  "%s k=%d: the Q8_0 activations differ from llama.cpp's", tn, k);
        uint32_t want = (uint32_t)cJSON_GetObjectItem(c, "dot")->valuedouble;
        float got = vkf_act_dot(t, wr, ar, k, VKF_DOT_SINGLE_ROW | VKF_DOT_LLAMA_2610);
        uint32_t gb;
        memcpy(&gb, &got, 4);
        VKT_CHECK(gb == want, "%s k=%d: dot %08x (%.9g) vs llama.cpp's %08x", tn, k, gb,
                  (double)got, want);
    }
    cJSON_Delete(root);
    free(text);
}

int main(void) {
    test_act_quant();
    test_dots();
    test_dots_llama();
    vkf_context_params bad = {.backend = VKF_BACKEND_VULKAN, .ggml_activations = VKF_GGML_AVX2};
    vkf_context *no = NULL;
    VKT_CHECK(vkf_context_create(&bad, &no) == VKF_ERROR_INVALID_ARGUMENT, "ggml mode is CPU only");
    vkf_context_params unknown = {.backend = VKF_BACKEND_CPU, .ggml_activations = 99};
    VKT_CHECK(vkf_context_create(&unknown, &no) == VKF_ERROR_INVALID_ARGUMENT &&
                  strstr(vkf_last_error(), "avx512-2025"),
              "an unknown target is refused with the list: %s", vkf_last_error());
    if (!vkt_need_fixtures("llama-kq llama-tiny arch gpt2-tiny")) return vkt_finish();
    /* Each set's cases on the target of the build that made them. Sets of tools/refs/make_all.py:
     * llama.cpp 0c1e570 (llama-cpp-python 0.3.36) on AVX2, named in each case. Outside sets that
     * name no build were made where their README says: llama-kq, llama-tiny and gpt2-tiny by
     * c392e50 (Feb 2025) on AVX-512, arch by dc02e1f (Jul 2026) on AVX-512.
     * llama-kq: every llama.cpp K-quant / legacy / IQ file type; llama-tiny: F32, F16, Q8_0,
     * Q4_0 (repacked by llama.cpp) on the longest prompt (46 tokens: more than one 32-cell KV
     * block) to keep the test short (verify --ggml-activations runs them all); arch: every
     * architecture (gemma's sliding windows, soft-caps, GELU table, q scaled before attention;
     * llama3's and phi3's rope factors, phi3's attention factor, gemma3's linear scaling; q/k
     * norms, biases, fused matrices) */
    run_fixture("llama-kq", NULL, VKF_GGML_AVX512_2025);
    run_fixture("llama-tiny", "mixed", VKF_GGML_AVX512_2025);
    run_fixture("arch", NULL, VKF_GGML_AVX512_2026);
    /* gpt2-tiny (LayerNorm, GELU, learned positions), its longest prompt */
    run_fixture("gpt2-tiny", "mixed", VKF_GGML_AVX512_2025);
    /* llama.cpp 0c1e570 on AVX2: smollm3's fixture (tests/data/smollm3, made by it, logits
     * stored whole); and on an outside set made on AVX-512, tests/data/ggml-avx2/refs.json's
     * hashed logits of its models (8-lane float kernels, KV padded to 256, LayerNorm and GELU,
     * tinyBLAS only for 4k rows, the tiled K-quant matmul, Q6_K's newer vec_dot, repacked Q4_0 /
     * IQ4_NL / Q4_K): the longest prompt of every arch, llama-kq and llama-tiny file and a gpt2
     * prompt. A set of tools/refs is made by that build: its own logits above are the check. */
    run_fixture(VKF_SOURCE_DIR "/tests/data/smollm3", NULL, VKF_GGML_AVX2);
    static const char *const hashed[][2] = {
        {"arch", "mixed"}, {"llama-kq", "mixed"}, {"llama-tiny", "mixed"}, {"gpt2-tiny", NULL}};
    for (size_t i = 0; i < sizeof hashed / sizeof hashed[0]; i++)
        if (!names_build(hashed[i][0]))
            run_hashed(ctx_for(VKF_GGML_AVX2), hashed[i][0], hashed[i][1]);
    for (size_t i = 0; i < sizeof g_ctx / sizeof g_ctx[0]; i++)
        vkf_context_free(g_ctx[i]);
    return vkt_finish();
}
