#version 450
/* ROPE: rotary embedding of every head of x [rows, n_head*head_dim] at pos(r) (as ADD_POS),
 * with the host-computed table [n_pos, n_rot] of (cos, sin) pairs. NORMAL (mode 0) rotates
 * (x[2i], x[2i+1]); NEOX (mode 1) rotates (x[i], x[i + n_rot/2]); dims >= n_rot pass through.
 * One invocation per (row, head, pair or pass-through dim); dst may alias x.
 * Bindings: 1 dst, 2 x, 3 table (window of rows [row0, row0 + nrows)). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_rope p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 3) readonly buffer T { float tab[]; };

void main() {
    int n_past = p.dyn != 0 ? vkf_dyn.n_past : 0;
    uint half_rot = p.n_rot / 2u;
    uint per_head = half_rot + (p.head_dim - p.n_rot);
    uint per_row = p.n_head * per_head;
    uint total = p.rows * per_row;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * WG) {
        uint r = e / per_row, rem = e - r * per_row;
        uint h = rem / per_head, u = rem - h * per_head;
        int pos = p.pos0 + n_past + int((p.r0 + r) % uint(p.seq_len));
        uint ps = uint(clamp(pos, 0, int(p.t_rows) - 1));
        if (ps < p.row0 || ps >= p.row0 + p.nrows) continue;
        uint xo = p.x_off + r * p.x_stride + h * p.head_dim;
        uint dof = p.d_off + r * p.d_stride + h * p.head_dim;
        if (u < half_rot) {
            uint i0 = p.mode == 1u ? u : 2u * u;
            uint i1 = p.mode == 1u ? u + half_rot : 2u * u + 1u;
            uint to = p.t_off + (ps - p.row0) * p.t_stride + 2u * u;
            float c = tab[to], s = tab[to + 1u];
            float x0 = x[xo + i0], x1 = x[xo + i1];
            d[dof + i0] = x0 * c - x1 * s;
            d[dof + i1] = x0 * s + x1 * c;
        } else {
            uint k = p.n_rot + (u - half_rot);
            d[dof + k] = x[xo + k];
        }
    }
}
