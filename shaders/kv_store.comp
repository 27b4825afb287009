#version 450
/* KV_STORE (a fusion of ROPE q, ROPE k and the COPY_ROWS of k and v into the KV cache, see
 * vk_fuse.c): one invocation per (pair of head dims i, row r, head slot). Head slots are the
 * qh query heads (rotated into qr), then the kh key heads (rotated when VKF_KV_ROPE_K, written
 * to the cache and to kr when VKF_KV_WRITE_KR), then the kh value heads (copied to the cache).
 * Pair i covers dims (2i, 2i+1) (NORMAL) or (i, i + n_rot/2) (NEOX) when i < n_rot/2, else the
 * pass-through dims n_rot + 2(i - n_rot/2) and the next, as ROPE does; the rotation table holds
 * (cos, sin) pairs computed on the host. Cache rows past c_rows are dropped (the host checks
 * the context length). KV_F16=1: F16 caches (an invocation then takes two pairs, see main).
 * Bindings: 1 activations (q, k, v read; qr, kr written), 2 k cache, 3 v cache, 4 rotation
 * table. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 32;

layout(push_constant) uniform PC {
    vkf_pc_kvstore p;
};

layout(set = 0, binding = 1) buffer Act { float act[]; };
#ifndef KV_F16
#define KV_F16 0
#endif
#if KV_F16
/* F16 caches, written as pairs of halves: an invocation takes the pairs 2j and 2j + 1, whose
 * four dims form two whole words (the host checks head_dim, n_rot, offsets and strides) */
layout(set = 0, binding = 2) writeonly buffer Kc { uint kc[]; };
layout(set = 0, binding = 3) writeonly buffer Vc { uint vc[]; };
#else
layout(set = 0, binding = 2) writeonly buffer Kc { float kc[]; };
layout(set = 0, binding = 3) writeonly buffer Vc { float vc[]; };
#endif
layout(set = 0, binding = 4) readonly buffer T { float tab[]; };

/* Pair i of row r in head slot `slot`: rotates (query and key heads), writes qr / kr, and
 * returns the dims (i0, i1) and the values for the caches (key and value heads). */
void kv_pair(uint i, uint r, uint slot, int n_past, out uint i0, out uint i1, out float y0,
             out float y1) {
    uint hd = p.head_dim;
    uint half_rot = p.n_rot / 2u;
    bool rot = i < half_rot;
    i0 = rot ? (p.mode == 1u ? i : 2u * i) : p.n_rot + 2u * (i - half_rot);
    i1 = rot ? (p.mode == 1u ? i + half_rot : 2u * i + 1u) : i0 + 1u;
    uint within = r % p.seq;
    int pos = p.pos0 + ((p.flags & VKF_KV_ROPE_DYN) != 0u ? n_past : 0) + int(within);
    uint ps = uint(clamp(pos, 0, int(p.t_rows) - 1));
    uint to = p.t_off + ps * p.t_stride + 2u * i;
    if (slot < p.qh) { /* a query head: rotate into qr */
        uint xo = p.q_off + r * p.q_stride + slot * hd, yo = p.qr_off + r * p.qr_stride + slot * hd;
        float x0 = act[xo + i0], x1 = act[xo + i1];
        if (rot) {
            float c = tab[to], s = tab[to + 1u];
            act[yo + i0] = x0 * c - x1 * s;
            act[yo + i1] = x0 * s + x1 * c;
        } else {
            act[yo + i0] = x0;
            act[yo + i1] = x1;
        }
        y0 = y1 = 0.0;
    } else if (slot < p.qh + p.kh) { /* a key head: rotate, store */
        uint h = slot - p.qh;
        uint xo = p.k_off + r * p.k_stride + h * hd;
        float x0 = act[xo + i0], x1 = act[xo + i1];
        if (rot && (p.flags & VKF_KV_ROPE_K) != 0u) {
            float c = tab[to], s = tab[to + 1u];
            float z0 = x0 * c - x1 * s, z1 = x0 * s + x1 * c;
            x0 = z0;
            x1 = z1;
        }
        if ((p.flags & VKF_KV_WRITE_KR) != 0u) {
            uint yo = p.kr_off + r * p.kr_stride + h * hd;
            act[yo + i0] = x0;
            act[yo + i1] = x1;
        }
        y0 = x0;
        y1 = x1;
    } else { /* a value head: store */
        uint h = slot - p.qh - p.kh;
        uint xo = p.v_off + r * p.v_stride + h * hd;
        y0 = act[xo + i0];
        y1 = act[xo + i1];
    }
}

void main() {
    uint hd = p.head_dim;
    uint r = gl_WorkGroupID.y, slot = gl_WorkGroupID.z;
    int n_past = vkf_dyn.n_past;
    uint within = r % p.seq;
    int crow = int(p.c_row0 + (r / p.seq) * p.c_seq + within) + n_past;
    bool store = crow >= 0 && uint(crow) < p.c_rows && slot >= p.qh;
    bool is_k = slot < p.qh + p.kh;
    uint co = is_k ? p.kc_off + uint(crow) * p.kc_stride + (slot - p.qh) * hd
                   : p.vc_off + uint(crow) * p.vc_stride + (slot - p.qh - p.kh) * hd;
#if KV_F16
    uint j = gl_GlobalInvocationID.x;
    if (j >= hd / 4u) return;
    uint a0, a1, b0, b1;
    float ya0, ya1, yb0, yb1;
    kv_pair(2u * j, r, slot, n_past, a0, a1, ya0, ya1);
    kv_pair(2u * j + 1u, r, slot, n_past, b0, b1, yb0, yb1);
    if (!store) return;
    /* NORMAL and pass-through pairs are adjacent dims (each a word); NEOX pairs 2j and 2j + 1
     * give the words (a0, b0) and (a1, b1) */
    bool adjacent = a1 == a0 + 1u;
    uint w0 = (co + a0) >> 1, w1 = (co + (adjacent ? b0 : a1)) >> 1;
    uint v0 = adjacent ? packHalf2x16(vec2(ya0, ya1)) : packHalf2x16(vec2(ya0, yb0));
    uint v1 = adjacent ? packHalf2x16(vec2(yb0, yb1)) : packHalf2x16(vec2(ya1, yb1));
    if (is_k) {
        kc[w0] = v0;
        kc[w1] = v1;
    } else {
        vc[w0] = v0;
        vc[w1] = v1;
    }
#else
    uint i = gl_GlobalInvocationID.x;
    if (i >= hd / 2u) return;
    uint i0, i1;
    float y0, y1;
    kv_pair(i, r, slot, n_past, i0, i1, y0, y1);
    if (!store) return;
    if (is_k) {
        kc[co + i0] = y0;
        kc[co + i1] = y1;
    } else {
        vc[co + i0] = y0;
        vc[co + i1] = y1;
    }
#endif
}
