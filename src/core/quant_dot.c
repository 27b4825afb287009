/* ggml's activation quantizers and integer dot products (see quant_dot.h). Integer sums are
 * exact; the float combination per block follows ggml's: the product of the two scales times the
 * block's integer sum, minus the mins term for the types with a min, accumulated in float. */
#include "core/quant_dot.h"

#include <math.h>
#include <string.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"

vkf_act_type vkf_act_type_of(vkf_dtype w) {
    switch (w) {
    case VKF_DTYPE_F16: return VKF_ACT_F16;
    case VKF_DTYPE_BF16: return VKF_ACT_BF16;
    case VKF_DTYPE_Q4_0:
    case VKF_DTYPE_Q5_0:
    case VKF_DTYPE_Q8_0:
    case VKF_DTYPE_IQ4_NL: return VKF_ACT_Q8_0;
    case VKF_DTYPE_Q4_1:
    case VKF_DTYPE_Q5_1: return VKF_ACT_Q8_1;
    case VKF_DTYPE_Q2_K:
    case VKF_DTYPE_Q3_K:
    case VKF_DTYPE_Q4_K:
    case VKF_DTYPE_Q5_K:
    case VKF_DTYPE_Q6_K:
    case VKF_DTYPE_IQ4_XS: return VKF_ACT_Q8_K;
    default: return VKF_ACT_F32;
    }
}

size_t vkf_act_row_bytes(vkf_act_type t, int64_t k) {
    switch (t) {
    case VKF_ACT_F16:
    case VKF_ACT_BF16: return (size_t)k * 2;
    case VKF_ACT_Q8_0: return (size_t)(k / 32) * sizeof(vkf_block_q8_0);
    case VKF_ACT_Q8_1: return (size_t)(k / 32) * sizeof(vkf_block_q8_1);
    case VKF_ACT_Q8_K: return (size_t)(k / VKF_QK_K) * sizeof(vkf_block_q8_k);
    default: return (size_t)k * 4;
    }
}

/* ggml's x86 quantize_row_q8_0 / q8_1: d = max / 127 stored as f16, the values multiplied by
 * 127 / max (not 1 / d) and rounded half to even (_mm256_round_ps). Returns the sum of qs. */
static int q8_block(const float *x, int8_t *qs, uint16_t *dh, float *dout) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.f, id = amax != 0.0f ? 127.f / amax : 0.0f;
    *dh = vkf_f32_to_f16(d);
    *dout = d;
    int sum = 0;
    for (int j = 0; j < 32; j++) {
        qs[j] = (int8_t)nearbyintf(x[j] * id);
        sum += qs[j];
    }
    return sum;
}

