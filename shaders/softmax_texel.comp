#version 450
/* SOFTMAX (LOG undefined) / LOG_SOFTMAX (LOG=1) on 16-byte texels: the semantics of
 * softmax.comp, one subgroup per row (WG / S rows per workgroup), lanes splitting the row in
 * texels. One pass keeps a running (max, sum of exp) per lane, merged across the subgroup with
 * subgroupMax / subgroupAdd; a second pass writes. No shared memory, no barriers.
 * cols, offsets and strides are multiples of 4 (host-checked).
 * Bindings: 1 dst (f32 buffer), 2 x, 3 mask (texels; bound to x and ignored when absent). */
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

#ifndef LOG
#define LOG 0
#endif

layout(push_constant) uniform PC {
    vkf_pc_softmax p;
};

layout(set = 0, binding = 1) writeonly buffer D { vec4 d[]; };
layout(set = 0, binding = 2, rgba32ui) uniform readonly uimageBuffer Xt;
layout(set = 0, binding = 3, rgba32ui) uniform readonly uimageBuffer Mt;

vec4 logits(uint xo, uint mo, uint c) {
    vec4 v = uintBitsToFloat(imageLoad(Xt, int(xo + c)));
#if !LOG
    v *= p.scale;
    if (p.has_mask != 0u) v += uintBitsToFloat(imageLoad(Mt, int(mo + c)));
#endif
    return v;
}

void main() {
    uint S = gl_SubgroupSize, l = gl_SubgroupInvocationID;
    uint row = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    if (row >= p.rows) return;
    uint c4 = p.cols / 4u;
    uint xo = (p.x_off + row * p.x_stride) >> 2, mo = (p.m_off + row * p.m_stride) >> 2;
    uint dof = (p.d_off + row * p.d_stride) >> 2;
    /* running max and sum of exp(v - max) per lane */
    float m = VKF_NEG_INF, s = 0.0;
    for (uint c = l; c < c4; c += S) {
        vec4 v = logits(xo, mo, c);
        float mn = max(m, max(max(v.x, v.y), max(v.z, v.w)));
        if (mn == VKF_NEG_INF) continue; /* everything so far masked */
        vec4 e = exp(v - mn);
        s = s * exp(m - mn) + e.x + e.y + e.z + e.w;
        m = mn;
    }
    float M = subgroupMax(m);
#if !LOG
    if (M == VKF_NEG_INF) { /* every entry masked: no distribution, zeros */
        for (uint c = l; c < c4; c += S) d[dof + c] = vec4(0.0);
        return;
    }
#endif
    float tot = subgroupAdd(m == VKF_NEG_INF ? 0.0 : s * exp(m - M));
#if LOG
    float lse = M + log(tot);
    for (uint c = l; c < c4; c += S) d[dof + c] = logits(xo, mo, c) - lse;
#else
    float inv = 1.0 / tot;
    for (uint c = l; c < c4; c += S) d[dof + c] = exp(logits(xo, mo, c) - M) * inv;
#endif
}
