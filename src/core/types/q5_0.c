/* Q5_0: blocks of 32: f16 scale d, 32 high bits (little-endian; bit j is element j's 5th bit),
 * 16 bytes of low nibbles (byte j: element j low, j + 16 high); x = d * (q - 16) (22 bytes,
 * so blocks are only 2-byte aligned in a file). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        float d = vkf_f16_to_f32(b[i].d);
        uint32_t qh = vkf_rd32(b[i].qh);
        for (int j = 0; j < 16; j++) {
            int lo = (b[i].qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            int hi = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            dst[j] = d * (float)(lo - 16);
            dst[j + 16] = d * (float)(hi - 16);
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 22)

/* ggml's quantize_row_q5_0_ref: d = signed max / -16, q = x / d + 16.5 truncated, at most 31. */
static void quant(const float *src, void *dst, int64_t n) {
    vkf_block_q5_0 *y = dst;
    uint8_t q[32];
    for (int64_t i = 0; i < n / 32; i++, src += 32) {
        const float d = vkf_quant_signed_absmax(src, 32) / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = vkf_f32_to_f16(d);
        for (int j = 0; j < 32; j++) {
            int v = (int)(src[j] * id + 16.5f);
            q[j] = (uint8_t)(v < 31 ? v : 31);
        }
        vkf_quant_pack5(q, y[i].qs, y[i].qh);
    }
}

/* llama.cpp: Q8_0 activations, 8 lanes. */
static void unpack(const void *blk, int q[32], float *d, float *m) {
    const vkf_block_q5_0 *b = blk;
    uint32_t qh = vkf_rd32(b->qh);
    for (int j = 0; j < 16; j++) {
        q[j] = ((b->qs[j] & 15) | (int)(((qh >> j) & 1) << 4)) - 16;
        q[j + 16] = ((b->qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4)) - 16;
    }
    *d = vkf_f16_to_f32(b->d);
    *m = 0.0f;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    (void)flags;
    return vkf_act_dot32(unpack, 22, 0, w, a, k, VKF_DOT32_LANES);
}

const vkf_wtype vkf_wtype_q5_0 = {"Q5_0", 6,     32, 22,           1,       32, 1, {0, 0}, deq,
                                  dot,    quant, 0,  VKF_ACT_Q8_0, act_dot, 0,  0};
