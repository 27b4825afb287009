/* ggml's activation quantizers and the summation orders of its integer dot products (see
 * quant_dot.h). Integer sums are exact; the float combination per block follows ggml's: the
 * product of the two scales times the block's integer sum, minus the mins term for the types
 * with a min, accumulated in float. The weight types' own parts (block decoding, which order)
 * are in their rows of the traits table (core/types/). */
#include "core/quant_dot.h"

#include <math.h>
#include <string.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

/* ------------------------------------------------------------------ activation rows */

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

static void act_q8_0(const float *x, void *dst, int64_t k) {
    vkf_block_q8_0 *y = dst;
    float d;
    for (int64_t i = 0; i < k / 32; i++)
        q8_block(x + 32 * i, y[i].qs, &y[i].d, &d);
}

static void act_q8_1(const float *x, void *dst, int64_t k) {
    vkf_block_q8_1 *y = dst;
    float d;
    for (int64_t i = 0; i < k / 32; i++) {
        int sum = q8_block(x + 32 * i, y[i].qs, &y[i].d, &d);
        y[i].s = vkf_f32_to_f16(d * (float)sum);
    }
}

static void act_q8_k(const float *x, void *dst, int64_t k) {
    vkf_block_q8_k *y = dst;
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

static void act_f16(const float *x, void *dst, int64_t k) {
    vkf_quantize_row(VKF_DTYPE_F16, x, dst, k);
}
static void act_bf16(const float *x, void *dst, int64_t k) {
    vkf_quantize_row(VKF_DTYPE_BF16, x, dst, k);
}
static void act_f32(const float *x, void *dst, int64_t k) { memcpy(dst, x, (size_t)k * 4); }

/* the activation types: elements and bytes per block, quantizer */
static const struct {
    int elems;
    size_t bytes;
    void (*quantize)(const float *x, void *dst, int64_t k);
} g_act[VKF_ACT_COUNT] = {
    [VKF_ACT_F32] = {1, 4, act_f32},
    [VKF_ACT_F16] = {1, 2, act_f16},
    [VKF_ACT_BF16] = {1, 2, act_bf16},
    [VKF_ACT_Q8_0] = {32, sizeof(vkf_block_q8_0), act_q8_0},
    [VKF_ACT_Q8_1] = {32, sizeof(vkf_block_q8_1), act_q8_1},
    [VKF_ACT_Q8_K] = {VKF_QK_K, sizeof(vkf_block_q8_k), act_q8_k},
};

vkf_act_type vkf_act_type_of(vkf_dtype w) {
    const vkf_wtype *wt = vkf_wtype_of(w);
    return wt && wt->act_dot ? (vkf_act_type)wt->act : VKF_ACT_F32;
}

size_t vkf_act_row_bytes(vkf_act_type t, int64_t k) {
    if ((unsigned)t >= VKF_ACT_COUNT) t = VKF_ACT_F32;
    return (size_t)(k / g_act[t].elems) * g_act[t].bytes;
}

void vkf_act_quantize(vkf_act_type t, const float *x, void *dst, int64_t k) {
    if ((unsigned)t >= VKF_ACT_COUNT) t = VKF_ACT_F32;
    g_act[t].quantize(x, dst, k);
}

float vkf_act_dot(vkf_dtype w, const void *wrow, const void *act, int64_t k, int flags) {
    const vkf_wtype *wt = vkf_wtype_of(w);
    return wt && wt->act_dot ? wt->act_dot(wrow, act, k, flags) : 0.0f;
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

/* lane[t] += scale(t) * sum of q[4t..4t+3] * a[4t..4t+3] over one 32-element chunk. */
static void lanes32(const int *q, const int8_t *a, const int *sc, int32_t lane[8]) {
    for (int t = 0; t < 8; t++) {
        int s = 0;
        for (int e = 4 * t; e < 4 * t + 4; e++)
            s += q[e] * a[e];
        lane[t] += sc[t] * s;
    }
}

float vkf_act_dot32(vkf_unpack32_fn unpack, size_t block_bytes, int with_min, const void *wrow,
                    const void *act, int64_t k, vkf_dot32_order order) {
    const vkf_block_q8_0 *a0 = act;
    const vkf_block_q8_1 *a1 = act;
    float acc[2][8] = {{0}}, summs = 0.0f;
    static const int one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    int q[32];
    const int64_t nb = k / 32;
    /* LANES2: an odd last block is the kernel's scalar tail, added after the lanes' sum */
    float tail_d = 0.0f;
    int32_t tail = 0;
    for (int64_t i = 0; i < nb; i++) {
        float dw = 0, mw = 0;
        unpack((const uint8_t *)wrow + (size_t)i * block_bytes, q, &dw, &mw);
        int32_t lane[8] = {0};
        lanes32(q, with_min ? a1[i].qs : a0[i].qs, one, lane);
        const float d = with_min ? dw * h(a1[i].d) : dw * h(a0[i].d);
        const int is_tail = order == VKF_DOT32_LANES2 && (nb & 1) && i == nb - 1;
        if (order == VKF_DOT32_BLOCKSUM || is_tail) { /* one scalar chain of whole-block sums */
            int32_t tot = 0;
            for (int t = 0; t < 8; t++)
                tot += lane[t];
            if (is_tail) {
                tail_d = d;
                tail = tot;
            } else
                acc[0][0] = fmaf((float)tot, d, acc[0][0]);
            continue;
        }
        float *c = acc[order == VKF_DOT32_LANES2 ? (int)(i & 1) : 0];
        for (int t = 0; t < 8; t++)
            c[t] = fmaf(d, (float)lane[t], c[t]);
        if (with_min) summs = fmaf(mw, h(a1[i].s), summs);
    }
    if (order == VKF_DOT32_BLOCKSUM) return acc[0][0];
    if (order == VKF_DOT32_LANES2)
        for (int t = 0; t < 8; t++)
            acc[0][t] += acc[1][t];
    const float sum = hsum8(acc[0]) + summs;
    /* `sumf += d * (sumi1 + sumi2)`: contracted to a fused multiply-add (GNU C, FMA target) */
    return order == VKF_DOT32_LANES2 && (nb & 1) ? fmaf(tail_d, (float)tail, sum) : sum;
}

/* Per super-block, the 8 lanes of scaled integer sums (see lanes32) and the mins (see
 * vkf_dot256_mins): acc = fma(d, lane, acc) with d = d_a * d_w, dmin = -d_a * dmin_w, as
 * ggml's AVX2 kernels; or the tiled kernel's one step per super-block (see quant_dot.h). */
vkf_dot256_order vkf_dot256_order_of(int flags, int repackable) {
    if (!(flags & VKF_DOT_LLAMA_2610)) return VKF_DOT256_LANES;
    if (repackable && (flags & VKF_DOT_REPACKED))
        return flags & VKF_DOT_GEMM4 ? VKF_DOT256_BLOCKSUM64 : VKF_DOT256_BLOCKSUM;
    return flags & VKF_DOT_BATCH8 ? VKF_DOT256_TILED : VKF_DOT256_LANES;
}

float vkf_act_dot256(vkf_unpack256_fn unpack, size_t block_bytes, vkf_dot256_mins mins, int bias,
                     vkf_dot256_order order, const void *wrow, const void *act, int64_t k) {
    const vkf_block_q8_k *a = act;
    int q[256], sc[16], m[16];
    float acc[8] = {0}, accm[4] = {0}, summs = 0.0f, tacc = 0.0f, tmin = 0.0f;
    for (int64_t i = 0; i < k / VKF_QK_K; i++) {
        float dw = 0, dminw = 0;
        memset(m, 0, sizeof m); /* types without mins leave them */
        int sub = unpack((const uint8_t *)wrow + (size_t)i * block_bytes, q, sc, m, &dw, &dminw);
        if (bias)
            for (int j = 0; j < 256; j++)
                q[j] += bias;
        int32_t lane[8] = {0};
        for (int c = 0; c < 8; c++) {
            int s8[8];
            for (int t = 0; t < 8; t++)
                s8[t] = sc[(32 * c + 4 * t) / sub];
            lanes32(q + 32 * c, a[i].qs + 32 * c, s8, lane);
        }
        if (bias) /* sub = 16: lane t holds the 16-groups 2t and 2t + 1 of the scales */
            for (int t = 0; t < 8; t++)
                lane[t] -=
                    bias * (sc[2 * t] * a[i].bsums[2 * t] + sc[2 * t + 1] * a[i].bsums[2 * t + 1]);
        int32_t pm[8] = {0}, total = 0; /* the min sums: per 16 (Q2_K) or per 32 values */
        for (int s = 0; s < 256 / sub; s++) {
            int bs = sub == 16 ? a[i].bsums[s] : a[i].bsums[2 * s] + a[i].bsums[2 * s + 1];
            pm[s * sub / 32] += m[s] * bs;
            total += m[s] * bs;
        }
        if (order == VKF_DOT256_BLOCKSUM64) { /* ggml_gemm_q4_K_8x8_q8_K's AVX2 loop over sb */
            const float dd = dw * a[i].d, dm = dminw * a[i].d;
            for (int sb = 0; sb < 4; sb++) {
                int32_t s1 = 0, s2 = 0;
                for (int j = 64 * sb; j < 64 * sb + 64; j++)
                    s1 += sc[j / sub] * q[j] * a[i].qs[j];
                for (int s = 64 * sb / sub; s < 64 * (sb + 1) / sub; s++)
                    s2 += m[s] *
                          (sub == 16 ? a[i].bsums[s] : a[i].bsums[2 * s] + a[i].bsums[2 * s + 1]);
                tacc = fmaf((float)s1, dd, tacc);
                tmin = fmaf((float)s2, dm, tmin);
            }
            continue;
        }
        if (order != VKF_DOT256_LANES) {
            int32_t s1 = 0;
            for (int t = 0; t < 8; t++)
                s1 += lane[t];
            if (order == VKF_DOT256_BLOCKSUM) {
                tacc = fmaf((float)s1, dw * a[i].d, tacc);
                tmin = fmaf((float)total, dminw * a[i].d, tmin);
                continue;
            }
            float res = dw * (float)s1;
            if (mins != VKF_MINS_NONE) res = fmaf(-dminw, (float)total, res);
            tacc = fmaf(res, a[i].d, tacc);
            continue;
        }
        const float d = a[i].d * dw, dmin = -a[i].d * dminw;
        if (mins == VKF_MINS_LANES8) /* one min per 16 elements, two per lane */
            for (int t = 0; t < 8; t++)
                acc[t] = fmaf(
                    dmin,
                    (float)(m[2 * t] * a[i].bsums[2 * t] + m[2 * t + 1] * a[i].bsums[2 * t + 1]),
                    acc[t]);
        if (mins == VKF_MINS_LANES4) /* one min per 32 elements, the pairs of them per lane */
            for (int u = 0; u < 4; u++)
                accm[u] = fmaf(dmin, (float)(pm[2 * u] + pm[2 * u + 1]), accm[u]);
        if (mins == VKF_MINS_SCALAR) summs = fmaf(dmin, (float)total, summs);
        for (int t = 0; t < 8; t++)
            acc[t] = fmaf(d, (float)lane[t], acc[t]);
    }
    if (order == VKF_DOT256_TILED) return tacc;
    if (order == VKF_DOT256_BLOCKSUM || order == VKF_DOT256_BLOCKSUM64) return tacc - tmin;
    float r = hsum8(acc);
    if (mins == VKF_MINS_LANES4) r += (accm[0] + accm[2]) + (accm[1] + accm[3]);
    if (mins == VKF_MINS_SCALAR) r += summs;
    return r;
}

/* halves (F16 / BF16) of both rows converted by cv, one scalar chain */
static float dot_half(const uint16_t *ww, const uint16_t *aa, int64_t k, float (*cv)(uint16_t)) {
    float s = 0.0f;
    for (int64_t j = 0; j < k; j++)
        s += cv(ww[j]) * cv(aa[j]);
    return s;
}

float vkf_act_dot_f16(const void *wrow, const void *act, int64_t k, int flags) {
    (void)flags;
    return dot_half(wrow, act, k, vkf_f16_to_f32);
}

float vkf_act_dot_bf16(const void *wrow, const void *act, int64_t k, int flags) {
    (void)flags;
    return dot_half(wrow, act, k, vkf_bf16_to_f32);
}

float vkf_act_dot_f32(const void *wrow, const void *act, int64_t k, int flags) {
    const float *ww = wrow, *aa = act;
    (void)flags;
    float s = 0.0f;
    for (int64_t j = 0; j < k; j++)
        s += ww[j] * aa[j];
    return s;
}
