/* Q5_1: blocks of 32: f16 scale d, f16 min m, 32 high bits, 16 bytes of low nibbles (as Q5_0);
 * x = d * q + m (24 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        float d = vkf_f16_to_f32(b[i].d), m = vkf_f16_to_f32(b[i].m);
        uint32_t qh = vkf_rd32(b[i].qh);
        for (int j = 0; j < 16; j++) {
            int lo = (b[i].qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            int hi = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            dst[j] = d * (float)lo + m;
            dst[j + 16] = d * (float)hi + m;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 24)

/* ggml's quantize_row_q5_1_ref: d = (max - min) / 31, m = min, q = (x - min) / d + 0.5
 * truncated; no clamp there: a value that rounds to 32 keeps only its low five bits (0). */
static void quant(const float *src, void *dst, int64_t n) {
    vkf_block_q5_1 *y = dst;
    uint8_t q[32];
    for (int64_t i = 0; i < n / 32; i++, src += 32) {
        float mn;
        const float id = vkf_quant_min_scale(src, 31.0f, &y[i].d, &y[i].m, &mn);
        for (int j = 0; j < 32; j++)
            q[j] = (uint8_t)(int)((src[j] - mn) * id + 0.5f);
        vkf_quant_pack5(q, y[i].qs, y[i].qh);
    }
}

/* llama.cpp: Q8_1 activations, 8 lanes, the min term in a scalar chain. */
static void unpack(const void *blk, int q[32], float *d, float *m) {
    const vkf_block_q5_1 *b = blk;
    uint32_t qh = vkf_rd32(b->qh);
    for (int j = 0; j < 16; j++) {
        q[j] = (b->qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
        q[j + 16] = (b->qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
    }
    *d = vkf_f16_to_f32(b->d);
    *m = vkf_f16_to_f32(b->m);
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    (void)flags;
    return vkf_act_dot32(unpack, 24, 1, w, a, k, VKF_DOT32_LANES);
}

const vkf_wtype vkf_wtype_q5_1 = {"Q5_1", 7,     32, 24,           1,       32, 2, {0, 2}, deq,
                                  dot,    quant, 0,  VKF_ACT_Q8_1, act_dot, 0,  0};
