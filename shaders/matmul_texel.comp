#version 450
/* MATMUL on 16-byte texels: dst[M,N] = a[M,K] . w[N,K]^T (+ bias[N]) (+ residual[M,N]), the
 * weight in any storage type (WTYPE) dequantized here, accumulation in f32.
 *
 * Why texels: on CPU drivers (lavapipe) a storage-buffer load is a per-lane loop with a bounds
 * check per component, while an image load of a 16-byte texel is one vectorized gather (bench
 * --kernels measures both). Reading a and w through R32G32B32A32_UINT texel buffers is several
 * times faster there, and is an ordinary access path on GPUs.
 *
 * Decomposition (no shared memory, no barriers): a workgroup is WG / S subgroups; each
 * subgroup owns R consecutive weight rows and the workgroup's TM activation rows (workgroup z).
 * The S lanes of a subgroup split K: lane l takes the units l, l + S, l + 2S, ... of a row (a
 * unit is one f32 texel, one f16/bf16 texel of 8 values, or one 32-value quant block), so
 * each step loads TM activation units and R weight units and does R * TM dot products from
 * registers. At the end each of the R * TM partial sums is reduced across the subgroup
 * (subgroupAdd) and one lane stores it. R and TM are specialization constants (the tuning
 * table and `vkformer tune` pick them); TM may exceed the dispatch's M (the host rounds it to a
 * power of two): rows past M read row M - 1 and store nothing.
 *
 * LANES=1 (prefill on CPU drivers): every invocation owns R consecutive weight rows and walks
 * all of K itself, so there is no split-K and nothing to reduce: each lane stores its own
 * R * TM results. The activation loads are then the same address in every lane and the
 * weight loads are one row per lane. On lavapipe the split-K epilogue (R * TM subgroup adds
 * and single-lane stores, each a loop over the lanes) cost as much as the K loop for K = 256;
 * this variant runs those shapes 2-3x faster and reaches ~58 GFLOP/s at 512x4096x4096
 * (bench/RESULTS.md). Decode keeps split-K: with M = 1 there are too few rows per lane.
 *
 * Fusions (vk_fuse.c picks them; each saves a dispatch and a pass over memory):
 *   n_mats 2..3: several weight matrices that share a (q, k, v) in one dispatch; subgroups are
 *     assigned to row blocks of matrix 0, then 1, then 2; with VKF_MM_BIAS each matrix has its
 *     bias (b_off, b_off1, b_off2 in one bias window: qwen2's q/k/v);
 *   NORM=1: a is the input of an RMSNorm with weight g: each lane also sums a^2 and multiplies
 *     a by g as it loads them, and the dot products are scaled by 1/sqrt(mean(a^2) + eps) at
 *     the end (the normalized rows are never written);
 *   SWIGLU=1: matrices 0 (gate) and 1 (up) with the same rows; the output is silu(gate) * up
 *     (SWIGLU=2: gelu_tanh(gate) * up, the GeGLU of gemma);
 *   VKF_MM_RESIDUAL: dst = residual + a . w^T (the add after an output projection);
 *   ACT >= 0: dst = act(a . w^T + bias), act a vkf_unary (the bias + activation of an MLP).
 *
 * Bindings: 1 dst (f32 buffer), 2 a (texels of f32), 3 w (texels), 4 bias (f32 buffer; bound
 * to dst and ignored without VKF_MM_BIAS), 5 residual (f32 buffer; likewise), 6 norm weight g
 * (texels; bound to a and ignored without NORM). */
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "math.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint R = 8;  /* weight rows per subgroup */
layout(constant_id = 2) const uint TM = 1; /* activation rows per workgroup */

