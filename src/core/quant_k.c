/* ggml's K-quant reference quantizers without an importance matrix: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K
 * (see quant.h). Each super-block of 256 is split into sub-blocks whose scale (and min) are
 * searched by the helpers below, then the scales are quantized to 4, 6 or 8 bits against an f16
 * super-scale and the values re-quantized with the scales as stored. */
#include "core/quant.h"

#include <math.h>

#define GROUP_MAX_EPS 1e-15f /* ggml: a sub-block below this |max| is all zero */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Symmetric quantization to [-nmax, nmax) with weights x^2, trying 19 scales around -nmax/max
 * and keeping the best weighted least-squares fit (ggml's make_qx_quants, rmse_type 1). L gets
 * the levels offset by nmax. Returns the scale. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = clampi(vkf_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = clampi(vkf_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i)
                L[i] = (int8_t)(nmax + clampi(vkf_nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Symmetric 3-bit levels with an iterative per-element refinement (weights x^2) of the
 * least-squares scale (ggml's make_q3_quants with do_rmse). L gets levels offset by nmax. */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = clampi(vkf_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                int new_l = clampi(vkf_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i)
        L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Asymmetric levels 0..nmax with a min <= 0: starts from (max - min) / nmax, then tries
 * nstep + 1 scales (rmin + rdelta * is + nmax) / (max - min), each with the weighted
 * least-squares scale and min, keeping the lowest weighted error (squared, or absolute with
 * use_mad) (ggml's make_qkx2_quants). *the_min gets -min. */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                              float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                              int use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        int l = vkf_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)clampi(l, 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = clampi(vkf_nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i)
                    L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* 2-bit levels of 256 values: byte l of each 32-byte group holds values l, l+32, l+64, l+96. */
static void pack2(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < VKF_QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
}

void vkf_quantize_q2_k(const float *x, vkf_block_q2_k *y, int64_t k) {
    uint8_t L[VKF_QK_K], Laux[16];
    float weights[16], mins[VKF_QK_K / 16], scales[VKF_QK_K / 16];
    const float q4scale = 15.f;
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < VKF_QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
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
                L[16 * j + ii] = (uint8_t)clampi(vkf_nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
        }
        pack2(L, y[i].qs);
    }
}

void vkf_quantize_q3_k(const float *x, vkf_block_q3_k *y, int64_t k) {
    int8_t L[VKF_QK_K];
    float scales[VKF_QK_K / 16];
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < VKF_QK_K / 16; ++j) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
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
                int l = clampi((int8_t)vkf_nearest_int(iscale * scales[j]), -32, 31) + 32;
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
                L[16 * j + ii] = (int8_t)(clampi(vkf_nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
        }
        /* the high bit of value j goes to hmask[j % 32], bit j / 32 */
        memset(y[i].hmask, 0, VKF_QK_K / 8);
        for (int j = 0; j < VKF_QK_K; ++j)
            if (L[j] > 3) {
                y[i].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                L[j] -= 4;
            }
        pack2((const uint8_t *)L, y[i].qs);
    }
}

/* Scale and min of Q4_K / Q5_K: 8 pairs of 6-bit values packed in 12 bytes. */
static void put_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t *q) {
    if (j < 4) {
        q[j] = ls;
        q[j + 4] = lm;
    } else {
        q[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
        q[j - 4] |= (uint8_t)((ls >> 4) << 6);
        q[j] |= (uint8_t)((lm >> 4) << 6);
    }
}

static void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Shared by Q4_K (nmax 15) and Q5_K (nmax 31): 8 sub-blocks of 32 with scale and min, the
 * scales and mins quantized to 6 bits against max / 63. L gets levels 0..nmax. */
static void quantize_kx(const float *x, int nmax, float rmin, int nstep, uint16_t *dd,
                        uint16_t *dmin, uint8_t *sc6, uint8_t *L) {
    uint8_t Laux[32];
    float weights[32], mins[VKF_QK_K / 32], scales[VKF_QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < VKF_QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l)
            sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l)
            weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                     rmin, 0.1f, nstep, 0);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < VKF_QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)vkf_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)vkf_nearest_int(inv_min * mins[j]);
        put_scale_min_k4(j, ls < 63 ? ls : 63, lm < 63 ? lm : 63, sc6);
    }
    *dd = vkf_f32_to_f16(max_scale / 63.f);
    *dmin = vkf_f32_to_f16(max_min / 63.f);
    for (int j = 0; j < VKF_QK_K / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, sc6, &sc, &m);
        const float d = vkf_f16_to_f32(*dd) * sc;
        if (!d) continue;
        const float dm = vkf_f16_to_f32(*dmin) * m;
        for (int ii = 0; ii < 32; ++ii)
            L[32 * j + ii] = (uint8_t)clampi(vkf_nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
    }
}

void vkf_quantize_q4_k(const float *x, vkf_block_q4_k *y, int64_t k) {
    uint8_t L[VKF_QK_K];
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        memset(y[i].scales, 0, sizeof y[i].scales);
        quantize_kx(x, 15, -1.f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < VKF_QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; ++l)
                q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

void vkf_quantize_q5_k(const float *x, vkf_block_q5_k *y, int64_t k) {
    uint8_t L[VKF_QK_K];
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        memset(y[i].scales, 0, sizeof y[i].scales);
        quantize_kx(x, 31, -0.5f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
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

void vkf_quantize_q6_k(const float *x, vkf_block_q6_k *y, int64_t k) {
    int8_t L[VKF_QK_K];
    float scales[VKF_QK_K / 16];
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < VKF_QK_K / 16; ++ib) {
            const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) {
                max_abs_scale = fabsf(scale);
                max_scale = scale;
            }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {
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
                    (int8_t)(clampi(vkf_nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
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
