/* F16: IEEE half, 2 bytes per element. */
#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = vkf_f16_to_f32(s[i]);
}

static float dot(const void *w, const float *x, int64_t n) {
    const uint16_t *s = w;
    float acc = 0.0f;
    for (int64_t i = 0; i < n; i++)
        acc += vkf_f16_to_f32(s[i]) * x[i];
    return acc;
}

static void quant(const float *src, void *dst, int64_t n) {
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++)
        d[i] = vkf_f32_to_f16(src[i]);
}

const vkf_wtype vkf_wtype_f16 = {"F16",  1,   1,   2,     1, 8,           0,
                                 {0, 0}, deq, dot, quant, 0, VKF_ACT_F16, vkf_act_dot_f16};
