#version 450
/* POOL: one vector per sequence. dst[b, c] from rows [b * seq_len, b * seq_len + len_b) of x:
 * mode 0 the mean (the rows summed in row order, then divided by len_b: the CPU reference's
 * order, so the two agree bit for bit), 1 the first row, 2 the last row. len_b clamped to
 * [1, seq_len]. One workgroup per sequence, lanes over columns.
 * Bindings: 1 dst, 2 x, 3 lengths (i32). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_pool p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 3) readonly buffer L { int lens[]; };

void main() {
    uint t = gl_LocalInvocationIndex;
    for (uint b = gl_WorkGroupID.x; b < p.rows; b += gl_NumWorkGroups.x) {
        uint len = uint(clamp(lens[p.len_off + b], 1, int(p.seq_len)));
        uint r0 = b * p.seq_len;
        for (uint c = t; c < p.cols; c += WG) {
            float v;
            if (p.mode == 0u) {
                float sum = 0.0;
                for (uint r = 0u; r < len; r++)
                    sum += x[p.x_off + (r0 + r) * p.x_stride + c];
                v = sum / float(len);
            } else {
                uint r = r0 + (p.mode == 2u ? len - 1u : 0u);
                v = x[p.x_off + r * p.x_stride + c];
            }
            d[p.d_off + b * p.d_stride + c] = v;
        }
    }
}
