/* IQ4_NL: blocks of 32: f16 scale d, 16 bytes of nibbles (byte j: element j low, j + 16 high)
 * indexing the non-linear table vkf_iq4nl_values; x = d * table[q] (18 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)vkf_iq4nl_values[b[i].qs[j] & 15];
            dst[j + 16] = d * (float)vkf_iq4nl_values[b[i].qs[j] >> 4];
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 18)

static void quant(const float *src, void *dst, int64_t n) {
    vkf_block_iq4_nl *y = dst;
    for (int64_t i = 0; i < n / 32; i++)
        vkf_quantize_iq4_block(32, 32, src + 32 * i, &y[i].d, y[i].qs, NULL, NULL, 7);
}

/* llama.cpp: Q8_0 activations, 8 lanes; its single-row kernel alternates two sets of lanes
 * over even and odd blocks; Oct 2026 on AVX2 repacks a weight of 8k rows (iq4_nl_8x8, one float
 * step per block as Q4_0's). */
static void unpack(const void *blk, int q[32], float *d, float *m) {
    const vkf_block_iq4_nl *b = blk;
    for (int j = 0; j < 16; j++) {
        q[j] = vkf_iq4nl_values[b->qs[j] & 15];
        q[j + 16] = vkf_iq4nl_values[b->qs[j] >> 4];
    }
    *d = vkf_f16_to_f32(b->d);
    *m = 0.0f;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    if ((flags & VKF_DOT_LLAMA_2610) && (flags & VKF_DOT_REPACKED)) /* iq4_nl_8x8 */
        return vkf_act_dot32(unpack, 18, 0, w, a, k, VKF_DOT32_BLOCKSUM);
    return vkf_act_dot32(unpack, 18, 0, w, a, k,
                         flags & VKF_DOT_SINGLE_ROW ? VKF_DOT32_LANES2 : VKF_DOT32_LANES);
}

const vkf_wtype vkf_wtype_iq4_nl = {"IQ4_NL", 20,    32, 18,           1,       32, 1, {0, 0}, deq,
                                    dot,      quant, 0,  VKF_ACT_Q8_0, act_dot, 0,  0};
