/* `vkformer pull` and `-hf NAME` (cli/pull.h) over the library's registry (vkf_pull): the
 * progress bar and the messages. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/pull.h"
#include "vkformer.h"

typedef struct bar {
    const char *label;
    double t0;    /* start, seconds */
    int last_pct; /* last percentage printed */
    int shown;
} bar;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bar_show(void *user, double done, double total) {
    bar *b = user;
    if (total <= 0) return 0;
    int pct = (int)(100.0 * done / total);
    if (pct > 100) pct = 100;
    if (pct == b->last_pct) return 0;
    b->last_pct = pct;
    char s[31];
    for (int i = 0; i < 30; i++)
        s[i] = i < pct * 30 / 100 ? '#' : '.';
    s[30] = 0;
    double dt = now_s() - b->t0, rate = dt > 0 ? done / dt : 0;
    fprintf(stderr, "\r\033[K%s [%s] %3d%% %.1f/%.1f MB %.1f MB/s", b->label, s, pct, done / 1e6,
            total / 1e6, rate / 1e6);
    fflush(stderr);
    b->shown = 1;
    return 0;
}

void vkf_cli_pull_unknown(const char *name) {
    fprintf(stderr, "no model named '%s' in vkformer's registry; known:", name);
    vkf_registry_entry e;
    for (int i = 0; vkf_registry_get(i, &e) == VKF_OK; i++)
        fprintf(stderr, " %s", e.name);
    fprintf(stderr, "\n");
}

int vkf_cli_pull(const char *cmd, const char *name, const vkf_pull_params *p, int quiet, char *path,
                 size_t n, int *fetched) {
    vkf_pull_params o = p ? *p : (vkf_pull_params){0};
    char label[256];
    int i = vkf_registry_find(name);
    vkf_registry_entry e = {0};
    if (i >= 0) vkf_registry_get(i, &e);
    snprintf(label, sizeof label, "pull %s", e.name ? e.name : name);
    bar b = {label, now_s(), -1, 0};
    if (!quiet && isatty(STDERR_FILENO)) {
        o.progress = bar_show;
        o.progress_user = &b;
    }
    vkf_status st = vkf_pull(name, &o, path, n, fetched);
    if (b.shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
    if (st != VKF_OK) {
        fprintf(stderr, "vkformer: %s: %s\n", cmd, vkf_last_error());
        return i < 0 ? 2 : 1;
    }
    return 0;
}

/* -m / --model in argv[1..argc) */
static const char *model_flag(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model") ||
            !strncmp(argv[i], "--model=", 8) || !strncmp(argv[i], "-m=", 3))
            return argv[i];
    return NULL;
}

int vkf_pull_rewrite_hf(int argc, char **argv) {
    const char *m = model_flag(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        int eq = 0;
        if (!strcmp(a, "-hf") || !strcmp(a, "-hfr") || !strcmp(a, "--hf-repo")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vkformer: %s: %s: expected a model name (vkformer pull --list)\n",
                        argv[0], a);
                return 2;
            }
            val = argv[i + 1];
        } else if (!strncmp(a, "--hf-repo=", 10) || !strncmp(a, "-hf=", 4)) {
            val = strchr(a, '=') + 1;
            eq = 1;
        } else {
            continue;
        }
        if (m) { /* llama.cpp refuses both too: which model was meant? */
            fprintf(stderr,
                    "vkformer: %s: %s %s and %s both name the model: give one (-hf NAME stands "
                    "for -m PATH)\n",
                    argv[0], a, val, m);
            return 2;
        }
        int k = vkf_registry_find(val);
        if (k < 0) {
            fprintf(stderr, "vkformer: %s: %s: ", argv[0], a);
            vkf_cli_pull_unknown(val);
            return 2;
        }
        vkf_registry_entry e;
        vkf_registry_get(k, &e);
        /* llama.cpp's NAME:QUANT: the quant must be the registry's */
        const char *colon = strrchr(val, ':');
        if (colon && !strcasestr(e.file, colon + 1)) {
            fprintf(stderr, "vkformer: %s: %s: the registry's %s is %s (no '%s' variant)\n",
                    argv[0], a, e.name, e.file, colon + 1);
            return 2;
        }
        static char paths[4][4096];
        static int used;
        if (used == 4) return 2;
        char *path = paths[used++];
        int fetched;
        int rc = vkf_cli_pull(argv[0], val, NULL, 0, path, sizeof paths[0], &fetched);
        if (rc) return rc;
        if (fetched) fprintf(stderr, "vkformer: %s: pulled %s into %s\n", argv[0], e.name, path);
        static char mflag[] = "-m";
        if (eq) {
            /* one argument "--hf-repo=NAME" becomes "--model=PATH" */
            static char buf[4][4200];
            snprintf(buf[used - 1], sizeof buf[0], "--model=%s", path);
            argv[i] = buf[used - 1];
        } else {
            argv[i] = mflag;
            argv[i + 1] = path;
            i++;
        }
    }
    return 0;
}
