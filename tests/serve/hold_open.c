/* LD_PRELOAD shim for test_serve_ops.py: open() of a path ending in $VKT_HOLD_PATH waits until
 * the file $VKT_HOLD_GATE exists. The test holds `vkformer serve` inside its model load this way
 * (the loader opens the weights with open()) for as long as it needs to look at the server
 * while it loads, with no sleep and no switch in the server. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void hold(const char *path) {
    const char *want = getenv("VKT_HOLD_PATH"), *gate = getenv("VKT_HOLD_GATE");
    if (!want || !gate || !path) return;
    size_t n = strlen(path), k = strlen(want);
    if (n < k || strcmp(path + n - k, want) != 0) return;
    struct stat st;
    struct timespec tick = {0, 10 * 1000000L};
    while (stat(gate, &st) != 0)
        nanosleep(&tick, NULL);
}

typedef int (*open_fn)(const char *, int, ...);

static int forward(const char *name, const char *path, int flags, va_list ap) {
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
    open_fn f = (open_fn)dlsym(RTLD_NEXT, name);
    return f ? f(path, flags, mode) : -1;
}

int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);

int open(const char *path, int flags, ...) {
    hold(path);
    va_list ap;
    va_start(ap, flags);
    int fd = forward("open", path, flags, ap);
    va_end(ap);
    return fd;
}

int open64(const char *path, int flags, ...) {
    hold(path);
    va_list ap;
    va_start(ap, flags);
    int fd = forward("open64", path, flags, ap);
    va_end(ap);
    return fd;
}
