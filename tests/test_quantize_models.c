/* `vkformer quantize` on a model whose rows are not multiples of 256 (fixtures/arch llama3-f32:
 * d_model 64, FFN 192, tied output): llama.cpp's fallback mix (Q5_0, Q5_1, Q8_0, IQ4_NL instead
 * of the K-quants), then the written files loaded and run:
 * - the tensor types are the ones llama.cpp's rules give for this model (worked out from
 *   llama_tensor_get_type in the comments below);
 * - each file's logits against the F32 model's on the CPU reference: within the quantization
 *   noise of its types (thresholds below);
 * - the Vulkan backend against the CPU reference on the same quantized file: both dequantize the
 *   same blocks with float activations, so only accumulation order differs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define N_TOK 24
static const int32_t k_tokens[N_TOK] = {1,   45,  300, 17,  99,  256, 3,   500, 77, 120, 64, 2,
                                        311, 400, 8,   150, 222, 333, 444, 5,   60, 70,  80, 90};

typedef struct qcase {
    const char *type;
    int n_q8_0, n_q5_0, n_q5_1, n_iq4_nl, n_fallback;
    /* logits vs the F32 model on the CPU: max and rms of |d| over all rows. Quantization noise
     * grows with the step of the types: Q8_0 (step max/127) measures rms 0.031, max 0.16; the
     * 5-bit fallbacks (step max/16 to /31) rms 0.18, max 0.8..0.9; IQ4_NL rms 0.31, max 1.4.
     * Thresholds: about 1.6x the measured values; a wrong block layout or scale gives rms of
     * the size of the logits (2..3) */
    double max_vs_f32, rms_vs_f32;
} qcase;

/* llama.cpp's rules for this model (2 layers, n_gqa 2, no output.weight so token_embd takes the
 * output rule: 64 % 256 != 0 -> Q8_0):
 * Q4_K_M: Q4_K -> Q5_0; attn_v and ffn_down of layer 1 (use_more_bits(1, 2)) Q6_K -> Q8_0.
 * Q3_K_M: q, k, gate, up Q3_K -> IQ4_NL; attn_v (i < 2) Q5_K -> Q5_1; attn_output and ffn_down
 *         Q4_K -> Q5_0.
 * Q8_0:   everything Q8_0 (no fallback needed: 64 % 32 == 0). */
static const qcase k_cases[] = {
    {"Q4_K_M", 3, 12, 0, 0, 14, 1.4, 0.3},
    {"Q3_K_M", 1, 4, 2, 8, 14, 2.0, 0.45},
    {"Q8_0", 15, 0, 0, 0, 0, 0.25, 0.05},
};

static char tmpdir[64];

static int eval_logits(vkf_context *ctx, const char *path, float *out, int *n_vocab) {
    vkf_model_params mp = {.path = path, .n_ctx = 64};
    vkf_model *m = NULL;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        VKT_CHECK(0, "load %s: %s", path, vkf_last_error());
        return 0;
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    *n_vocab = d.n_vocab;
    vkf_session *s = NULL;
    /* F32 caches on both backends (Vulkan devices default to F16): the comparison below is of
     * the quantized weights' arithmetic, held to 1e-4 */
    vkf_session_params sp = {.cache_type_k = VKF_CACHE_F32, .cache_type_v = VKF_CACHE_F32};
    int ok = vkf_session_create(m, &sp, &s) == VKF_OK &&
             vkf_session_eval(s, k_tokens, N_TOK, out) == VKF_OK;
    VKT_CHECK(ok, "eval %s: %s", path, vkf_last_error());
    vkf_session_free(s);
    vkf_model_free(m);
    return ok;
}

static void diff(const float *a, const float *b, size_t n, double *max, double *rms) {
    double m = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        m = fmax(m, e);
        s += e * e;
    }
    *max = m;
    *rms = sqrt(s / (double)n);
}

int main(void) {
    if (!vkt_need_fixtures("arch")) return vkt_finish();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vkt_qmodels_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    char src[1024];
    snprintf(src, sizeof src, "%s", vkt_fixture("arch/llama3-f32.gguf"));
    const int nv = 512;
    float *f32 = malloc(sizeof *f32 * N_TOK * nv), *cpu = malloc(sizeof *cpu * N_TOK * nv),
          *gpu = malloc(sizeof *gpu * N_TOK * nv);
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    vkf_context_params vp = {.backend = VKF_BACKEND_VULKAN};
    vkf_context *vk = NULL;
    if (vkf_context_create(&vp, &vk) != VKF_OK) {
        const char *allow = getenv("VKF_TEST_NO_VULKAN");
        VKT_CHECK(allow && !strcmp(allow, "1"), "no Vulkan context: %s", vkf_last_error());
        vk = NULL;
    }
    int n_vocab = 0;
    if (ctx && eval_logits(ctx, src, f32, &n_vocab)) {
        VKT_CHECK(n_vocab == nv, "vocab %d", n_vocab);
        for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
            const qcase *q = &k_cases[i];
            char out[256];
            snprintf(out, sizeof out, "%s/llama3-%s.gguf", tmpdir, q->type);
            vkf_quantize_params qp = {.input = src, .output = out, .type = q->type};
            vkf_quantize_stats st;
            VKT_OK(vkf_model_quantize(&qp, &st));
            VKT_CHECK(st.n_by_type[VKF_DTYPE_Q8_0] == q->n_q8_0 &&
                          st.n_by_type[VKF_DTYPE_Q5_0] == q->n_q5_0 &&
                          st.n_by_type[VKF_DTYPE_Q5_1] == q->n_q5_1 &&
                          st.n_by_type[VKF_DTYPE_IQ4_NL] == q->n_iq4_nl &&
                          st.n_by_type[VKF_DTYPE_F32] == 6 && st.n_fallback == q->n_fallback,
                      "%s: Q8_0 %d Q5_0 %d Q5_1 %d IQ4_NL %d F32 %d, %d fallbacks", q->type,
                      st.n_by_type[VKF_DTYPE_Q8_0], st.n_by_type[VKF_DTYPE_Q5_0],
                      st.n_by_type[VKF_DTYPE_Q5_1], st.n_by_type[VKF_DTYPE_IQ4_NL],
                      st.n_by_type[VKF_DTYPE_F32], st.n_fallback);
            if (!eval_logits(ctx, out, cpu, &n_vocab)) continue;
            double mx, rms;
            diff(cpu, f32, (size_t)N_TOK * nv, &mx, &rms);
            printf("%-7s cpu vs f32: max|d| %.3e rms %.3e\n", q->type, mx, rms);
            VKT_CHECK(mx <= q->max_vs_f32 && rms <= q->rms_vs_f32, "%s vs F32: max %.3e rms %.3e",
                      q->type, mx, rms);
            if (vk && eval_logits(vk, out, gpu, &n_vocab)) {
                diff(gpu, cpu, (size_t)N_TOK * nv, &mx, &rms);
                printf("%-7s vulkan vs cpu: max|d| %.3e rms %.3e\n", q->type, mx, rms);
                /* same blocks, float activations on both: f32 accumulation order only
                 * (measured 4e-6..6e-6), far below one quantization step (~1e-2) */
                VKT_CHECK(mx <= 1e-4, "%s: vulkan vs cpu max %.3e", q->type, mx);
            }
            remove(out);
        }
    }
    vkf_context_free(vk);
    vkf_context_free(ctx);
    free(f32);
    free(cpu);
    free(gpu);
    rmdir(tmpdir);
    return vkt_finish();
}
