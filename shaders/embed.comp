#version 450
/* EMBED: dst[i,:] = table[clamp(ids[i], 0, vocab-1), :] * scale; table in any weight type
 * (WTYPE). The host splits a table larger than one storage window by rows: this dispatch binds
 * rows [row0, row0 + nrows) and writes only the ids that fall inside.
 * Bindings: 1 dst (f32), 2 ids (i32), 3 table (bytes as uint words). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_embed p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = 3) readonly buffer Wq { uint wq[]; };

uint w_word(uint byte) { return wq[byte >> 2]; }
#include "dtypes.glsl"

void main() {
    uint total = p.n * p.cols;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * WG) {
        uint i = e / p.cols, c = e - i * p.cols;
        uint id = uint(clamp(ids[p.ids_off + i], 0, int(p.vocab) - 1)); /* defensive: host validates */
        if (id < p.row0 || id >= p.row0 + p.nrows) continue;
        d[p.d_off + i * p.d_stride + c] = w_at(p.w_boff + (id - p.row0) * p.w_bstride, c) * p.scale;
    }
}
