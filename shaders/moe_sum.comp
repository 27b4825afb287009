#version 450
/* MOE_SUM: dst[t, c] = sum over i < k of e[t*k + i, c] * w[t, i], the products added in the
 * order i = 0, 1, ... One invocation per output element.
 * Bindings: 1 dst (f32), 2 e (f32), 3 w (f32). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_moe p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer A { float a[]; };
layout(set = 0, binding = 3) readonly buffer B { float b[]; };

void main() {
    uint total = p.rows * p.cols;
    for (uint o = gl_GlobalInvocationID.x; o < total; o += gl_NumWorkGroups.x * WG) {
        uint t = o / p.cols, c = o - t * p.cols;
        float acc = 0.0;
        for (uint i = 0; i < p.k; i++)
            acc += a[p.a_off + (t * p.k + i) * p.a_stride + c] * b[p.b_off + t * p.b_stride + i];
        d[p.d_off + t * p.d_stride + c] = acc;
    }
}
