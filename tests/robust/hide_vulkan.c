/* LD_PRELOAD shim for tests: a process without a Vulkan loader. dlopen() of any libvulkan*
 * fails as it would on a machine without libvulkan1; everything else goes to the real dlopen.
 * (A library path alone cannot hide it: ld.so always searches the system directories.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

void *dlopen(const char *file, int mode) {
    static void *(*real_dlopen)(const char *, int);
    if (file && strstr(file, "libvulkan")) return NULL;
    if (!real_dlopen) real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    return real_dlopen ? real_dlopen(file, mode) : NULL;
}
