#include "testutil.h"

#include <string.h>
#include <sys/stat.h>

int vkt_passed, vkt_failed;

const char *vkt_fixture(const char *rel) {
    static char buf[4096];
    const char *root = getenv("VKF_FIXTURES");
    if (!root || !*root) root = VKF_FIXTURES;
    snprintf(buf, sizeof buf, "%s/%s", root, rel);
    return buf;
}

int vkt_have_fixtures(void) {
    struct stat st;
    return stat(vkt_fixture(""), &st) == 0 && S_ISDIR(st.st_mode);
}

void *vkt_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) {
        p[len] = 0;
        if (n) *n = (size_t)len;
    }
    return p;
}

int vkt_finish(void) {
    printf("%d passed, %d failed\n", vkt_passed, vkt_failed);
    return vkt_failed ? 1 : 0;
}
