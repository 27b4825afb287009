/* Q2_K: super-blocks of 256: 16 bytes of scales (per 16 elements: low nibble scale, high nibble
 * min), 64 bytes of 2-bit quants, f16 d, f16 dmin. Element e: n = e / 128, j = e % 128 / 32,
 * l = e % 32; q = (qs[32n + l] >> 2j) & 3; x = d * sc * q - dmin * m with sc|m = scales[e / 16]
 * (84 bytes). */
#include <math.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q2_k *b = src;
    for (int64_t i = 0; i < n / 256; i++, dst += 256) {
        float d = vkf_f16_to_f32(b[i].d), dmin = vkf_f16_to_f32(b[i].dmin);
        for (int e = 0; e < 256; e++) {
            int sc = b[i].scales[e / 16];
            int q = (b[i].qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
            dst[e] = d * (float)(sc & 15) * (float)q - dmin * (float)(sc >> 4);
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 84)

/* ggml's quantize_row_q2_K_ref: 16 sub-blocks of 16 with a 4-bit scale and min each. */
static void quant(const float *x, void *dst, int64_t k) {
    vkf_block_q2_k *y = dst;
    uint8_t L[VKF_QK_K], Laux[16];
    float weights[16], mins[VKF_QK_K / 16], scales[VKF_QK_K / 16];
    const float q4scale = 15.f;
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < VKF_QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = vkf_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                             -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            float iscale = q4scale / max_scale;
            for (int j = 0; j < VKF_QK_K / 16; ++j)
                y[i].scales[j] = (uint8_t)vkf_nearest_int(iscale * scales[j]);
            y[i].d = vkf_f32_to_f16(max_scale / q4scale);
        } else {
            for (int j = 0; j < VKF_QK_K / 16; ++j)
                y[i].scales[j] = 0;
            y[i].d = vkf_f32_to_f16(0.f);
        }
        if (max_min > 0) {
            float iscale = q4scale / max_min;
            for (int j = 0; j < VKF_QK_K / 16; ++j)
                y[i].scales[j] |= (uint8_t)(vkf_nearest_int(iscale * mins[j]) << 4);
            y[i].dmin = vkf_f32_to_f16(max_min / q4scale);
        } else {
            y[i].dmin = vkf_f32_to_f16(0.f);
        }
        for (int j = 0; j < VKF_QK_K / 16; ++j) {
            const float d = vkf_f16_to_f32(y[i].d) * (y[i].scales[j] & 0xF);
            if (!d) continue;
            const float dm = vkf_f16_to_f32(y[i].dmin) * (y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] =
                    (uint8_t)vkf_clampi(vkf_nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
        }
        vkf_quant_pack2_k(L, y[i].qs);
    }
}

/* llama.cpp: Q8_K activations, 8 lanes; one min per 16 values, fused into the lanes. */
static int unpack(const void *blk, int q[256], int sc[16], int m[16], float *d, float *dmin) {
    const vkf_block_q2_k *b = blk;
    for (int j = 0; j < 256; j++)
        q[j] = (b->qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
    for (int s = 0; s < 16; s++) {
        sc[s] = b->scales[s] & 15;
        m[s] = b->scales[s] >> 4;
    }
    *d = vkf_f16_to_f32(b->d);
    *dmin = vkf_f16_to_f32(b->dmin);
    return 16;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    return vkf_act_dot256(unpack, 84, VKF_MINS_LANES8, 0, vkf_dot256_order_of(flags, 0), w, a, k);
}

const vkf_wtype vkf_wtype_q2_k = {"Q2_K", 10,    256, 84,           1,       32, 2, {80, 82}, deq,
                                  dot,    quant, 0,   VKF_ACT_Q8_K, act_dot, 0,  0};
