/* ggml's K-quant searches without an importance matrix, shared by the Q2_K..Q6_K rows of the
 * traits table (core/types/q*_k.c; see quant.h). Each super-block of 256 is split into
 * sub-blocks whose scale (and min) are searched here, then the type's quantizer quantizes the
 * scales to 4, 6 or 8 bits against an f16 super-scale and re-quantizes the values with the
 * scales as stored. */
#include "core/quant.h"

#include <math.h>

/* Symmetric quantization to [-nmax, nmax) with weights x^2, trying 19 scales around -nmax/max
 * and keeping the best weighted least-squares fit (ggml's make_qx_quants, rmse_type 1). L gets
 * the levels offset by nmax. Returns the scale. */
float vkf_make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    const float max = vkf_quant_signed_absmax(x, n);
    if (fabsf(max) < VKF_GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = vkf_clampi(vkf_nearest_int(iscale * x[i]), -nmax, nmax - 1);
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
            int l = vkf_clampi(vkf_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i)
                L[i] = (int8_t)(nmax + vkf_clampi(vkf_nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Symmetric 3-bit levels with an iterative per-element refinement (weights x^2) of the
 * least-squares scale (ggml's make_q3_quants with do_rmse). L gets levels offset by nmax. */
float vkf_make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    const float max = vkf_quant_signed_absmax(x, n);
    if (fabsf(max) < VKF_GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = vkf_clampi(vkf_nearest_int(iscale * x[i]), -nmax, nmax - 1);
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
                int new_l = vkf_clampi(vkf_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
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
float vkf_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
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
        L[i] = (uint8_t)vkf_clampi(l, 0, nmax);
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
            int l = vkf_clampi(vkf_nearest_int(iscale * (x[i] - min)), 0, nmax);
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
void vkf_quant_pack2_k(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < VKF_QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
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
void vkf_quantize_kx(const float *x, int nmax, float rmin, int nstep, uint16_t *dd, uint16_t *dmin,
                     uint8_t *sc6, uint8_t *L) {
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
        scales[j] = vkf_make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
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
            L[32 * j + ii] =
                (uint8_t)vkf_clampi(vkf_nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
    }
}
