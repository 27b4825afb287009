/* Helpers shared by the commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

char *vkf_cli_read_text(const char *cmd, const char *flag, const char *path) {
    struct stat st;
    if (strcmp(path, "-") != 0) {
        if (stat(path, &st) != 0) {
            fprintf(stderr, "vkformer: %s: %s %s: %s\n", cmd, flag, path, strerror(errno));
            return NULL;
        }
        if (S_ISDIR(st.st_mode)) {
            fprintf(stderr, "vkformer: %s: %s %s: is a directory (%s takes a text file)\n", cmd,
                    flag, path, flag);
            return NULL;
        }
    }
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "vkformer: %s: %s %s: %s\n", cmd, flag, path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 12, len = 0, got;
    char *p = malloc(cap + 1);
    while (p && (got = fread(p + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *q = realloc(p, (cap *= 2) + 1);
            if (!q) free(p);
            p = q;
        }
    }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (!p || bad) {
        fprintf(stderr, "vkformer: %s: %s %s: %s\n", cmd, flag, path,
                p ? "read error" : "out of memory");
        free(p);
        return NULL;
    }
    p[len] = 0;
    if (strlen(p) != len) {
        fprintf(stderr, "vkformer: %s: %s %s: the file contains NUL bytes (not text)\n", cmd, flag,
                path);
        free(p);
        return NULL;
    }
    return p;
}
