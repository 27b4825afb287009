/* `vkformer tune`: times the matmul variants on a Vulkan device and caches the fastest per
 * shape class and weight type (vkf_tune); later runs on the same device and driver use them
 * instead of the built-in tuning table. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "frontend/args.h"

/* vk_tune.c times 3 shape classes (M = 1, 4, 64) x 4 weight types (F32, F16, Q8_0, Q4_0) and
 * logs one line per pair: the progress and the estimate count those lines. */
#define VKF_TUNE_STEPS 12

typedef struct tune_progress {
    int done;
    double t0;
} tune_progress;

/* Ctrl-C: the classes measured so far are already saved (vk_tune.c writes after each one) */
static void on_sigint(int sig) {
    (void)sig;
    static const char msg[] =
        "\nvkformer: tune: interrupted; the classes measured so far are saved\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(130);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void vkf_tune_log(void *user, const char *line) {
    tune_progress *p = user;
    if (isatty(STDERR_FILENO)) fprintf(stderr, "\r\033[K");
    printf("  %s\n", line);
    fflush(stdout);
    p->done++;
    if (isatty(STDERR_FILENO) &&
        p->done < VKF_TUNE_STEPS) { /* a bar with the time left, on a terminal */
        double el = now_s() - p->t0, left = el / p->done * (VKF_TUNE_STEPS - p->done);
        char bar[25];
        for (int i = 0; i < 24; i++)
            bar[i] = i < p->done * 24 / VKF_TUNE_STEPS ? '#' : '.';
        bar[24] = 0;
        fprintf(stderr, "tune [%s] %d/%d, about %.0f s left", bar, p->done, VKF_TUNE_STEPS, left);
        fflush(stderr);
    }
}

int vkf_cmd_tune(int argc, char **argv) {
    const char *device = NULL;
    int quick = 0, validate = 0;
    vkf_arg args[] = {{"-dev|--device", VKF_ARG_STR, &device, .metavar = "N|NAME",
                       .help = "Vulkan device: index or name substring"},
                      {"--quick", VKF_ARG_SET, &quick, .help = "fewer shapes and repetitions"},
                      {"--validate", VKF_ARG_SET, &validate, .help = "Khronos validation layer on"},
                      {0}};
    vkf_cmd_spec spec = {
        "tune", "[-dev N|NAME] [--quick]",
        "Times the matmul kernel variants on the device and caches the fastest per shape class and "
        "weight type\nin the cache directory (VKF_CACHE_DIR); VKF_NO_TUNE=1 ignores the cache.",
        args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN, .device = device, .validate = validate};
    vkf_context *ctx = NULL;
    vkf_device_info di;
    if (vkf_context_create(&cp, &ctx) != VKF_OK || vkf_context_device_info(ctx, &di) != VKF_OK) {
        vkf_context_free(ctx);
        return vkf_cli_fail("tune");
    }
    printf("tuning matmul on %s (%s)%s\n", di.name, di.driver, quick ? ", quick" : "");
    char path[1200] = "";
    tune_progress prog = {0, now_s()};
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "tune: timing the first of %d shape classes and weight types...",
                VKF_TUNE_STEPS);
    vkf_status st = vkf_tune(ctx, quick, vkf_tune_log, &prog, path, sizeof path);
    if (isatty(STDERR_FILENO)) fprintf(stderr, "\r\033[K");
    vkf_context_free(ctx);
    if (st != VKF_OK) return vkf_cli_fail("tune");
    printf("saved %s\n", path);
    return 0;
}
