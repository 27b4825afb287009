/* Q5_K: Q4_K plus 32 bytes of high bits (element l of sub-block s: bit s of qh[l]);
 * x = d * sc[s] * (q + 16 h) - dmin * m[s] (176 bytes). */
#include <math.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

void vkf_k4_scale_min(const uint8_t *q, int s, int *sc, int *m);
int vkf_k4_unpack(const void *blk, int five, int q[256], int sc[16], int m[16], float *d,
                  float *dmin);

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q5_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        float d = vkf_f16_to_f32(b[i].d), dmin = vkf_f16_to_f32(b[i].dmin);
        for (int s = 0; s < 8; s++, dst += 32) {
            int sc, m;
            vkf_k4_scale_min(b[i].scales, s, &sc, &m);
            float dl = d * (float)sc, ml = dmin * (float)m;
            const uint8_t *q = b[i].qs + 32 * (s / 2);
            for (int l = 0; l < 32; l++) {
                int v = ((q[l] >> (4 * (s & 1))) & 15) | (((b[i].qh[l] >> s) & 1) << 4);
                dst[l] = dl * (float)v - ml;
            }
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 176)

/* ggml's quantize_row_q5_K_ref: 8 sub-blocks of 32 with a 6-bit scale and min each. */
static void quant(const float *x, void *dst, int64_t k) {
    vkf_block_q5_k *y = dst;
    uint8_t L[VKF_QK_K];
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        memset(y[i].scales, 0, sizeof y[i].scales);
        vkf_quantize_kx(x, 31, -0.5f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *qh = y[i].qh, *ql = y[i].qs;
        memset(qh, 0, VKF_QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int n = 0; n < VKF_QK_K; n += 64, ql += 32) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[n + j], l2 = L[n + j + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
        }
    }
}

/* llama.cpp: Q8_K activations, 8 lanes; the mins in one scalar chain. */
static int unpack(const void *blk, int q[256], int sc[16], int m[16], float *d, float *dmin) {
    return vkf_k4_unpack(blk, 1, q, sc, m, d, dmin);
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    return vkf_act_dot256(unpack, 176, VKF_MINS_SCALAR, 0, vkf_dot256_order_of(flags, 0), w, a, k);
}

const vkf_wtype vkf_wtype_q5_k = {"Q5_K", 13,    256, 176,          1,       64, 2, {0, 2}, deq,
                                  dot,    quant, 1,   VKF_ACT_Q8_K, act_dot, 0,  0};
