#version 450
/* SOFTMAX (LOG undefined): y = softmax(x * scale + mask) over a row; a row whose every entry
 * is -inf after masking gives zeros. LOG_SOFTMAX (LOG=1): y = x - (max + log(sum exp(x - max))).
 * One workgroup per row. Bindings: 1 dst, 2 x, 3 mask (bound to x and ignored when absent). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "reduce.glsl"

#ifndef LOG
#define LOG 0
#endif

layout(push_constant) uniform PC {
    vkf_pc_softmax p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 3) readonly buffer M { float mask[]; };

float logit(uint xo, uint mo, uint c) {
#if LOG
    return x[xo + c];
#else
    float v = x[xo + c] * p.scale;
    if (p.has_mask != 0u) v += mask[mo + c];
    return v;
#endif
}

void main() {
    uint t = gl_LocalInvocationIndex;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint xo = p.x_off + row * p.x_stride, mo = p.m_off + row * p.m_stride;
        uint dof = p.d_off + row * p.d_stride;
        float mx = VKF_NEG_INF;
        for (uint c = t; c < p.cols; c += WG) mx = max(mx, logit(xo, mo, c));
        mx = vkf_wg_max(mx);
#if !LOG
        if (mx == VKF_NEG_INF) { /* every entry masked: no distribution, zeros */
            for (uint c = t; c < p.cols; c += WG) d[dof + c] = 0.0;
            continue;
        }
#endif
        float s = 0.0;
        for (uint c = t; c < p.cols; c += WG) s += exp(logit(xo, mo, c) - mx);
        s = vkf_wg_sum(s);
#if LOG
        float lse = mx + log(s);
        for (uint c = t; c < p.cols; c += WG) d[dof + c] = x[xo + c] - lse;
#else
        for (uint c = t; c < p.cols; c += WG) d[dof + c] = exp(logit(xo, mo, c) - mx) / s;
#endif
    }
}
