#version 450
/* ARGMAX: dst[r] = index of the largest element of row r (ties: lowest index; NaN never
 * wins). One workgroup per row. Bindings: 1 dst (i32), 2 x. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

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
        float bv = 0.0;
        uint bi = 0xffffffffu;
        for (uint c = t; c < p.cols; c += WG) {
            float v = x[xo + c];
            if (isnan(v)) continue;
            if (bi == 0xffffffffu || v > bv) { /* increasing c: strict > keeps the lowest index */
                bv = v;
                bi = c;
            }
        }
        vkf_wg_best(bv, bi);
        if (t == 0u) d[p.d_off + row * p.d_stride] = int(bi == 0xffffffffu ? 0u : bi);
    }
}
