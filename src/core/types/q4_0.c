/* Q4_0: blocks of 32: f16 scale d, 16 bytes of nibbles (byte j: element j low, j + 16 high);
 * x = d * (q - 8) (18 bytes). */
#include <math.h>

#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / VKF_QK; i++) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int j = 0; j < VKF_QK / 2; j++) {
            dst[i * VKF_QK + j] = d * (float)((b[i].qs[j] & 15) - 8);
            dst[i * VKF_QK + j + VKF_QK / 2] = d * (float)((b[i].qs[j] >> 4) - 8);
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 18)

static void quant(const float *src, void *dst, int64_t n) {
    vkf_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / VKF_QK; i++) {
        const float *x = src + i * VKF_QK;
        float amax = 0, max = 0;
        for (int j = 0; j < VKF_QK; j++)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        float d = max / -8.0f, id = d ? 1.0f / d : 0.0f;
        b[i].d = vkf_f32_to_f16(d);
        for (int j = 0; j < VKF_QK / 2; j++) {
            int q0 = (int)(x[j] * id + 8.5f), q1 = (int)(x[j + VKF_QK / 2] * id + 8.5f);
            q0 = q0 > 15 ? 15 : q0;
            q1 = q1 > 15 ? 15 : q1;
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

/* llama.cpp: Q8_0 activations; a weight whose row count is a multiple of 8 is repacked on AVX2
 * machines (q4_0_8x8), whose kernels fuse each block's whole integer sum times the scales into
 * one float (one scalar chain); otherwise 8 lanes. */
static void unpack(const void *blk, int q[32], float *d, float *m) {
    const vkf_block_q4_0 *b = blk;
    for (int j = 0; j < 16; j++) {
        q[j] = (b->qs[j] & 15) - 8;
        q[j + 16] = (b->qs[j] >> 4) - 8;
    }
    *d = vkf_f16_to_f32(b->d);
    *m = 0.0f;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    return vkf_act_dot32(unpack, 18, 0, w, a, k,
                         flags & VKF_DOT_REPACKED ? VKF_DOT32_BLOCKSUM : VKF_DOT32_LANES);
}

const vkf_wtype vkf_wtype_q4_0 = {"Q4_0", 2,     32, 18,           1,       32, 1, {0, 0}, deq,
                                  dot,    quant, 0,  VKF_ACT_Q8_0, act_dot, 0,  0};
