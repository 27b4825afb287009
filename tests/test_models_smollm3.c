/* smollm3, the architecture added as one descriptor file (src/model/arch/smollm3.c), against
 * llama.cpp: tests/data/smollm3 (tools/make_smollm3_fixture.py: a tiny random-weight SmolLM3 GGUF
 * and llama.cpp 0c1e570's logits for two prompts) through vkf_verify on the CPU and on Vulkan;
 * the ggml-activation mode's bit-identical run of it is in test_ggml_mode, the HF directory's in
 * test_models_arch_hf.
 *
 * Bound: 5e-5 on every row. The model is F32: exact float64 math differs from llama.cpp by f32
 * rounding only (the engine's CPU path measured 8e-6, Vulkan 6e-6), and the bound is 15000x
 * below what ignoring the NoPE layer costs (the same weights with RoPE on every layer: 0.75 max,
 * 0.13 rms on fox; tests/data/smollm3/README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vkformer.h"

#define DIR VKF_SOURCE_DIR "/tests/data/smollm3"

static int n_cases;

static void check_case(void *user, const vkf_verify_case *c) {
    const char *backend = user;
    n_cases++;
    printf("  %s %-18s max|d| %.3e rms %.2e argmax %d/%d greedy %s\n", backend, c->name, c->max_abs,
           c->rms, c->argmax_checked - c->argmax_mismatch, c->argmax_checked,
           c->greedy_match ? "match" : "differs");
    VKT_CHECK(c->pass && c->max_abs <= 5e-5, "%s %s: max|d| %.3e", backend, c->name, c->max_abs);
    VKT_CHECK(c->tokens_match == 1, "%s %s: tokenization differs from llama.cpp's", backend,
              c->name);
    VKT_CHECK(c->argmax_mismatch == 0 && c->greedy_match, "%s %s: argmax %d/%d, greedy %s", backend,
              c->name, c->argmax_checked - c->argmax_mismatch, c->argmax_checked,
              c->greedy_match ? "match" : "differs");
}

static void per_backend(vkf_context *ctx, const char *backend, void *user) {
    (void)user;
    vkf_verify_summary sum;
    VKT_OK(vkf_verify(ctx, DIR, NULL, check_case, (void *)backend, &sum));
    VKT_CHECK(sum.n_cases == 2 && sum.n_failed == 0, "%s: %d cases, %d failed", backend,
              sum.n_cases, sum.n_failed);
    if (strcmp(backend, "cpu") != 0) return;
    /* info names the architecture and its NoPE layers */
    vkf_model_params mp = {.path = DIR "/smollm3-f32.gguf"};
    vkf_model *m = NULL;
    char *txt = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (m) VKT_OK(vkf_model_info(m, 0, &txt));
    VKT_CHECK(txt && strstr(txt, "smollm3") && strstr(txt, "NoPE: layers 3, 7"),
              "info lacks the architecture or its NoPE layers:\n%s", txt ? txt : "");
    free(txt);
    vkf_model_free(m);
}

int main(void) {
    vkt_for_each_backend(per_backend, NULL);
    VKT_CHECK(n_cases >= 2, "ran %d cases", n_cases);
    return vkt_finish();
}
