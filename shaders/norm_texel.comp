#version 450
/* LAYERNORM / RMSNORM (RMS=1) on 16-byte texels: the semantics of norm.comp, one subgroup per
 * row (WG / S rows per workgroup), lanes splitting the row in texels, statistics reduced with
 * subgroupAdd: no shared memory and no barriers, which CPU drivers run as costly context
 * switches. cols, offsets and strides are multiples of 4 (host-checked).
 * PAIR=1: two independent norms of the same width in one dispatch (the per-head q and k norms of
 * qwen3 and gemma3): rows from rows1 on read x_off2, write d_off2 and scale by w_off2.
 * RES=1: dst = residual + norm(x), the residual add after a post-norm (gemma) in the same pass;
 * the residual may be dst itself (each lane reads its texel before writing it).
 * Bindings: 1 dst (f32 buffer), 2 x, 3 weight, 4 bias, 5 residual (RES=1) (texels; absent ones
 * bound to x). */
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

#ifndef RMS
#define RMS 0
#endif
#ifndef RES
#define RES 0
#endif
#ifndef PAIR
#define PAIR 0
#endif

layout(push_constant) uniform PC {
    vkf_pc_norm p;
};

layout(set = 0, binding = 1) writeonly buffer D { vec4 d[]; };
layout(set = 0, binding = 2, rgba32ui) uniform readonly uimageBuffer Xt;
layout(set = 0, binding = 3, rgba32ui) uniform readonly uimageBuffer Wt;
layout(set = 0, binding = 4, rgba32ui) uniform readonly uimageBuffer Bt;
#if RES
layout(set = 0, binding = 5, rgba32ui) uniform readonly uimageBuffer Rt;
#endif

vec4 ld(uint i) { return uintBitsToFloat(imageLoad(Xt, int(i))); }

void main() {
    uint S = gl_SubgroupSize, l = gl_SubgroupInvocationID;
    uint row = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    if (row >= p.rows) return;
    uint c4 = p.cols / 4u;
#if PAIR
    bool two = row >= p.rows1;
    uint rr = two ? row - p.rows1 : row;
    uint xo = ((two ? p.x_off2 : p.x_off) + rr * p.x_stride) >> 2,
         dof = ((two ? p.d_off2 : p.d_off) + rr * p.d_stride) >> 2, wo = two ? p.w_off2 : p.w_off;
#else
    uint xo = (p.x_off + row * p.x_stride) >> 2, dof = (p.d_off + row * p.d_stride) >> 2,
         wo = p.w_off;
#endif
    float mean = 0.0;
#if !RMS
    vec4 s4 = vec4(0.0);
    for (uint c = l; c < c4; c += S) s4 += ld(xo + c);
    mean = subgroupAdd(s4.x + s4.y + s4.z + s4.w) / float(p.cols);
#endif
    vec4 v4 = vec4(0.0);
    for (uint c = l; c < c4; c += S) {
        vec4 e = ld(xo + c) - mean;
        v4 += e * e;
    }
    float var = subgroupAdd(v4.x + v4.y + v4.z + v4.w) / float(p.cols);
    float inv = 1.0 / sqrt(var + p.eps);
    for (uint c = l; c < c4; c += S) {
        vec4 y = (ld(xo + c) - mean) * inv;
        if (p.has_w != 0u) y *= uintBitsToFloat(imageLoad(Wt, int((wo >> 2) + c)));
        if (p.has_b != 0u) y += uintBitsToFloat(imageLoad(Bt, int((p.b_off >> 2) + c)));
#if RES
        y += uintBitsToFloat(imageLoad(Rt, int(((p.r_off + row * p.r_stride) >> 2) + c)));
#endif
        d[dof + c] = y;
    }
}
