/* F32: IEEE single, 4 bytes per element. */
#include <string.h>

#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }

static float dot(const void *w, const float *x, int64_t n) {
    const float *f = w;
    float acc = 0.0f;
    for (int64_t i = 0; i < n; i++)
        acc += f[i] * x[i];
    return acc;
}

static void quant(const float *src, void *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }

const vkf_wtype vkf_wtype_f32 = {
    "F32", 0, 1, 4, 1, 4, 0, {0, 0}, deq, dot, quant, 0, VKF_ACT_F32, vkf_act_dot_f32, 0, 0};
