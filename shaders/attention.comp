#version 450
/* ATTENTION: fused scaled-dot-product attention with an online softmax; the scores never
 * leave the workgroup. One workgroup per (head, query row). For query i of sequence b:
 *   keys j < n_keys (n_past + n_q when kv_dyn, else n_kv; capped at n_kv), j < len[b] when
 *   key lengths are given, j <= q_pos(i) when causal, and j > q_pos(i) - window when the
 *   sliding window is on (a mask: the key loop starts there), where
 *   q_pos(i) = n_past + i (kv_dyn), else i + n_kv - n_q (causal), else i; len[b] - n_q + i
 *   when has_len bit 1 is set (len_pos: serve's batched step, sequences at their own positions);
 *   out = sum_j softmax_j(cap(scale * q.k_j)) v_j, zeros when no key is visible; cap is the
 *   soft-cap softcap * tanh(s / softcap) when softcap > 0.
 * Query head h reads KV head h / (n_head / n_kv_head) (GQA). Keys are processed in blocks of
 * WG: one score per invocation, a running max m and sum l, and the output accumulated as
 * acc = acc * exp(m_old - m_new) + sum p_j v_j with invocations split over (dim, key subset).
 *
 * VEC4=1 (head_dim, offsets and strides multiples of 4): q/k/v/dst are read as vec4, four
 * dims per load. CHUNKED=1: when one sequence exceeds a storage window the host binds its
 * keys (and queries) in chunks, one sequence per dispatch; each key chunk resumes from the
 * previous chunk's (max, sum) state and normalized output (acc = out * sum) and saves its own.
 * Bindings: 1 dst, 2 q, 3 k, 4 v, 5 key lengths (i32; bound to q and ignored when absent),
 * 6 chunk state (CHUNKED only). WG >= 128 (head_dim <= MAXD * W * WG). KV_F16=1: an F16 KV
 * cache (K and V bound as packed halves, read one element at a time). SINKS=1 (gpt-oss): a
 * learned logit per head joins the softmax as a score without a value: the last (or only) key
 * chunk adds exp(sink[h] - m) to the sum before normalizing; bound after the chunk state
 * (binding 6, or 7 when CHUNKED). KVQ (a VKF_W_* code, K and V of that type): a bf16 or
 * 32-element block cache, decoded element by element (kvq.glsl); k_off / v_off and k_stride /
 * v_stride are bytes there. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
#include "reduce.glsl"

#ifndef CHUNKED
#define CHUNKED 0
#endif
#ifndef VEC4
#define VEC4 0
#endif
#if VEC4
#define FT vec4
#define W 4u
#else
#define FT float
#define W 1u
#endif
#define MAX_HD 1024
#define MAXD 8

layout(push_constant) uniform PC {
    vkf_pc_attn p;
};

#if CHUNKED
layout(set = 0, binding = 1) buffer D { FT d[]; }; /* read back when resuming a key chunk */
#else
layout(set = 0, binding = 1) writeonly buffer D { FT d[]; };
#endif
layout(set = 0, binding = 2) readonly buffer Q { FT q[]; };
#ifndef KV_F16
#define KV_F16 0 /* 1: K and V are an F16 cache read as packed pairs (VEC4 = 0) */
#endif
#ifndef KVQ
#define KVQ 0
#endif
#if KVQ
layout(set = 0, binding = 3) readonly buffer K { uint kk[]; };
layout(set = 0, binding = 4) readonly buffer V { uint vv[]; };
uint kvq_word(uint buf, uint i) { return buf == 0u ? kk[i] : vv[i]; }
#include "kvq.glsl"
/* a key row (its head's first byte) and element e; the value row's the same */
#define KAT(row, e) kvq_at(0u, row, e)
#define VAT(row, e) kvq_at(1u, row, e)
#define VE(e) 0u
#elif KV_F16
layout(set = 0, binding = 3) readonly buffer K { uint kk[]; };
layout(set = 0, binding = 4) readonly buffer V { uint vv[]; };
#define KLOAD(i) unpackHalf2x16(kk[(i) >> 1u])[(i) & 1u]
#define VLOAD(i) unpackHalf2x16(vv[(i) >> 1u])[(i) & 1u]
#else
layout(set = 0, binding = 3) readonly buffer K { FT kk[]; };
layout(set = 0, binding = 4) readonly buffer V { FT vv[]; };
#define KLOAD(i) kk[i]
#define VLOAD(i) vv[i]
#endif
#if !KVQ /* element offsets: the row's offset plus e */
#define KAT(row, e) KLOAD((row) + (e))
#define VAT(row, e) VLOAD(row)
#define VE(e) (e)
#endif
layout(set = 0, binding = 5) readonly buffer L { int lens[]; };
#if CHUNKED
layout(set = 0, binding = 6) buffer St { float st[]; };
#endif
#ifndef SINKS
#define SINKS 0
#endif
#if SINKS && CHUNKED
layout(set = 0, binding = 7) readonly buffer Sk { float sk[]; };
#elif SINKS
layout(set = 0, binding = 6) readonly buffer Sk { float sk[]; };
#endif

shared FT q_s[MAX_HD / W];
shared float p_s[WG];
shared FT comb[WG];