#ifndef NORM
#define NORM 0
#endif
#ifndef SWIGLU
#define SWIGLU 0
#endif
#ifndef LANES
#define LANES 0 /* 1: each lane owns R weight rows and walks all of K (see below) */
#endif
#ifndef ROWSEQ
#define ROWSEQ 0 /* > 0: decode walking the rows one after another, ROWSEQ units per lane (see main) */
#endif
#ifndef ROWSEQ_CH
#define ROWSEQ_CH 0 /* > 0: ROWSEQ with chunks of ROWSEQ_CH whole blocks per lane (see main) */
#endif
#ifndef ROWSEQ_CT
#define ROWSEQ_CT 1 /* the texels of such a chunk (ROWSEQ_CH * block bytes / 16) */
#endif
#ifndef RS_P
#define RS_P 1 /* ROWSEQ: rows per step, 1 or 2 (see main) */
#endif
#ifndef RS_PAIRU
#define RS_PAIRU 0 /* ROWSEQ: lanes take units in pairs that share their loads (see main) */
#endif
#ifndef ACT
#define ACT -1 /* vkf_unary applied after the bias; -1: none */
#endif
#if SWIGLU
#define NW 2u /* weight row sets per subgroup step: gate and up */
#else
#define NW 1u
#endif

layout(push_constant) uniform PC {
    vkf_pc_mm p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
#ifndef W_SSBO
#define W_SSBO 0
#endif
layout(set = 0, binding = 4) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 5) readonly buffer Res { float res[]; };
#if W_SSBO
/* W_SSBO=1 (GPUs, decode; vk_plan.c): a, w and g as storage buffers of 16-byte vectors, read
 * with vector loads from the general memory path as GPU matrix-vector kernels do (llama.cpp's
 * mul_mat_vec), not through the texel path; the same offsets in 16-byte units (the host aligns
 * these windows to 16 bytes) and the same arithmetic, so results are bit-identical */
layout(set = 0, binding = 2) readonly buffer A4 { uvec4 a4[]; };
layout(set = 0, binding = 3) readonly buffer W4 { uvec4 w4[]; };
layout(set = 0, binding = 6) readonly buffer G4 { uvec4 g4[]; };
vec4 a_tex(uint i) { return uintBitsToFloat(a4[i]); }
vec4 g_tex(uint i) { return uintBitsToFloat(g4[i]); }
#define W_LOAD(i) w4[i]
#else
layout(set = 0, binding = 2, rgba32ui) uniform readonly uimageBuffer At;
layout(set = 0, binding = 3, rgba32ui) uniform readonly uimageBuffer Wt;
layout(set = 0, binding = 6, rgba32ui) uniform readonly uimageBuffer Gt;
vec4 a_tex(uint i) { return uintBitsToFloat(imageLoad(At, int(i))); }
vec4 g_tex(uint i) { return uintBitsToFloat(imageLoad(Gt, int(i))); }
#define W_LOAD(i) imageLoad(Wt, int(i))
#endif

#if ROWSEQ_CH
/* ROWSEQ_CH: weight texels counted from the start of the chunk being decoded (see main); the
 * units of a chunk are unrolled and read from byte 0 of it, so the offsets in the reads below
 * are known at compile time and their realigning selects fold away (loading the chunk's texels
 * into an array first measured the same) */
uint wch;
uvec4 w_tex(uint i) { return W_LOAD(wch + i); }
#else
uvec4 w_tex(uint i) { return W_LOAD(i); }
#endif

/* weight bytes through the texel view (the reads shaders/dtypes.glsl builds on) */
uint w_word(uint byte) {
    uvec4 t = w_tex(byte >> 4);
    uint c = (byte >> 2) & 3u;
    return c == 0u ? t.x : c == 1u ? t.y : c == 2u ? t.z : t.w;
}
#define W_HAVE_QUAD
uvec4 w_quad(uint byte) { return w_tex(byte >> 4); }
/* 16 bytes at an even offset: two texels, realigned with selects, not a dynamic array index,
 * which CPU drivers would turn into per-lane memory accesses */
