#version 450
/* ATTENTION_MERGE: the second half of decode attention split over the keys (attention_texel.comp
 * with SPLIT > 1, VKF_ATTN_SPLIT): one workgroup per (head, query row) combines the SPLIT
 * partial states of that pair, each a texel (max m, sum l, 0, 0) and HWMAX texels of the
 * accumulator scaled to m, as the online softmax does: with M the largest m,
 * out = sum_p acc_p exp(m_p - M) / sum_p l_p exp(m_p - M), zeros when no part saw a key.
 * Push constants: vkf_pc_attn (n_head, head_dim, d_off, d_stride; s_off: the partials' first
 * texel). Bindings: 1 dst (f32), 2 the partial states. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#ifndef SPLIT
#define SPLIT 2
#endif
#ifndef HWMAX
#define HWMAX 16u
#endif

layout(push_constant) uniform PC {
    vkf_pc_attn p;
};

layout(set = 0, binding = 1) writeonly buffer D { vec4 d[]; };
layout(set = 0, binding = 2) readonly buffer Pt { vec4 part[]; };

void main() {
    uint h = gl_WorkGroupID.x, qr = gl_WorkGroupID.y, t = gl_LocalInvocationIndex;
    uint base = p.s_off + (qr * p.n_head + h) * SPLIT * (HWMAX + 1u);
    float M = VKF_NEG_INF;
    for (uint k = 0; k < SPLIT; k++) M = max(M, part[base + k * (HWMAX + 1u)].x);
    float tot = 0.0;
    for (uint k = 0; k < SPLIT; k++) {
        vec4 hd = part[base + k * (HWMAX + 1u)];
        if (hd.x != VKF_NEG_INF) tot += hd.y * exp(hd.x - M);
    }
    float inv = tot > 0.0 ? 1.0 / tot : 0.0;
    uint dof = (p.d_off + qr * p.d_stride + h * p.head_dim) >> 2;
    for (uint e = t; e < p.head_dim / 4u; e += WG) {
        vec4 o = vec4(0.0);
        for (uint k = 0; k < SPLIT; k++) {
            uint pk = base + k * (HWMAX + 1u);
            float mk = part[pk].x;
            if (mk != VKF_NEG_INF) o += part[pk + 1u + e] * exp(mk - M);
        }
        d[dof + e] = o * inv;
    }
}
