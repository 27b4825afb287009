#version 450
/* ADD_POS: dst[r,:] = x[r,:] + table[pos(r),:], pos(r) = pos0 + (dyn ? n_past : 0) + r % seq_len
 * (clamped to the table; the host validates positions). The host splits a table larger than
 * one window by rows: this dispatch binds rows [row0, row0 + nrows) and writes only the rows
 * whose position falls inside. Bindings: 1 dst, 2 x, 3 table. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_addpos p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 3) readonly buffer T { float tab[]; };

void main() {
    int n_past = p.dyn != 0 ? vkf_dyn.n_past : 0;
    uint total = p.rows * p.cols;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * WG) {
        uint r = e / p.cols, c = e - r * p.cols;
        int pos = p.pos0 + n_past + int((p.r0 + r) % uint(p.seq_len));
        uint ps = uint(clamp(pos, 0, int(p.t_rows) - 1));
        if (ps < p.row0 || ps >= p.row0 + p.nrows) continue;
        d[p.d_off + r * p.d_stride + c] = x[p.x_off + r * p.x_stride + c] + tab[p.t_off + (ps - p.row0) * p.t_stride + c];
    }
}