#define W_HAVE_QUAD2
#ifndef W_ALIGN16
#define W_ALIGN16 0 /* 1: every w_quad2 offset is a multiple of 16 (the host checks; see below) */
#endif
uvec4 w_quad2(uint byte) {
#if W_ALIGN16
    /* blocks of a multiple of 16 bytes (Q4_K, Q5_K) in rows that start on a texel: one load,
     * not the realigning path below, which CPU drivers run in full (both sides of its branch)
     * whether or not a lane needs it */
    return w_tex(byte >> 4);
#endif
    uint t = byte >> 4, o4 = (byte >> 2) & 3u;
    uvec4 t0 = w_tex(t);
    if ((byte & 15u) == 0u) return t0; /* aligned (every lane alike when the rows are) */
    uvec4 t1 = w_tex(t + 1u);
    uint W[8];
    W[0] = t0.x; W[1] = t0.y; W[2] = t0.z; W[3] = t0.w;
    W[4] = t1.x; W[5] = t1.y; W[6] = t1.z; W[7] = t1.w;
    uint Y[6], X[5];
    /* two select stages (2 words, then 1), not a 4-way select per word */
    for (uint j = 0; j < 6u; j++) Y[j] = (o4 & 2u) != 0u ? W[j + 2u] : W[j];
    for (uint j = 0; j < 5u; j++) X[j] = (o4 & 1u) != 0u ? Y[j + 1u] : Y[j];
    if ((byte & 2u) == 0u) return uvec4(X[0], X[1], X[2], X[3]);
    return uvec4((X[0] >> 16) | (X[1] << 16), (X[1] >> 16) | (X[2] << 16), (X[2] >> 16) | (X[3] << 16),
                 (X[3] >> 16) | (X[4] << 16));
}
/* the same, and the 16 bits after it: still inside the two texels (the offset in the first is
 * at most 14) */
uvec4 w_quad2e(uint byte, out uint e) {
    uint t = byte >> 4, o4 = (byte >> 2) & 3u;
    uvec4 t0 = w_tex(t), t1 = w_tex(t + 1u);
    uint W[8];
    W[0] = t0.x; W[1] = t0.y; W[2] = t0.z; W[3] = t0.w;
    W[4] = t1.x; W[5] = t1.y; W[6] = t1.z; W[7] = t1.w;
    uint Y[6], X[5];
    /* two select stages (2 words, then 1), not a 4-way select per word */
    for (uint j = 0; j < 6u; j++) Y[j] = (o4 & 2u) != 0u ? W[j + 2u] : W[j];
    for (uint j = 0; j < 5u; j++) X[j] = (o4 & 1u) != 0u ? Y[j + 1u] : Y[j];
    if ((byte & 2u) == 0u) {
        e = X[4] & 0xffffu;
        return uvec4(X[0], X[1], X[2], X[3]);
    }
    e = X[4] >> 16;
    return uvec4((X[0] >> 16) | (X[1] << 16), (X[1] >> 16) | (X[2] << 16), (X[2] >> 16) | (X[3] << 16),
                 (X[3] >> 16) | (X[4] << 16));
}
/* 64 bytes at a 2-byte aligned offset: five texels realigned (they must all be in the window:
 * the caller's block goes on past the 64 bytes, as Q6_K's low nibbles are followed by its high
 * bits) */
