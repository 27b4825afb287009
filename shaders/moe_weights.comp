#version 450
/* MOE_WEIGHTS: dst[t, i] = probs[t, ids[t, i]] (ids clamped), then softmax over the k
 * (softmax_w), division by max(sum, 2^-14) (norm), times scale (unless 0 or 1). One invocation
 * per token row (k is small).
 * Bindings: 1 dst (f32), 2 probs (f32), 3 ids (i32). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_moe p;
};

layout(set = 0, binding = 1) buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer A { float a[]; };
layout(set = 0, binding = 3) readonly buffer Ids { int ids[]; };

void main() {
    for (uint t = gl_GlobalInvocationID.x; t < p.rows; t += gl_NumWorkGroups.x * WG) {
        uint db = p.d_off + t * p.d_stride;
        float mx = VKF_NEG_INF;
        for (uint i = 0; i < p.k; i++) {
            uint e = uint(clamp(ids[p.ids_off + t * p.ids_stride + i], 0, int(p.cols) - 1));
            float w = a[p.a_off + t * p.a_stride + e];
            d[db + i] = w;
            mx = max(mx, w);
        }
        if (p.softmax_w != 0u) {
            float s = 0.0;
            for (uint i = 0; i < p.k; i++) {
                float v = exp(d[db + i] - mx);
                d[db + i] = v;
                s += v;
            }
            for (uint i = 0; i < p.k; i++) d[db + i] /= s;
        }
        if (p.norm != 0u) {
            float s = 0.0;
            for (uint i = 0; i < p.k; i++) s += d[db + i];
            s = max(s, 6.103515625e-5); /* llama.cpp's clamp: the smallest normal f16 */
            for (uint i = 0; i < p.k; i++) d[db + i] /= s;
        }
        if (p.scale != 0.0 && p.scale != 1.0)
            for (uint i = 0; i < p.k; i++) d[db + i] *= p.scale;
    }
}
