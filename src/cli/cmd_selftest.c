#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/args.h"

static void print_line(void *user, const char *line) {
    int *verbose = user;
    if (*verbose || strncmp(line, "FAIL", 4) == 0) puts(line);
}

int vkf_cmd_selftest(int argc, char **argv) {
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN};
    int quick = 0, verbose = 0;
    vkf_arg args[] = {
        {"--quick", VKF_ARG_SET, &quick, .help = "fewer shapes (seconds instead of a minute)"},
        {"-v|--verbose", VKF_ARG_SET, &verbose, .help = "one line per case, not only failures"},
        VKF_ARGS_BACKEND(&cp),
        {0}};
    vkf_cmd_spec spec = {
        "selftest", "[--quick] [-v] [-dev N|NAME | --cpu]",
        "Runs every op, dtype and shape class on a device against the CPU reference; exits 1 if a "
        "case fails.",
        args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
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
