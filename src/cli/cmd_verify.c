/* vkformer verify FIXTURE_DIR: runs a shared fixture directory against the engine. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void print_case(void *user, const vkf_verify_case *c) {
    (void)user;
    printf("%-4s %-34s max|d| %.3e (<= %.2g)", c->pass ? "PASS" : "FAIL", c->name, c->max_abs, c->tol_abs);
    if (c->enc_max_abs >= 0) printf(" enc %.3e", c->enc_max_abs);
    printf(" nmse %.2e rms %.2e", c->nmse, c->rms);
    if (c->tol_rms > 0) printf(" (<= %.2g)", c->tol_rms);
    if (c->tokens_match >= 0) printf(" tokens %s", c->tokens_match ? "match" : "DIFFER");
    printf(" argmax %d/%d", c->argmax_checked - c->argmax_mismatch, c->argmax_checked);
    printf(" greedy %s%s", c->greedy_match ? "match" : "DIFFER", c->greedy_required ? "" : " (not required)");
    printf(" %.2fs\n", c->seconds);
    fflush(stdout);
}

int vkf_cmd_verify(int argc, char **argv) {
    vkf_context_params cp = {0};
    const char *dir = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        int r = vkf_cli_backend_opt(argc, argv, &i, &cp);
        if (r < 0) {
            fprintf(stderr, "vkformer verify: %s needs a value\n", argv[i]);
            return 2;
        }
        if (r) continue;
        if (strcmp(argv[i], "--ggml-activations") == 0) { /* llama.cpp's CPU arithmetic */
            cp.ggml_activations = 1;
            cp.backend = VKF_BACKEND_CPU;
            continue;
        }
        if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
            only = argv[++i];
            continue;
        }
        if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "usage: vkformer verify FIXTURE_DIR [--case SUBSTRING] [--device N | --cpu | --ggml-activations]\n");
            return 2;
        }
        dir = argv[i];
    }
    if (!dir) {
        fprintf(stderr, "usage: vkformer verify FIXTURE_DIR [--case SUBSTRING] [--device N | --cpu | --ggml-activations]\n");
        return 2;
    }
    vkf_context *ctx;
    if (vkf_cli_context(&cp, &ctx) != VKF_OK) return vkf_cli_fail("verify");
    printf("verify %s on %s%s\n", dir, vkf_context_device_name(ctx), cp.ggml_activations ? " (ggml activations)" : "");
    vkf_verify_summary sum;
    vkf_status s = vkf_verify(ctx, dir, only, print_case, NULL, &sum);
    vkf_context_free(ctx);
    if (s != VKF_OK) return vkf_cli_fail("verify");
    if (sum.n_cases == 0) {
        fprintf(stderr, "vkformer verify: no case matched\n");
        return 1;
    }
    printf("verify: %d passed, %d failed (worst max|d| %.3e)\n", sum.n_cases - sum.n_failed, sum.n_failed, sum.worst_abs);
    return sum.n_failed ? 1 : 0;
}
