/* Create / destroy cycles leave nothing behind: 1,000 x (CPU context, kjv-gpt model, session, a
 * 3-token eval, free) and 25 x the same on the Vulkan device (100 and 8 under sanitizers;
 * VKT_CPU_CYCLES, VKT_VK_CYCLES). Checked: no backend bytes left at the end of each cycle, no
 * file descriptor leak, RSS flat between the early and the late cycles, and the logits of every
 * cycle equal to the first cycle's. The figures are printed for the report. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* ------------------------------------------------------------------ create / destroy cycles */

static const int32_t k_prompt[3] = {1, 24, 54}; /* "In" */

/* One cycle; logits of the 3 positions into out. Returns the backend bytes left before the
 * context is freed (must be 0). */
static int64_t one_cycle(vkf_backend_kind kind, float *out, vkf_status *st) {
    vkf_context_params cp = {.backend = kind};
    vkf_context *ctx = NULL;
    *st = vkf_context_create(&cp, &ctx);
    if (*st != VKF_OK) return -1;
    rb_counter cnt;
    rb_counter_install(ctx, &cnt);
    vkf_model_params mp = {.path = rb_repo("models/kjv-gpt")};
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    *st = vkf_model_load(ctx, &mp, &m);
    if (*st == VKF_OK) *st = vkf_session_create(m, NULL, &s);
    if (*st == VKF_OK) *st = vkf_session_eval(s, k_prompt, 3, out);
    vkf_session_free(s);
    vkf_model_free(m);
    int64_t left = cnt.live_bytes + cnt.unknown_frees;
    rb_counter_remove(ctx, &cnt);
    vkf_context_free(ctx);
    return left;
}

static void test_cycles(vkf_backend_kind kind, int n) {
    const char *label = kind == VKF_BACKEND_VULKAN ? "vulkan" : "cpu";
    if (n < 2) return;
    /* the validation layer keeps ~30 KiB per instance it has seen (measured: +1.4 MiB over 48
     * cycles with it, +16 KiB without): it would hide a leak of ours, so it is off here */
    char *val = getenv("VKF_VALIDATE") ? strdup(getenv("VKF_VALIDATE")) : NULL;
    unsetenv("VKF_VALIDATE");
    float first[3 * 67], cur[3 * 67];
    /* the first Vulkan cycles grow RSS by ~1 MiB each until ~8 cycles (malloc arenas of the
     * driver's threads), then it stays flat within tens of KiB: measure after that */
    int warm = kind == VKF_BACKEND_VULKAN ? (n >= 25 ? 10 : n / 2) : (n / 5 > 2 ? n / 5 : 2);
    long rss_warm = 0, heap_warm = 0;
    int fds_warm = 0, bad_left = 0, bad_logits = 0, fails = 0;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        vkf_status st;
        int64_t left = one_cycle(kind, i == 0 ? first : cur, &st);
        if (st != VKF_OK) {
            if (!fails++) VKT_CHECK(0, "%s cycle %d: %s", label, i, vkf_last_error());
            continue;
        }
        bad_left += left != 0;
        if (getenv("VKT_TRACE"))
            printf("    cycle %d: RSS %ld KiB, heap %ld KiB\n", i, rb_rss_kib(), rb_heap_kib());
        if (i > 0 && memcmp(first, cur, sizeof cur) != 0) bad_logits++;
        if (i + 1 == warm) {
            rss_warm = rb_rss_kib();
            heap_warm = rb_heap_kib();
            fds_warm = count_fds();
        }
    }
    double dt = now_s() - t0;
    long rss_end = rb_rss_kib(), heap_end = rb_heap_kib();
    int fds_end = count_fds();
    printf("  %s: %d cycles in %.1f s; after cycle %d / %d: RSS %ld / %ld KiB (%+ld), malloc in "
           "use %ld / %ld KiB (%+ld); "
           "fds %d -> %d\n",
           label, n, dt, warm, n, rss_warm, rss_end, rss_end - rss_warm, heap_warm, heap_end,
           heap_end - heap_warm, fds_warm, fds_end);
    VKT_CHECK(fails == 0, "%s: %d cycles failed", label, fails);
    VKT_CHECK(bad_left == 0, "%s: %d cycles left backend buffers behind", label, bad_left);
    VKT_CHECK(bad_logits == 0, "%s: %d cycles computed different logits", label, bad_logits);
    VKT_CHECK(fds_end == fds_warm, "%s: file descriptors %d -> %d", label, fds_warm, fds_end);
    /* the bytes in use must not grow: a leak of one small buffer per cycle would show; RSS
     * also moves with the arenas' high-water mark (1 MiB steps on Vulkan), so it only gets a
     * loose bound that catches a leak of the model's 3.7 MB file or its tables */
    if (heap_warm > 0 && heap_end > 0)
        VKT_CHECK(heap_end - heap_warm < 256, "%s: malloc in use grew by %ld KiB over %d cycles",
                  label, heap_end - heap_warm, n - warm);
    /* ASan's quarantine keeps freed memory resident (LeakSanitizer checks leaks there) */
    if (!rb_asan())
        VKT_CHECK(rss_end - rss_warm < 8192, "%s: RSS grew by %ld KiB over %d cycles", label,
                  rss_end - rss_warm, n - warm);
    if (val) {
        setenv("VKF_VALIDATE", val, 1);
        free(val);
    }
}

int main(void) {
    int vulkan = rb_has_vulkan();
    int sanitized = rb_asan() || rb_valgrind();
    const char *cc = getenv("VKT_CPU_CYCLES"), *vc = getenv("VKT_VK_CYCLES");
    test_cycles(VKF_BACKEND_CPU, cc && *cc ? atoi(cc) : sanitized ? 100 : 1000);
    if (vulkan) test_cycles(VKF_BACKEND_VULKAN, vc && *vc ? atoi(vc) : sanitized ? 8 : 25);
    return vkt_finish();
}
