#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/args.h"

int vkf_cmd_devices(int argc, char **argv) {
    int json = 0;
    vkf_arg args[] = {{"--json", VKF_ARG_SET, &json, .help = "one JSON document"}, {0}};
    vkf_cmd_spec spec = {"devices", "[--json]",
                         "Lists the Vulkan devices, their limits and the features vkformer uses.",
                         args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    char *report = NULL;
    if (vkf_devices_report(json, &report) != VKF_OK) return vkf_cli_fail("devices");
    errno = 0;
    int bad = fputs(report, stdout) < 0 || fflush(stdout) != 0;
    free(report);
    return bad ? vkf_cli_stdout_failed("devices", errno) : 0;
}
