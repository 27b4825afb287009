#version 450
/* TOPK: dst[r, 0..k) = indices of the k largest elements of row r, descending (ties: lowest
 * index first; NaN never selected). One workgroup per row, k selection rounds: round n picks
 * the best element ranked after the one picked in round n-1, so no per-row state beyond the
 * previous pick is needed and any k works. Bindings: 1 dst (i32), 2 x. */
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#define TK_U 8u /* columns per invocation per loop iteration */

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "select.glsl"

layout(push_constant) uniform PC {
    vkf_pc_select p;
};

layout(set = 0, binding = 1) writeonly buffer D { int d[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };

void main() {
    uint t = gl_LocalInvocationIndex;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint xo = p.x_off + row * p.x_stride;
        float pv = VKF_POS_INF;
        uint pi = 0xffffffffu; /* nothing picked yet: everything ranks after */
        for (uint n = 0; n < p.k; n++) {
            float bv = 0.0;
            uint bi = 0xffffffffu;
            /* TK_U columns per iteration, the inner loop unrolled: llvmpipe ends an
             * invocation's loops after 65535 iterations in all (k rounds over a 262144-word
             * vocabulary were cut short at k = 64), so few, wide iterations */
            for (uint c0 = t; c0 < p.cols; c0 += WG * TK_U) {
                [[unroll]] for (uint u = 0; u < TK_U; u++) {
                    uint c = c0 + u * WG;
                    if (c >= p.cols) break;
                    float v = x[xo + c];
                    if (isnan(v)) continue;
                    if (pi != 0xffffffffu && !vkf_before(pv, pi, v, c)) continue; /* already picked */
                    if (bi == 0xffffffffu || v > bv) {
                        bv = v;
                        bi = c;
                    }
                }
            }
            vkf_wg_best(bv, bi);
            if (bi == 0xffffffffu) { /* fewer than k non-NaN values: repeat the last pick */
                bv = pv;
                bi = pi == 0xffffffffu ? 0u : pi;
            }
            if (t == 0u) d[p.d_off + row * p.d_stride + n] = int(bi);
            pv = bv;
            pi = bi;
        }
    }
}
