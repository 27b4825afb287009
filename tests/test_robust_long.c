/* Long runs keep memory flat: 20,000 tokens (VKT_LONG_TOKENS; 2,000 under sanitizers) from
 * llama-tiny-q4_0 on the Vulkan device (3,000 on the CPU when VKF_TEST_NO_VULKAN=1 and there is
 * no device), in a session of 128 tokens (VKT_LONG_CTX) refilled with the last 16 tokens
 * whenever it fills (vkf_session_reset) or the model ends a sequence; temperature 0.8.
 * Memory is read after the second refill (every graph shape then exists) and at the end: the
 * bytes the context holds on its backend must be equal, the process RSS may not grow by more
 * than 8 MiB (lavapipe's device memory is host memory, so on lavapipe RSS also covers the
 * device), no file descriptor may leak, and no graph may be recorded again. The figures are
 * printed for the report. Label "long" (about a minute on lavapipe with 2 cores). */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/vulkan/vk_backend.h"
#include "robust/robust_util.h"
#include "testutil.h"
#include "vkformer.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Vulkan counters with the counting shim out of the way (the stats call checks the table). */
static vkf_vk_stats vk_stats(vkf_context *ctx, rb_counter *c) {
    const vkf_backend_i *cur = ctx->be->i;
    ctx->be->i = c->inner;
    vkf_vk_stats s = vkf_backend_vulkan_stats(ctx->be);
    ctx->be->i = cur;
    return s;
}

/* ------------------------------------------------------------------ long generation */

typedef struct ring {
    int32_t last[16]; /* the last 16 tokens, oldest first once full */
    int n;
    int64_t total;
} ring;

static int on_token(void *user, int32_t token, const char *piece, size_t len) {
    (void)piece;
    (void)len;
    ring *r = user;
    if (r->n == 16) {
        memmove(r->last, r->last + 1, 15 * sizeof *r->last);
        r->n = 15;
    }
    r->last[r->n++] = token;
    r->total++;
    return 0;
}

