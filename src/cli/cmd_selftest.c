#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void print_line(void *user, const char *line) {
    int *verbose = user;
    if (*verbose || strncmp(line, "FAIL", 4) == 0) puts(line);
}

int vkf_cmd_selftest(int argc, char **argv) {
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN};
    int quick = 0, verbose = 0;
    for (int i = 1; i < argc; i++) {
        int r = vkf_cli_backend_opt(argc, argv, &i, &cp);
        if (r < 0) {
            fprintf(stderr, "vkformer selftest: %s needs a value\n", argv[i]);
            return 2;
        }
        if (r) continue;
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
            verbose = 1;
        } else {
            fprintf(stderr, "vkformer selftest: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    vkf_context *ctx;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) return vkf_cli_fail("selftest");
    printf("selftest on %s: every op against the CPU reference\n", vkf_context_device_name(ctx));
    vkf_selftest_result res;
    vkf_status s = vkf_selftest(ctx, quick, print_line, &verbose, &res);
    vkf_context_free(ctx);
    if (s != VKF_OK) return vkf_cli_fail("selftest");
    printf("selftest: %d passed, %d failed\n", res.n_cases - res.n_failed, res.n_failed);
    return res.n_failed ? 1 : 0;
}