#define W_HAVE_HEX2
void w_hex2(uint byte, out uvec4 q[4]) {
    uint t = byte >> 4, o4 = (byte >> 2) & 3u;
    uint W[20];
    for (uint k = 0; k < 5u; k++) {
        uvec4 x = w_tex(t + k);
        W[4u * k] = x.x;
        W[4u * k + 1u] = x.y;
        W[4u * k + 2u] = x.z;
        W[4u * k + 3u] = x.w;
    }
    uint Y[18], X[17];
    /* two select stages (2 words, then 1), not a 4-way select per word */
    for (uint j = 0; j < 18u; j++) Y[j] = (o4 & 2u) != 0u ? W[j + 2u] : W[j];
    for (uint j = 0; j < 17u; j++) X[j] = (o4 & 1u) != 0u ? Y[j + 1u] : Y[j];
    bool h = (byte & 2u) != 0u;
    for (uint i = 0; i < 4u; i++) {
        uvec4 a = uvec4(X[4u * i], X[4u * i + 1u], X[4u * i + 2u], X[4u * i + 3u]);
        uvec4 b = uvec4(X[4u * i + 1u], X[4u * i + 2u], X[4u * i + 3u], X[4u * i + 4u]);
        q[i] = h ? (a >> 16) | (b << 16) : a;
    }
}
/* 32 bytes and the 16 bits after them: three texels (the offset in the first is at most 14) */
void w_oct2e(uint byte, out uvec4 lo, out uvec4 hi, out uint e) {
    uint t = byte >> 4, o4 = (byte >> 2) & 3u;
    uvec4 t0 = w_tex(t), t1 = w_tex(t + 1u), t2 = w_tex(t + 2u);
    uint W[12];
    W[0] = t0.x; W[1] = t0.y; W[2] = t0.z; W[3] = t0.w;
    W[4] = t1.x; W[5] = t1.y; W[6] = t1.z; W[7] = t1.w;
    W[8] = t2.x; W[9] = t2.y; W[10] = t2.z; W[11] = t2.w;
    uint Y[10], X[9];
    /* two select stages (2 words, then 1), not a 4-way select per word */
    for (uint j = 0; j < 10u; j++) Y[j] = (o4 & 2u) != 0u ? W[j + 2u] : W[j];
    for (uint j = 0; j < 9u; j++) X[j] = (o4 & 1u) != 0u ? Y[j + 1u] : Y[j];
    if ((byte & 2u) == 0u) {
        lo = uvec4(X[0], X[1], X[2], X[3]);
        hi = uvec4(X[4], X[5], X[6], X[7]);
        e = X[8] & 0xffffu;
        return;
    }
    lo = uvec4((X[0] >> 16) | (X[1] << 16), (X[1] >> 16) | (X[2] << 16), (X[2] >> 16) | (X[3] << 16), (X[3] >> 16) | (X[4] << 16));
    hi = uvec4((X[4] >> 16) | (X[5] << 16), (X[5] >> 16) | (X[6] << 16), (X[6] >> 16) | (X[7] << 16), (X[7] >> 16) | (X[8] << 16));
    e = X[8] >> 16;
}
#include "dtypes.glsl"

#if SWIGLU == 2
float glu_gate(float g) { return vkf_gelu_tanh(g); }
#else
float glu_gate(float g) { return vkf_silu(g); }
#endif

#define UNIT_K W_UNIT /* values per unit */
#define A_TEX W_UV    /* activation texels per unit */

/* the dot products of unit u of weight row `rowb` (bytes) with the TM activation units */
void w_dots(uint rowb, uint u, vec4 a[TM][A_TEX], inout float acc[TM]) {
    vec4 wv[A_TEX];
    float sc = w_unit(rowb, u, wv);
    for (uint m = 0; m < TM; m++) {
        float s = 0.0;
        for (uint i = 0; i < A_TEX; i++) s += dot(wv[i], a[m][i]);
        acc[m] += sc * s;
    }
}

#if LANES
/* every lane walks all of K for its own rows: nothing to reduce across lanes */
#define RED(x) (x)
#else
#define RED(x) subgroupAdd(x)
#endif

/* output element (row m, column n) = s (+ bias) (activation) (+ residual) */
void mm_store(uint doff, uint dstr, uint boff, uint n, uint m, float s) {
    if ((p.flags & VKF_MM_BIAS) != 0u) s += bias[boff + n];
#if ACT == 0
    s = max(s, 0.0);
#elif ACT == 1
    s = vkf_gelu_erf(s);
#elif ACT == 2
    s = vkf_gelu_tanh(s);
#elif ACT == 3
    s = vkf_silu(s);
#elif ACT == 4
    s = vkf_sigmoid(s);
#elif ACT == 5
    s = vkf_tanh(s);
#endif
    if ((p.flags & VKF_MM_RESIDUAL) != 0u) s += res[p.r_off + m * p.r_stride + n];
    d[doff + m * dstr + n] = s;
}

