#version 450
/* Peak probes: every benchmark figure is divided by a peak measured on the same device in the
 * same run (bench --kernels). MODE selects the probe:
 *   1 FMA fp32: 8 independent vec4 fma chains per invocation, `iters` steps (64 flop/step);
 *   2 FMA fp16: the same in f16vec4 (VKF_FP16 devices only);
 *   3 copy: dst[i] = src[i] in vec4, grid-stride (bytes moved = 2 x 16 n);
 *   4 read float, consecutive lanes;  5 read vec4, consecutive lanes;
 *   6 read vec4, each invocation a contiguous span of `span` vec4 (lane-strided);
 *   7 read vec4, every lane the same address (a loop counter: not provably uniform);
 *   8 read 16-byte texels (R32G32B32A32_UINT texel buffer at binding 2): each subgroup a
 *     contiguous chunk, consecutive lanes on consecutive texels (needs subgroups);
 *   9 copy texel to texel (binding 1 a texel buffer too);
 *  10 FMA fp32 like 1, but CHAINS independent vec4 chains as separate variables (an array
 *     indexed in a loop may live in memory on some compilers, llvmpipe's among them), and
 *     the workgroup count chosen by the host: the best of 1 and 10 is the FMA peak.
 * Read modes sum what they read and write one value per invocation (kept live).
 * Bindings: 1 dst, 2 src. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#ifndef MODE
#define MODE 1
#endif
#if MODE == 2
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#if MODE == 8
#extension GL_KHR_shader_subgroup_basic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform PC {
    vkf_pc_probe p;
};

#if MODE == 9
layout(set = 0, binding = 1, rgba32ui) uniform writeonly uimageBuffer Dt;
#else
layout(set = 0, binding = 1) buffer D { vec4 d[]; };
#endif
#if MODE >= 8
layout(set = 0, binding = 2, rgba32ui) uniform readonly uimageBuffer St;
#else
layout(set = 0, binding = 2) readonly buffer S { vec4 s[]; };
layout(set = 0, binding = 2) readonly buffer S1 { float s1[]; };
#endif

void main() {
    uint gid = gl_GlobalInvocationID.x;
    uint nthreads = gl_NumWorkGroups.x * WG;
#if MODE == 1
    vec4 acc[8];
    for (uint j = 0; j < 8u; j++) acc[j] = vec4(float(gid) * 1e-7 + float(j));
    vec4 m = vec4(p.a), c = vec4(p.b);
    for (uint i = 0; i < p.iters; i++) {
        for (uint j = 0; j < 8u; j++) acc[j] = fma(acc[j], m, c);
    }
    vec4 t = vec4(0.0);
    for (uint j = 0; j < 8u; j++) t += acc[j];
    d[gid] = t;
#elif MODE == 10
#ifndef CHAINS
#define CHAINS 16
#endif
    vec4 m = vec4(p.a), c = vec4(p.b), g = vec4(float(gid) * 1e-7);
    vec4 a0 = g, a1 = g + 1.0, a2 = g + 2.0, a3 = g + 3.0, a4 = g + 4.0, a5 = g + 5.0, a6 = g + 6.0,
         a7 = g + 7.0;
#if CHAINS > 8
    vec4 a8 = g + 8.0, a9 = g + 9.0, a10 = g + 10.0, a11 = g + 11.0, a12 = g + 12.0, a13 = g + 13.0,
         a14 = g + 14.0, a15 = g + 15.0;
#endif
    for (uint i = 0; i < p.iters; i++) {
        a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);
        a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);
#if CHAINS > 8
        a8 = fma(a8, m, c); a9 = fma(a9, m, c); a10 = fma(a10, m, c); a11 = fma(a11, m, c);
        a12 = fma(a12, m, c); a13 = fma(a13, m, c); a14 = fma(a14, m, c); a15 = fma(a15, m, c);
#endif
    }
    vec4 t = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
#if CHAINS > 8
    t += a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15;
#endif
    d[gid] = t;
#elif MODE == 2
    f16vec4 acc[8];
    for (uint j = 0; j < 8u; j++) acc[j] = f16vec4(float16_t(j));
    f16vec4 m = f16vec4(float16_t(p.a)), c = f16vec4(float16_t(p.b));
    for (uint i = 0; i < p.iters; i++) {
        for (uint j = 0; j < 8u; j++) acc[j] = fma(acc[j], m, c);
    }
    f16vec4 t = f16vec4(0.0);
    for (uint j = 0; j < 8u; j++) t += acc[j];
    d[gid] = vec4(t);
#elif MODE == 3
    for (uint i = gid; i < p.n; i += nthreads) d[i] = s[i];
#elif MODE == 4
    float acc = 0.0;
    for (uint i = gid; i < p.n * 4u; i += nthreads) acc += s1[i];
    d[gid] = vec4(acc);
#elif MODE == 5
    vec4 acc = vec4(0.0);
    for (uint i = gid; i < p.n; i += nthreads) acc += s[i];
    d[gid] = acc;
#elif MODE == 6
    vec4 acc = vec4(0.0);
    for (uint b = gid * p.span; b < p.n; b += nthreads * p.span)
        for (uint j = 0; j < p.span; j++) acc += s[b + j];
    d[gid] = acc;
#elif MODE == 8
    /* each subgroup streams its own contiguous chunk (as the rows of a matrix-vector kernel),
     * its lanes on consecutive texels, four loads in flight */
    uint S = gl_SubgroupSize, nsg = gl_NumWorkGroups.x * gl_NumSubgroups;
    uint sgi = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    uint chunk = (p.n + nsg - 1u) / nsg;
    uint lo = sgi * chunk, hi = min(lo + chunk, p.n);
    uvec4 a0 = uvec4(0u), a1 = uvec4(0u), a2 = uvec4(0u), a3 = uvec4(0u);
    uint i = lo + gl_SubgroupInvocationID;
    for (; i + 3u * S < hi; i += 4u * S) {
        a0 += imageLoad(St, int(i));
        a1 += imageLoad(St, int(i + S));
        a2 += imageLoad(St, int(i + 2u * S));
        a3 += imageLoad(St, int(i + 3u * S));
    }
    for (; i < hi; i += S) a0 += imageLoad(St, int(i));
    d[gid] = vec4(a0 + a1 + a2 + a3);
#elif MODE == 9
    for (uint i = gid; i < p.n; i += nthreads) imageStore(Dt, int(i), imageLoad(St, int(i)));
#else
    vec4 acc = vec4(0.0);
    uint per = p.n / nthreads;
    uint base = (gid / WG) * WG * per;
    for (uint i = 0; i < WG * per; i++) acc += s[base + i];
    d[gid] = acc;
#endif
}
