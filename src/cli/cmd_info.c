/* vkformer info -m PATH [--json]: architecture, hyperparameters, parameters, dtypes, memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int vkf_cmd_info(int argc, char **argv) {
    /* the report needs no GPU: load on the CPU unless a device is asked for */
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_model_params mp = {0};
    int json = 0;
    for (int i = 1; i < argc; i++) {
        int r = vkf_cli_backend_opt(argc, argv, &i, &cp);
        if (r < 0) {
            fprintf(stderr, "vkformer info: %s needs a value\n", argv[i]);
            return 2;
        }
        if (r) continue;
        if ((strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--model") == 0) && i + 1 < argc) {
            mp.path = argv[++i];
        } else if (strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc) {
            mp.tokenizer = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "vkformer info: unknown option '%s'\nusage: vkformer info -m PATH [--json] [--tokenizer PATH]\n", argv[i]);
            return 2;
        }
    }
    if (!mp.path) {
        fprintf(stderr, "usage: vkformer info -m PATH [--json] [--tokenizer PATH]\n");
        return 2;
    }
    vkf_context *ctx;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) return vkf_cli_fail("info");
    vkf_model *m;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        vkf_context_free(ctx);
        return vkf_cli_fail("info");
    }
    char *text;
    vkf_status s = vkf_model_info(m, json, &text);
    if (s == VKF_OK) {
        fputs(text, stdout);
        if (json) fputc('\n', stdout);
        free(text);
    }
    vkf_model_free(m);
    vkf_context_free(ctx);
    return s == VKF_OK ? 0 : vkf_cli_fail("info");
}
