#version 450
/* COPY_ROWS: dst[dst_row0 + (dyn ? n_past : 0) + i, :] = src[i, :] (the KV-cache write). The
 * target rows depend on n_past, read at execution time; the host binds dst in windows of rows
 * [row0, row0 + nrows) and each dispatch writes the targets inside its window; targets past
 * d_rows are dropped (the host checks the context length). Bindings: 1 dst, 2 src, 3 the optional
 * row offset (I32; serve's batched decoding gives each sequence its own position).
 * KVQ (a VKF_W_* code): dst is a KV cache of bf16 (one invocation per pair of halves, a word)
 * or of a 32-element block type (kvq.glsl), one invocation per block, quantized by ggml's reference quantizer of the type (as the CPU
 * backend's vkf_quantize_kv_row: IQ4_NL without the scale search); d_off and d_stride are bytes
 * there, and the block's halves are set with atomicAnd / atomicOr (blocks of neighbouring
 * invocations share words). */
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
#ifndef KVQ
#define KVQ 0
#endif
#if F16
layout(set = 0, binding = 1) writeonly buffer D { uint d[]; };
#elif KVQ
layout(set = 0, binding = 1) buffer D { uint d[]; };
#else
layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
#endif
layout(set = 0, binding = 2) readonly buffer S { float s[]; };
layout(set = 0, binding = 3) readonly buffer I { int idx[]; };

