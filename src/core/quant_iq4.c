/* ggml's IQ4_NL / IQ4_XS quantization without an importance matrix, shared by both rows of the
 * traits table (core/types/iq4_*.c; see quant.h): each value is the index of the nearest of 16
 * non-linear levels (vkf_iq4nl_values) times a block scale, the scale searched over 15
 * candidates with weights x^2. IQ4_XS adds 6-bit sub-block scales of each 32 against an f16
 * super-scale. */
#include "core/quant.h"

#include <math.h>

/* Index of the level nearest to x in the sorted val[0..n), ties to the upper one. */
static int best_index_int8(int n, const int8_t *val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

/* See quant.h. */
void vkf_quantize_iq4_block(int sb, int bs, const float *x, uint16_t *dh, uint8_t *q4,
                            uint16_t *scales_h, uint8_t *scales_l, int ntry) {
    const int8_t *values = vkf_iq4nl_values;
    float scales[VKF_QK_K / 32], weight[32];
    uint8_t L[VKF_QK_K];
    memset(q4, 0, (size_t)sb / 2);
    *dh = vkf_f32_to_f16(0.f);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < sb / bs; ++ib) {
        const float *xb = x + ib * bs;
        uint8_t *Lb = L + ib * bs;
        for (int j = 0; j < bs; ++j)
            weight[j] = xb[j] * xb[j];
        const float max = vkf_quant_signed_absmax(xb, bs);
        if (fabsf(max) < VKF_GROUP_MAX_EPS) {
            scales[ib] = 0;
            continue;
        }
        float d = ntry > 0 ? -max / values[0] : max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < bs; ++j) {
            int l = best_index_int8(16, values, id * xb[j]);
            Lb[j] = (uint8_t)l;
            float q = values[l], w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; ++itry) {
            id = (itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < bs; ++j) {
                int l = best_index_int8(16, values, id * xb[j]);
                float q = values[l], w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if (fabsf(d) > amax_scale) {
            amax_scale = fabsf(d);
            max_scale = d;
        }
    }
    if (sb / bs > 1) {
        int nb = sb / bs;
        memset(scales_h, 0, (size_t)((nb + 7) / 8) * sizeof(uint16_t));
        float d = -max_scale / 32;
        *dh = vkf_f32_to_f16(d);
        float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < nb; ++ib) {
            int l = vkf_nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            float dl = d * l;
            float idl = dl ? 1 / dl : 0.f;
            uint8_t *Lb = L + ib * bs;
            const float *xb = x + ib * bs;
            for (int j = 0; j < bs; ++j)
                Lb[j] = (uint8_t)best_index_int8(16, values, idl * xb[j]);
            l += 32;
            uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
            if (ib % 2 == 0)
                scales_l[ib / 2] = l_l;
            else
                scales_l[ib / 2] |= (uint8_t)(l_l << 4);
            scales_h[ib / 8] |= (uint16_t)(l_h << 2 * (ib % 8));
        }
    } else {
        *dh = vkf_f32_to_f16(scales[0]);
        if (ntry > 0) { /* without the search the first pass's levels stay (ggml) */
            float id = scales[0] ? 1 / scales[0] : 0;
            for (int j = 0; j < sb; ++j)
                L[j] = (uint8_t)best_index_int8(16, values, id * x[j]);
        }
    }
    for (int i = 0; i < sb / 32; ++i)
        for (int j = 0; j < 16; ++j)
            q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

/* See quant.h. */
void vkf_quantize_kv_row(vkf_dtype t, const float *src, void *dst, int64_t n) {
    if (t != VKF_DTYPE_IQ4_NL) {
        vkf_quantize_row(t, src, dst, n);
        return;
    }
    vkf_block_iq4_nl *y = dst;
    for (int64_t i = 0; i < n / 32; i++)
        vkf_quantize_iq4_block(32, 32, src + 32 * i, &y[i].d, y[i].qs, NULL, NULL, -1);
}
