#version 450
/* MATMUL: dst[M,N] = a[M,K] . w[N,K]^T (+ bias[N]); w in any weight type (WTYPE), dequantized
 * here; accumulation in f32. Two variants:
 *   MATVEC=1 (M <= 8, decoding): a workgroup computes NOUT weight rows for all M activation
 *     rows; its threads split K and reduce (subgroup reductions when available, else shared
 *     memory). Workgroups are numbered over x and y (y*gx + x) so N may exceed 65535*NOUT.
 *   tiled (M > 8): BM x BN output tiles, BK-deep slices of a and w staged in shared memory,
 *     each thread TM x TN outputs.
 * Bindings: 1 dst (f32), 2 a (f32), 3 w (bytes as uint words), 4 bias (f32; bound to a and
 * ignored without bias). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;

#ifndef MATVEC
#define MATVEC 0
#endif

layout(push_constant) uniform PC {
    vkf_pc_matmul p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer A { float a[]; };
layout(set = 0, binding = 3) readonly buffer Wq { uint wq[]; };
layout(set = 0, binding = 4) readonly buffer Bias { float bias[]; };

#ifndef FAST
#define FAST 0
#endif
#if MATVEC && FAST
/* FAST=1 (the host checked alignment: a rows 16-byte aligned, K a multiple of the unit, float
 * weight rows 16-byte aligned, quantized rows 2-byte aligned): 16-byte loads, which lavapipe
 * turns into vector loads instead of per-lane gathers, and whole quant blocks per step. */
layout(set = 0, binding = 2) readonly buffer A4 { vec4 a4[]; };
layout(set = 0, binding = 3) readonly buffer Wq4 { uvec4 wq4[]; };
#define W_HAVE_QUAD
uvec4 w_quad(uint byte) { return wq4[byte >> 4]; }
#endif
uint w_word(uint byte) { return wq[byte >> 2]; }
#include "dtypes.glsl"

#if MATVEC
/* ---------------------------------------------------------------- matrix-vector, M <= 8 */
#ifndef MV_M
#define MV_M 8
#endif
#define MV_MAXM MV_M
#ifndef NOUT
#define NOUT 4u /* weight rows per workgroup */
#endif

#ifndef ROWLANE
#define ROWLANE 0
#endif
#if FAST
#define UNIT W_UNIT
#define UV W_UV
#endif

#if VKF_HAS_SUBGROUP
shared float red[(WG / VKF_SUBGROUP_MIN + 1) * NOUT * MV_MAXM];
#else
shared float red[WG];
#endif

#if FAST && ROWLANE
/* ROWLANE=1 (CPU devices such as lavapipe, which run invocations as SIMD lanes): one weight
 * row per invocation against a block of up to MV_M activation rows (workgroup z), the
 * activations read at lane-uniform addresses (scalar loads), no reduction. Used for any M. */
void main() {
    uint n = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationIndex;
    bool live = n < p.N;
    uint rowb = p.w_boff + min(n, p.N - 1u) * p.w_bstride;
    uint mb = gl_WorkGroupID.z * uint(MV_MAXM); /* z: blocks of MV_M activation rows */
    uint M = min(p.M - mb, uint(MV_MAXM));
    float acc[MV_MAXM];
    for (uint m = 0; m < MV_MAXM; m++) acc[m] = 0.0;
    uint nunits = p.K / UNIT;
    for (uint u = 0; u < nunits; u++) {
        vec4 wv[UV];
        float sc = w_unit(rowb, u, wv);
        uint a4i = (p.a_off + mb * p.a_stride + u * UNIT) >> 2;
        for (uint m = 0; m < MV_MAXM; m++) {
            if (m < M) {
                uint ai = a4i + ((m * p.a_stride) >> 2);
                float s = 0.0;
                for (uint i = 0; i < UV; i++) s += dot(a4[ai + i], wv[i]);
                acc[m] += sc * s;
            }
        }
    }
    if (live)
        for (uint m = 0; m < MV_MAXM; m++)
            if (m < M) d[p.d_off + (mb + m) * p.d_stride + n] = acc[m] + (p.has_bias != 0u ? bias[p.b_off + n] : 0.0);
}
#else
void main() {
    uint t = gl_LocalInvocationIndex;
    uint grp = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint n0 = grp * NOUT;
    if (n0 >= p.N) return; /* uniform across the workgroup */
    uint M = min(p.M, uint(MV_MAXM));
    float acc[NOUT][MV_MAXM];
    uint rowb[NOUT];
    for (uint o = 0; o < NOUT; o++) {
        rowb[o] = p.w_boff + min(n0 + o, p.N - 1u) * p.w_bstride;
        for (uint m = 0; m < MV_MAXM; m++) acc[o][m] = 0.0;
    }
#if FAST
    uint nunits = p.K / UNIT;
    for (uint u = t; u < nunits; u += WG) {
        uint a4i = (p.a_off + u * UNIT) >> 2;
        for (uint o = 0; o < NOUT; o++) {
            vec4 wv[UV];
            float sc = w_unit(rowb[o], u, wv);
            for (uint m = 0; m < MV_MAXM; m++) {
                if (m < M) {
                    uint ai = a4i + ((m * p.a_stride) >> 2);
                    float s = 0.0;
                    for (uint i = 0; i < UV; i++) s += dot(a4[ai + i], wv[i]);
                    acc[o][m] += sc * s;
                }
            }
        }
    }
#else
    if ((p.K & 3u) == 0u) {
        for (uint k = t * 4u; k < p.K; k += WG * 4u) {
            vec4 av[MV_MAXM];
            for (uint m = 0; m < MV_MAXM; m++) {
                if (m < M) {
                    uint ai = p.a_off + m * p.a_stride + k;
                    av[m] = vec4(a[ai], a[ai + 1u], a[ai + 2u], a[ai + 3u]);
                }
            }
            for (uint o = 0; o < NOUT; o++) {
                vec4 wv = w_at4(rowb[o], k);
                for (uint m = 0; m < MV_MAXM; m++)
                    if (m < M) acc[o][m] += dot(av[m], wv);
            }
        }
    } else {
        for (uint k = t; k < p.K; k += WG) {
            for (uint o = 0; o < NOUT; o++) {
                float wv = w_at(rowb[o], k);
                for (uint m = 0; m < MV_MAXM; m++)
                    if (m < M) acc[o][m] += a[p.a_off + m * p.a_stride + k] * wv;
            }
        }
    }
#endif
    /* reduce each (o, m) over the workgroup */
#if VKF_HAS_SUBGROUP
    for (uint o = 0; o < NOUT; o++)
        for (uint m = 0; m < MV_MAXM; m++) {
            if (m < M) {
                float s = subgroupAdd(acc[o][m]);
                if (subgroupElect()) red[gl_SubgroupID * NOUT * MV_MAXM + o * MV_MAXM + m] = s;
            }
        }
    barrier();
    if (t < NOUT * MV_MAXM) {
        uint o = t / MV_MAXM, m = t % MV_MAXM;
        if (m < M && n0 + o < p.N) {
            float s = 0.0;
            for (uint g = 0; g < gl_NumSubgroups; g++) s += red[g * NOUT * MV_MAXM + t];
            if (p.has_bias != 0u) s += bias[p.b_off + n0 + o];
            d[p.d_off + m * p.d_stride + n0 + o] = s;
        }
    }
#else
    for (uint o = 0; o < NOUT; o++)
        for (uint m = 0; m < MV_MAXM; m++) {
            if (m >= M) break; /* uniform */
            red[t] = acc[o][m];
            barrier();
            for (uint s = WG / 2u; s > 0u; s >>= 1) {
                if (t < s) red[t] += red[t + s];
                barrier();
            }
            if (t == 0u && n0 + o < p.N) {
                float r = red[0];
                if (p.has_bias != 0u) r += bias[p.b_off + n0 + o];
                d[p.d_off + m * p.d_stride + n0 + o] = r;
            }
            barrier();
        }
#endif
}