void main() {
    uint t = gl_LocalInvocationIndex;
    uint h = gl_WorkGroupID.x;
    uint hd = p.head_dim;
    uint hw = hd / W; /* head width in loads */
    uint kvh = h / (p.n_head / p.n_kv_head);
    int n_past = vkf_dyn.n_past;
    int n_keys = min(p.kv_dyn != 0u ? n_past + int(p.n_q) : int(p.n_kv), int(p.n_kv));
    uint ks = p.k_stride / W, vs = p.v_stride / W;
    /* invocation roles in the P.V product */
    bool narrow = hw <= WG;
    uint parts = narrow ? WG / hw : 1u; /* key subsets */
    uint part = narrow ? t / hw : 0u;
    uint dim0 = narrow ? t % hw : t;
    uint dpt = narrow ? 1u : (hw + WG - 1u) / WG; /* loads per invocation */
    bool pv_on = part < parts;
    uint nrows = p.batch * p.qn;
    for (uint qr = gl_WorkGroupID.y; qr < nrows; qr += gl_NumWorkGroups.y) {
        uint b = qr / p.qn, i = p.q0 + qr % p.qn;
        int klen = n_keys;
        if (p.has_len != 0u) klen = min(klen, lens[p.len_off + p.b0 + b]);
        int qpos = p.kv_dyn != 0u ? n_past + int(i)
                                  : (p.causal != 0u ? int(i) + int(p.n_kv) - int(p.n_q) : int(i));
        if ((p.has_len & 2u) != 0u) /* serve batching: the sequence's own position */
            qpos = lens[p.len_off + p.b0 + b] - int(p.n_q) + int(i);
        int jmax = klen;
        if (p.causal != 0u) jmax = min(jmax, qpos + 1);
        int jmin = p.window > 0u ? max(qpos - int(p.window) + 1, 0) : 0;
        uint qo = (p.q_off + qr * p.q_stride + h * hd) / W;
        uint dof = (p.d_off + qr * p.d_stride + h * hd) / W;
        uint kbase = b * p.kv_stride;
#if KVQ /* bytes */
        uint ko0 = p.k_off + kvh * KVQ_HEAD_BYTES(hd), vo0 = p.v_off + kvh * KVQ_HEAD_BYTES(hd);
#else
        uint ko0 = (p.k_off + kvh * hd) / W, vo0 = (p.v_off + kvh * hd) / W;
#endif
        barrier(); /* q_s and comb of the previous query are no longer read */
        for (uint e = t; e < hw; e += WG) q_s[e] = q[qo + e];
        barrier();
        float m = VKF_NEG_INF, l = 0.0;
        FT acc[MAXD];
        for (uint dd = 0; dd < MAXD; dd++) acc[dd] = FT(0.0);
#if CHUNKED
        uint so = p.s_off + ((p.b0 + b) * p.n_q + i) * p.n_head * 2u + h * 2u;
        if ((p.carry & 1u) != 0u) { /* resume: state of the previous key chunk */
            m = st[so];
            l = st[so + 1u];
            if (l > 0.0 && pv_on && part == 0u)
                for (uint dd = 0; dd < dpt; dd++) {
                    uint e = dim0 + dd * WG;
                    if (e < hw) acc[dd] = d[dof + e] * l;
                }
        }
#endif
        int jend = min(jmax, int(p.j0 + p.jn)); /* keys of this window */
        for (int j0 = max(int(p.j0), jmin); j0 < jend; j0 += int(WG)) {
            int j = j0 + int(t);
            float s = VKF_NEG_INF;
            if (j < jend) {
                uint ko = ko0 + (kbase + uint(j) - p.j0) * ks;
                float dt = 0.0;
                for (uint e = 0; e < hw; e++) dt += dot(q_s[e], KAT(ko, e));
                s = dt * p.scale;
                if (p.softcap > 0.0) s = p.softcap * tanh(clamp(s / p.softcap, -10.0, 10.0));
            }
            float mn = max(m, vkf_wg_max(s));
            float alpha = exp(m - mn); /* 0 on the first block (m = -inf) */
            float pj = j < jend ? exp(s - mn) : 0.0;
            p_s[t] = pj;
            l = l * alpha + vkf_wg_sum(pj); /* its barriers also publish p_s */
            m = mn;
            uint nb = uint(min(int(WG), jend - j0));
            if (pv_on) {
                for (uint dd = 0; dd < dpt; dd++) {
                    uint e = dim0 + dd * WG;
                    if (e < hw) {
                        uint vo = vo0 + (kbase + uint(j0) - p.j0) * vs + VE(e);
                        FT a2 = acc[dd] * alpha;
                        for (uint u = part; u < nb; u += parts) a2 += p_s[u] * VAT(vo + u * vs, e);
                        acc[dd] = a2;
                    }
                }
            }
            barrier(); /* p_s is rewritten by the next block */
        }
#if SINKS
#if CHUNKED
        if ((p.carry & 2u) == 0u) /* the last key chunk: the sum is complete */
#endif
            if (l > 0.0) l += exp(sk[p.sink_off + h] - m);
#endif
        float inv = l > 0.0 ? 1.0 / l : 0.0;
#if CHUNKED
        if ((p.carry & 2u) != 0u && t == 0u) {
            st[so] = m;
            st[so + 1u] = l;
        }
        barrier(); /* everyone has read dst (resume) before it is rewritten */
#endif
        if (narrow) {
            comb[t] = pv_on ? acc[0] : FT(0.0);
            barrier();
            if (t < hw) {
                FT s = FT(0.0);
                for (uint pp = 0; pp < parts; pp++) s += comb[pp * hw + t];
                d[dof + t] = s * inv;
            }
        } else {
            for (uint dd = 0; dd < dpt; dd++) {
                uint e = t + dd * WG;
                if (e < hw) d[dof + e] = acc[dd] * inv;
            }
        }
    }
}
