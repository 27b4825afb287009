#version 450
/* ATTENTION on 16-byte texels: the same semantics as attention.comp (see there and
 * graph/ops.h), laid out for devices where per-lane memory access is the cost and barriers are
 * expensive (CPU drivers), and fine on GPUs.
 *
 * One workgroup per (HG query heads that share a KV head, query row). Its G = WG / S
 * subgroups split the keys (split-K over the KV cache: subgroup g takes keys g, g + G, ...),
 * and inside a subgroup the S lanes split the head dimension (lane l holds texels l, l + S, ...
 * of q and of its output), so a key row is read as consecutive texels by consecutive lanes.
 * Per key: the partial dot products are summed with one subgroupAdd, and an online softmax
 * (running max m, sum l, acc = acc * exp(m_old - m_new) + p v) keeps the scores in registers.
 * With G > 1 (decode: the host uses 8 subgroups) the partial states are merged through shared
 * memory behind one barrier; with G = 1 (prefill: the query rows give the parallelism) there is
 * no merge at all. Flash-style: scores never leave the workgroup and K/V are streamed once per
 * (query, head group) from texels; K/V tiles are not staged in shared memory, which on CPU
 * drivers is no faster than the texel loads and costs barriers. HG > 1 would read each K/V row
 * once for several query heads; the host keeps 1 (slower on lavapipe and on the H200).
 *
 * Sliding window, soft-cap and len_pos (has_len bit 1) as attention.comp: the key loops start
 * at the window's first key.
 *
 * KV_F16=1: an F16 KV cache. A K/V texel then holds 8 halves (two 4-wide units); the loops
 * below walk K/V in texels and use KV_U = 1 or 2 units of each, so one texel load serves both
 * halves, and the unit indices of q, the accumulators and the output stay those of F32.
 *
 * Loops over a head's texels, query rows and heads are [[unroll]]: llvmpipe counts every loop
 * iteration of an invocation against its limit of 65535 (vk_plan.c, VKF_VK_CPU_KEYS_MAX),
 * and with an F16 cache it had kept them rolled, ~8 iterations per key (prefill was wrong from
 * 8192 keys).
 *
 * Requires head_dim, every offset and stride multiples of 4 (8 for an F16 cache; host-checked)
 * and head_dim <= 4 * KV_U * S * MAXT. Bindings: 1 dst (f32 buffer), 2 q (texels of f32), 3 k,
 * 4 v (texels of f32, or of f16 with KV_F16), 5 key lengths (i32 buffer; bound to dst and
 * ignored when absent). */
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#ifndef MAXT
#define MAXT 1u /* texels of a head per lane: ceil(head_dim / 4 / S) */
#endif
#ifndef HG
#define HG 1u /* query heads per workgroup, all of one KV head (GQA): K/V rows read once for them */
#endif
#ifndef HWMAX
#define HWMAX 8u /* texels per head (head_dim / 4) */
#endif
#ifndef KEYLANES
#define KEYLANES 0 /* 1: lanes take whole keys (decode on CPU drivers, see main) */
#endif
#ifndef QLANES
#define QLANES 0 /* 1: lanes take whole query rows (prefill on CPU drivers, see main) */
#endif
#ifndef QR
#define QR 1u /* query rows per lane with QLANES */
#endif
#ifndef KV_F16
#define KV_F16 0
#endif
#ifndef SPLIT
#define SPLIT 1 /* > 1 (KEYLANES or QLANES; VKF_ATTN_SPLIT, or the host on CPU drivers, whose
                   loop limiter ends an invocation's loops after 65535 iterations in all):
                   workgroup z takes part z of the
                   keys and writes a partial state to binding 1 instead of the output: per (query
                   row, head, part) one texel (max, sum, 0, 0) and the head's HWMAX texels of the
                   accumulator scaled to that max; attention_merge.comp combines the parts */
