/* Helpers shared by the tests/test_robust_*.c tests: running the CLI in a child process with a
 * changed environment, scratch directories and files, process memory, and a backend shim that
 * counts the bytes a context holds on its backend. Header-only (static functions): each test
 * is one executable and uses what it needs. */
#ifndef VKF_TESTS_ROBUST_UTIL_H
#define VKF_TESTS_ROBUST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "graph/backend.h"
#include "runtime/context.h"
#include "testutil.h"
#include "vkformer.h"

#if defined(__GNUC__)
#define RB_UNUSED __attribute__((unused))
#else
#define RB_UNUSED
#endif

/* ------------------------------------------------------------------ paths and files */

/* The shipped models (models/ of the repository). */
static RB_UNUSED const char *rb_repo(const char *rel) {
    static char buf[4][2048];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", VKF_SOURCE_DIR, rel);
    return buf[k];
}

/* A fresh scratch directory under $TMPDIR (or /tmp), removed by rb_rmtree. */
static RB_UNUSED char *rb_mkdtemp(const char *tag) {
    const char *t = getenv("TMPDIR");
    char tmpl[1024];
    snprintf(tmpl, sizeof tmpl, "%s/vkf-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static RB_UNUSED int rb_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    return fclose(f) == 0 && w == n;
}

static RB_UNUSED int rb_copy_file(const char *from, const char *to) {
    size_t n = 0;
    void *p = vkt_read_file(from, &n);
    if (!p) return 0;
    int ok = rb_write_file(to, p, n);
    free(p);
    return ok;
}

/* rm -rf dir (a scratch directory of ours: plain files and directories only). */
static RB_UNUSED void rb_rmtree(const char *dir) {
    if (!dir || !*dir || strncmp(dir, "/", 1) != 0 || strstr(dir, "/vkf-") == NULL) return;
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", dir, (char *)NULL);
        _exit(127);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
}

/* ------------------------------------------------------------------ the CLI in a child process */

typedef struct rb_run {
    int exited; /* 1: exited normally (else killed by a signal or timed out) */
    int code;   /* exit status when exited */
    int signal; /* signal when not exited */
    int timed_out;
    char out[16384]; /* stdout, truncated */
    char err[16384]; /* stderr, truncated */
} rb_run;

/* The vkformer CLI of this build: VKT_CLI, else ./vkformer (tests run in the build directory). */
static RB_UNUSED const char *rb_cli(void) {
    const char *c = getenv("VKT_CLI");
    return c && *c ? c : "./vkformer";
}

static void rb_drain(int fd, char *buf, size_t cap, size_t *len) {
    char tmp[4096];
    ssize_t r = read(fd, tmp, sizeof tmp);
    if (r <= 0) return;
    size_t take = (size_t)r;
    if (*len + take > cap - 1) take = cap - 1 - *len;
    memcpy(buf + *len, tmp, take);
    *len += take;
    buf[*len] = 0;
}

/* Runs argv (argv[0] is the program) with the environment changes env[] ("NAME=value" sets,
 * "NAME" alone unsets; NULL-terminated), at most timeout_s seconds. */
static RB_UNUSED void rb_run_cmd(const char *const *argv, const char *const *env, int timeout_s,
                                 rb_run *r) {
    memset(r, 0, sizeof *r);
    int po[2], pe[2];
    if (pipe(po) != 0 || pipe(pe) != 0) {
        snprintf(r->err, sizeof r->err, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        for (int i = 0; env && env[i]; i++) {
            const char *eq = strchr(env[i], '=');
            if (eq) {
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)(eq - env[i]), env[i]);
                setenv(name, eq + 1, 1);
            } else {
                unsetenv(env[i]);
            }
        }
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    size_t lo = 0, le = 0;
    fcntl(po[0], F_SETFL, O_NONBLOCK);
    fcntl(pe[0], F_SETFL, O_NONBLOCK);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = 0;
    for (;;) {
        rb_drain(po[0], r->out, sizeof r->out, &lo);
        rb_drain(pe[0], r->err, sizeof r->err, &le);
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            r->timed_out = 1;
            break;
        }
        struct timespec nap = {0, 2000000};
        nanosleep(&nap, NULL);
    }
    for (int i = 0; i < 64; i++) { /* what is left in the pipes */
        rb_drain(po[0], r->out, sizeof r->out, &lo);
        rb_drain(pe[0], r->err, sizeof r->err, &le);
    }
    close(po[0]);
    close(pe[0]);
    r->exited = WIFEXITED(status) && !r->timed_out;
    r->code = r->exited ? WEXITSTATUS(status) : -1;
    r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* A clean failure: exited (no signal, no timeout) with status 1 and a message on stderr. */
static RB_UNUSED int rb_clean_failure(const rb_run *r) {
    return r->exited && r->code == 1 && r->err[0];
}

/* ------------------------------------------------------------------ the Vulkan device */

/* 1 if a Vulkan context can be created. Without one the test fails (a suite that silently
 * skipped its Vulkan half would pass with the backend missing), unless VKF_TEST_NO_VULKAN=1
 * says so on purpose (the policy of vkt_for_each_backend). */
static RB_UNUSED int rb_has_vulkan(void) {
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN};
    vkf_context *ctx = NULL;
    vkf_status s = vkf_context_create(&cp, &ctx);
    vkf_context_free(ctx);
    if (s == VKF_OK) return 1;
    const char *allow = getenv("VKF_TEST_NO_VULKAN");
    if (allow && strcmp(allow, "1") == 0) {
        printf("SKIP (device): vulkan (VKF_TEST_NO_VULKAN=1): %s\n", vkf_last_error());
        return 0;
    }
    VKT_CHECK(0, "no Vulkan context (set VKF_TEST_NO_VULKAN=1 on a machine without one): %s",
              vkf_last_error());
    return 0;
}