void main() {
    uint blk = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
#if LANES
    uint S = 1u, l = 0u;
    uint n0 = (blk * WG + gl_LocalInvocationIndex) * R;
#else
    uint S = gl_SubgroupSize, l = gl_SubgroupInvocationID;
    uint n0 = (blk * gl_NumSubgroups + gl_SubgroupID) * R;
#endif
    /* which matrix this subgroup's rows belong to: row blocks are padded to R per matrix */
    uint N = p.N, wb = p.w_boff, doff = p.d_off, dstr = p.d_stride, boff = p.b_off;
    uint P0 = (p.N + R - 1u) / R * R, P1 = (p.N1 + R - 1u) / R * R;
#if !SWIGLU
    if (p.n_mats > 1u && n0 >= P0) {
        if (p.n_mats > 2u && n0 >= P0 + P1) {
            n0 -= P0 + P1;
            N = p.N2;
            wb = p.w_boff2;
            doff = p.d_off2;
            dstr = p.d_stride2;
            boff = p.b_off2;
        } else {
            n0 -= P0;
            N = p.N1;
            wb = p.w_boff1;
            doff = p.d_off1;
            dstr = p.d_stride1;
            boff = p.b_off1;
        }
    }
#endif
    if (n0 >= N) return; /* the whole subgroup: no barriers follow */
    uint m0 = gl_WorkGroupID.z * TM;
#if ROWSEQ
    /* ROWSEQ (decode, M = 1, on CPU drivers; the host asks for it with ROWSEQ = ceil(K units /
     * S), up to 16 units or 192 activation texels per lane, 32 small units):
     * lane l loads its activation units l, l + S, ... once, and the subgroup then walks its R
     * rows one after another, the lanes splitting each row's units as in split-K. Consecutive
     * rows are consecutive in memory, so the subgroup reads one contiguous stream of R rows
     * instead of R streams of one row each: with rows of a few KiB (K = 2048) the interleaved
     * streams are each too short for the CPU's prefetchers, and reading them one by one is
     * faster (bench/RESULTS.md), while the activations come from registers, not texel loads. */
    /* ROWSEQ_CH (blocks of 32 values whose bytes fill whole texels ROWSEQ_CH at a time, in rows
     * that start on a texel; Q4_0: 8 blocks of 18 bytes in 9 texels): lane l takes the chunks l,
     * l + S, ... of ROWSEQ_CH consecutive blocks instead of single blocks and decodes them at
     * offsets inside the chunk known at compile time: 9 distinct texels for 8 Q4_0 blocks
     * instead of 16, and no realigning selects (the host asks for it when the row's chunks
     * split evenly among the lanes) */
    /* RS_P = 2 (rows whose units do not split evenly among the lanes, but two rows' do: gemma's
     * K = 1152 is 36 blocks, 4.5 a lane): a step takes two consecutive rows, whose units the lanes
     * split as one run (lane l: units l, l + S, ... of row n, then of row n + 1), so no lane idles
     * in a last, partial round, which a CPU driver runs at full cost. Each lane's slot i belongs
     * to row rp[i] (0 or 1) and holds its unit uu[i] of that row. */
    /* RS_PAIRU (W_HAVE_PAIRLOAD: Q4_K, Q5_K, Q6_K; where pairs need no more slots a lane than
     * single units, vk_ops.c): lane l takes the unit pairs (2l, 2l + 1), (2l + 2S, 2l + 2S + 1), ..., which share texels, loaded once
     * for both (w_pair_load): Q6_K 10 texel reads per 128 weights instead of 20, Q5_K 7 instead
     * of 10, Q4_K 5 instead of 6 */
#if ROWSEQ_CH
#define RS_UNIT(i) ((l + ((i) / ROWSEQ_CH) * S) * ROWSEQ_CH + (i) % ROWSEQ_CH)
#elif RS_PAIRU
#define RS_UNIT(i) (2u * l + ((i) & 1u) + ((i) >> 1) * 2u * S)
#else
#define RS_UNIT(i) (l + (i) * S)
#endif
    {
        uint units = p.K / UNIT_K, arw = (p.a_off + min(m0, p.M - 1u) * p.a_stride) >> 2;
        vec4 a[ROWSEQ][A_TEX];
        uint uu[ROWSEQ];
        bool ok[ROWSEQ];
#if RS_P > 1
        bool rp[ROWSEQ];
#endif
        float ss = 0.0;
        [[unroll]] for (uint i = 0; i < ROWSEQ; i++) {
            uint u = RS_UNIT(i);
#if RS_P > 1
            ok[i] = u < 2u * units;
            rp[i] = u >= units;
            if (rp[i]) u -= units;
#else
            ok[i] = u < units;
#endif
            uu[i] = u;
            for (uint j = 0; j < A_TEX; j++) {
                a[i][j] = ok[i] ? a_tex(arw + u * A_TEX + j) : vec4(0.0);
#if NORM
                vec4 g = ok[i] ? g_tex((p.g_off >> 2) + u * A_TEX + j) : vec4(0.0);
#if RS_P > 1
                ss += rp[i] ? 0.0 : dot(a[i][j], a[i][j]); /* each unit once */
#else
                ss += dot(a[i][j], a[i][j]);
#endif
                a[i][j] *= g;
#endif
            }
        }
#if NORM
        float inv = 1.0 / sqrt(subgroupAdd(ss) / float(p.K) + p.eps);
#endif
#if W_HAVE_RAW && !W_SMALL
        /* the sums of each unit's activation groups, for the weights' offsets */
        vec4 asum[ROWSEQ];
        for (uint i = 0; i < ROWSEQ; i++) {
            asum[i] = vec4(0.0);
            for (uint j = 0; j < A_TEX; j++) asum[i][j / (A_TEX / W_NG)] += dot(a[i][j], vec4(1.0));
        }
#if W_RAWP
        /* the raw quants stay in place in their words, q * 2^s: these powers of two undo that */
        for (uint i = 0; i < ROWSEQ; i++)
            for (uint j = 0; j < A_TEX; j++) a[i][j] *= W_RAWP_SCALE(j);
#endif
#endif
        [[dont_unroll]] for (uint r = 0; r < R; r += RS_P) {
            uint n = n0 + r;
            if (n >= N) break;
            float acc0[NW][RS_P];
            for (uint v = 0; v < NW; v++) {
                uint rowb0 = (v == 0u ? wb : p.w_boff1) + n * p.w_bstride;
#if RS_P > 1
                /* the second row: the last one again past N (read, never stored) */
                uint rowb1 = (v == 0u ? wb : p.w_boff1) + min(n + 1u, N - 1u) * p.w_bstride;
#endif
                float t[RS_P];
                for (uint q = 0; q < RS_P; q++) t[q] = 0.0;
#if RS_PAIRU
                w_pl pl; /* the texels a unit pair shares */
#endif
                [[unroll]] for (uint i = 0; i < ROWSEQ; i++) {
                    uint u = uu[i];
#if RS_P > 1
                    uint rowb = rp[i] ? rowb1 : rowb0;
#else
                    uint rowb = rowb0;
#endif
                    /* a branch even where every lane's units are in the row: without it a
                     * lane's units become one basic block, which LLVM schedules loads-first and
                     * spills, 7-8x slower on lavapipe (bench/RESULTS.md) */
                    if (ok[i]) {
                        vec4 wv[A_TEX];
                        float c;
#if ROWSEQ_CH
                        wch = (rowb >> 4) + u / ROWSEQ_CH * ROWSEQ_CT;
                        uint ub = 0u, ui = i % ROWSEQ_CH; /* the unit inside the chunk */
#else
                        uint ub = rowb, ui = u;
#endif
#if W_HAVE_RAW && !W_SMALL
                        vec4 al, be, gd = vec4(0.0);
#if RS_PAIRU
                        if ((i & 1u) == 0u) w_pair_load(ub, ui, pl); /* a pair's first unit */
                        w_unit_raw_pl(ub, ui, pl, wv, al, be);
#else
                        w_unit_raw(ub, ui, wv, al, be);
#endif
                        for (uint j = 0; j < A_TEX; j++) gd[j / (A_TEX / W_NG)] += dot(wv[j], a[i][j]);
                        c = dot(al, gd) + dot(be, asum[i]);
#else
                        float sc = w_unit(ub, ui, wv);
                        float dt = 0.0;
                        for (uint j = 0; j < A_TEX; j++) dt += dot(wv[j], a[i][j]);
                        c = sc * dt;
#endif
#if RS_P > 1
                        t[0] += rp[i] ? 0.0 : c;
                        t[1] += rp[i] ? c : 0.0;
#else
                        t[0] += c;
#endif
                    }
                }
                for (uint q = 0; q < RS_P; q++) {
                    acc0[v][q] = subgroupAdd(t[q]);
#if NORM
                    acc0[v][q] *= inv;
#endif
                }
            }
            for (uint q = 0; q < RS_P; q++) {
                float s = acc0[0][q];
#if SWIGLU
                s = glu_gate(s) * acc0[1][q];
#endif
                if (l == (r + q) % S && n + q < N) mm_store(doff, dstr, boff, n + q, m0, s);
            }
        }
        return;
    }
#endif
#if !ROWSEQ_CH /* the chunk's weight reads serve ROWSEQ only */
    uint arow[TM];
    for (uint m = 0; m < TM; m++) arow[m] = (p.a_off + min(m0 + m, p.M - 1u) * p.a_stride) >> 2;
    uint wrow[NW][R];
    for (uint r = 0; r < R; r++) {
        wrow[0][r] = wb + min(n0 + r, N - 1u) * p.w_bstride;
#if SWIGLU
        wrow[1][r] = p.w_boff1 + min(n0 + r, N - 1u) * p.w_bstride;
#endif
    }
    float acc[NW][R][TM];
    for (uint v = 0; v < NW; v++)
        for (uint r = 0; r < R; r++)
            for (uint m = 0; m < TM; m++) acc[v][r][m] = 0.0;
#if NORM
    float ss[TM];
    for (uint m = 0; m < TM; m++) ss[m] = 0.0;
#endif

    uint units = p.K / UNIT_K;
    for (uint u = l; u < units; u += S) {
        vec4 a[TM][A_TEX];
        for (uint m = 0; m < TM; m++)
            for (uint j = 0; j < A_TEX; j++) a[m][j] = a_tex(arow[m] + u * A_TEX + j);
#if NORM
        for (uint j = 0; j < A_TEX; j++) {
            vec4 g = g_tex((p.g_off >> 2) + u * A_TEX + j);
            for (uint m = 0; m < TM; m++) {
                ss[m] += dot(a[m][j], a[m][j]);
                a[m][j] *= g;
            }
        }
#endif
        for (uint v = 0; v < NW; v++)
            for (uint r = 0; r < R; r++) w_dots(wrow[v][r], u, a, acc[v][r]);
    }

#if NORM
    float inv[TM];
    for (uint m = 0; m < TM; m++) inv[m] = 1.0 / sqrt(RED(ss[m]) / float(p.K) + p.eps);
#endif
    /* reduce each partial sum across the subgroup; lane (r*TM + m) % S stores it */
    uint mc = min(TM, p.M - m0);
    for (uint r = 0; r < R; r++) {
        uint n = n0 + r;
        for (uint m = 0; m < TM; m++) {
            float s = RED(acc[0][r][m]);
#if NORM
            s *= inv[m];
#endif
#if SWIGLU
            float up = RED(acc[1][r][m]);
#if NORM
            up *= inv[m];
#endif
            s = glu_gate(s) * up;
#endif
            if (l == (r * TM + m) % S && n < N && m < mc) mm_store(doff, dstr, boff, n, m0 + m, s);
        }
    }
#endif
}
