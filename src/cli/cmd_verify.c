/* vkformer verify FIXTURE_DIR: runs a shared fixture directory against the engine. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "frontend/args.h"

static void print_case(void *user, const vkf_verify_case *c) {
    (void)user;
    printf("%-4s %-34s max|d| %.3e (<= %.2g)", c->pass ? "PASS" : "FAIL", c->name, c->max_abs,
           c->tol_abs);
    if (c->enc_max_abs >= 0) printf(" enc %.3e", c->enc_max_abs);
    printf(" nmse %.2e rms %.2e", c->nmse, c->rms);
    if (c->tol_rms > 0) printf(" (<= %.2g)", c->tol_rms);
    if (c->tokens_match >= 0) printf(" tokens %s", c->tokens_match ? "match" : "DIFFER");
    printf(" argmax %d/%d", c->argmax_checked - c->argmax_mismatch, c->argmax_checked);
    printf(" greedy %s%s", c->greedy_match ? "match" : "DIFFER",
           c->greedy_required ? "" : " (not required)");
    printf(" %.2fs\n", c->seconds);
    fflush(stdout);
}

int vkf_cmd_verify(int argc, char **argv) {
    vkf_context_params cp = {0};
    const char *dir = NULL, *only = NULL, *target = NULL;
    int ggml = 0;
    vkf_arg args[] = {
        {"--case", VKF_ARG_STR, &only, .metavar = "SUBSTRING",
         .help = "only the cases whose name contains it"},
        {"--ggml-activations", VKF_ARG_SET, &ggml,
         .help = "the CPU reference with llama.cpp's arithmetic (activations quantized as "
                 "ggml does, integer dot products): logits equal to llama.cpp's"},
        {"--ggml-target", VKF_ARG_STR, &target, .metavar = "BUILD",
         .help = "the llama.cpp build --ggml-activations reproduces: avx2 (0c1e570, the "
                 "default), avx512-2026 (dc02e1f), avx512-2025 (c392e50)"},
        VKF_ARGS_BACKEND(&cp),
        VKF_ARGS_SPLIT(&cp),
        {0}};
    vkf_cmd_spec spec = {
        "verify",
        "FIXTURE_DIR [--case SUBSTRING] [-dev N | --cpu | --ggml-activations [--ggml-target B]]",
        "Runs the cases of a fixture directory (cases.json or a model directory's expected.json) "
        "against the engine;\nexits 1 if a case fails.",
        args,
        .positional = "FIXTURE_DIR",
        .pos_dst = &dir,
        .pos_required = 1};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (ggml || target) {
        cp.ggml_activations = VKF_GGML_AVX2;
        for (int t = 1; target && vkf_ggml_target_name(t); t++)
            if (strcmp(vkf_ggml_target_name(t), target) == 0) cp.ggml_activations = t;
        if (target && strcmp(vkf_ggml_target_name(cp.ggml_activations), target) != 0) {
            fprintf(stderr,
                    "vkformer: verify: --ggml-target: expected avx2, avx512-2026 or "
                    "avx512-2025, got '%s'\n",
                    target);
            return 2;
        }
        cp.backend = VKF_BACKEND_CPU;
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "vkformer: verify: %s: no such directory\n", dir);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "vkformer: verify: %s: not a directory (verify takes a fixture directory)\n", dir);
        return 1;
    }
    vkf_context *ctx;
    if (vkf_cli_context(&cp, &ctx) != VKF_OK) return vkf_cli_fail("verify");
    if (cp.ggml_activations)
        printf("verify %s on %s (ggml activations, %s: %s)\n", dir, vkf_context_device_name(ctx),
               vkf_ggml_target_name(cp.ggml_activations),
               vkf_ggml_target_build(cp.ggml_activations));
    else
        printf("verify %s on %s\n", dir, vkf_context_device_name(ctx));
    vkf_verify_summary sum;
    vkf_status s = vkf_verify(ctx, dir, only, print_case, NULL, &sum);
    vkf_context_free(ctx);
    if (s != VKF_OK) return vkf_cli_fail("verify");
    if (sum.n_cases == 0) {
        fprintf(stderr, "vkformer: verify: no case matched\n");
        return 1;
    }
    printf("verify: %d passed, %d failed (worst max|d| %.3e)\n", sum.n_cases - sum.n_failed,
           sum.n_failed, sum.worst_abs);
    return sum.n_failed ? 1 : 0;
}
