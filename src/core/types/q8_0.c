/* Q8_0: blocks of 32: f16 scale d, 32 x int8 q; x = d * q (34 bytes). */
#include <math.h>

#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / VKF_QK; i++) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int j = 0; j < VKF_QK; j++)
            dst[i * VKF_QK + j] = d * (float)b[i].qs[j];
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 34)

static void quant(const float *src, void *dst, int64_t n) {
    vkf_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / VKF_QK; i++) {
        const float *x = src + i * VKF_QK;
        float amax = 0;
        for (int j = 0; j < VKF_QK; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        b[i].d = vkf_f32_to_f16(d);
        for (int j = 0; j < VKF_QK; j++)
            b[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

/* llama.cpp: Q8_0 activations, 8 lanes (ggml_vec_dot_q8_0_q8_0, tinyBLAS). */
static void unpack(const void *blk, int q[32], float *d, float *m) {
    const vkf_block_q8_0 *b = blk;
    for (int j = 0; j < 32; j++)
        q[j] = b->qs[j];
    *d = vkf_f16_to_f32(b->d);
    *m = 0.0f;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    (void)flags;
    return vkf_act_dot32(unpack, 34, 0, w, a, k, VKF_DOT32_LANES);
}

const vkf_wtype vkf_wtype_q8_0 = {"Q8_0", 8,     32, 34,           1,       32, 1, {0, 0}, deq,
                                  dot,    quant, 0,  VKF_ACT_Q8_0, act_dot, 0,  0};