static void test_long_generation(vkf_backend_kind kind, int64_t n_tokens) {
    const char *label = kind == VKF_BACKEND_VULKAN ? "vulkan" : "cpu";
    vkf_context_params cp = {.backend = kind};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (!ctx) return;
    rb_counter cnt;
    rb_counter_install(ctx, &cnt);
    vkf_model_params mp = {.path = vkt_fixture("llama-tiny/llama-tiny-q4_0.gguf")};
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    const char *ce = getenv("VKT_LONG_CTX");
    vkf_session_params sp = {.n_ctx = ce && *ce ? atoi(ce) : 128};
    if (m) VKT_OK(vkf_session_create(m, &sp, &s));
    if (!s) {
        vkf_model_free(m);
        rb_counter_remove(ctx, &cnt);
        vkf_context_free(ctx);
        return;
    }
    int32_t prompt[64];
    int32_t n_prompt = 0;
    VKT_OK(vkf_model_tokenize(m, "In the beginning God created the heaven and the earth.",
                              VKF_TOKENIZE_ADD_SPECIAL, prompt, 64, &n_prompt));
    vkf_sampler_params smp = {.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 1234};
    ring r = {{0}, 0, 0};
    long rss0 = 0, rss_peak = 0;
    int64_t bytes0 = -1;
    int fds0 = -1, refills = 0, eos = 0;
    vkf_vk_stats st0 = {0};
    double t0 = now_s();
    vkf_status rc = VKF_OK;
    while (r.total < n_tokens && rc == VKF_OK) {
        const int32_t *p = prompt;
        int32_t np = n_prompt;
        if (r.total > 0) { /* refill: the last 16 tokens */
            p = r.last;
            np = r.n;
        }
        vkf_generate_stats gs;
        rc = vkf_generate(s, p, np, (int32_t)(n_tokens - r.total), &smp, on_token, &r, &gs);
        if (rc == VKF_ERROR_CONTEXT_FULL || gs.stop == VKF_STOP_EOS) {
            eos += gs.stop == VKF_STOP_EOS;
            rc = VKF_OK;
            vkf_session_reset(s);
            refills++;
            smp.seed++; /* a new stream, so an EOS is not re-sampled forever */
        }
        if (refills == 2 && bytes0 < 0) { /* every graph shape exists now (prompt, refill, step) */
            rss0 = rb_rss_kib();
            bytes0 = cnt.live_bytes;
            fds0 = count_fds();
            if (kind == VKF_BACKEND_VULKAN) st0 = vk_stats(ctx, &cnt);
        }
        long rss = rb_rss_kib();
        if (rss > rss_peak) rss_peak = rss;
    }
    double dt = now_s() - t0;
    if (bytes0 < 0) { /* fewer than two refills (VKT_LONG_TOKENS small): nothing to compare */
        rss0 = rb_rss_kib();
        bytes0 = cnt.live_bytes;
        fds0 = count_fds();
        if (kind == VKF_BACKEND_VULKAN) st0 = vk_stats(ctx, &cnt);
    }
    VKT_CHECK(rc == VKF_OK, "%s: generation failed after %lld tokens: %s", label,
              (long long)r.total, vkf_last_error());
    long rss1 = rb_rss_kib();
    int64_t bytes1 = cnt.live_bytes;
    int fds1 = count_fds();
    printf("  %s: %lld tokens in %.1f s (%.0f tokens/s), %d refills (%d at EOS)\n", label,
           (long long)r.total, dt, (double)r.total / dt, refills, eos);
    printf("  %s: RSS %ld KiB after the second refill, %ld KiB at the end (peak %ld, %+ld KiB); "
           "backend bytes %lld -> %lld "
           "(peak %lld); fds %d -> %d\n",
           label, rss0, rss1, rss_peak, rss1 - rss0, (long long)bytes0, (long long)bytes1,
           (long long)cnt.peak_bytes, fds0, fds1);
    if (kind == VKF_BACKEND_VULKAN) {
        vkf_vk_stats st1 = vk_stats(ctx, &cnt);
        printf("  %s: %llu submissions, %llu recordings (%llu after the second refill), %llu "
               "pipelines\n",
               label, (unsigned long long)st1.submits, (unsigned long long)st1.recordings,
               (unsigned long long)(st1.recordings - st0.recordings),
               (unsigned long long)st1.pipelines);
        VKT_CHECK(st1.recordings == st0.recordings,
                  "%s: graphs re-recorded in steady state (%llu -> %llu)", label,
                  (unsigned long long)st0.recordings, (unsigned long long)st1.recordings);
    }
    VKT_CHECK(r.total >= n_tokens, "%s: %lld of %lld tokens", label, (long long)r.total,
              (long long)n_tokens);
    VKT_CHECK(bytes1 == bytes0, "%s: backend bytes grew from %lld to %lld", label,
              (long long)bytes0, (long long)bytes1);
    if (!rb_asan()) /* ASan's quarantine keeps freed memory resident */
        VKT_CHECK(rss1 - rss0 < 8192, "%s: RSS grew by %ld KiB", label, rss1 - rss0);
    VKT_CHECK(fds1 == fds0, "%s: file descriptors %d -> %d", label, fds0, fds1);
    vkf_session_free(s);
    vkf_model_free(m);
    VKT_CHECK(cnt.live_bytes == 0 && cnt.unknown_frees == 0,
              "%s: %lld backend bytes left after freeing", label, (long long)cnt.live_bytes);
    rb_counter_remove(ctx, &cnt);
    vkf_context_free(ctx);
}

int main(void) {
    if (!vkt_need_fixtures("llama-tiny")) return vkt_finish();
    int vulkan = rb_has_vulkan();
    const char *env = getenv("VKT_LONG_TOKENS");
    int64_t n_tokens = env && *env ? atoll(env) : 20000;
    if ((rb_asan() || rb_valgrind()) && !(env && *env))
        n_tokens = 2000; /* the same paths, at sanitizer speed */
    if (vulkan)
        test_long_generation(VKF_BACKEND_VULKAN, n_tokens);
    else
        test_long_generation(VKF_BACKEND_CPU, n_tokens < 3000 ? n_tokens : 3000);
    return vkt_finish();
}
