/* I32: token ids and other integer tensors (not a weight type). */
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const int32_t *s = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)s[i];
}

static void quant(const float *src, void *dst, int64_t n) {
    int32_t *d = dst;
    for (int64_t i = 0; i < n; i++)
        d[i] = (int32_t)src[i];
}

const vkf_wtype vkf_wtype_i32 = {"I32", 26,   1,     4, 0,           0,    0, {0, 0},
                                 deq,   NULL, quant, 0, VKF_ACT_F32, NULL, 0, 0};
