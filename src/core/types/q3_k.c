/* Q3_K: super-blocks of 256: 32 bytes of high-bit mask, 64 bytes of 2-bit quants, 12 bytes of
 * packed 6-bit scales (16, offset by 32), f16 d. Element e: n = e / 128, j = e % 128 / 32,
 * l = e % 32; q = ((qs[32n + l] >> 2j) & 3) - (hmask[l] bit 4n + j ? 0 : 4);
 * x = d * (scale[e / 16] - 32) * q (110 bytes: only 2-byte aligned in a file). Scale i: low 4
 * bits from nibble i / 8 of byte i % 8, high 2 bits from bits 2 (i / 4) of byte 8 + i % 4. */
#include <math.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static int q3k_scale(const uint8_t *s, int i) {
    int k = i & 3, g = i >> 2;
    int lo = (s[k + 4 * (g & 1)] >> (4 * (g >> 1))) & 15;
    int hi = (s[8 + k] >> (2 * g)) & 3;
    return (lo | (hi << 4)) - 32;
}

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q3_k *b = src;
    for (int64_t i = 0; i < n / 256; i++, dst += 256) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int e = 0; e < 256; e++) {
            int nn = e / 128, j = e % 128 / 32, l = e % 32;
            int q = (b[i].qs[32 * nn + l] >> (2 * j)) & 3;
            if (!(b[i].hmask[l] & (1 << (4 * nn + j)))) q -= 4;
            dst[e] = d * (float)q3k_scale(b[i].scales, e / 16) * (float)q;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 110)

/* ggml's quantize_row_q3_K_ref: 16 sub-blocks of 16 with a 6-bit signed scale each. */
static void quant(const float *x, void *dst, int64_t k) {
    vkf_block_q3_k *y = dst;
    int8_t L[VKF_QK_K];
    float scales[VKF_QK_K / 16];
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < VKF_QK_K / 16; ++j) {
            scales[j] = vkf_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            float scale = fabsf(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        memset(y[i].scales, 0, 12);
        if (max_scale) {
            float iscale = -32.f / max_scale;
            for (int j = 0; j < VKF_QK_K / 16; ++j) {
                int l = vkf_clampi((int8_t)vkf_nearest_int(iscale * scales[j]), -32, 31) + 32;
                if (j < 8)
                    y[i].scales[j] = (uint8_t)(l & 0xF);
                else
                    y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                l >>= 4;
                y[i].scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
            }
            y[i].d = vkf_f32_to_f16(1 / iscale);
        } else {
            y[i].d = vkf_f32_to_f16(0.f);
        }
        for (int j = 0; j < VKF_QK_K / 16; ++j) {
            int sc = j < 8 ? y[i].scales[j] & 0xF : y[i].scales[j - 8] >> 4;
            sc = (sc | (((y[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
            float d = vkf_f16_to_f32(y[i].d) * sc;
            if (!d) continue;
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] =
                    (int8_t)(vkf_clampi(vkf_nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
        }
        /* the high bit of value j goes to hmask[j % 32], bit j / 32 */
        memset(y[i].hmask, 0, VKF_QK_K / 8);
        for (int j = 0; j < VKF_QK_K; ++j)
            if (L[j] > 3) {
                y[i].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                L[j] -= 4;
            }
        vkf_quant_pack2_k((const uint8_t *)L, y[i].qs);
    }
}

/* llama.cpp: Q8_K activations, 8 lanes, 16 signed sub-block scales. */
static int unpack(const void *blk, int q[256], int sc[16], int m[16], float *d, float *dmin) {
    (void)m;
    (void)dmin;
    const vkf_block_q3_k *b = blk;
    for (int j = 0; j < 256; j++) {
        int lo = (b->qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
        q[j] = lo - ((b->hmask[j % 32] >> (j / 32)) & 1 ? 0 : 4);
    }
    for (int s = 0; s < 16; s++)
        sc[s] = q3k_scale(b->scales, s);
    *d = vkf_f16_to_f32(b->d);
    return 16;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    return vkf_act_dot256(unpack, 110, VKF_MINS_NONE, 0, vkf_dot256_order_of(flags, 0), w, a, k);
}

const vkf_wtype vkf_wtype_q3_k = {"Q3_K", 11,    256, 110,          1,       64, 1, {108, 0}, deq,
                                  dot,    quant, 0,   VKF_ACT_Q8_K, act_dot, 0,  0};