static void act_q8_k(const float *x, vkf_block_q8_k *y, int64_t k) {
    for (int64_t i = 0; i < k / VKF_QK_K; i++, x += VKF_QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < VKF_QK_K; ++j)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        if (!amax) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < VKF_QK_K; ++j) {
            int v = vkf_nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < VKF_QK_K / 16; ++j) {
            int sum = 0;
            for (int l = 0; l < 16; ++l)
                sum += y[i].qs[16 * j + l];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

void vkf_act_quantize(vkf_act_type t, const float *x, void *dst, int64_t k) {
    switch (t) {
    case VKF_ACT_F16: vkf_quantize_row(VKF_DTYPE_F16, x, dst, k); break;
    case VKF_ACT_BF16: vkf_quantize_row(VKF_DTYPE_BF16, x, dst, k); break;
    case VKF_ACT_Q8_0: {
        vkf_block_q8_0 *y = dst;
        float d;
        for (int64_t i = 0; i < k / 32; i++)
            q8_block(x + 32 * i, y[i].qs, &y[i].d, &d);
    } break;
    case VKF_ACT_Q8_1: {
        vkf_block_q8_1 *y = dst;
        float d;
        for (int64_t i = 0; i < k / 32; i++) {
            int sum = q8_block(x + 32 * i, y[i].qs, &y[i].d, &d);
            y[i].s = vkf_f32_to_f16(d * (float)sum);
        }
    } break;
    case VKF_ACT_Q8_K: act_q8_k(x, dst, k); break;
    default: memcpy(dst, x, (size_t)k * 4); break;
    }
}

/* ------------------------------------------------------------------ ggml's float combination
 *
 * ggml's x86 dot products (AVX2 code, also on AVX-512 machines; llamafile's tinyBLAS for the
 * 32-blocks in batches has the same per-element arithmetic) keep 8 float lanes: lane t takes the
 * integer sum of elements 4t..4t+3 of every 32 elements (times their sub-block scale), converted
 * to float and fused-multiply-added with the block's scale product; the lanes are added at the
 * end as hsum8 does. Reproducing that order makes the results bit-identical to llama.cpp's, so
 * an activation rounds the same way in the next quantization. */

static float hsum8(const float a[8]) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

static float h(uint16_t v) { return vkf_f16_to_f32(v); }

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* lane[t] += scale(t) * sum of q[4t..4t+3] * a[4t..4t+3] over one 32-element chunk. */
static void lanes32(const int *q, const int8_t *a, const int *sc, int32_t lane[8]) {
    for (int t = 0; t < 8; t++) {
        int s = 0;
        for (int e = 4 * t; e < 4 * t + 4; e++)
            s += q[e] * a[e];
        lane[t] += sc[t] * s;
    }
}

/* The 32 integer values of a 32-element block, and its f16 scale (and min). */
static void unpack32(vkf_dtype w, const void *blk, int *q, float *d, float *m) {
    *m = 0;
    switch (w) {
    case VKF_DTYPE_Q4_0: {
        const vkf_block_q4_0 *b = blk;
        for (int j = 0; j < 16; j++) {
            q[j] = (b->qs[j] & 15) - 8;
            q[j + 16] = (b->qs[j] >> 4) - 8;
        }
        *d = h(b->d);
    } break;
    case VKF_DTYPE_Q5_0: {
        const vkf_block_q5_0 *b = blk;
        uint32_t qh = le32(b->qh);
        for (int j = 0; j < 16; j++) {
            q[j] = ((b->qs[j] & 15) | (int)(((qh >> j) & 1) << 4)) - 16;
            q[j + 16] = ((b->qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4)) - 16;
        }
        *d = h(b->d);
    } break;
    case VKF_DTYPE_Q8_0: {
        const vkf_block_q8_0 *b = blk;
        for (int j = 0; j < 32; j++)
            q[j] = b->qs[j];
        *d = h(b->d);
    } break;
    case VKF_DTYPE_IQ4_NL: {
        const vkf_block_iq4_nl *b = blk;
        for (int j = 0; j < 16; j++) {
            q[j] = vkf_iq4nl_values[b->qs[j] & 15];
            q[j + 16] = vkf_iq4nl_values[b->qs[j] >> 4];
        }
        *d = h(b->d);
    } break;
    case VKF_DTYPE_Q4_1: {
        const vkf_block_q4_1 *b = blk;
        for (int j = 0; j < 16; j++) {
            q[j] = b->qs[j] & 15;
            q[j + 16] = b->qs[j] >> 4;
        }
        *d = h(b->d);
        *m = h(b->m);
    } break;
    case VKF_DTYPE_Q5_1: {
        const vkf_block_q5_1 *b = blk;
        uint32_t qh = le32(b->qh);
        for (int j = 0; j < 16; j++) {
            q[j] = (b->qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            q[j + 16] = (b->qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
        }
        *d = h(b->d);
        *m = h(b->m);
    } break;
    default: break;
    }
}

/* Q4_0, Q5_0, Q8_0, IQ4_NL with Q8_0 activations; Q4_1, Q5_1 with Q8_1 (plus sum of m * s, a
 * scalar fused multiply-add chain in ggml's build). IQ4_NL's single-row kernel alternates two
 * accumulators over even and odd blocks (chains = 2); tinyBLAS (batches) keeps one. Q4_0 weights
 * whose row count is a multiple of 8 are repacked by llama.cpp on AVX2 machines (q4_0_8x8), whose
 * kernels fuse each block's whole integer sum times the scales into one float (chains = 0). */
static float dot_32(vkf_dtype w, const void *wrow, const void *act, int64_t k, int chains) {
    const vkf_block_q8_0 *a0 = act;
    const vkf_block_q8_1 *a1 = act;
    const int with_min = w == VKF_DTYPE_Q4_1 || w == VKF_DTYPE_Q5_1;
    size_t bb = vkf_quant_block_bytes(w);
    float acc[2][8] = {{0}}, summs = 0.0f;
    static const int one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    int q[32];
    for (int64_t i = 0; i < k / 32; i++) {
        float dw = 0, mw = 0;
        unpack32(w, (const uint8_t *)wrow + (size_t)i * bb, q, &dw, &mw);
        int32_t lane[8] = {0};
        lanes32(q, with_min ? a1[i].qs : a0[i].qs, one, lane);
        const float d = with_min ? dw * h(a1[i].d) : dw * h(a0[i].d);
        if (chains == 0) { /* repacked Q4_0: one scalar chain of whole-block sums */
            int32_t tot = 0;
            for (int t = 0; t < 8; t++)
                tot += lane[t];
            acc[0][0] = fmaf((float)tot, d, acc[0][0]);
            continue;
        }
        float *c = acc[chains == 2 ? (int)(i & 1) : 0];
        for (int t = 0; t < 8; t++)
            c[t] = fmaf(d, (float)lane[t], c[t]);
        if (with_min) summs = fmaf(mw, h(a1[i].s), summs);
    }
    if (chains == 0) return acc[0][0];
    if (chains == 2)
        for (int t = 0; t < 8; t++)
            acc[0][t] += acc[1][t];
    return hsum8(acc[0]) + summs;
}

/* ------------------------------------------------------------------ 256-element weight blocks */

/* The 256 weight values of a K-quant / IQ4_XS super-block as integers before their sub-block
 * scale (q), the integer sub-block scales (sc, 16 of 16 or 8 of 32 values) and mins (m, for
 * Q2_K / Q4_K / Q5_K), with the float scales. Returns the sub-block length. */
static int unpack_k(vkf_dtype w, const void *blk, int *q, int *sc, int *m, float *d, float *dmin) {
    switch (w) {
    case VKF_DTYPE_Q2_K: {
        const vkf_block_q2_k *b = blk;
        for (int j = 0; j < 256; j++)
            q[j] = (b->qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
        for (int s = 0; s < 16; s++) {
            sc[s] = b->scales[s] & 15;
            m[s] = b->scales[s] >> 4;
        }
        *d = h(b->d);
        *dmin = h(b->dmin);
        return 16;
    }
    case VKF_DTYPE_Q3_K: {
        const vkf_block_q3_k *b = blk;
        for (int j = 0; j < 256; j++) {
            int lo = (b->qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
            q[j] = lo - ((b->hmask[j % 32] >> (j / 32)) & 1 ? 0 : 4);
        }
        for (int s = 0; s < 16; s++) {
            int lo = s < 8 ? b->scales[s] & 15 : b->scales[s - 8] >> 4;
            int hi = (b->scales[8 + s % 4] >> (2 * (s / 4))) & 3;
            sc[s] = (lo | (hi << 4)) - 32;
            m[s] = 0;
        }
        *d = h(b->d);
        *dmin = 0;
        return 16;
    }
    case VKF_DTYPE_Q4_K:
    case VKF_DTYPE_Q5_K: {
        const uint8_t *scales = w == VKF_DTYPE_Q4_K ? ((const vkf_block_q4_k *)blk)->scales
                                                    : ((const vkf_block_q5_k *)blk)->scales;
        const uint8_t *qs = w == VKF_DTYPE_Q4_K ? ((const vkf_block_q4_k *)blk)->qs
                                                : ((const vkf_block_q5_k *)blk)->qs;
        for (int j = 0; j < 256; j++) {
            int s = j / 32;
            q[j] = (qs[32 * (s / 2) + j % 32] >> (4 * (s & 1))) & 15;
            if (w == VKF_DTYPE_Q5_K)
                q[j] |= ((((const vkf_block_q5_k *)blk)->qh[j % 32] >> s) & 1) << 4;
        }
        for (int s = 0; s < 8; s++) {
            if (s < 4) {
                sc[s] = scales[s] & 63;
                m[s] = scales[s + 4] & 63;
            } else {
                sc[s] = (scales[s + 4] & 15) | ((scales[s - 4] >> 6) << 4);
                m[s] = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
            }
        }
        const uint16_t *dd = blk; /* d and dmin lead both blocks */
        *d = h(dd[0]);
        *dmin = h(dd[1]);
        return 32;
    }
    case VKF_DTYPE_Q6_K: {
        const vkf_block_q6_k *b = blk;
        for (int j = 0; j < 256; j++) {
            int half = j / 128, r = j % 128, l = r % 32, g = r / 32; /* g: 0..3 within the half */
            int lo = (b->ql[64 * half + l + 32 * (g & 1)] >> (4 * (g >> 1))) & 15;
            int hi = (b->qh[32 * half + l] >> (2 * g)) & 3;
            q[j] = (lo | (hi << 4)) - 32;
        }
        for (int s = 0; s < 16; s++) {
            sc[s] = b->scales[s];
            m[s] = 0;
        }
        *d = h(b->d);
        *dmin = 0;
        return 16;
    }
    case VKF_DTYPE_IQ4_XS: {
        const vkf_block_iq4_xs *b = blk;
        for (int j = 0; j < 256; j++) {
            int s = j / 32, l = j % 32;
            uint8_t byte = b->qs[16 * s + l % 16];
            q[j] = vkf_iq4nl_values[l < 16 ? byte & 15 : byte >> 4];
        }
        for (int s = 0; s < 8; s++) {
            int ls = ((b->scales_l[s / 2] >> (4 * (s & 1))) & 15) |
                     (((b->scales_h >> (2 * s)) & 3) << 4);
            sc[s] = ls - 32;
            m[s] = 0;
        }
        *d = h(b->d);
        *dmin = 0;
        return 32;
    }
    default: return 0;
    }
}

/* Per super-block, the 8 lanes of scaled integer sums (see lanes32) and the mins:
 *   Q2_K:               acc = fma(-dmin, mins lane, acc), then acc = fma(d, lane, acc);
 *   Q3_K, Q6_K, IQ4_XS: acc = fma(d, lane, acc);
 *   Q4_K:               acc = fma(d, lane, acc), 4 min lanes fma(-dmin, ..) added at the end;
 *   Q5_K:               acc = fma(d, lane, acc), the min total in a scalar fma chain;
 * with d = d_a * d_w, dmin = d_a * dmin_w, as ggml's AVX2 kernels. */
static float dot_k(vkf_dtype w, const void *wrow, const void *act, int64_t k) {
    const vkf_block_q8_k *a = act;
    size_t bb = vkf_quant_block_bytes(w);
    int q[256], sc[16], m[16];
    float acc[8] = {0}, accm[4] = {0}, summs = 0.0f;
    for (int64_t i = 0; i < k / VKF_QK_K; i++) {
        float dw = 0, dminw = 0;
        int sub = unpack_k(w, (const uint8_t *)wrow + (size_t)i * bb, q, sc, m, &dw, &dminw);
        int32_t lane[8] = {0};
        for (int c = 0; c < 8; c++) {
            int s8[8];
            for (int t = 0; t < 8; t++)
                s8[t] = sc[(32 * c + 4 * t) / sub];
            lanes32(q + 32 * c, a[i].qs + 32 * c, s8, lane);
        }
        const float d = a[i].d * dw, dmin = -a[i].d * dminw;
        if (w == VKF_DTYPE_Q2_K)
            for (int t = 0; t < 8; t++)
                acc[t] = fmaf(
                    dmin,
                    (float)(m[2 * t] * a[i].bsums[2 * t] + m[2 * t + 1] * a[i].bsums[2 * t + 1]),
                    acc[t]);
        if (w == VKF_DTYPE_Q4_K || w == VKF_DTYPE_Q5_K) {
            int32_t pm[4], total = 0;
            for (int u = 0; u < 4; u++) {
                int s0 = a[i].bsums[4 * u] + a[i].bsums[4 * u + 1],
                    s1 = a[i].bsums[4 * u + 2] + a[i].bsums[4 * u + 3];
                pm[u] = m[2 * u] * s0 + m[2 * u + 1] * s1;
                total += pm[u];
            }
            if (w == VKF_DTYPE_Q4_K)
                for (int u = 0; u < 4; u++)
                    accm[u] = fmaf(dmin, (float)pm[u], accm[u]);
            else
                summs = fmaf(dmin, (float)total, summs);
        }
        for (int t = 0; t < 8; t++)
            acc[t] = fmaf(d, (float)lane[t], acc[t]);
    }
    float r = hsum8(acc);
    if (w == VKF_DTYPE_Q4_K) r += (accm[0] + accm[2]) + (accm[1] + accm[3]);
    if (w == VKF_DTYPE_Q5_K) r += summs;
    return r;
}

float vkf_act_dot(vkf_dtype w, const void *wrow, const void *act, int64_t k, int flags) {
    switch (vkf_act_type_of(w)) {
    case VKF_ACT_F16:
    case VKF_ACT_BF16: {
        const uint16_t *ww = wrow, *aa = act;
        float s = 0.0f;
        for (int64_t j = 0; j < k; j++)
            s += w == VKF_DTYPE_F16 ? h(ww[j]) * h(aa[j])
                                    : vkf_bf16_to_f32(ww[j]) * vkf_bf16_to_f32(aa[j]);
        return s;
    }
    case VKF_ACT_Q8_0:
    case VKF_ACT_Q8_1: {
        int chains = 1;
        if (w == VKF_DTYPE_IQ4_NL && (flags & VKF_DOT_SINGLE_ROW)) chains = 2;
        if (w == VKF_DTYPE_Q4_0 && (flags & VKF_DOT_REPACKED)) chains = 0;
        return dot_32(w, wrow, act, k, chains);
    }
    case VKF_ACT_Q8_K: return dot_k(w, wrow, act, k);
    default: {
        const float *ww = wrow, *aa = act;
        float s = 0.0f;
        for (int64_t j = 0; j < k; j++)
            s += ww[j] * aa[j];
        return s;
    }
    }
}