#endif
#if KV_F16
#define KV_U 2u  /* 4-wide units per K/V texel */
#define KV_SH 3u /* K/V element offsets -> texels */
#else
#define KV_U 1u
#define KV_SH 2u
#endif

/* unit u (0 .. KV_U - 1) of a K/V texel */
vec4 kv_unit(uvec4 t, uint u) {
#if KV_F16
    return u == 0u ? vec4(unpackHalf2x16(t.x), unpackHalf2x16(t.y))
                   : vec4(unpackHalf2x16(t.z), unpackHalf2x16(t.w));
#else
    return uintBitsToFloat(t);
#endif
}

layout(push_constant) uniform PC {
    vkf_pc_attn p;
};

layout(set = 0, binding = 1) writeonly buffer D { vec4 d[]; };
layout(set = 0, binding = 2, rgba32ui) uniform readonly uimageBuffer Qt;
layout(set = 0, binding = 3, rgba32ui) uniform readonly uimageBuffer Kt;
layout(set = 0, binding = 4, rgba32ui) uniform readonly uimageBuffer Vt;
layout(set = 0, binding = 5) readonly buffer L { int lens[]; };

shared float m_s[WG / VKF_SUBGROUP_MIN], l_s[WG / VKF_SUBGROUP_MIN];
shared vec4 acc_s[(WG / VKF_SUBGROUP_MIN) * HWMAX]; /* [subgroup][texel of the head] */

