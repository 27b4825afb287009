#version 450
/* MOE_GROUP_MASK: each row's cols experts in n_group groups; a group's score is the sum of its
 * two largest entries (the largest alone for groups of one); the n_group_used best groups (ties:
 * the lower group) keep their entries, the others become -inf. One invocation per row; groups
 * are few (at most 64 here: DeepSeek-V3 has 8).
 * Bindings: 1 dst (f32), 2 x (f32). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform PC {
    vkf_pc_moe p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer A { float a[]; };

void main() {
    for (uint r = gl_GlobalInvocationID.x; r < p.rows; r += gl_NumWorkGroups.x * WG) {
        uint xb = p.a_off + r * p.a_stride, per = p.cols / p.n_group;
        uint keep = 0u, keep_hi = 0u; /* kept groups as bits (64 at most) */
        for (uint u = 0; u < p.n_group_used; u++) {
            int best = -1;
            float bs = 0.0;
            for (uint g = 0; g < p.n_group; g++) {
                bool kept = g < 32u ? ((keep >> g) & 1u) != 0u : ((keep_hi >> (g - 32u)) & 1u) != 0u;
                if (kept) continue;
                float x1 = VKF_NEG_INF, x2 = VKF_NEG_INF;
                for (uint j = g * per; j < (g + 1u) * per; j++) {
                    float v = a[xb + j];
                    if (v > x1) {
                        x2 = x1;
                        x1 = v;
                    } else if (v > x2) {
                        x2 = v;
                    }
                }
                float sc = per > 1u ? x1 + x2 : x1;
                if (best < 0 || sc > bs) {
                    best = int(g);
                    bs = sc;
                }
            }
            if (uint(best) < 32u) keep |= 1u << uint(best);
            else keep_hi |= 1u << (uint(best) - 32u);
        }
        for (uint j = 0; j < p.cols; j++) {
            uint g = j / per;
            bool kept = g < 32u ? ((keep >> g) & 1u) != 0u : ((keep_hi >> (g - 32u)) & 1u) != 0u;
            d[p.d_off + r * p.d_stride + j] = kept ? a[xb + j] : VKF_NEG_INF;
        }
    }
}
