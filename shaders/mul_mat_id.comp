#version 450
/* MUL_MAT_ID: dst[t*k + i, n] = a[r, :] . W[e*N + n, :] with e = clamp(ids[t, i]) and r = t
 * (one input row per token) or t*k + i (per_pair); W the experts stacked in any weight type
 * (WTYPE). Only the chosen experts' rows are read; dot products along K in f32, four elements at
 * a time where K allows. Two variants:
 *   GROUPED=0 (decode): one invocation per output element (grid stride): a token's k experts.
 *   GROUPED=1 (prefill): workgroup (x, y) = (a block of WG rows n, expert y); each invocation
 *     walks the (token, expert) pairs routed to expert y in tiles of PT and reads its weight row
 *     once per tile (the activations, the same for the whole workgroup, are broadcast): an
 *     expert's weights are read once per PT of its tokens, an expert no token chose not at all.
 * The host splits an expert tensor larger than one storage window: this dispatch binds its rows
 * [row0, row0 + nrows) (GROUPED: whole experts) and writes only the outputs of those rows.
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

#ifndef GROUPED
#define GROUPED 0
#endif
#define PT 8u /* pairs per tile (GROUPED) */

uint expert_of(uint pair) {
    uint t = pair / p.k, i = pair - t * p.k;
    return uint(clamp(ids[p.ids_off + t * p.ids_stride + i], 0, int(p.n_expert) - 1));
}

#if GROUPED
/* rows n of the pairs q[0..np) of one tile: the weight row read once for all of them */
void tile(uint q[PT], uint np, uint n, uint rowb, bool live) {
    float acc[PT];
    for (uint s = 0; s < PT; s++) acc[s] = 0.0;
    uint ab[PT];
    for (uint s = 0; s < PT; s++) ab[s] = p.a_off + (p.per_pair != 0u ? q[s] : q[s] / p.k) * p.a_stride;
    if ((p.K & 3u) == 0u) {
        for (uint j = 0; j < p.K; j += 4u) {
            vec4 wv = w_at4(rowb, j);
            for (uint s = 0; s < PT; s++)
                if (s < np) acc[s] += dot(vec4(a[ab[s] + j], a[ab[s] + j + 1u], a[ab[s] + j + 2u], a[ab[s] + j + 3u]), wv);
        }
    } else {
        for (uint j = 0; j < p.K; j++) {
            float wv = w_at(rowb, j);
            for (uint s = 0; s < PT; s++)
                if (s < np) acc[s] += a[ab[s] + j] * wv;
        }
    }
    if (live)
        for (uint s = 0; s < PT; s++)
            if (s < np) d[p.d_off + q[s] * p.d_stride + n] = acc[s];
}

void main() {
    uint e = p.row0 / p.cols + gl_WorkGroupID.y;
    uint n = gl_WorkGroupID.x * WG + gl_LocalInvocationID.x;
    bool live = n < p.cols;
    uint rowb = p.w_boff + (gl_WorkGroupID.y * p.cols + min(n, p.cols - 1u)) * p.w_bstride;
    uint q[PT];
    for (uint s = 0; s < PT; s++) q[s] = 0u;
    uint np = 0u, pairs = p.rows * p.k;
    for (uint pair = 0; pair < pairs; pair++) { /* uniform: the same pair and expert for all */
        if (expert_of(pair) != e) continue;
        q[np] = pair;
        np++;
        if (np == PT) {
            tile(q, np, n, rowb, live);
            np = 0u;
        }
    }
    if (np > 0u) tile(q, np, n, rowb, live);
}
#else
void main() {
    uint total = p.rows * p.k * p.cols;
    for (uint o = gl_GlobalInvocationID.x; o < total; o += gl_NumWorkGroups.x * WG) {
        uint pair = o / p.cols, n = o - pair * p.cols;
        uint t = pair / p.k, i = pair - t * p.k;
        /* defensive: the CPU reference rejects an id outside [0, n_expert) */
        uint row = expert_of(pair) * p.cols + n;
        if (row < p.row0 || row >= p.row0 + p.nrows) continue; /* another dispatch's rows */
        uint rowb = p.w_boff + (row - p.row0) * p.w_bstride;
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
#endif