void main() {
    uint S = gl_SubgroupSize, l = gl_SubgroupInvocationID, g = gl_SubgroupID, G = gl_NumSubgroups;
    uint h0 = gl_WorkGroupID.x * HG; /* this workgroup's query heads h0 .. h0 + HG - 1 share one KV head */
    uint qr = gl_WorkGroupID.y, b = qr / p.qn, i = p.q0 + qr % p.qn;
    uint hw = p.head_dim / 4u; /* 4-wide units per head (texels of q and dst) */
    uint kvh = h0 / (p.n_head / p.n_kv_head);
    int n_past = vkf_dyn.n_past;
    int klen = min(p.kv_dyn != 0u ? n_past + int(p.n_q) : int(p.n_kv), int(p.n_kv));
    if (p.has_len != 0u) klen = min(klen, lens[p.len_off + p.b0 + b]);
    int qpos = p.kv_dyn != 0u ? n_past + int(i) : (p.causal != 0u ? int(i) + int(p.n_kv) - int(p.n_q) : int(i));
    if ((p.has_len & 2u) != 0u) qpos = lens[p.len_off + p.b0 + b] - int(p.n_q) + int(i); /* len_pos (serve) */
    int jend = p.causal != 0u ? min(klen, qpos + 1) : klen;
    int jmin = p.window > 0u ? max(qpos - int(p.window) + 1, 0) : 0;
    uint ko = (p.k_off + b * p.kv_stride * p.k_stride + kvh * p.head_dim) >> KV_SH;
    uint vo = (p.v_off + b * p.kv_stride * p.v_stride + kvh * p.head_dim) >> KV_SH;
    uint ks = p.k_stride >> KV_SH, vs = p.v_stride >> KV_SH;
    uint hwt = hw / KV_U; /* K/V texels per head */

#if KEYLANES
    /* decode on CPU drivers (host: one query row, HG = 1, head_dim <= 64, one subgroup per
     * workgroup): every lane takes whole keys (lane li of the workgroup: keys li, li + WG, ...)
     * and the whole head, so a score needs no cross-lane sum; the lanes' softmax states are
     * merged once at the end. On lavapipe the per-key subgroupAdd of the layout below is a
     * scalar loop over the lanes: this runs decode attention 35-50% faster (bench/RESULTS.md). */
    {
        uint li = gl_LocalInvocationIndex;
        uint qo = (p.q_off + qr * p.q_stride + h0 * p.head_dim) >> 2;
        vec4 qv[HWMAX], av[HWMAX];
        [[unroll]] for (uint e = 0; e < HWMAX; e++) {
            qv[e] = uintBitsToFloat(imageLoad(Qt, int(qo + e))) * p.scale;
            av[e] = vec4(0.0);
        }
        float mk = VKF_NEG_INF, sk = 0.0;
        int jlo = jmin, jhi = jend;
#if SPLIT > 1
        int per = (max(jend - jmin, 0) + int(SPLIT) - 1) / int(SPLIT);
        jlo = jmin + int(gl_WorkGroupID.z) * per;
        jhi = min(jend, jlo + per);
        uint pb = (p.d_off >> 2) + ((qr * p.n_head + h0) * SPLIT + gl_WorkGroupID.z) * (HWMAX + 1u);
#endif
        for (int j = jlo + int(li); j < jhi; j += int(WG)) {
            uint kr = ko + uint(j) * ks, vr = vo + uint(j) * vs;
            float sc = 0.0;
            [[unroll]] for (uint e = 0; e < HWMAX / KV_U; e++) {
                uvec4 kt = imageLoad(Kt, int(kr + e));
                [[unroll]] for (uint u = 0; u < KV_U; u++) sc += dot(qv[e * KV_U + u], kv_unit(kt, u));
            }
            if (p.softcap > 0.0) sc = p.softcap * tanh(clamp(sc / p.softcap, -10.0, 10.0));
            float mn = max(mk, sc);
            float alpha = exp(mk - mn); /* 0 on this lane's first key (mk = -inf) */
            float pj = exp(sc - mn);
            sk = sk * alpha + pj;
            mk = mn;
            [[unroll]] for (uint e = 0; e < HWMAX / KV_U; e++) {
                uvec4 vt = imageLoad(Vt, int(vr + e));
                [[unroll]] for (uint u = 0; u < KV_U; u++)
                    av[e * KV_U + u] = av[e * KV_U + u] * alpha + pj * kv_unit(vt, u);
            }
        }
        /* the subgroup's state: max, rescaled sums; lane e % S keeps texel e for the merge */
        float Mg = subgroupMax(mk);
        float f = mk == VKF_NEG_INF ? 0.0 : exp(mk - Mg);
        float tg = subgroupAdd(sk * f);
        if (G == 1u) { /* one subgroup per workgroup (the host's choice): no shared merge */
#if SPLIT > 1
            if (l == 0u) d[pb] = vec4(Mg, tg, 0.0, 0.0);
            [[unroll]] for (uint e = 0; e < HWMAX; e++) {
                vec4 a = subgroupAdd(av[e] * f);
                if (e % S == l) d[pb + 1u + e] = a;
            }
#else
            float inv = tg > 0.0 ? 1.0 / tg : 0.0;
            uint dof = (p.d_off + qr * p.d_stride + h0 * p.head_dim) >> 2;
            [[unroll]] for (uint e = 0; e < HWMAX; e++) {
                vec4 a = subgroupAdd(av[e] * f);
                if (e % S == l) d[dof + e] = a * inv;
            }
#endif
            return;
        }
        if (l == 0u) {
            m_s[g] = Mg;
            l_s[g] = tg;
        }
        [[unroll]] for (uint e = 0; e < HWMAX; e++) {
            vec4 a = subgroupAdd(av[e] * f);
            if (e % S == l) acc_s[g * hw + e] = a;
        }
        barrier();
        if (g != 0u) return;
        float M = VKF_NEG_INF;
        for (uint k = 0; k < G; k++) M = max(M, m_s[k]);
        float tot = 0.0;
        for (uint k = 0; k < G; k++) tot += m_s[k] == VKF_NEG_INF ? 0.0 : l_s[k] * exp(m_s[k] - M);
#if SPLIT > 1
        if (l == 0u) d[pb] = vec4(M, tot, 0.0, 0.0);
        for (uint e = l; e < hw; e += S) {
            vec4 o = vec4(0.0);
            for (uint k = 0; k < G; k++)
                if (m_s[k] != VKF_NEG_INF) o += acc_s[k * hw + e] * exp(m_s[k] - M);
            d[pb + 1u + e] = o;
        }
#else
        float inv = tot > 0.0 ? 1.0 / tot : 0.0;
        uint dof = (p.d_off + qr * p.d_stride + h0 * p.head_dim) >> 2;
        for (uint e = l; e < hw; e += S) {
            vec4 o = vec4(0.0);
            for (uint k = 0; k < G; k++)
                if (m_s[k] != VKF_NEG_INF) o += acc_s[k * hw + e] * exp(m_s[k] - M);
            d[dof + e] = o * inv;
        }
#endif
        return;
    }
#endif

#if QLANES
    /* prefill on CPU drivers (host: several query rows, HG = 1, head_dim <= 64, one subgroup per
     * workgroup): every lane takes QR consecutive query rows of the workgroup's tile (rows
     * (y * WG + lane) * QR ..) and the whole head, so a K/V row is read once per tile of
     * WG * QR queries instead of once per query, a score needs no cross-lane sum, and the online
     * softmax runs for all of them at once (flash-style: scores stay in registers, K/V streamed
     * once per tile). With QR = 2 (the host's choice when each sequence has an even number of
     * rows, so a lane's rows share a sequence) each K/V texel load serves two queries. The
     * layout below spends a subgroupAdd (a scalar loop over the lanes on lavapipe) and a whole
     * subgroup's softmax update on every (query, key) pair. */
    {
        uint qt0 = (gl_WorkGroupID.y * WG + gl_LocalInvocationIndex) * QR;
        if (qt0 >= p.batch * p.qn) return;
        uint bt = qt0 / p.qn;
        int klt = min(p.kv_dyn != 0u ? n_past + int(p.n_q) : int(p.n_kv), int(p.n_kv));
        if (p.has_len != 0u) klt = min(klt, lens[p.len_off + p.b0 + bt]);
        uint kot = (p.k_off + bt * p.kv_stride * p.k_stride + kvh * p.head_dim) >> KV_SH;
        uint vot = (p.v_off + bt * p.kv_stride * p.v_stride + kvh * p.head_dim) >> KV_SH;
        int jet[QR], jmt[QR];
        vec4 qv[QR][HWMAX], av[QR][HWMAX];
        float mk[QR], sk[QR];
        int jlo = int(p.n_kv), jhi = 0;
        [[unroll]] for (uint x = 0; x < QR; x++) {
            uint qt = qt0 + x, it = p.q0 + qt % p.qn;
            int qpt = p.kv_dyn != 0u ? n_past + int(it) : (p.causal != 0u ? int(it) + int(p.n_kv) - int(p.n_q) : int(it));
            if ((p.has_len & 2u) != 0u) qpt = lens[p.len_off + p.b0 + bt] - int(p.n_q) + int(it); /* len_pos (serve) */
            jet[x] = p.causal != 0u ? min(klt, qpt + 1) : klt;
            jmt[x] = p.window > 0u ? max(qpt - int(p.window) + 1, 0) : 0;
            jlo = min(jlo, jmt[x]);
            jhi = max(jhi, jet[x]);
            uint qo = (p.q_off + qt * p.q_stride + h0 * p.head_dim) >> 2;
            [[unroll]] for (uint e = 0; e < HWMAX; e++) {
                qv[x][e] = uintBitsToFloat(imageLoad(Qt, int(qo + e))) * p.scale;
                av[x][e] = vec4(0.0);
            }
            mk[x] = VKF_NEG_INF;
            sk[x] = 0.0;
        }
#if SPLIT > 1
        /* part z of the keys: [z per, (z + 1) per) */
        int per = (int(p.n_kv) + int(SPLIT) - 1) / int(SPLIT);
        jlo = max(jlo, int(gl_WorkGroupID.z) * per);
        jhi = min(jhi, int(gl_WorkGroupID.z + 1u) * per);
#endif
        for (int j = jlo; j < jhi; j++) {
            uint kr = kot + uint(j) * ks, vr = vot + uint(j) * vs;
            float sc[QR];
            [[unroll]] for (uint x = 0; x < QR; x++) sc[x] = 0.0;
            [[unroll]] for (uint e = 0; e < HWMAX / KV_U; e++) {
                uvec4 kt = imageLoad(Kt, int(kr + e));
                [[unroll]] for (uint u = 0; u < KV_U; u++) {
                    vec4 k4 = kv_unit(kt, u);
                    [[unroll]] for (uint x = 0; x < QR; x++) sc[x] += dot(qv[x][e * KV_U + u], k4);
                }
            }
            float alpha[QR], pj[QR];
            [[unroll]] for (uint x = 0; x < QR; x++) {
                if (p.softcap > 0.0) sc[x] = p.softcap * tanh(clamp(sc[x] / p.softcap, -10.0, 10.0));
                bool in_x = j >= jmt[x] && j < jet[x]; /* this row's keys (causal, window) */
                float mn = in_x ? max(mk[x], sc[x]) : mk[x];
                alpha[x] = in_x ? exp(mk[x] - mn) : 1.0; /* 0 on the row's first key (mk = -inf) */
                pj[x] = in_x ? exp(sc[x] - mn) : 0.0;
                sk[x] = sk[x] * alpha[x] + pj[x];
                mk[x] = mn;
            }
            [[unroll]] for (uint e = 0; e < HWMAX / KV_U; e++) {
                uvec4 vt = imageLoad(Vt, int(vr + e));
                [[unroll]] for (uint u = 0; u < KV_U; u++) {
                    vec4 v4 = kv_unit(vt, u);
                    [[unroll]] for (uint x = 0; x < QR; x++)
                        av[x][e * KV_U + u] = av[x][e * KV_U + u] * alpha[x] + pj[x] * v4;
                }
            }
        }
        [[unroll]] for (uint x = 0; x < QR; x++) {
            uint qt = qt0 + x;
            if (qt >= p.batch * p.qn) break;
#if SPLIT > 1
            /* this part's state (the accumulator is scaled to mk) */
            uint pb = (p.d_off >> 2) + ((qt * p.n_head + h0) * SPLIT + gl_WorkGroupID.z) * (HWMAX + 1u);
            d[pb] = vec4(mk[x], sk[x], 0.0, 0.0);
            [[unroll]] for (uint e = 0; e < HWMAX; e++) d[pb + 1u + e] = av[x][e];
#else
            float inv = sk[x] > 0.0 ? 1.0 / sk[x] : 0.0;
            uint dof = (p.d_off + qt * p.d_stride + h0 * p.head_dim) >> 2;
            [[unroll]] for (uint e = 0; e < HWMAX; e++) d[dof + e] = av[x][e] * inv;
#endif
        }
        return;
    }
#endif

    /* lane l holds K/V texels e = l + t * S (t < MAXT) of the head, i.e. units e * KV_U + u */
    vec4 q[HG][MAXT * KV_U], acc[HG][MAXT * KV_U];
    float m[HG], sum[HG];
    [[unroll]] for (uint hh = 0; hh < HG; hh++) {
        uint qo = (p.q_off + qr * p.q_stride + (h0 + hh) * p.head_dim) >> 2;
        [[unroll]] for (uint t = 0; t < MAXT; t++) {
            uint e = l + t * S;
            [[unroll]] for (uint u = 0; u < KV_U; u++) {
                q[hh][t * KV_U + u] = e < hwt ? uintBitsToFloat(imageLoad(Qt, int(qo + e * KV_U + u))) * p.scale : vec4(0.0);
                acc[hh][t * KV_U + u] = vec4(0.0);
            }
        }
        m[hh] = VKF_NEG_INF;
        sum[hh] = 0.0;
    }
    for (int j = jmin + int(g); j < jend; j += int(G)) {
        uint kr = ko + uint(j) * ks, vr = vo + uint(j) * vs;
        vec4 kt[MAXT * KV_U], vt[MAXT * KV_U];
        [[unroll]] for (uint t = 0; t < MAXT; t++) {
            uint e = l + t * S;
            uvec4 kx = e < hwt ? imageLoad(Kt, int(kr + e)) : uvec4(0u);
            uvec4 vx = e < hwt ? imageLoad(Vt, int(vr + e)) : uvec4(0u);
            [[unroll]] for (uint u = 0; u < KV_U; u++) {
                kt[t * KV_U + u] = kv_unit(kx, u);
                vt[t * KV_U + u] = kv_unit(vx, u);
            }
        }
        [[unroll]] for (uint hh = 0; hh < HG; hh++) {
            float part = 0.0;
            [[unroll]] for (uint t = 0; t < MAXT * KV_U; t++) part += dot(q[hh][t], kt[t]);
            float s = subgroupAdd(part);
            if (p.softcap > 0.0) s = p.softcap * tanh(clamp(s / p.softcap, -10.0, 10.0));
            float mn = max(m[hh], s);
            float alpha = exp(m[hh] - mn); /* 0 on the first key (m = -inf) */
            float pj = exp(s - mn);
            sum[hh] = sum[hh] * alpha + pj;
            m[hh] = mn;
            [[unroll]] for (uint t = 0; t < MAXT * KV_U; t++) acc[hh][t] = acc[hh][t] * alpha + pj * vt[t];
        }
    }

    if (G == 1u) { /* one subgroup per workgroup (prefill): no merge, no barrier */
        [[unroll]] for (uint hh = 0; hh < HG; hh++) {
            float inv = sum[hh] > 0.0 ? 1.0 / sum[hh] : 0.0;
            uint dof = (p.d_off + qr * p.d_stride + (h0 + hh) * p.head_dim) >> 2;
            [[unroll]] for (uint t = 0; t < MAXT; t++) {
                uint e = l + t * S;
                [[unroll]] for (uint u = 0; u < KV_U; u++)
                    if (e < hwt) d[dof + e * KV_U + u] = acc[hh][t * KV_U + u] * inv;
            }
        }
        return;
    }
    /* merge the subgroups' states, one head at a time */
    [[unroll]] for (uint hh = 0; hh < HG; hh++) {
        if (l == 0u) {
            m_s[g] = m[hh];
            l_s[g] = sum[hh];
        }
        [[unroll]] for (uint t = 0; t < MAXT; t++) {
            uint e = l + t * S;
            [[unroll]] for (uint u = 0; u < KV_U; u++)
                if (e < hwt) acc_s[g * hw + e * KV_U + u] = acc[hh][t * KV_U + u];
        }
        barrier();
        if (g == 0u) {
            float M = VKF_NEG_INF;
            for (uint k = 0; k < G; k++) M = max(M, m_s[k]);
            float tot = 0.0;
            for (uint k = 0; k < G; k++) tot += m_s[k] == VKF_NEG_INF ? 0.0 : l_s[k] * exp(m_s[k] - M);
            float inv = tot > 0.0 ? 1.0 / tot : 0.0;
            uint dof = (p.d_off + qr * p.d_stride + (h0 + hh) * p.head_dim) >> 2;
            for (uint e = l; e < hw; e += S) {
                vec4 o = vec4(0.0);
                for (uint k = 0; k < G; k++)
                    if (m_s[k] != VKF_NEG_INF) o += acc_s[k * hw + e] * exp(m_s[k] - M);
                d[dof + e] = o * inv;
            }
        }
        barrier(); /* m_s / acc_s are rewritten for the next head */
    }
}