/* ------------------------------------------------------------------ process memory */

/* Resident set size of this process in KiB (/proc/self/statm), 0 if unknown. */
static RB_UNUSED long rb_rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    long pages = 0, res = 0;
    int n = fscanf(f, "%ld %ld", &pages, &res);
    fclose(f);
    return n == 2 ? res * (sysconf(_SC_PAGESIZE) / 1024) : 0;
}

/* Bytes malloc has handed out and not got back, in KiB (glibc mallinfo2: every arena plus the
 * mmapped chunks); unlike RSS it does not move with fragmentation or with the high-water mark
 * of per-thread arenas. -1 where unknown (other C libraries; sanitizers replace malloc). */
static RB_UNUSED long rb_heap_kib(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    long kib = (long)((mi.uordblks + mi.hblkhd) / 1024);
    return kib > 0 ? kib : -1;
#else
    return -1;
#endif
}

/* 1 when built with AddressSanitizer (gcc defines __SANITIZE_ADDRESS__; clang has the feature). */
static RB_UNUSED int rb_asan(void) {
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}

/* 1 when running under valgrind (it sets LD_PRELOAD to its vgpreload libraries). */
static RB_UNUSED int rb_valgrind(void) {
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload") != NULL;
}

/* ------------------------------------------------------------------ backend byte counter */

/* Wraps a context's backend so every buffer allocation and free is counted: the live bytes a
 * context holds on its device (Vulkan) or in host memory (CPU), whatever the backend does
 * inside. Install right after vkf_context_create, before any model is loaded. The buffer
 * struct is private to each backend, so sizes are kept in a side table. */
typedef struct rb_live {
    const vkf_buffer *b;
    size_t size;
} rb_live;

typedef struct rb_counter {
    vkf_backend_i iface;        /* the wrapped table, installed in the backend */
    const vkf_backend_i *inner; /* the backend's own table */
    int64_t live_bytes, peak_bytes;
    int64_t allocs, frees;
    rb_live *live; /* live buffers */
    size_t n_live, cap_live;
    int unknown_frees; /* frees of buffers never seen allocated (must stay 0) */
} rb_counter;

static rb_counter *g_rb_counter; /* one counted context per test process */

static void rb_c_record(rb_counter *c, vkf_buffer *b, size_t size) {
    if (c->n_live == c->cap_live) {
        size_t cap = c->cap_live ? 2 * c->cap_live : 256;
        rb_live *nl = realloc(c->live, cap * sizeof *nl);
        if (!nl) abort();
        c->live = nl;
        c->cap_live = cap;
    }
    c->live[c->n_live++] = (rb_live){b, size};
    c->live_bytes += (int64_t)size;
    c->allocs++;
    if (c->live_bytes > c->peak_bytes) c->peak_bytes = c->live_bytes;
}

static vkf_status rb_c_alloc(vkf_backend *be, size_t size, vkf_buffer_usage usage,
                             vkf_buffer **out) {
    rb_counter *c = g_rb_counter;
    vkf_status s = c->inner->buffer_alloc(be, size, usage, out);
    if (s == VKF_OK) rb_c_record(c, *out, size);
    return s;
}

/* weights used in place (the file's mapping imported): counted like allocations, so that their
 * frees are known and a leaked import shows */
static vkf_status rb_c_import(vkf_backend *be, const void *p, size_t n, const void *region,
                              size_t region_size, vkf_buffer **out) {
    rb_counter *c = g_rb_counter;
    vkf_status s = c->inner->buffer_import(be, p, n, region, region_size, out);
    if (s == VKF_OK) rb_c_record(c, *out, n);
    return s;
}

static void rb_c_free(vkf_backend *be, vkf_buffer *b) {
    rb_counter *c = g_rb_counter;
    if (b) {
        size_t i = 0;
        while (i < c->n_live && c->live[i].b != b)
            i++;
        if (i == c->n_live) {
            c->unknown_frees++;
        } else {
            c->live_bytes -= (int64_t)c->live[i].size;
            c->live[i] = c->live[--c->n_live];
            c->frees++;
        }
    }
    c->inner->buffer_free(be, b);
}

static RB_UNUSED void rb_counter_install(vkf_context *ctx, rb_counter *c) {
    memset(c, 0, sizeof *c);
    c->inner = ctx->be->i;
    c->iface = *ctx->be->i;
    c->iface.buffer_alloc = rb_c_alloc;
    c->iface.buffer_free = rb_c_free;
    if (c->inner->buffer_import) c->iface.buffer_import = rb_c_import;
    g_rb_counter = c;
    ctx->be->i = &c->iface;
}

/* Call before vkf_context_free (the backend's table goes back to its own). */
static RB_UNUSED void rb_counter_remove(vkf_context *ctx, rb_counter *c) {
    ctx->be->i = c->inner;
    free(c->live);
    c->live = NULL;
    c->n_live = c->cap_live = 0;
    g_rb_counter = NULL;
}

#endif