#endif /* ROWLANE */

#else
/* ---------------------------------------------------------------- tiled, M > 8 */
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
#ifndef TT
#define TT 4 /* outputs per invocation, TT x TT: 8 halves the shared-memory reads per FMA */
#endif
#define TM TT
#define TN TT
/* WG == (BM / TM) * (BN / TN), chosen by the host */

shared float As[BK * BM]; /* [k][m] */
shared float Bs[BK * BN]; /* [k][n] */

void main() {
    uint t = gl_LocalInvocationIndex;
    uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
    uint tn = t % (BN / TN), tm = t / (BN / TN);
    float acc[TM][TN];
    for (uint i = 0; i < TM; i++)
        for (uint j = 0; j < TN; j++) acc[i][j] = 0.0;
    bool vec = (p.K & 3u) == 0u;
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        /* stage a[m0.., k0..] as As[k][m] */
        for (uint i = t; i < BM * BK; i += WG) {
            uint m = i / BK, k = i % BK;
            float v = 0.0;
            if (m0 + m < p.M && k0 + k < p.K) v = a[p.a_off + (m0 + m) * p.a_stride + k0 + k];
            As[k * BM + m] = v;
        }
        /* stage w[n0.., k0..] dequantized as Bs[k][n] */
        if (vec) {
            for (uint i = t; i < BN * (BK / 4u); i += WG) {
                uint n = i / (BK / 4u), k = (i % (BK / 4u)) * 4u;
                vec4 v = vec4(0.0);
                if (n0 + n < p.N && k0 + k < p.K) v = w_at4(p.w_boff + (n0 + n) * p.w_bstride, k0 + k);
                Bs[k * BN + n] = v.x;
                Bs[(k + 1u) * BN + n] = v.y;
                Bs[(k + 2u) * BN + n] = v.z;
                Bs[(k + 3u) * BN + n] = v.w;
            }
        } else {
            for (uint i = t; i < BN * BK; i += WG) {
                uint n = i / BK, k = i % BK;
                float v = 0.0;
                if (n0 + n < p.N && k0 + k < p.K) v = w_at(p.w_boff + (n0 + n) * p.w_bstride, k0 + k);
                Bs[k * BN + n] = v;
            }
        }
        barrier();
        for (uint k = 0; k < BK; k++) {
            float av[TM], bv[TN];
            for (uint i = 0; i < TM; i++) av[i] = As[k * BM + tm * TM + i];
            for (uint j = 0; j < TN; j++) bv[j] = Bs[k * BN + tn * TN + j];
            for (uint i = 0; i < TM; i++)
                for (uint j = 0; j < TN; j++) acc[i][j] += av[i] * bv[j];
        }
        barrier();
    }
    for (uint i = 0; i < TM; i++) {
        uint m = m0 + tm * TM + i;
        if (m >= p.M) break;
        for (uint j = 0; j < TN; j++) {
            uint n = n0 + tn * TN + j;
            if (n >= p.N) break;
            float v = acc[i][j];
            if (p.has_bias != 0u) v += bias[p.b_off + n];
            d[p.d_off + m * p.d_stride + n] = v;
        }
    }
}
#endif
