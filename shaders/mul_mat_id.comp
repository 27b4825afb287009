#version 450
/* MUL_MAT_ID: dst[t*k + i, n] = a[r, :] . W[e*N + n, :] with e = clamp(ids[t, i]) and r = t
 * (one input row per token) or t*k + i (per_pair); W the experts stacked in any weight type
 * (WTYPE). Only the chosen experts' rows are read. One invocation per output element (grid
 * stride), the dot product along K in f32, four elements at a time where K allows.
 * Bindings: 1 dst (f32), 2 a (f32), 3 w (bytes as uint words), 4 ids (i32). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_moe p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer A { float a[]; };
layout(set = 0, binding = 3) readonly buffer Wq { uint wq[]; };
layout(set = 0, binding = 4) readonly buffer Ids { int ids[]; };

uint w_word(uint byte) { return wq[byte >> 2]; }
#include "dtypes.glsl"

void main() {
    uint total = p.rows * p.k * p.cols;
    for (uint o = gl_GlobalInvocationID.x; o < total; o += gl_NumWorkGroups.x * WG) {
        uint pair = o / p.cols, n = o - pair * p.cols;
        uint t = pair / p.k, i = pair - t * p.k;
        /* defensive: the CPU reference rejects an id outside [0, n_expert) */
        uint e = uint(clamp(ids[p.ids_off + t * p.ids_stride + i], 0, int(p.n_expert) - 1));
        uint rowb = p.w_boff + (e * p.cols + n) * p.w_bstride;
        uint ab = p.a_off + (p.per_pair != 0u ? pair : t) * p.a_stride;
        float acc = 0.0;
        if ((p.K & 3u) == 0u) {
            for (uint j = 0; j < p.K; j += 4u) {
                vec4 av = vec4(a[ab + j], a[ab + j + 1u], a[ab + j + 2u], a[ab + j + 3u]);
                acc += dot(av, w_at4(rowb, j));
            }
        } else {
            for (uint j = 0; j < p.K; j++) acc += a[ab + j] * w_at(rowb, j);
        }
        d[p.d_off + pair * p.d_stride + n] = acc;
    }
}
