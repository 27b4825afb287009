/* Q6_K: super-blocks of 256: 128 bytes of low nibbles ql, 64 bytes of 2-bit highs qh, 16 int8
 * scales, f16 d. Element e: n = e / 128, g = e % 128 / 32, l = e % 32;
 * q = ((ql[64n + 32 (g & 1) + l] >> 4 (g >> 1)) & 15) | (((qh[32n + l] >> 2g) & 3) << 4);
 * x = d * scales[e / 16] * (q - 32) (210 bytes: only 2-byte aligned in a file). */
#include <math.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q6_k *b = src;
    for (int64_t i = 0; i < n / 256; i++, dst += 256) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int e = 0; e < 256; e++) {
            int nn = e / 128, g = e % 128 / 32, l = e % 32;
            int q = (b[i].ql[64 * nn + 32 * (g & 1) + l] >> (4 * (g >> 1))) & 15;
            q |= ((b[i].qh[32 * nn + l] >> (2 * g)) & 3) << 4;
            dst[e] = d * (float)b[i].scales[e / 16] * (float)(q - 32);
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 210)

/* ggml's quantize_row_q6_K_ref: 16 sub-blocks of 16 with an 8-bit signed scale each. */
static void quant(const float *x, void *dst, int64_t k) {
    vkf_block_q6_k *y = dst;
    int8_t L[VKF_QK_K];
    float scales[VKF_QK_K / 16];
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < VKF_QK_K / 16; ++ib) {
            const float scale = vkf_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) {
                max_abs_scale = fabsf(scale);
                max_scale = scale;
            }
        }
        if (max_abs_scale < VKF_GROUP_MAX_EPS) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        float iscale = -128.f / max_scale;
        y[i].d = vkf_f32_to_f16(1 / iscale);
        for (int ib = 0; ib < VKF_QK_K / 16; ++ib) {
            int s = vkf_nearest_int(iscale * scales[ib]);
            y[i].scales[ib] = (int8_t)(s < 127 ? s : 127);
        }
        for (int j = 0; j < VKF_QK_K / 16; ++j) {
            float d = vkf_f16_to_f32(y[i].d) * y[i].scales[j];
            if (!d) continue;
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] =
                    (int8_t)(vkf_clampi(vkf_nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
        }
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < VKF_QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                          q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                  ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
            }
        }
    }
}

/* llama.cpp: Q8_K activations, 8 lanes, 16 signed sub-block scales; its kernel of Oct 2026
 * takes the values unsigned and subtracts 32 times the scaled 16-sums per lane. */
static int unpack(const void *blk, int q[256], int sc[16], int m[16], float *d, float *dmin) {
    (void)m;
    (void)dmin;
    const vkf_block_q6_k *b = blk;
    for (int j = 0; j < 256; j++) {
        int half = j / 128, r = j % 128, l = r % 32, g = r / 32; /* g: 0..3 within the half */
        int lo = (b->ql[64 * half + l + 32 * (g & 1)] >> (4 * (g >> 1))) & 15;
        int hi = (b->qh[32 * half + l] >> (2 * g)) & 3;
        q[j] = (lo | (hi << 4)) - 32;
    }
    for (int s = 0; s < 16; s++)
        sc[s] = b->scales[s];
    *d = vkf_f16_to_f32(b->d);
    return 16;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    return vkf_act_dot256(unpack, 210, VKF_MINS_NONE, (flags & VKF_DOT_LLAMA_2610) ? 32 : 0,
                          vkf_dot256_order_of(flags, 0), w, a, k);
}

const vkf_wtype vkf_wtype_q6_k = {"Q6_K", 14,    256, 210,          1,       64, 1, {208, 0}, deq,
                                  dot,    quant, 1,   VKF_ACT_Q8_K, act_dot, 0,  0};
