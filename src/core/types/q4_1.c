/* Q4_1: blocks of 32: f16 scale d, f16 min m, 16 bytes of nibbles (byte j: element j low,
 * j + 16 high); x = d * q + m (20 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        float d = vkf_f16_to_f32(b[i].d), m = vkf_f16_to_f32(b[i].m);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)(b[i].qs[j] & 15) + m;
            dst[j + 16] = d * (float)(b[i].qs[j] >> 4) + m;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 20)

/* ggml's quantize_row_q4_1_ref: d = (max - min) / 15, m = min, q = (x - min) / d + 0.5
 * truncated, at most 15. */
static void quant(const float *src, void *dst, int64_t n) {
    vkf_block_q4_1 *y = dst;
    for (int64_t i = 0; i < n / 32; i++, src += 32) {
        float mn;
        const float id = vkf_quant_min_scale(src, 15.0f, &y[i].d, &y[i].m, &mn);
        for (int j = 0; j < 16; j++) {
            int q0 = (int)((src[j] - mn) * id + 0.5f), q1 = (int)((src[j + 16] - mn) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | ((q1 < 15 ? q1 : 15) << 4));
        }
    }
}

/* llama.cpp: Q8_1 activations, 8 lanes, the min term in a scalar chain. */
static void unpack(const void *blk, int q[32], float *d, float *m) {
    const vkf_block_q4_1 *b = blk;
    for (int j = 0; j < 16; j++) {
        q[j] = b->qs[j] & 15;
        q[j + 16] = b->qs[j] >> 4;
    }
    *d = vkf_f16_to_f32(b->d);
    *m = vkf_f16_to_f32(b->m);
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    (void)flags;
    return vkf_act_dot32(unpack, 20, 1, w, a, k, VKF_DOT32_LANES);
}

const vkf_wtype vkf_wtype_q4_1 = {"Q4_1", 3,     32, 20,           1,       32, 2, {0, 2}, deq,
                                  dot,    quant, 0,  VKF_ACT_Q8_1, act_dot, 0,  0};
