/* Small helpers shared by the file readers: overflow-checked arithmetic, shape formatting and
 * name indexes. Included by sources built with _GNU_SOURCE (qsort_r's GNU form). */
#ifndef VKF_IO_IO_UTIL_H
#define VKF_IO_IO_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* *out = a * b; returns 0 on overflow of uint64. */
static inline int vkf_io_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

/* *out = a + b; returns 0 on overflow of uint64. */
static inline int vkf_io_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (b > UINT64_MAX - a) return 0;
    *out = a + b;
    return 1;
}

/* Writes "[64, 192]" into buf (entries < 0 print as "?"). Returns buf. */
static inline const char *vkf_io_format_dims(char *buf, size_t n, int rank, const int64_t *dims) {
    size_t p = 0;
    p += (size_t)snprintf(buf + p, n - p, "[");
    for (int i = 0; i < rank && p < n; i++) {
        if (dims[i] < 0)
            p += (size_t)snprintf(buf + p, n - p, "%s?", i ? ", " : "");
        else
            p += (size_t)snprintf(buf + p, n - p, "%s%lld", i ? ", " : "", (long long)dims[i]);
    }
    if (p < n) snprintf(buf + p, n - p, "]");
    return buf;
}

/* ------------------------------------------------------------------ name indexes */

/* Entries with a name (GGUF keys, tensors): structs `size` bytes apart from `base`, each with
 * its `const char *` name at byte `off`. A reader keeps their indices sorted by name (strcmp)
 * for binary search. */
typedef struct vkf_io_names {
    const void *base; /* the first entry */
    size_t size;      /* sizeof one entry */
    size_t off;       /* offsetof its name */
} vkf_io_names;

static inline const char *vkf_io_name(const vkf_io_names *a, size_t i) {
    const void *p = (const char *)a->base + i * a->size + a->off;
    return *(const char *const *)p;
}

static inline int vkf_io_name_cmp(const void *x, const void *y, void *ctx) {
    const vkf_io_names *a = ctx;
    return strcmp(vkf_io_name(a, *(const size_t *)x), vkf_io_name(a, *(const size_t *)y));
}

/* Sorts order[0..n) (entry indices) by name. Returns a name two entries share, which would
 * make lookups ambiguous, or NULL. */
static inline const char *vkf_io_names_sort(const vkf_io_names *a, size_t *order, size_t n) {
    qsort_r(order, n, sizeof *order, vkf_io_name_cmp, (void *)a);
    for (size_t i = 1; i < n; i++)
        if (strcmp(vkf_io_name(a, order[i]), vkf_io_name(a, order[i - 1])) == 0)
            return vkf_io_name(a, order[i]);
    return NULL;
}

/* The index of the entry called name, by binary search of order[0..n) (sorted by
 * vkf_io_names_sort); n when there is none. */
static inline size_t vkf_io_names_find(const vkf_io_names *a, const size_t *order, size_t n,
                                       const char *name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, vkf_io_name(a, order[mid]));
        if (c == 0) return order[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return n;
}

#endif
