#version 450
/* COPY_ROWS: dst[dst_row0 + (dyn ? n_past : 0) + i, :] = src[i, :] (the KV-cache write). The
 * target rows depend on n_past, read at execution time; the host binds dst in windows of rows
 * [row0, row0 + nrows) and each dispatch writes the targets inside its window; targets past
 * d_rows are dropped (the host checks the context length). Bindings: 1 dst, 2 src. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_copy p;
};

#ifndef F16
#define F16 0 /* 1: dst is an F16 KV cache, written as pairs of halves (cols, offsets, strides even) */
#endif
#if F16
layout(set = 0, binding = 1) writeonly buffer D { uint d[]; };
#else
layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
#endif
layout(set = 0, binding = 2) readonly buffer S { float s[]; };

void main() {
    int base = p.dst_row0 + (p.dyn != 0 ? vkf_dyn.n_past : 0);
#if F16
    uint cols = p.cols / 2u; /* pairs */
#else
    uint cols = p.cols;
#endif
    uint total = p.rows * cols;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * WG) {
        uint i = e / cols, c = e - i * cols;
        int tr = base + int(i);
        if (tr < 0 || uint(tr) >= p.d_rows) continue;
        uint t = uint(tr);
        if (t < p.row0 || t >= p.row0 + p.nrows) continue;
#if F16
        uint so = p.s_off + i * p.s_stride + 2u * c;
        d[(p.d_off + (t - p.row0) * p.d_stride) / 2u + c] = packHalf2x16(vec2(s[so], s[so + 1u]));
#else
        d[p.d_off + (t - p.row0) * p.d_stride + c] = s[p.s_off + i * p.s_stride + c];
#endif
    }
}
