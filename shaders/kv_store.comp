#version 450
/* KV_STORE (a fusion of ROPE q, ROPE k and the COPY_ROWS of k and v into the KV cache, see
 * vk_fuse.c): one invocation per (pair of head dims i, row r, head slot). Head slots are the
 * qh query heads (rotated into qr), then the kh key heads (rotated when VKF_KV_ROPE_K, written
 * to the cache and to kr when VKF_KV_WRITE_KR), then the kh value heads (copied to the cache).
 * Pair i covers dims (2i, 2i+1) (NORMAL) or (i, i + n_rot/2) (NEOX) when i < n_rot/2, else the
 * pass-through dims n_rot + 2(i - n_rot/2) and the next, as ROPE does; the rotation table holds
 * (cos, sin) pairs computed on the host. Cache rows past c_rows are dropped (the host checks
 * the context length). Bindings: 1 activations (q, k, v read; qr, kr written), 2 k cache,
 * 3 v cache, 4 rotation table. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 32;

layout(push_constant) uniform PC {
    vkf_pc_kvstore p;
};

layout(set = 0, binding = 1) buffer Act { float act[]; };
layout(set = 0, binding = 2) writeonly buffer Kc { float kc[]; };
layout(set = 0, binding = 3) writeonly buffer Vc { float vc[]; };
layout(set = 0, binding = 4) readonly buffer T { float tab[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint hd = p.head_dim;
    if (i >= hd / 2u) return;
    uint r = gl_WorkGroupID.y, slot = gl_WorkGroupID.z;
    int n_past = vkf_dyn.n_past;
    uint half_rot = p.n_rot / 2u;
    bool rot = i < half_rot;
    uint i0 = rot ? (p.mode == 1u ? i : 2u * i) : p.n_rot + 2u * (i - half_rot);
    uint i1 = rot ? (p.mode == 1u ? i + half_rot : 2u * i + 1u) : i0 + 1u;
    uint within = r % p.seq;
    int pos = p.pos0 + ((p.flags & VKF_KV_ROPE_DYN) != 0u ? n_past : 0) + int(within);
    uint ps = uint(clamp(pos, 0, int(p.t_rows) - 1));
    uint to = p.t_off + ps * p.t_stride + 2u * i;
    int crow = int(p.c_row0 + (r / p.seq) * p.c_seq + within) + n_past;
    bool store = crow >= 0 && uint(crow) < p.c_rows;
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
    } else if (slot < p.qh + p.kh) { /* a key head: rotate, store */
        uint h = slot - p.qh;
        uint xo = p.k_off + r * p.k_stride + h * hd;
        float x0 = act[xo + i0], x1 = act[xo + i1];
        if (rot && (p.flags & VKF_KV_ROPE_K) != 0u) {
            float c = tab[to], s = tab[to + 1u];
            float y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
            x0 = y0;
            x1 = y1;
        }
        if ((p.flags & VKF_KV_WRITE_KR) != 0u) {
            uint yo = p.kr_off + r * p.kr_stride + h * hd;
            act[yo + i0] = x0;
            act[yo + i1] = x1;
        }
        if (store) {
            uint co = p.kc_off + uint(crow) * p.kc_stride + h * hd;
            kc[co + i0] = x0;
            kc[co + i1] = x1;
        }
    } else { /* a value head: store */
        uint h = slot - p.qh - p.kh;
        uint xo = p.v_off + r * p.v_stride + h * hd;
        if (store) {
            uint co = p.vc_off + uint(crow) * p.vc_stride + h * hd;
            vc[co + i0] = act[xo + i0];
            vc[co + i1] = act[xo + i1];
        }
    }
}
