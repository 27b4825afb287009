#version 450
/* LAYERNORM (RMS undefined) and RMSNORM (RMS=1), one workgroup per row, statistics in f32:
 *   layernorm: y = (x - mean) / sqrt(var + eps) * w + b, var biased (two passes, as the CPU)
 *   rmsnorm:   y = x / sqrt(mean(x^2) + eps) * w
 * Bindings: 1 dst, 2 x, 3 weight, 4 bias (absent ones bound to x and ignored). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "reduce.glsl"

#ifndef RMS
#define RMS 0
#endif

layout(push_constant) uniform PC {
    vkf_pc_norm p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 3) readonly buffer Wt { float w[]; };
layout(set = 0, binding = 4) readonly buffer Bs { float bias[]; };

void main() {
    uint t = gl_LocalInvocationIndex;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint xo = p.x_off + row * p.x_stride, dof = p.d_off + row * p.d_stride;
        float mean = 0.0;
#if !RMS
        float s = 0.0;
        for (uint c = t; c < p.cols; c += WG) s += x[xo + c];
        mean = vkf_wg_sum(s) / float(p.cols);
#endif
        float v = 0.0;
        for (uint c = t; c < p.cols; c += WG) {
            float e = x[xo + c] - mean;
            v += e * e;
        }
        float var = vkf_wg_sum(v) / float(p.cols);
        float inv = 1.0 / sqrt(var + p.eps);
        for (uint c = t; c < p.cols; c += WG) {
            float y = (x[xo + c] - mean) * inv;
            if (p.has_w != 0u) y *= w[p.w_off + c];
            if (p.has_b != 0u) y += bias[p.b_off + c];
            d[dof + c] = y;
        }
    }
}
