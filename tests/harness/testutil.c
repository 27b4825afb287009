#include "testutil.h"

#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern char **environ;

int vkt_passed, vkt_failed;

const char *vkt_fixture(const char *rel) {
    static char buf[4096];
    const char *root = getenv("VKF_FIXTURES");
    if (!root || !*root) root = VKF_FIXTURES;
    snprintf(buf, sizeof buf, "%s/%s", root, rel);
    return buf;
}

int vkt_need_fixtures(const char *sets) {
    int ok = 1;
    while (*sets) {
        size_t n = strcspn(sets, " ");
        char set[256];
        snprintf(set, sizeof set, "%.*s", (int)n, sets);
        sets += n + (sets[n] == ' ');
        if (!n) continue;
        struct stat st;
        const char *path = vkt_fixture(set);
        int have = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        VKT_CHECK(have,
                  "reference data missing: %s (VKF_FIXTURES; ./setup.sh test makes the sets with "
                  "tools/refs/make_all.py)",
                  path);
        ok &= have;
    }
    return ok;
}

void *vkt_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) {
        p[len] = 0;
        if (n) *n = (size_t)len;
    }
    return p;
}

void vkt_for_each_backend(void (*fn)(vkf_context *ctx, const char *backend, void *user),
                          void *user) {
    vkf_context *ctx;
    vkf_context_params cpu = {.backend = VKF_BACKEND_CPU};
    vkf_status s = vkf_context_create(&cpu, &ctx);
    VKT_CHECK(s == VKF_OK, "cpu context: %s", vkf_last_error());
    if (s == VKF_OK) {
        printf("cpu:\n");
        fn(ctx, "cpu", user);
        vkf_context_free(ctx);
    }
    vkf_context_params vk = {.backend = VKF_BACKEND_VULKAN};
    s = vkf_context_create(&vk, &ctx);
    const char *allow = getenv("VKF_TEST_NO_VULKAN");
    if (s != VKF_OK && allow && strcmp(allow, "1") == 0) {
        printf("SKIP (device): vulkan (VKF_TEST_NO_VULKAN=1): %s\n", vkf_last_error());
        return;
    }
    VKT_CHECK(s == VKF_OK,
              "no Vulkan context (set VKF_TEST_NO_VULKAN=1 on a machine without one): %s",
              vkf_last_error());
    if (s != VKF_OK) return;
    printf("vulkan (%s):\n", vkf_context_device_name(ctx));
    fn(ctx, "vulkan", user);
    vkf_context_free(ctx);
}

int vkt_finish(void) {
    printf("%d passed, %d failed\n", vkt_passed, vkt_failed);
    return vkt_failed ? 1 : 0;
}

int vkt_write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

int vkt_run(char **argv, const char *out_path, const char *err_path) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int st;
    if (waitpid(pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

double vkt_nmse(const float *a, const float *ref, size_t n, int *nonfinite) {
    double num = 0, den = 0;
    int nf = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(ref[i])) nf++;
        double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    if (nonfinite) *nonfinite = nf;
    return den > 0 ? num / den : num;
}
