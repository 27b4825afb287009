/* Every file of fixtures/llama-kq (one F32 llama quantized by llama.cpp's llama-quantize to 14
 * files, each a mix of Q2_K..Q6_K, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q8_0, MXFP4 per tensor, or
 * BF16; see its README) loads and matches llama.cpp's logits: every case on the CPU reference, the
 * fox prompt on Vulkan and on Vulkan in the mobile profile (no 8/16-bit storage: the 2-byte aligned
 * Q6_K, Q3_K and Q5_0 blocks read through 32-bit words). The Vulkan runs cover every type's
 * kernels; the second prompt adds nothing there but time (this test also runs under ASan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vkformer.h"

/* The bound per file type. llama.cpp's CPU backend multiplies these weights with quantized
 * activations (q8_0 / q8_1 for Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0, MXFP4; q8_K for the K-quants and
 * IQ4_XS) and integer dot products, vkformer with f32 activations, so the logits differ by
 * activation rounding, not accumulation order. Observed max|d| / rms (CPU and Vulkan agree to
 * 1e-5): Q4_1 0.056 / 0.012, Q5_0 0.051 / 0.012, Q5_1 0.053 / 0.012, IQ4_NL 0.055 / 0.012; Q2_K
 * 0.075, Q3_K_M 0.087, Q4_K_S 0.071, Q4_K_M 0.078, Q5_K_M 0.079, Q6_K 0.077, IQ4_XS 0.076, all rms
 * 0.016; MXFP4_MOE (every matrix Q8_0, the output too) 0.054 / 0.011, MXFP4 (every matrix, the
 * output too) 0.054 / 0.011; BF16 (bf16 activations: 8 significant bits where f16 keeps 11) 0.014 /
 * 0.0030. Every other file's output.weight is Q6_K (q8_K activations in
 * llama.cpp), which is why the 32-element types are not closer. The bounds leave about 1.5x margin;
 * the F32 source file is held to f32 rounding. */
static void bounds(const char *name, double *max_abs, double *rms) {
    static const struct {
        const char *tag;
        double max_abs, rms;
    } tab[] = {
        {"-f32/", 1e-4, 0},        {"-q4_1/", 0.085, 0.018},   {"-q5_0/", 0.085, 0.018},
        {"-q5_1/", 0.085, 0.018},  {"-iq4_nl/", 0.085, 0.018}, {"-mxfp4_moe/", 0.085, 0.018},
        {"-mxfp4/", 0.085, 0.018}, {"-bf16/", 0.021, 0.0045},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strstr(name, tab[i].tag)) {
            *max_abs = tab[i].max_abs;
            *rms = tab[i].rms;
            return;
        }
    *max_abs = 0.13; /* K-quant mixes and IQ4_XS */
    *rms = 0.025;
}

typedef struct seen {
    const char *backend;
    int n;
    char files[16][64];
    int n_files;
} seen;

static void check_case(void *user, const vkf_verify_case *c) {
    seen *s = user;
    double max_abs, rms;
    bounds(c->name, &max_abs, &rms);
    s->n++;
    printf("  %-7s %-24s max|d| %.3e (<= %.3g) rms %.2e (<= %.3g) argmax %d/%d %.2fs\n", s->backend,
           c->name, c->max_abs, max_abs, c->rms, rms, c->argmax_checked - c->argmax_mismatch,
           c->argmax_checked, c->seconds);
    VKT_CHECK(c->pass, "%s %s failed verify", s->backend, c->name);
    VKT_CHECK(c->max_abs <= max_abs, "%s %s: max|d| %.3e > %.3g", s->backend, c->name, c->max_abs,
              max_abs);
    if (rms > 0)
        VKT_CHECK(c->rms <= rms, "%s %s: rms %.3e > %.3g", s->backend, c->name, c->rms, rms);
    VKT_CHECK(c->tokens_match == 1, "%s %s: tokenization differs from the fixture", s->backend,
              c->name);
    VKT_CHECK(c->argmax_checked > 0 && c->argmax_mismatch == 0, "%s %s: argmax %d/%d", s->backend,
              c->name, c->argmax_checked - c->argmax_mismatch, c->argmax_checked);
    const char *slash = strchr(c->name, '/');
    size_t l = slash ? (size_t)(slash - c->name) : strlen(c->name);
    for (int i = 0; i < s->n_files; i++)
        if (strlen(s->files[i]) == l && strncmp(s->files[i], c->name, l) == 0) return;
    if (s->n_files < 16 && l < sizeof s->files[0]) {
        memcpy(s->files[s->n_files], c->name, l);
        s->files[s->n_files++][l] = 0;
    }
}

static void run(vkf_backend_kind bt, const char *label, const char *only) {
    vkf_context_params cp = {.backend = bt};
    vkf_context *ctx = NULL;
    vkf_status st = vkf_context_create(&cp, &ctx);
    if (st != VKF_OK && bt == VKF_BACKEND_VULKAN && getenv("VKF_TEST_NO_VULKAN")) return;
    VKT_CHECK(st == VKF_OK, "%s: context: %s", label, vkf_last_error());
    if (st != VKF_OK) return;
    seen s = {.backend = label};
    vkf_verify_summary sum;
    st = vkf_verify(ctx, vkt_fixture("llama-kq"), only, check_case, &s, &sum);
    VKT_CHECK(st == VKF_OK, "%s: verify: %s", label, vkf_last_error());
    /* the F32 source and the 14 files llama-quantize wrote, each with its cases */
    VKT_CHECK(s.n_files == 15, "%s: %d files verified, expected 15", label, s.n_files);
    VKT_CHECK(s.n == (only ? 15 : 30) && sum.n_failed == 0, "%s: %d cases, %d failed", label, s.n,
              sum.n_failed);
    vkf_context_free(ctx);
}

int main(void) {
    if (!vkt_need_fixtures("llama-kq")) return vkt_finish();
    run(VKF_BACKEND_CPU, "cpu", NULL);
    run(VKF_BACKEND_VULKAN, "vulkan", "/fox");
    setenv("VKF_DEVICE_PROFILE", "mobile", 1); /* read when a device is created */
    run(VKF_BACKEND_VULKAN, "mobile", "/fox");
    unsetenv("VKF_DEVICE_PROFILE");
    return vkt_finish();
}