#if KVQ
#define KVQ_NO_DECODER /* its block size and tables only */
#include "kvq.glsl"
/* the half v at an even byte offset b, leaving the word's other half alone */
void put16(uint b, uint v) {
    uint w = b >> 2, sh = (b & 2u) * 8u;
    atomicAnd(d[w], ~(0xffffu << sh));
    atomicOr(d[w], (v & 0xffffu) << sh);
}
uint h16(float f) { return packHalf2x16(vec2(f, 0.0)) & 0xffffu; }
/* ggml's (int8_t) cast of a non-negative float and roundf: toward zero, half away from zero */
int trunc_i(float f) { return int(f); }
int round_i(float f) { return int(sign(f) * floor(abs(f) + 0.5)); }
#if KVQ == VKF_W_IQ4_NL
int best_iq4(float x) {
    if (x <= kvq_iq4[0]) return 0;
    if (x >= kvq_iq4[15]) return 15;
    int ml = 0, mu = 15;
    while (mu - ml > 1) {
        int mav = (ml + mu) / 2;
        if (x < kvq_iq4[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - kvq_iq4[mu - 1] < kvq_iq4[mu] - x ? mu - 1 : mu;
}
#endif

#if KVQ == VKF_W_BF16
/* ggml's fp32 -> bf16: round to nearest even */
uint bf16(float f) {
    uint u = floatBitsToUint(f);
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
#else
/* one block of 32 values x at byte b */
void store_block(uint b, float x[32]) {
    float amax = 0.0, smax = 0.0, mn = x[0], mx = x[0];
    for (uint j = 0; j < 32u; j++) {
        if (abs(x[j]) > amax) {
            amax = abs(x[j]);
            smax = x[j];
        }
        mn = min(mn, x[j]);
        mx = max(mx, x[j]);
    }
    uint q[32];
#if KVQ == VKF_W_Q8_0
    float dd = amax / 127.0, id = dd != 0.0 ? 1.0 / dd : 0.0;
    for (uint j = 0; j < 32u; j++) q[j] = uint(round_i(x[j] * id)) & 0xffu;
    put16(b, h16(dd));
    for (uint j = 0; j < 32u; j += 2u) put16(b + 2u + j, q[j] | (q[j + 1u] << 8));
#elif KVQ == VKF_W_Q4_0 || KVQ == VKF_W_Q5_0
    const float nl = KVQ == VKF_W_Q4_0 ? 8.0 : 16.0;
    const int top = KVQ == VKF_W_Q4_0 ? 15 : 31;
    float dd = smax / -nl, id = dd != 0.0 ? 1.0 / dd : 0.0;
    for (uint j = 0; j < 32u; j++) q[j] = uint(min(top, trunc_i(x[j] * id + nl + 0.5)));
    put16(b, h16(dd));
#elif KVQ == VKF_W_Q4_1 || KVQ == VKF_W_Q5_1
    const int top = KVQ == VKF_W_Q4_1 ? 15 : 31;
    float dd = (mx - mn) / float(top), id = dd != 0.0 ? 1.0 / dd : 0.0;
    for (uint j = 0; j < 32u; j++) q[j] = uint(min(top, trunc_i((x[j] - mn) * id + 0.5)));
    put16(b, h16(dd));
    put16(b + 2u, h16(mn));
#else /* IQ4_NL: ggml's quantize_row_iq4_nl_ref, one pass without the scale search */
    float dd = 0.0;
    if (amax >= 1e-15) {
        float id = 1.0 / (smax / kvq_iq4[0]), sumqx = 0.0, sumq2 = 0.0;
        for (uint j = 0; j < 32u; j++) {
            int l = best_iq4(id * x[j]);
            q[j] = uint(l);
            float v = kvq_iq4[l], w = x[j] * x[j];
            sumqx += w * v * x[j];
            sumq2 += w * v * v;
        }
        dd = sumq2 > 0.0 ? sumqx / sumq2 : 0.0;
    } else {
        for (uint j = 0; j < 32u; j++) q[j] = 0u;
    }
    put16(b, h16(dd));
#endif
#if KVQ != VKF_W_Q8_0 /* nibbles: byte j holds element j low, j + 16 high; the fifth bits */
    const uint qs = KVQ == VKF_W_Q4_1 ? 4u : KVQ == VKF_W_Q5_0 ? 6u : KVQ == VKF_W_Q5_1 ? 8u : 2u;
    for (uint j = 0; j < 16u; j += 2u)
        put16(b + qs + j, ((q[j] & 15u) | ((q[j + 16u] & 15u) << 4)) |
                              (((q[j + 1u] & 15u) | ((q[j + 17u] & 15u) << 4)) << 8));
#if KVQ == VKF_W_Q5_0 || KVQ == VKF_W_Q5_1
    uint qh = 0u;
    for (uint j = 0; j < 32u; j++) qh |= ((q[j] >> 4) & 1u) << j;
    const uint ho = KVQ == VKF_W_Q5_0 ? 2u : 4u;
    put16(b + ho, qh);
    put16(b + ho + 2u, qh >> 16);
#endif
#endif
}
#endif
#endif

void main() {
    int base = p.dst_row0 + (p.dyn != 0 ? vkf_dyn.n_past : 0) + (p.has_idx != 0 ? idx[p.idx_off] : 0);
#if F16
    uint cols = p.cols / 2u; /* pairs */
#elif KVQ == VKF_W_BF16
    uint cols = p.cols / 2u; /* pairs, one word each (cols, offsets and strides even) */
#elif KVQ
    uint cols = p.cols / 32u; /* blocks */
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
#if KVQ == VKF_W_BF16
        uint so = p.s_off + i * p.s_stride + 2u * c;
        d[(p.d_off + (t - p.row0) * p.d_stride) / 4u + c] = bf16(s[so]) | (bf16(s[so + 1u]) << 16);
#elif KVQ
        float x[32];
        uint so = p.s_off + i * p.s_stride + 32u * c;
        for (uint j = 0; j < 32u; j++) x[j] = s[so + j];
        store_block(p.d_off + (t - p.row0) * p.d_stride + c * KVQ_BS, x);
#elif F16
        uint so = p.s_off + i * p.s_stride + 2u * c;
        d[(p.d_off + (t - p.row0) * p.d_stride) / 2u + c] = packHalf2x16(vec2(s[so], s[so + 1u]));
#else
        d[p.d_off + (t - p.row0) * p.d_stride + c] = s[p.s_off + i * p.s_stride + c];
#endif
    }
}
