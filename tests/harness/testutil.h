/* Minimal test helpers: checks count and report; main() ends with vkt_finish(). */
#ifndef VKF_TESTUTIL_H
#define VKF_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "vkformer.h"

extern int vkt_passed, vkt_failed;

#define VKT_CHECK(cond, ...)                                                                       \
    do {                                                                                           \
        if (cond) {                                                                                \
            vkt_passed++;                                                                          \
        } else {                                                                                   \
            vkt_failed++;                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* Checks that a vkf_status call returned VKF_OK, printing vkf_last_error() otherwise. */
#define VKT_OK(call) VKT_CHECK((call) == VKF_OK, "%s", vkf_last_error())

/* Path of a reference fixture: under VKF_FIXTURES of the environment, else of the build (CMake's
 * VKF_FIXTURES: the sets tools/refs/make_all.py makes). Static buffer. */
const char *vkt_fixture(const char *rel);
/* 1 if every fixture set of the space-separated list `sets` (directories under vkt_fixture) is
 * there; else counts one failure per missing set, naming its path, and returns 0. No test skips
 * for lack of data: a missing reference is a failure. */
int vkt_need_fixtures(const char *sets);
/* Reads a whole file; NULL on failure. *n gets the size. Caller frees. */
void *vkt_read_file(const char *path, size_t *n);
/* Writes text to path; 1 on success. */
int vkt_write_file(const char *path, const char *text);
/* Runs argv (argv[0] a path) with stdout and stderr to the given files; returns its exit status
 * (128 when it did not exit normally, -1 when it could not be started). */
int vkt_run(char **argv, const char *out_path, const char *err_path);
/* Runs fn on a CPU context, then on a Vulkan context (lavapipe in CI). A machine without a
 * Vulkan device fails the test, unless VKF_TEST_NO_VULKAN=1 says so on purpose: a suite that
 * silently skips its Vulkan half would pass with the backend missing. */
void vkt_for_each_backend(void (*fn)(vkf_context *ctx, const char *backend, void *user),
                          void *user);
/* Normalized mean squared error of a against ref over n values: sum (a-r)^2 / sum r^2 (the
 * plain sum when ref is all zeros). *nonfinite (when not NULL) gets the positions where either
 * is NaN or infinite. */
double vkt_nmse(const float *a, const float *ref, size_t n, int *nonfinite);
/* Prints "N passed, N failed" and returns the process exit code. */
int vkt_finish(void);

#endif
