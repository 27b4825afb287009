/* Q4_K: super-blocks of 256 = 8 sub-blocks of 32: f16 d, f16 dmin, 12 bytes of packed 6-bit
 * scales and mins, 128 bytes of nibbles (sub-block s: bytes 32 (s / 2).. + 31, low nibble for
 * even s, high for odd); x = d * sc[s] * q - dmin * m[s] (144 bytes). Scale/min s < 4: low 6
 * bits of bytes s / s + 4; s >= 4: low / high nibble of byte s + 4 with the top 2 bits of bytes
 * s - 4 / s. */
#include <math.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

void vkf_k4_scale_min(const uint8_t *q, int s, int *sc, int *m);
void vkf_k4_scale_min(const uint8_t *q, int s, int *sc, int *m) {
    if (s < 4) {
        *sc = q[s] & 63;
        *m = q[s + 4] & 63;
    } else {
        *sc = (q[s + 4] & 15) | ((q[s - 4] >> 6) << 4);
        *m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
    }
}

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q4_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        float d = vkf_f16_to_f32(b[i].d), dmin = vkf_f16_to_f32(b[i].dmin);
        for (int s = 0; s < 8; s++, dst += 32) {
            int sc, m;
            vkf_k4_scale_min(b[i].scales, s, &sc, &m);
            float dl = d * (float)sc, ml = dmin * (float)m;
            const uint8_t *q = b[i].qs + 32 * (s / 2);
            for (int l = 0; l < 32; l++)
                dst[l] = dl * (float)((q[l] >> (4 * (s & 1))) & 15) - ml;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 144)

/* ggml's quantize_row_q4_K_ref: 8 sub-blocks of 32 with a 6-bit scale and min each. */
static void quant(const float *x, void *dst, int64_t k) {
    vkf_block_q4_k *y = dst;
    uint8_t L[VKF_QK_K];
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        memset(y[i].scales, 0, sizeof y[i].scales);
        vkf_quantize_kx(x, 15, -1.f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < VKF_QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; ++l)
                q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

/* A Q4_K (five = 0) or Q5_K (five = 1) super-block for llama.cpp's dot products
 * (vkf_unpack256_fn): both lead with f16 d, f16 dmin and the 12 packed scale bytes; Q5_K's
 * 32 bytes of fifth bits come before the nibbles. */
int vkf_k4_unpack(const void *blk, int five, int q[256], int sc[16], int m[16], float *d,
                  float *dmin);
int vkf_k4_unpack(const void *blk, int five, int q[256], int sc[16], int m[16], float *d,
                  float *dmin) {
    const uint8_t *b = blk, *scales = b + 4, *qh = five ? b + 16 : NULL, *qs = b + (five ? 48 : 16);
    for (int j = 0; j < 256; j++) {
        int s = j / 32;
        q[j] = (qs[32 * (s / 2) + j % 32] >> (4 * (s & 1))) & 15;
        if (qh) q[j] |= ((qh[j % 32] >> s) & 1) << 4;
    }
    for (int s = 0; s < 8; s++)
        vkf_k4_scale_min(scales, s, &sc[s], &m[s]);
    *d = vkf_f16_to_f32(vkf_rd16(b));
    *dmin = vkf_f16_to_f32(vkf_rd16(b + 2));
    return 32;
}

/* llama.cpp: Q8_K activations, 8 lanes; the mins in 4 lanes of their own (Oct 2026 on AVX2: a
 * weight of 8k rows repacked, q4_K_8x8). */
static int unpack(const void *blk, int q[256], int sc[16], int m[16], float *d, float *dmin) {
    return vkf_k4_unpack(blk, 0, q, sc, m, d, dmin);
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    return vkf_act_dot256(unpack, 144, VKF_MINS_LANES4, 0, vkf_dot256_order_of(flags, 1), w, a, k);
}

const vkf_wtype vkf_wtype_q4_k = {"Q4_K", 12,    256, 144,          1,       64, 2, {0, 2}, deq,
                                  dot,    quant, 1,   VKF_ACT_Q8_K, act_dot, 0,  0};
