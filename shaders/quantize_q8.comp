#version 450
/* QUANTIZE_Q8: the activation side of the integer-dot decode path (matmul_q8.comp), as ggml
 * quantizes activations for its integer dot products (src/core/quant_dot.c, the CPU backend's
 * ggml-activation mode, which is this path's reference: docs/DESIGN.md, 'Precision'):
 *   QK = 32  (Q8_0 / Q8_1, for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL): per 32 values,
 *            d = max|x| / 127 rounded to f16, q = roundEven(x * (127 / max|x|)),
 *            s = f16(d * sum q) (the min term of Q4_1 / Q5_1);
 *   QK = 256 (Q8_K, for the K-quants and IQ4_XS): per 256 values, the value of largest |x|
 *            (the first on ties) gives iscale = -127 / max, q = min(roundEven(iscale * x), 127),
 *            d = 1 / iscale (f32).
 * Each 32 values become one 48-byte block, three 16-byte words: the 32 int8 (little-endian,
 * four a word, value 4i in the low byte of word i), then (d as f32 bits, s as f32 bits, the sum
 * of q[0..15], the sum of q[16..31]): the kernel dots packed words and corrects offsets and
 * mins with the 16-sums. Q8_K's d is repeated in its 8 blocks.
 *
 * Workgroups (x, row): the invocations of workgroup x take one block of 32 each, blocks
 * x * WG + t, then WG * (workgroups in x) further, in passes. NORM=1 (one workgroup per row: the
 * row's sum of squares comes first): the row is RMS-normalized and multiplied by the weight g
 * first (the RMSNorm before q/k/v or gate/up, fused here as the float kernels fuse it:
 * matmul_texel.comp NORM).
 *
 * Bindings: 1 q (the blocks, written), 2 x (f32 rows), 3 g (f32; bound to x without NORM). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64; /* a multiple of 8 (QK = 256: 8 blocks a group) */

#ifndef QK
#define QK 32
#endif
#ifndef NORM
#define NORM 0
#endif

layout(push_constant) uniform PC {
    vkf_pc_q8 p;
};

layout(set = 0, binding = 1) writeonly buffer Q { uvec4 q[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 3) readonly buffer G { float g[]; };

shared float sh_a[WG]; /* |max| of each invocation's block (and the norm's partial sums) */
shared float sh_s[WG]; /* the signed value at it */

/* an f32 rounded to f16 and back (the scales ggml stores as f16) */
float f16r(float v) { return unpackHalf2x16(packHalf2x16(vec2(v, 0.0))).x; }

void main() {
    uint row = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
    uint xo = p.x_off + row * p.x_stride, nb = p.K / 32u;
    float scale = 1.0;
#if NORM
    float ss = 0.0;
    for (uint i = t; i < p.K; i += WG) ss += x[xo + i] * x[xo + i];
    sh_a[t] = ss;
    barrier();
    for (uint h = WG / 2u; h > 0u; h /= 2u) {
        if (t < h) sh_a[t] += sh_a[t + h];
        barrier();
    }
    scale = 1.0 / sqrt(sh_a[0] / float(p.K) + p.eps);
    barrier();
#endif
    uint step = WG * gl_NumWorkGroups.x, b0 = gl_WorkGroupID.x * WG;
    uint passes = b0 < nb ? (nb - b0 + step - 1u) / step : 0u;
    for (uint ps = 0u; ps < passes; ps++) { /* uniform: the barriers below are reached by all */
        uint b = b0 + ps * step + t;
        bool ok = b < nb;
        float v[32];
        float amax = 0.0, smax = 0.0;
        for (uint j = 0u; j < 32u; j++) {
            float e = ok ? x[xo + 32u * b + j] : 0.0;
#if NORM
            e = ok ? (e * scale) * g[p.g_off + 32u * b + j] : 0.0;
#endif
            v[j] = e;
            if (abs(e) > amax) { /* the first one on ties, as ggml */
                amax = abs(e);
                smax = e;
            }
        }
        int qv[32];
        float d, s = 0.0;
#if QK == 256
        sh_a[t] = amax;
        sh_s[t] = smax;
        barrier();
        uint g0 = t & ~7u; /* the 8 blocks of this super-block, in order */
        float A = 0.0, Sm = 0.0;
        for (uint i = 0u; i < 8u; i++)
            if (sh_a[g0 + i] > A) {
                A = sh_a[g0 + i];
                Sm = sh_s[g0 + i];
            }
        barrier();
        float iscale = A != 0.0 ? -127.0 / Sm : 0.0;
        d = A != 0.0 ? 1.0 / iscale : 0.0;
        for (uint j = 0u; j < 32u; j++) qv[j] = min(int(roundEven(iscale * v[j])), 127);
#else
        float dd = amax / 127.0, id = amax != 0.0 ? 127.0 / amax : 0.0;
        int sum = 0;
        for (uint j = 0u; j < 32u; j++) {
            qv[j] = int(roundEven(v[j] * id));
            sum += qv[j];
        }
        d = f16r(dd);
        s = f16r(dd * float(sum));
#endif
        if (!ok) continue;
        uint w[8];
        int s0 = 0, s1 = 0;
        for (uint i = 0u; i < 8u; i++) {
            w[i] = (uint(qv[4u * i]) & 0xffu) | ((uint(qv[4u * i + 1u]) & 0xffu) << 8) |
                   ((uint(qv[4u * i + 2u]) & 0xffu) << 16) | ((uint(qv[4u * i + 3u]) & 0xffu) << 24);
        }
        for (uint j = 0u; j < 16u; j++) {
            s0 += qv[j];
            s1 += qv[j + 16u];
        }
        uint qo = p.q_off + row * p.q_stride + 3u * b;
        q[qo] = uvec4(w[0], w[1], w[2], w[3]);
        q[qo + 1u] = uvec4(w[4], w[5], w[6], w[7]);
        q[qo + 2u] = uvec4(floatBitsToUint(d), floatBitsToUint(s), uint(s0), uint(s1));
    }
}
