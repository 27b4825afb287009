/* `vkformer tune`: times the matmul variants on a Vulkan device and caches the fastest per
 * shape class and weight type (vkf_backend_vulkan_tune); later runs on the same device and
 * driver use them instead of the built-in tuning table. */
#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "cli/args.h"
#include "cli/cli.h"

static void vkf_tune_log(void *user, const char *line) {
    (void)user;
    printf("  %s\n", line);
    fflush(stdout);
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
    vkf_backend *be = NULL;
    if (vkf_backend_vulkan_create(device, validate, &be) != VKF_OK) return vkf_cli_fail("tune");
    const vkf_vk_caps *c = vkf_backend_vulkan_caps(be);
    printf("tuning matmul on %s (%s %s)%s\n", c->name, c->driver_name, c->driver_info,
           quick ? ", quick" : "");
    char path[1200] = "";
    vkf_status st = vkf_backend_vulkan_tune(be, quick, vkf_tune_log, NULL, path, sizeof path);
    vkf_backend_free(be);
    if (st != VKF_OK) return vkf_cli_fail("tune");
    printf("saved %s\n", path);
    return 0;
}
