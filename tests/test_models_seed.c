/* The encoder-decoder Transformer against the PyTorch seed-transformer fixtures, on the CPU and
 * on Vulkan, through vkf_verify (the code behind `vkformer verify`); plus load errors on
 * corrupted copies of the tiny checkpoint. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "vkformer.h"

/* the README's bound for a careful float32 engine; vkf_verify applies the same one */
#define SEED_TOL 2e-5

static void check_case(void *user, const vkf_verify_case *c) {
    const char *backend = user;
    printf("  %s %-12s logprobs max|d| %.3e  encoder_out max|d| %.3e  greedy %s  %.2fs\n", backend,
           c->name, c->max_abs, c->enc_max_abs, c->greedy_match ? "match" : "DIFFER", c->seconds);
    VKT_CHECK(c->pass, "%s %s failed", backend, c->name);
    VKT_CHECK(c->max_abs <= SEED_TOL, "%s %s: logprobs max|d| %.3e", backend, c->name, c->max_abs);
    VKT_CHECK(c->enc_max_abs >= 0 && c->enc_max_abs <= SEED_TOL, "%s %s: encoder_out max|d| %.3e",
              backend, c->name, c->enc_max_abs);
    VKT_CHECK(c->greedy_required && c->greedy_match, "%s %s: greedy decode differs", backend,
              c->name);
    VKT_CHECK(c->argmax_checked > 0 && c->argmax_mismatch == 0, "%s %s: argmax %d/%d", backend,
              c->name, c->argmax_checked - c->argmax_mismatch, c->argmax_checked);
}

static void run_fixture(vkf_context *ctx, const char *backend, const char *fixture,
                        int want_cases) {
    vkf_verify_summary sum;
    VKT_OK(vkf_verify(ctx, vkt_fixture(fixture), NULL, check_case, (void *)backend, &sum));
    VKT_CHECK(sum.n_cases == want_cases && sum.n_failed == 0, "%s %s: %d cases, %d failed", backend,
              fixture, sum.n_cases, sum.n_failed);
}

/* ------------------------------------------------------------------ corrupted checkpoints */

static int write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Copies seed-transformer-tiny into dir with `from` replaced by `to` (same length) in the
 * safetensors header, and config.json with `cfrom` -> `cto` (may be NULL). */
static int make_copy(const char *dir, const char *from, const char *to, const char *cfrom,
                     const char *cto) {
    size_t n, cn;
    char *st = vkt_read_file(vkt_fixture("seed-transformer-tiny/model.safetensors"), &n);
    char *cfg = vkt_read_file(vkt_fixture("seed-transformer-tiny/config.json"), &cn);
    int ok = st && cfg;
    if (ok && from) {
        uint64_t hl;
        memcpy(&hl, st, 8);
        char *hit = NULL;
        for (size_t i = 8; i + strlen(from) <= 8 + hl; i++)
            if (memcmp(st + i, from, strlen(from)) == 0) {
                hit = st + i;
                break;
            }
        ok = hit && strlen(from) == strlen(to);
        if (ok) memcpy(hit, to, strlen(to));
    }
    if (ok && cfrom) {
        char *hit = strstr(cfg, cfrom);
        ok = hit && strlen(cfrom) == strlen(cto);
        if (ok) memcpy(hit, cto, strlen(cto));
    }
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    ok = ok && write_file(p, st, n);
    snprintf(p, sizeof p, "%s/config.json", dir);
    ok = ok && write_file(p, cfg, cn);
    free(st);
    free(cfg);
    return ok;
}

static void expect_load_error(vkf_context *ctx, const char *dir, vkf_status want, const char *what,
                              const char *must1, const char *must2) {
    vkf_model_params mp = {.path = dir};
    vkf_model *m = NULL;
    vkf_status s = vkf_model_load(ctx, &mp, &m);
    const char *msg = vkf_last_error();
    printf("  %s: %s: %s\n", what, vkf_status_name(s), msg);
    VKT_CHECK(s == want, "%s: expected %s, got %s (%s)", what, vkf_status_name(want),
              vkf_status_name(s), msg);
    VKT_CHECK(strstr(msg, must1) != NULL, "%s: message does not name \"%s\": %s", what, must1, msg);
    if (must2)
        VKT_CHECK(strstr(msg, must2) != NULL, "%s: message does not say \"%s\": %s", what, must2,
                  msg);
    if (s == VKF_OK) vkf_model_free(m);
}

static void test_load_errors(vkf_context *ctx) {
    char dir[] = "/tmp/vkf_seed_XXXXXX";
    VKT_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    char p[512];
    /* a missing tensor: "generator.bias" renamed in the header */
    VKT_CHECK(make_copy(dir, "\"generator.bias\"", "\"generator.bxas\"", NULL, NULL),
              "copy failed");
    expect_load_error(ctx, dir, VKF_ERROR_FORMAT, "missing tensor", "generator.bias", "missing");
    /* a wrong shape: linear1.weight [128, 64] stored as [64, 128] (same bytes) */
    VKT_CHECK(make_copy(dir, "\"shape\":[128,64]", "\"shape\":[64,128]", NULL, NULL) ||
                  make_copy(dir, "\"shape\": [128, 64]", "\"shape\": [64, 128]", NULL, NULL),
              "copy failed");
    expect_load_error(ctx, dir, VKF_ERROR_FORMAT, "wrong shape", "linear1.weight", "[64, 128]");
    /* a config whose heads do not divide d_model */
    VKT_CHECK(make_copy(dir, NULL, NULL, "\"nhead\": 4", "\"nhead\": 5"), "copy failed");
    expect_load_error(ctx, dir, VKF_ERROR_FORMAT, "bad nhead", "nhead", NULL);
    /* an unknown architecture */
    VKT_CHECK(make_copy(dir, NULL, NULL, "\"transformer\"", "\"transfarmer\""), "copy failed");
    expect_load_error(ctx, dir, VKF_ERROR_UNSUPPORTED, "unknown architecture", "transfarmer", NULL);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    rmdir(dir);
    /* a path that does not exist */
    expect_load_error(ctx, "/nonexistent/model", VKF_ERROR_IO, "missing path", "/nonexistent/model",
                      NULL);
}

/* ------------------------------------------------------------------ main */

static void per_backend(vkf_context *ctx, const char *backend, void *user) {
    run_fixture(ctx, backend, "seed-transformer-tiny", 3);
    run_fixture(ctx, backend, "seed-transformer-base", 1);
    if (strcmp(backend, "cpu") == 0) test_load_errors(ctx);
}

int main(void) {
    if (!vkt_need_fixtures("seed-transformer-tiny")) return vkt_finish();
    vkt_for_each_backend(per_backend, NULL);
    return vkt_finish();
}
