/* Small helpers shared by the file readers: overflow-checked arithmetic and shape formatting. */
#ifndef VKF_IO_IO_UTIL_H
#define VKF_IO_IO_UTIL_H

#include <stdint.h>
#include <stdio.h>

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

#endif
