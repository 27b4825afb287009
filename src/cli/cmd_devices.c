#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int vkf_cmd_devices(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "vkformer devices: unknown option '%s' (usage: vkformer devices [--json])\n", argv[i]);
            return 2;
        }
    }
    char *report = NULL;
    if (vkf_devices_report(json, &report) != VKF_OK) return vkf_cli_fail("devices");
    fputs(report, stdout);
    free(report);
    return 0;
}
