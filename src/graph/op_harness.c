/* The op harness. Inputs have realistic magnitudes (not only [0,1)): offsets and spreads that
 * expose a naive variance, an exp() overflow or a missing max subtraction; padding columns of
 * strided inputs hold garbage that a kernel must not read; destinations start filled with a
 * sentinel so an element a kernel forgets to write shows up as a difference. */
#include "graph/op_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"

/* ------------------------------------------------------------------ thresholds and reasons */

/* Why each threshold is what it is. A wrong index, a missing term or a transposed operand
 * gives NMSE of order 1e-2..1, so every threshold leaves four or more orders of margin. */
#define THR_EXACT 1e-12 /* one IEEE op per element: results should be bitwise equal */
#define WHY_EXACT "one IEEE op per element, bitwise equal expected"
#define THR_SUM 1e-9 /* f32 sums in another order: relative error ~sqrt(K)*6e-8 */
#define WHY_SUM "f32 accumulation in a different order (tree vs serial)"
#define THR_TRANS 1e-9 /* exp/tanh/erf implementations differ by a few ulp */
#define WHY_TRANS "transcendental functions differ by a few ulp between libm and the GPU"
#define THR_ATTN 1e-8 /* online softmax rescaling + exp + dot-product order */
#define WHY_ATTN                                                                                   \
    "online softmax (running max, rescaled sums) vs two-pass, f32 dots in another order"
#define WHY_INDEX "indices must match exactly (ties: lowest index first)"
#define THR_F16                                                                                    \
    1e-7 /* one f16 rounding per element: 1 ulp = 2^-11 relative where roundings differ */
#define WHY_F16 "f32 -> f16 conversion: GPU packHalf2x16 may round the last bit differently"

/* ------------------------------------------------------------------ the table */

static int push(vkf_harness_case **v, int *n, int *cap, vkf_harness_case c) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 128;
        vkf_harness_case *nv = realloc(*v, (size_t)*cap * sizeof *nv);
        if (!nv) return -1;
        *v = nv;
    }
    (*v)[(*n)++] = c;
    return 0;
}

#define ADD(...)                                                                                   \
    do {                                                                                           \
        vkf_harness_case c_ = {__VA_ARGS__};                                                       \
        if (push(&v, &n, &cap, c_)) goto oom;                                                      \
    } while (0)

static vkf_op_params attn(int b, int nq, int nkv, int stride, int h, int hkv, int hd, int causal,
                          int dyn) {
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.attn = (vkf_attn_params){
        b, nq, nkv, stride, h, hkv, hd, causal, dyn, 1.0f / sqrtf((float)hd), 0, 0.0f, 0, 0};
    return p;
}

/* the same with a sliding window and an attention-logit soft-cap (gemma2/3) */
static vkf_op_params attn_swa(int b, int nq, int nkv, int stride, int h, int hkv, int hd, int dyn,
                              int window, float softcap) {
    vkf_op_params p = attn(b, nq, nkv, stride, h, hkv, hd, 1, dyn);
    p.attn.window = window;
    p.attn.softcap = softcap;
    return p;
}

/* serve's batched step (len_pos): sequences at their own positions key_len[b] - n_q + i, the
 * causal limit and the window placed there */
static vkf_op_params attn_lenpos(int b, int nq, int nkv, int stride, int h, int hkv, int hd,
                                 int window, float softcap) {
    vkf_op_params p = attn_swa(b, nq, nkv, stride, h, hkv, hd, 0, window, softcap);
    p.attn.len_pos = 1;
    return p;
}

int vkf_harness_cases(int quick, vkf_harness_case **out) {
    vkf_harness_case *v = NULL;
    int n = 0, cap = 0;
    static const int64_t ragged[] = {1, 3, 7, 17, 33, 65, 127, 255, 1000, 4097};
    const int n_ragged = quick ? 5 : 10;
    const vkf_dtype wtypes[] = {VKF_DTYPE_F32, VKF_DTYPE_F16, VKF_DTYPE_BF16, VKF_DTYPE_Q8_0,
                                VKF_DTYPE_Q4_0};
    vkf_op_params p;

    /* matmul: decode shapes (M <= 8), prefill shapes, ragged N and K, bias, strided x */
    static const int64_t mm[][3] = {{1, 1, 32},
                                    {1, 7, 64},
                                    {2, 17, 96},
                                    {3, 33, 128},
                                    {7, 65, 256},
                                    {8, 255, 64},
                                    {9, 127, 160},
                                    {17, 1000, 64},
                                    {33, 65, 512},
                                    {65, 33, 96},
                                    {127, 17, 32},
                                    {255, 64, 256},
                                    {1, 4097, 64},
                                    {4, 64, 4096},
                                    {128, 128, 128},
                                    {1, 100, 4096},
                                    {64, 64, 32768}, /* long K: llvmpipe's loop limiter */
                                    /* decode with many rows: the rows-in-sequence kernel on CPU
                                     * drivers takes 128 and 256 rows per subgroup (ragged; an
                                     * output row within a 64 KiB storage window) */
                                    {1, 8231, 64},
                                    {1, 16001, 96},
                                    /* decode rows of 176 and 256 blocks: 22 and 32 per
                                     * lane of 8 */
                                    {1, 40, 5632},
                                    {1, 24, 8192},
                                    /* 36 blocks a row (gemma's K = 1152): 4.5 a lane, so two
                                     * rows a step (RS_P = 2); an odd N */
                                    {1, 9, 1152}};
    const int n_mm = quick ? 6 : (int)(sizeof mm / sizeof mm[0]);
    for (int w = 0; w < 5; w++)
        for (int i = 0; i < n_mm; i++) {
            memset(&p, 0, sizeof p);
            int flags = (i % 2 ? VKF_HC_BIAS : 0) | (i % 3 == 1 ? VKF_HC_STRIDED : 0);
            ADD(VKF_OP_MATMUL, wtypes[w], mm[i][0], mm[i][1], mm[i][2], flags, 0, p, THR_SUM,
                WHY_SUM);
        }
    /* activations past f16's range (the cooperative-matrix kernel splits them into f16 halves
     * and must fall back to f32 dot products): prefill shapes, float and block weights */
    if (!quick)
        for (int w = 0; w < 4; w++) {
            memset(&p, 0, sizeof p);
            ADD(VKF_OP_MATMUL, wtypes[w], 65, 33, 256, VKF_HC_HUGE | (w % 2 ? VKF_HC_BIAS : 0), 0,
                p, THR_SUM, WHY_SUM);
        }
    if (!quick) /* K not a multiple of 32 for the plain types */
        for (int w = 0; w < 3; w++) {
            static const int64_t mk[][3] = {
                {1, 3, 1}, {3, 7, 17}, {5, 9, 1000}, {2, 65, 4097}, {33, 17, 7}};
            for (int i = 0; i < 5; i++)
                ADD(VKF_OP_MATMUL, wtypes[w], mk[i][0], mk[i][1], mk[i][2], i % 2 ? VKF_HC_BIAS : 0,
                    0, p, THR_SUM, WHY_SUM);
        }

    /* ggml's other block types: ragged N, K one or several blocks (K not a multiple of the
     * tiles, the texel unit count or the workgroup size), decode and prefill shapes; the
     * kernels dequantize in place, so the CPU reference and the GPU multiply the same values
     * in another order: THR_SUM */
    static const vkf_dtype btypes[] = {VKF_DTYPE_Q4_1,   VKF_DTYPE_Q5_0, VKF_DTYPE_Q5_1,
                                       VKF_DTYPE_IQ4_NL, VKF_DTYPE_Q2_K, VKF_DTYPE_Q3_K,
                                       VKF_DTYPE_Q4_K,   VKF_DTYPE_Q5_K, VKF_DTYPE_Q6_K,
                                       VKF_DTYPE_IQ4_XS, VKF_DTYPE_MXFP4};
    static const int64_t bmm[][3] = {{1, 1, 1},
                                     {1, 7, 3},
                                     {3, 33, 2},
                                     {8, 255, 1},
                                     {9, 127, 3},
                                     {33, 65, 2},
                                     {65, 17, 1},
                                     {2, 64, 11},
                                     {1, 40, 22},
                                     /* decode rows of 64 and 176 blocks: on CPU drivers,
                                      * lanes of 8 taking whole texels of blocks at a time
                                      * (ROWSEQ_CH), and 22 blocks a lane; 56 super-blocks:
                                      * 28 units of 64 values a lane */
                                     {1, 40, 64},
                                     {1, 9, 176},
                                     {1, 9, 56},
                                     /* 36 blocks of 32: two rows a step (RS_P = 2) */
                                     {1, 9, 36},
                                     /* K = 2048 in K-quants (the LM heads of TinyLlama and
                                      * Llama-3.2-1B): unit pairs (RS_PAIRU); 27 super-blocks
                                      * (gemma's ffn_down): pairs with a last, partial round */
                                     {1, 33, 8},
                                     {1, 9, 27}};
    const int n_bmm = quick ? 4 : (int)(sizeof bmm / sizeof bmm[0]);
    for (int w = 0; w < (int)(sizeof btypes / sizeof btypes[0]); w++) {
        int64_t be = vkf_dtype_block_elems(btypes[w]);
        for (int i = 0; i < n_bmm; i++) {
            memset(&p, 0, sizeof p);
            ADD(VKF_OP_MATMUL, btypes[w], bmm[i][0], bmm[i][1], bmm[i][2] * be,
                i % 2 ? VKF_HC_BIAS : 0, 0, p, THR_SUM, WHY_SUM);
        }
        memset(&p, 0, sizeof p);
        p.embed.scale = w % 2 ? 8.0f : 1.0f;
        ADD(VKF_OP_EMBED, btypes[w], 17, 1000, be, 0, 0, p, THR_SUM * 1e-3,
            "the same f32 products, FMA contraction may round once less: within an ulp");
        if (!quick)
            ADD(VKF_OP_EMBED, btypes[w], 5, 3, 3 * be, 0, 0, p, THR_SUM * 1e-3,
                "the same f32 products, FMA contraction may round once less: within an ulp");
    }

    /* embedding lookup, every table type */
    for (int w = 0; w < 5; w++) {
        memset(&p, 0, sizeof p);
        p.embed.scale = w % 2 ? 8.0f : 1.0f;
        ADD(VKF_OP_EMBED, wtypes[w], 1, 7, 32, 0, 0, p, THR_EXACT, WHY_EXACT);
        ADD(VKF_OP_EMBED, wtypes[w], 17, 1000, 64, 0, 0, p, THR_EXACT, WHY_EXACT);
        if (!quick) ADD(VKF_OP_EMBED, wtypes[w], 5, 3, 4096, 0, 0, p, THR_EXACT, WHY_EXACT);
    }
    if (!quick)
        for (int i = 0; i < 3; i++) {
            memset(&p, 0, sizeof p);
            p.embed.scale = 1.5f;
            ADD(VKF_OP_EMBED, VKF_DTYPE_F32, ragged[i + 2], 33, ragged[i], 0, 0, p, THR_EXACT,
                WHY_EXACT);
        }

    /* positions: additive table (learned or sinusoidal), static and dynamic offsets */
    memset(&p, 0, sizeof p);
    p.pos.seq_len = 7;
    ADD(VKF_OP_ADD_POS, 0, 14, 64, 128, 0, 0, p, THR_EXACT, WHY_EXACT);
    p.pos.seq_len = 1, p.pos.dyn = 1;
    ADD(VKF_OP_ADD_POS, 0, 1, 17, 256, 0, 200, p, THR_EXACT, WHY_EXACT);
    p.pos.seq_len = 33, p.pos.pos0 = 5, p.pos.dyn = 1;
    ADD(VKF_OP_ADD_POS, 0, 66, 1000, 512, 0, 40, p, THR_EXACT, WHY_EXACT);

    /* rope: both conventions, 1..16 heads, head_dim 32/64/80/128, partial rotation */
    static const int rope_cfg[][5] = {/* heads, head_dim, n_rot, rows(seq), n_past */
                                      {1, 32, 32, 1, 0},    {4, 64, 64, 7, 3},
                                      {8, 80, 80, 17, 100}, {16, 128, 128, 5, 1000},
                                      {2, 64, 32, 33, 0},   {3, 128, 64, 2, 500}};
    const int n_rope = quick ? 3 : 6;
    for (int mode = 0; mode < 2; mode++)
        for (int i = 0; i < n_rope; i++) {
            memset(&p, 0, sizeof p);
            p.rope.seq_len = rope_cfg[i][3];
            p.rope.dyn = rope_cfg[i][4] > 0;
            p.rope.n_head = rope_cfg[i][0];
            p.rope.head_dim = rope_cfg[i][1];
            p.rope.n_rot = rope_cfg[i][2];
            p.rope.mode = mode;
            ADD(VKF_OP_ROPE, 0, rope_cfg[i][3] * (i % 2 ? 2 : 1), 0, 1100,
                i == 4 ? VKF_HC_STRIDED : 0, rope_cfg[i][4], p, THR_EXACT * 100,
                "products of the same f32 cos/sin table: within 1 ulp");
            /* frequency factors, linear scaling and an attention factor in the table (llama3,
             * phi3 LongRoPE, gemma3 global layers) */
            if (i < 3)
                ADD(VKF_OP_ROPE, 0, rope_cfg[i][3], 0, 1100, VKF_HC_FACTORS, rope_cfg[i][4], p,
                    THR_EXACT * 100, "products of the same f32 cos/sin table: within 1 ulp");
        }

    /* elementwise and row ops over ragged widths */
    for (int i = 0; i < n_ragged; i++) {
        int64_t cols = ragged[i], rows = (i % 3 == 0) ? 1 : (i % 3 == 1 ? 3 : 8);
        memset(&p, 0, sizeof p);
        ADD(VKF_OP_ADD, 0, rows, cols, 0, i % 2 ? VKF_HC_BCAST : 0, 0, p, THR_EXACT, WHY_EXACT);
        ADD(VKF_OP_MUL, 0, rows, cols, 0, i % 2 ? 0 : VKF_HC_BCAST, 0, p, THR_EXACT, WHY_EXACT);
        p.scale.scale = 0.125f * (float)(i + 1);
        ADD(VKF_OP_SCALE, 0, rows, cols, 0, i == 4 ? VKF_HC_STRIDED : 0, 0, p, THR_EXACT,
            WHY_EXACT);
        for (int a = 0; a < VKF_UNARY_COUNT; a++) {
            memset(&p, 0, sizeof p);
            p.unary.act = a;
            ADD(VKF_OP_UNARY, 0, rows, cols, 0, 0, 0, p,
                a == VKF_UNARY_RELU ? THR_EXACT : THR_TRANS,
                a == VKF_UNARY_RELU ? WHY_EXACT : WHY_TRANS);
        }
        memset(&p, 0, sizeof p);
        p.scale.scale = 2.0f;
        p.scale.softcap = 3.0f; /* final-logit soft-cap: 3 tanh(2x / 3), saturating tails */
        ADD(VKF_OP_SCALE, 0, rows, cols, 0, 0, 0, p, THR_TRANS, WHY_TRANS);
        memset(&p, 0, sizeof p);
        ADD(VKF_OP_SWIGLU, 0, rows, cols, 0, 0, 0, p, THR_TRANS, WHY_TRANS);
        p.glu.gelu = 1; /* GeGLU */
        ADD(VKF_OP_SWIGLU, 0, rows, cols, 0, 0, 0, p, THR_TRANS, WHY_TRANS);
        memset(&p, 0, sizeof p);
        p.glu.oai = 1; /* gpt-oss's constants; a limit of 2 clamps the harness's N(0, 1) inputs */
        p.glu.alpha = 1.702f;
        p.glu.limit = i % 2 ? 7.0f : 2.0f;
        ADD(VKF_OP_SWIGLU, 0, rows, cols, 0, 0, 0, p, THR_TRANS, WHY_TRANS);
        memset(&p, 0, sizeof p);
        p.norm.eps = i % 2 ? 1e-5f : 1e-6f;
        ADD(VKF_OP_LAYERNORM, 0, rows, cols, 0, i == 5 ? VKF_HC_NOAFFINE : 0, 0, p, THR_SUM,
            WHY_SUM);
        ADD(VKF_OP_RMSNORM, 0, rows, cols, 0, i == 6 ? VKF_HC_NOAFFINE : 0, 0, p, THR_SUM, WHY_SUM);
        memset(&p, 0, sizeof p);
        p.scale.scale = i % 2 ? 0.25f : 0.0f;
        ADD(VKF_OP_SOFTMAX, 0, rows + 4, cols, 0, i % 2 ? VKF_HC_MASK : 0, 0, p, THR_TRANS,
            WHY_TRANS);
        ADD(VKF_OP_LOG_SOFTMAX, 0, rows, cols, 0, 0, 0, p, THR_TRANS, WHY_TRANS);
        memset(&p, 0, sizeof p);
        ADD(VKF_OP_ARGMAX, 0, rows, cols, 0, i % 2 ? VKF_HC_TIES : 0, 0, p, 0, WHY_INDEX);
        p.topk.k = cols < 40 ? (int)cols : 40;
        ADD(VKF_OP_TOPK, 0, rows, cols, 0, i % 2 ? 0 : VKF_HC_TIES, 0, p, 0, WHY_INDEX);
    }
    if (!quick) { /* the vocabulary: softmax, argmax and top-k over 50257 */
        memset(&p, 0, sizeof p);
        ADD(VKF_OP_SOFTMAX, 0, 2, 50257, 0, 0, 0, p, THR_TRANS, WHY_TRANS);
        ADD(VKF_OP_LOG_SOFTMAX, 0, 2, 50257, 0, 0, 0, p, THR_TRANS, WHY_TRANS);
        ADD(VKF_OP_ARGMAX, 0, 2, 50257, 0, 0, 0, p, 0, WHY_INDEX);
        p.topk.k = 64;
        ADD(VKF_OP_TOPK, 0, 2, 50257, 0, 0, 0, p, 0, WHY_INDEX);
        /* Gemma-3's 262144 words, 200 rounds: llvmpipe's loop limiter (65535 iterations per
         * invocation) cut the rounds short before topk.comp took 8 columns per iteration */
        p.topk.k = 200;
        ADD(VKF_OP_TOPK, 0, 2, 262144, 0, 0, 0, p, 0, WHY_INDEX);
        /* the same vocabulary's softmax: the CPU reference's f32 sum drifted to NMSE 1.5e-9
         * here, above THR_TRANS, before it summed in double */
        memset(&p, 0, sizeof p);
        ADD(VKF_OP_SOFTMAX, 0, 1, 262144, 0, 0, 0, p, THR_TRANS, WHY_TRANS);
    }

    /* attention: MHA, GQA, causal, key padding, cross (n_q != n_kv), cache offsets, long */
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 0, attn(1, 1, 1, 1, 1, 1, 32, 1, 0), THR_ATTN, WHY_ATTN);
    /* a prefill chunk deep in a long context: 131072 keys, more than one invocation may walk
     * on llvmpipe (its loop limiter ends an invocation's loops after 65535 iterations in all:
     * NMSE 1e-2 before vk_attention.c chunked the keys there) */
    if (!quick) {
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 0, attn(1, 16, 131072, 131072, 2, 1, 64, 1, 0),
            THR_ATTN, WHY_ATTN);
        ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 0,
            attn(1, 8, 100000, 100000, 4, 2, 64, 1, 0), THR_ATTN,
            WHY_ATTN); /* an F16 cache, GQA, 7 parts */
        /* the same past 16384 keys at head_dim 128 and 256 (3 and 2 parts on CPU drivers) */
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 0, attn(1, 8, 40000, 40000, 2, 1, 128, 1, 0), THR_ATTN,
            WHY_ATTN);
        ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 0,
            attn(1, 4, 20000, 20000, 2, 1, 256, 1, 0), THR_ATTN, WHY_ATTN);
        /* decode past 262144 keys (head_dim 128: lanes taking keys in 3 parts on CPU drivers,
         * the subgroup layout in the GPU table; an F16 cache, half an F32 one's memory): an f32
         * running sum in the CPU reference drifted to NMSE 2.9e-8 here (3.5e-7 at 600000 keys),
         * above THR_ATTN; it sums in double since */
        ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 0,
            attn(1, 1, 270000, 270000, 2, 1, 128, 1, 0), THR_ATTN, WHY_ATTN);
    }
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0, attn(2, 7, 7, 7, 4, 4, 64, 1, 0), THR_ATTN,
        WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0, attn(3, 5, 17, 20, 8, 2, 80, 0, 0), THR_ATTN,
        WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 1000, attn(1, 1, 1024, 1024, 16, 4, 128, 1, 1), THR_ATTN,
        WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_STRIDED, 200, attn(1, 33, 512, 512, 8, 8, 64, 1, 1),
        THR_ATTN, WHY_ATTN);
    /* decode (one query row): the key-per-lane layout on CPU drivers; head_dim below, at and
     * above the subgroup's texel count, padding lengths, GQA, a deep cache */
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 900, attn(1, 1, 1024, 1024, 8, 4, 32, 1, 1), THR_ATTN,
        WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0, attn(2, 1, 300, 320, 8, 2, 64, 1, 0),
        THR_ATTN, WHY_ATTN);
    if (!quick) {
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_STRIDED, 0, attn(1, 1, 77, 77, 4, 4, 48, 0, 0),
            THR_ATTN, WHY_ATTN);
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 3, attn(3, 1, 5, 8, 2, 1, 16, 1, 1), THR_ATTN,
            WHY_ATTN);
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0, attn(2, 65, 65, 65, 2, 1, 128, 1, 0),
            THR_ATTN, WHY_ATTN);
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 0, attn(1, 1024, 1024, 1024, 1, 1, 32, 1, 0), THR_ATTN,
            WHY_ATTN);
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0, attn(4, 3, 255, 300, 16, 16, 32, 0, 0),
            THR_ATTN, WHY_ATTN);
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 0, attn(1, 127, 1000, 1000, 4, 2, 64, 1, 0), THR_ATTN,
            WHY_ATTN);
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 17, attn(2, 4, 64, 64, 6, 3, 80, 1, 1),
            THR_ATTN, WHY_ATTN);
    }

    /* per-head norms (q/k norm: rows = tokens x heads, cols = head_dim) */
    memset(&p, 0, sizeof p);
    p.norm.eps = 1e-6f;
    ADD(VKF_OP_RMSNORM, 0, 7 * 4, 32, 0, 0, 0, p, THR_SUM, WHY_SUM);
    ADD(VKF_OP_RMSNORM, 0, 33 * 8, 128, 0, 0, 0, p, THR_SUM, WHY_SUM);
    /* sliding window (a mask in the kernel) and soft-cap: prefill past the window, decode deep in
     * a cache (the window's start far from key 0), GQA, padding lengths, a window wider than
     * the keys */
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 0, attn_swa(1, 30, 30, 30, 2, 1, 48, 0, 8, 4.0f), THR_ATTN,
        WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 200, attn_swa(1, 33, 512, 512, 4, 1, 32, 1, 8, 0.0f),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 900, attn_swa(1, 1, 1024, 1024, 8, 4, 32, 1, 100, 0.0f),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0,
        attn_swa(2, 17, 17, 20, 4, 2, 64, 0, 5, 30.0f), THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 40, attn_swa(1, 1, 64, 64, 2, 1, 256, 1, 4096, 2.0f),
        THR_ATTN, WHY_ATTN);
    /* prefill at head_dim 128 and 256 (qwen3, gemma): lanes take query rows on CPU drivers
     * (4 per lane, head_dim / 4 texels of q and of the accumulator each) */
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 76, attn_swa(1, 24, 100, 100, 4, 1, 256, 1, 16, 2.0f),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 0, attn(1, 8, 8, 8, 4, 1, 256, 1, 1), THR_ATTN,
        WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, 0, 28, attn(1, 12, 40, 40, 4, 2, 128, 1, 1), THR_ATTN,
        WHY_ATTN);
    /* serve batching (len_pos): one query per sequence at its own position (random key
     * lengths, one full), windows shorter than most lengths; texel decode (head_dim 64, GQA),
     * the general kernel (head_dim 80), F16 below; several queries per sequence */
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0,
        attn_lenpos(8, 1, 300, 320, 8, 2, 64, 16, 0.0f), THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0,
        attn_lenpos(5, 1, 129, 129, 4, 4, 80, 7, 30.0f), THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_LENS, 0, attn_lenpos(3, 4, 64, 64, 2, 1, 32, 5, 0.0f),
        THR_ATTN, WHY_ATTN);

    /* attention sinks (gpt-oss, the general kernel): prefill past a window, decode deep in a
     * cache with GQA, key lengths; past 16384 keys at head_dim 256 (2 chunks on CPU drivers:
     * the sink joins the last one's sum) */
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_SINKS, 0,
        attn_swa(1, 30, 30, 30, 4, 2, 64, 0, 8, 0.0f), THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_SINKS, 300, attn(1, 1, 512, 512, 8, 2, 64, 1, 1),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_SINKS | VKF_HC_LENS, 0,
        attn(2, 7, 7, 7, 4, 4, 64, 1, 0), THR_ATTN, WHY_ATTN);
    if (!quick)
        ADD(VKF_OP_ATTENTION, 0, 0, 0, 0, VKF_HC_SINKS, 0,
            attn(1, 2, 20000, 20000, 2, 1, 256, 1, 0), THR_ATTN, WHY_ATTN);

    /* KV-cache writes */
    memset(&p, 0, sizeof p);
    p.copy.dst_row0 = 3;
    ADD(VKF_OP_COPY_ROWS, 0, 5, 64, 16, 0, 0, p, THR_EXACT, WHY_EXACT);
    p.copy.dst_row0 = 0, p.copy.dyn = 1;
    ADD(VKF_OP_COPY_ROWS, 0, 1, 1000, 300, VKF_HC_STRIDED, 250, p, THR_EXACT, WHY_EXACT);
    /* F16 KV caches (wtype F16: the cache's dtype): the write rounds to f16, attention reads
     * halves */
    ADD(VKF_OP_COPY_ROWS, VKF_DTYPE_F16, 1, 1000, 300, VKF_HC_STRIDED, 250, p, THR_F16, WHY_F16);
    memset(&p, 0, sizeof p);
    p.copy.dst_row0 = 3;
    ADD(VKF_OP_COPY_ROWS, VKF_DTYPE_F16, 5, 64, 16, 0, 0, p, THR_F16, WHY_F16);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 900, attn(1, 1, 1024, 1024, 8, 4, 32, 1, 1),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 200, attn(1, 33, 512, 512, 8, 8, 64, 1, 1),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, VKF_HC_LENS, 0,
        attn_swa(2, 17, 17, 20, 4, 2, 64, 0, 5, 30.0f), THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, VKF_HC_LENS, 0,
        attn_lenpos(4, 1, 200, 200, 4, 2, 64, 9, 0.0f), THR_ATTN, WHY_ATTN); /* serve, F16 */
    /* F16 caches in attention_texel.comp (a K/V texel holds 8 halves): decode with lanes taking
     * keys (head_dim 64, TinyLlama's GQA 32/4; 128 and 80 on CPU drivers), prefill with 4 query
     * rows per lane (64 rows), the subgroup layout (decode at head_dim 256, gemma's 4/1 heads, on
     * CPU drivers; 128 and 80, 16 and 10 texels per head, in the GPU table), and head_dim 36, not
     * a multiple of 8, which stays on attention.comp */
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 700, attn(1, 1, 1024, 1024, 32, 4, 64, 1, 1),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 100, attn(1, 64, 256, 256, 8, 2, 64, 1, 1),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 300, attn(1, 1, 512, 512, 4, 2, 128, 1, 1),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, VKF_HC_LENS, 0,
        attn(2, 9, 40, 48, 4, 4, 80, 1, 0), THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 20, attn(1, 3, 64, 64, 2, 1, 36, 1, 1),
        THR_ATTN, WHY_ATTN);
    ADD(VKF_OP_ATTENTION, VKF_DTYPE_F16, 0, 0, 0, 0, 600, attn(1, 1, 700, 700, 4, 1, 256, 1, 1),
        THR_ATTN, WHY_ATTN);

    /* pool (embeddings): mean / first / last row of each sequence of right-padded rows, key
     * lengths from 1 to all; wide rows, long sequences, many sequences */
    static const int pool_cfg[][3] = {/* sequences, rows each, cols */
                                      {1, 1, 384},
                                      {3, 7, 33},
                                      {5, 130, 1000},
                                      {257, 3, 64}};
    for (int mode = 0; mode < 3; mode++)
        for (int i = 0; i < (quick ? 2 : 4); i++) {
            memset(&p, 0, sizeof p);
            p.pool.mode = mode;
            p.pool.seq_len = pool_cfg[i][1];
            ADD(VKF_OP_POOL, 0, pool_cfg[i][0], pool_cfg[i][2], pool_cfg[i][1],
                VKF_HC_LENS | (i == 2 ? VKF_HC_STRIDED : 0), 0, p,
                mode == VKF_POOL_MEAN ? THR_SUM : THR_EXACT,
                mode == VKF_POOL_MEAN ? WHY_SUM : WHY_EXACT);
        }

    /* mixture of experts: m tokens, n_past = k experts per token (distinct ids, as TOPK gives
     * them). mul_mat_id: n rows per expert, k inner; decode (one token) and prefill, one input
     * row per token or per (token, expert) (VKF_HC_STRIDED here), every weight type */
    static const int64_t mmid[][5] = {/* tokens, N, K, experts, k */
                                      {1, 64, 64, 8, 2},   {7, 33, 96, 4, 4},  {17, 17, 256, 16, 3},
                                      {1, 129, 32, 60, 4}, {33, 64, 64, 8, 1}, {5, 1000, 64, 3, 2}};
    const int n_mmid = quick ? 3 : (int)(sizeof mmid / sizeof mmid[0]);
    for (int w = 0; w < 5 + 2; w++)
        for (int i = 0; i < n_mmid; i++) {
            vkf_dtype wt = w < 5 ? wtypes[w] : (w == 5 ? VKF_DTYPE_Q4_K : VKF_DTYPE_Q6_K);
            int64_t kk = mmid[i][2];
            if (w >= 5) kk = 256 * (i % 2 + 1); /* K-quants: whole super-blocks */
            memset(&p, 0, sizeof p);
            p.moe.n_expert = (int32_t)mmid[i][3];
            ADD(VKF_OP_MUL_MAT_ID, wt, mmid[i][0], mmid[i][1], kk, i % 2 ? VKF_HC_STRIDED : 0,
                (int32_t)mmid[i][4], p, THR_SUM, WHY_SUM);
        }
    /* the gate weights: gathered only (exact), renormalised, softmax over the k, scaled */
    static const int64_t mw[][3] = {{1, 8, 2}, {7, 60, 4}, {33, 128, 8}, {4, 4, 4}};
    for (int i = 0; i < 4; i++)
        for (int var = 0; var < 4; var++) {
            memset(&p, 0, sizeof p);
            p.moe.norm = var == 1 || var == 3;
            p.moe.softmax_w = var >= 2;
            p.moe.scale = var == 3 ? 2.5f : 0.0f;
            ADD(VKF_OP_MOE_WEIGHTS, 0, mw[i][0], mw[i][1], 0, 0, (int32_t)mw[i][2], p,
                var == 0 ? THR_EXACT : THR_TRANS, var == 0 ? WHY_EXACT : WHY_TRANS);
        }
    /* the weighted sum over the k experts (k = 1: a row scaled by its own factor) */
    static const int64_t ms[][3] = {{1, 64, 2}, {7, 96, 4}, {33, 1000, 8}, {5, 17, 1}};
    for (int i = 0; i < 4; i++) {
        memset(&p, 0, sizeof p);
        ADD(VKF_OP_MOE_SUM, 0, ms[i][0], ms[i][1], 0, 0, (int32_t)ms[i][2], p, THR_SUM * 1e-3,
            "the same f32 products and sums in the same order, FMA contraction may round once "
            "less: within an ulp");
    }
    /* grouped selection: groups of 1, 2, 8 and 16 experts, one to all groups kept */
    static const int mg[][4] = {/* tokens, experts, groups, used */
                                {1, 16, 4, 2},
                                {7, 64, 8, 3},
                                {3, 8, 8, 8},
                                {33, 256, 16, 4},
                                {2, 32, 2, 1}};
    for (int i = 0; i < 5; i++) {
        memset(&p, 0, sizeof p);
        p.moe.n_group = mg[i][2];
        p.moe.n_group_used = mg[i][3];
        ADD(VKF_OP_MOE_GROUP_MASK, 0, mg[i][0], mg[i][1], 0, 0, 0, p, THR_EXACT,
            "entries copied or set to -inf: bitwise equal");
    }

    *out = v;
    return n;
oom:
    free(v);
    *out = NULL;
    return -1;
}

void vkf_harness_describe(const vkf_harness_case *c, char *buf, size_t n) {
    const vkf_op_params *p = &c->p;
    int k = 0;
    switch (c->op) {
    case VKF_OP_MATMUL:
        k = snprintf(buf, n, "matmul %s M=%lld N=%lld K=%lld", vkf_dtype_name(c->wtype),
                     (long long)c->m, (long long)c->n, (long long)c->k);
        break;
    case VKF_OP_EMBED:
        k = snprintf(buf, n, "embed %s ids=%lld vocab=%lld dim=%lld", vkf_dtype_name(c->wtype),
                     (long long)c->m, (long long)c->n, (long long)c->k);
        break;
    case VKF_OP_ROPE:
        k = snprintf(buf, n, "rope %s rows=%lld heads=%d head_dim=%d n_rot=%d n_past=%d",
                     p->rope.mode ? "neox" : "normal", (long long)c->m, p->rope.n_head,
                     p->rope.head_dim, p->rope.n_rot, c->n_past);
        break;
    case VKF_OP_ATTENTION:
        k = snprintf(buf, n, "attention B=%d n_q=%d n_kv=%d heads=%d/%d head_dim=%d%s%s n_past=%d",
                     p->attn.batch, p->attn.n_q, p->attn.n_kv, p->attn.n_head, p->attn.n_kv_head,
                     p->attn.head_dim, p->attn.causal ? " causal" : "",
                     p->attn.kv_dyn ? " cache" : "", c->n_past);
        if (k > 0 && (size_t)k < n && c->wtype == VKF_DTYPE_F16)
            k += snprintf(buf + k, n - (size_t)k, " kv=f16");
        if (k > 0 && (size_t)k < n && p->attn.window)
            k += snprintf(buf + k, n - (size_t)k, " window=%d", p->attn.window);
        if (k > 0 && (size_t)k < n && p->attn.len_pos)
            k += snprintf(buf + k, n - (size_t)k, " lenpos");
        if (k > 0 && (size_t)k < n && p->attn.softcap > 0)
            k += snprintf(buf + k, n - (size_t)k, " softcap=%g", (double)p->attn.softcap);
        if (k > 0 && (size_t)k < n && (c->flags & VKF_HC_SINKS))
            k += snprintf(buf + k, n - (size_t)k, " sinks");
        break;
    case VKF_OP_COPY_ROWS:
        k = snprintf(buf, n, "copy_rows %lldx%lld -> %s cache", (long long)c->m, (long long)c->n,
                     c->wtype == VKF_DTYPE_F16 ? "f16" : "f32");
        break;
    case VKF_OP_POOL:
        k = snprintf(buf, n, "pool %s B=%lld rows=%lld cols=%lld",
                     p->pool.mode == VKF_POOL_MEAN    ? "mean"
                     : p->pool.mode == VKF_POOL_FIRST ? "first"
                                                      : "last",
                     (long long)c->m, (long long)c->k, (long long)c->n);
        break;
    case VKF_OP_SWIGLU:
        k = snprintf(buf, n, "%s %lldx%lld",
                     p->glu.oai    ? "swiglu_oai"
                     : p->glu.gelu ? "geglu"
                                   : "swiglu",
                     (long long)c->m, (long long)c->n);
        break;
    case VKF_OP_SCALE:
        k = snprintf(buf, n, "scale %g%s %lldx%lld", (double)p->scale.scale,
                     p->scale.softcap > 0 ? " softcap" : "", (long long)c->m, (long long)c->n);
        break;
    case VKF_OP_UNARY:
        k = snprintf(buf, n, "unary %s %lldx%lld", vkf_unary_name(p->unary.act), (long long)c->m,
                     (long long)c->n);
        break;
    case VKF_OP_MUL_MAT_ID:
        k = snprintf(buf, n, "mul_mat_id %s tokens=%lld k=%d of %d experts N=%lld K=%lld%s",
                     vkf_dtype_name(c->wtype), (long long)c->m, c->n_past, p->moe.n_expert,
                     (long long)c->n, (long long)c->k,
                     c->flags & VKF_HC_STRIDED ? " per-pair" : "");
        return; /* STRIDED means per-pair input here */
    case VKF_OP_MOE_WEIGHTS:
        k = snprintf(buf, n, "moe_weights tokens=%lld k=%d of %lld%s%s%s", (long long)c->m,
                     c->n_past, (long long)c->n, p->moe.softmax_w ? " softmax" : "",
                     p->moe.norm ? " norm" : "", p->moe.scale != 0.0f ? " scale" : "");
        break;
    case VKF_OP_MOE_SUM:
        k = snprintf(buf, n, "moe_sum tokens=%lld k=%d cols=%lld", (long long)c->m, c->n_past,
                     (long long)c->n);
        break;
    case VKF_OP_MOE_GROUP_MASK:
        k = snprintf(buf, n, "moe_group_mask %lldx%lld groups=%d used=%d", (long long)c->m,
                     (long long)c->n, p->moe.n_group, p->moe.n_group_used);
        break;
    default:
        k = snprintf(buf, n, "%s %lldx%lld", vkf_op_name(c->op), (long long)c->m, (long long)c->n);
        break;
    }
    if (k < 0 || (size_t)k >= n) return;
    snprintf(buf + k, n - (size_t)k, "%s%s%s%s%s%s%s%s", c->flags & VKF_HC_BIAS ? " bias" : "",
             c->flags & VKF_HC_STRIDED ? " strided" : "", c->flags & VKF_HC_MASK ? " mask" : "",
             c->flags & VKF_HC_BCAST ? " bcast" : "", c->flags & VKF_HC_LENS ? " keylens" : "",
             c->flags & VKF_HC_TIES ? " ties" : "", c->flags & VKF_HC_FACTORS ? " factors" : "",
             c->flags & VKF_HC_HUGE ? " huge" : "");
}

/* ------------------------------------------------------------------ inputs */

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t rng_u32(rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 11);
}
static float rng_unif(rng *r) { return (rng_u32(r) >> 8) * (1.0f / 16777216.0f); }
static float rng_normal(rng *r) {
    float u = rng_unif(r) + 1e-7f, v = rng_unif(r);
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

/* One operand: its description and host contents (row_stride elements per row, storage type). */
typedef struct operand {
    vkf_tensor t;
    void *host;
} operand;

static vkf_status operand_make(operand *o, vkf_dtype dt, int64_t rows, int64_t cols, int strided,
                               const char *name) {
    o->t = vkf_tensor_make(dt, rows, cols, name);
    if (strided && vkf_dtype_block_elems(dt) == 1) o->t.row_stride = cols + 5;
    size_t bytes = vkf_dtype_row_bytes(dt, rows * o->t.row_stride);
    o->host = calloc(1, bytes ? bytes : 4);
    return o->host ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "harness: out of memory");
}

/* Block types (src/core/wtype.h): random bytes, the f16 scale fields
 * of each block set to c * u (u uniform in +-[0.5, 1.5]; the min fields positive) and c chosen
 * so the dequantized values have RMS sd. Every value is linear in the scale fields, so one
 * dequantization with c = 1 measures the RMS. Random blocks use every bit pattern of the
 * quants and scales, which a quantizer's output would not. */
static void fill_blocks(operand *o, rng *r, float sd) {
    const vkf_wtype *wt = vkf_wtype_of(o->t.dtype);
    int64_t n = o->t.rows * o->t.row_stride, nb = n / wt->block_elems;
    uint8_t *b = o->host;
    float *u = malloc((size_t)(nb * wt->n_f16 + 1) * sizeof *u),
          *tmp = malloc((size_t)n * sizeof *tmp);
    if (!u || !tmp) goto out;
    for (size_t i = 0; i < (size_t)nb * wt->block_bytes; i++)
        b[i] = (uint8_t)rng_u32(r);
    for (int pass = 0; pass < 2; pass++) {
        double ss = 0;
        float c = 1.0f;
        if (pass == 1) {
            vkf_dequantize_row(o->t.dtype, b, tmp, n);
            for (int64_t i = 0; i < n; i++)
                ss += (double)tmp[i] * tmp[i];
            c = ss > 0 ? sd / (float)sqrt(ss / (double)n) : 1.0f;
        }
        /* E8M0 scales (MXFP4): exponents 125..129 at first, then all shifted by the power of
         * two nearest to c (the RMS lands within a factor sqrt(2) of sd) */
        const int shift = pass == 1 && c > 0.0f ? (int)lrintf(log2f(c)) : 0;
        for (int64_t i = 0; i < nb; i++) {
            for (int f = 0; f < wt->n_f16; f++) {
                float *uf = &u[i * wt->n_f16 + f];
                if (pass == 0)
                    *uf = (0.5f + rng_unif(r)) * (f == 0 && (rng_u32(r) & 1) ? -1.0f : 1.0f);
                uint16_t h = vkf_f32_to_f16(c * *uf);
                memcpy(b + (size_t)i * wt->block_bytes + wt->f16_off[f], &h, 2);
            }
            for (int f = 0; f < wt->n_e8m0; f++) {
                uint8_t *e = b + (size_t)i * wt->block_bytes + wt->e8m0_off;
                int v = pass == 0 ? 125 + (int)(rng_u32(r) % 5u) : *e + shift;
                *e = (uint8_t)(v < 1 ? 1 : v > 254 ? 254 : v);
            }
        }
    }
out:
    free(u);
    free(tmp);
}

/* Fills every element (padding included) with mean + sd * N(0,1), stored as dtype. */
static void fill_normal(operand *o, rng *r, float mean, float sd) {
    int64_t n = o->t.rows * o->t.row_stride;
    const vkf_wtype *wt = vkf_wtype_of(o->t.dtype);
    if (wt && wt->block_elems > 1) {
        fill_blocks(o, r, sd);
        return;
    }
    float *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp) return;
    for (int64_t i = 0; i < n; i++)
        tmp[i] = mean + sd * rng_normal(r);
    if (o->t.dtype == VKF_DTYPE_I32)
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)o->host)[i] = (int32_t)tmp[i];
    else
        vkf_quantize_row(o->t.dtype, tmp, o->host, n);
    free(tmp);
}

/* Expert ids as TOPK gives them: each row k distinct experts of [0, n_expert) (a partial
 * shuffle), the last row holding expert n_expert - 1 first (the last expert's rows). */
static void harness_ids(operand *o, rng *r, int n_expert) {
    int64_t k = o->t.cols;
    int *perm = malloc((size_t)n_expert * sizeof *perm);
    if (!perm) return;
    for (int64_t t = 0; t < o->t.rows; t++) {
        for (int e = 0; e < n_expert; e++)
            perm[e] = e;
        for (int64_t i = 0; i < k; i++) {
            int j = (int)i + (int)(rng_u32(r) % (uint32_t)(n_expert - i));
            int tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
            ((int32_t *)o->host)[t * o->t.row_stride + i] = perm[i];
        }
    }
    if (o->t.rows > 1) {
        int32_t *last = (int32_t *)o->host + (o->t.rows - 1) * o->t.row_stride;
        for (int64_t i = 1; i < k; i++)
            if (last[i] == n_expert - 1) last[i] = last[0];
        last[0] = n_expert - 1;
    }
    free(perm);
}

/* ------------------------------------------------------------------ run and compare */

typedef struct setup {
    operand src[VKF_MAX_SRC];
    int n_src;
    operand dst;
} setup;

static vkf_status build(const vkf_harness_case *c, setup *s) {
    rng r = {0x9E3779B97F4A7C15ull ^ (uint64_t)(c->op * 7919 + c->m * 104729 + c->n * 1299709 +
                                                c->k * 15485863 + c->wtype)};
    const vkf_op_params *p = &c->p;
    int st = (c->flags & VKF_HC_STRIDED) != 0;
    operand *a = &s->src[0], *b = &s->src[1], *cc = &s->src[2], *d = &s->src[3];
    memset(s, 0, sizeof *s);
    switch (c->op) {
    case VKF_OP_MATMUL:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->k, st, "x"));
        VKF_TRY(operand_make(b, c->wtype, c->n, c->k, 0, "w"));
        fill_normal(a, &r, 0.0f, c->flags & VKF_HC_HUGE ? 1e5f : 1.0f);
        fill_normal(b, &r, 0.0f, 3.0f / sqrtf((float)c->k));
        s->n_src = 2;
        if (c->flags & VKF_HC_BIAS) {
            VKF_TRY(operand_make(cc, VKF_DTYPE_F32, 1, c->n, 0, "bias"));
            fill_normal(cc, &r, 0.0f, 1.0f);
            s->n_src = 3;
        }
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "y");
    case VKF_OP_EMBED:
        VKF_TRY(operand_make(a, c->wtype, c->n, c->k, 0, "table"));
        VKF_TRY(operand_make(b, VKF_DTYPE_I32, 1, c->m, 0, "ids"));
        fill_normal(a, &r, 0.0f, 1.0f);
        for (int64_t i = 0; i < c->m; i++)
            ((int32_t *)b->host)[i] = (int32_t)(rng_u32(&r) % (uint32_t)c->n);
        if (c->m > 1) ((int32_t *)b->host)[c->m - 1] = (int32_t)c->n - 1; /* the last row */
        s->n_src = 2;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->k, 0, "y");
    case VKF_OP_ADD_POS:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, st, "x"));
        VKF_TRY(operand_make(b, VKF_DTYPE_F32, c->k, c->n, 0, "pos_table"));
        fill_normal(a, &r, 0.0f, 1.0f);
        fill_normal(b, &r, 0.0f, 1.0f);
        s->n_src = 2;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "y");
    case VKF_OP_ROPE: {
        int64_t cols = (int64_t)p->rope.n_head * p->rope.head_dim;
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, cols, st, "x"));
        VKF_TRY(operand_make(b, VKF_DTYPE_F32, c->k, p->rope.n_rot, 0, "rope_table"));
        fill_normal(a, &r, 0.0f, 2.0f);
        if (c->flags & VKF_HC_FACTORS) {
            float f[VKF_MAX_HEAD_DIM / 2];
            for (int i = 0; i < p->rope.n_rot / 2; i++)
                f[i] = 1.0f + 31.0f * (float)i / (float)(p->rope.n_rot / 2);
            vkf_rope_table_ext(b->host, (int)c->k, p->rope.n_rot, 500000.0, 0.125, f, 1.19);
        } else {
            vkf_rope_table(b->host, (int)c->k, p->rope.n_rot, 10000.0);
        }
        s->n_src = 2;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, cols, 0, "y");
    }
    case VKF_OP_ADD:
    case VKF_OP_MUL:
    case VKF_OP_SWIGLU:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, st, "a"));
        VKF_TRY(operand_make(b, VKF_DTYPE_F32, (c->flags & VKF_HC_BCAST) ? 1 : c->m, c->n, 0, "b"));
        fill_normal(a, &r, 0.5f, 3.0f);
        fill_normal(b, &r, -0.5f, 3.0f);
        s->n_src = 2;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "y");
    case VKF_OP_SCALE:
    case VKF_OP_UNARY:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, st, "x"));
        fill_normal(a, &r, 0.0f, 4.0f); /* tails to |x| ~ 16: tanh/exp saturation */
        if (c->n > 2) ((float *)a->host)[1] = 30.0f, ((float *)a->host)[2] = -30.0f;
        s->n_src = 1;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "y");
    case VKF_OP_LAYERNORM:
    case VKF_OP_RMSNORM:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, st, "x"));
        fill_normal(a, &r, 5.0f, 3.0f); /* an offset: exposes E[x²]-E[x]² cancellation */
        s->n_src = 1;
        if (!(c->flags & VKF_HC_NOAFFINE)) {
            VKF_TRY(operand_make(b, VKF_DTYPE_F32, 1, c->n, 0, "gamma"));
            fill_normal(b, &r, 1.0f, 0.1f);
            s->n_src = 2;
            if (c->op == VKF_OP_LAYERNORM) {
                VKF_TRY(operand_make(cc, VKF_DTYPE_F32, 1, c->n, 0, "beta"));
                fill_normal(cc, &r, 0.0f, 0.1f);
                s->n_src = 3;
            }
        }
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "y");
    case VKF_OP_SOFTMAX:
    case VKF_OP_LOG_SOFTMAX:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, 0, "x"));
        fill_normal(a, &r, 20.0f,
                    6.0f); /* logits around 20: exp() without max subtraction overflows at 88 */
        s->n_src = 1;
        if (c->flags & VKF_HC_MASK) {
            VKF_TRY(operand_make(b, VKF_DTYPE_F32, c->m, c->n, 0, "mask"));
            float *m = b->host;
            for (int64_t i = 0; i < c->m; i++)
                for (int64_t j = 0; j < c->n; j++)
                    m[i * c->n + j] =
                        (i % 5 == 4 || rng_unif(&r) < 0.3f) ? -INFINITY : rng_normal(&r);
            s->n_src = 2;
        }
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "y");
    case VKF_OP_ATTENTION: {
        const vkf_attn_params *ap = &p->attn;
        int64_t qc = (int64_t)ap->n_head * ap->head_dim, kc = (int64_t)ap->n_kv_head * ap->head_dim;
        int64_t kv_rows = (int64_t)(ap->batch - 1) * ap->kv_stride + ap->n_kv;
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, (int64_t)ap->batch * ap->n_q, qc, st, "q"));
        vkf_dtype kvt =
            c->wtype == VKF_DTYPE_F16 ? VKF_DTYPE_F16 : VKF_DTYPE_F32; /* an F16 KV cache */
        VKF_TRY(operand_make(b, kvt, kv_rows, kc, st, "k"));
        VKF_TRY(operand_make(cc, kvt, kv_rows, kc, st, "v"));
        fill_normal(a, &r, 0.0f, 1.5f); /* scores of spread ~2: neither uniform nor one-hot */
        fill_normal(b, &r, 0.0f, 1.5f);
        fill_normal(cc, &r, 0.3f, 1.0f);
        s->n_src = 3;
        if (c->flags & VKF_HC_LENS) {
            int64_t keys = ap->kv_dyn ? c->n_past + ap->n_q : ap->n_kv;
            VKF_TRY(operand_make(d, VKF_DTYPE_I32, 1, ap->batch, 0, "key_lengths"));
            for (int i = 0; i < ap->batch; i++)
                ((int32_t *)d->host)[i] = 1 + (int32_t)(rng_u32(&r) % (uint32_t)keys);
            ((int32_t *)d->host)[0] = (int32_t)keys; /* one full row */
            s->n_src = 4;
        }
        if (c->flags & VKF_HC_SINKS) { /* around the scores' spread: each sink matters */
            VKF_TRY(operand_make(&s->src[4], VKF_DTYPE_F32, 1, ap->n_head, 0, "sinks"));
            fill_normal(&s->src[4], &r, 1.0f, 2.0f);
            s->n_src = 5;
        }
        return operand_make(&s->dst, VKF_DTYPE_F32, (int64_t)ap->batch * ap->n_q, qc, 0, "out");
    }
    case VKF_OP_COPY_ROWS:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, st, "x"));
        fill_normal(a, &r, 0.0f, 1.0f);
        s->n_src = 1;
        return operand_make(&s->dst, c->wtype == VKF_DTYPE_F16 ? VKF_DTYPE_F16 : VKF_DTYPE_F32,
                            c->k, c->n, 0, "cache");
    case VKF_OP_ARGMAX:
    case VKF_OP_TOPK:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, 0, "x"));
        if (c->flags & VKF_HC_TIES)
            for (int64_t i = 0; i < c->m * c->n; i++)
                ((float *)a->host)[i] = (float)(rng_u32(&r) % 5);
        else
            fill_normal(a, &r, 0.0f, 3.0f);
        s->n_src = 1;
        return operand_make(&s->dst, VKF_DTYPE_I32, c->m, c->op == VKF_OP_ARGMAX ? 1 : p->topk.k, 0,
                            "idx");
    case VKF_OP_POOL: /* m sequences of k rows each, n columns */
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m * c->k, c->n, st, "x"));
        VKF_TRY(operand_make(b, VKF_DTYPE_I32, 1, c->m, 0, "lengths"));
        fill_normal(a, &r, 0.5f, 2.0f);
        for (int64_t i = 0; i < c->m; i++)
            ((int32_t *)b->host)[i] = 1 + (int32_t)(rng_u32(&r) % (uint32_t)c->k);
        ((int32_t *)b->host)[0] = (int32_t)c->k; /* one full sequence */
        s->n_src = 2;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "pooled");
    case VKF_OP_MUL_MAT_ID: { /* m tokens, k = n_past experts each of n rows, inner c->k */
        int64_t kk = c->n_past, E = p->moe.n_expert;
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, st ? c->m * kk : c->m, c->k, 0, "x"));
        VKF_TRY(operand_make(b, c->wtype, E * c->n, c->k, 0, "experts"));
        VKF_TRY(operand_make(cc, VKF_DTYPE_I32, c->m, kk, 0, "ids"));
        fill_normal(a, &r, 0.0f, 1.0f);
        fill_normal(b, &r, 0.0f, 3.0f / sqrtf((float)c->k));
        harness_ids(cc, &r, E);
        s->n_src = 3;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m * kk, c->n, 0, "y");
    }
    case VKF_OP_MOE_WEIGHTS: /* probabilities [m, n] (a softmax's), k = n_past ids per row */
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, 0, "probs"));
        VKF_TRY(operand_make(b, VKF_DTYPE_I32, c->m, c->n_past, 0, "ids"));
        for (int64_t i = 0; i < c->m * c->n; i++)
            ((float *)a->host)[i] = expf(2.0f * rng_normal(&r)) / (float)c->n;
        harness_ids(b, &r, (int)c->n);
        s->n_src = 2;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n_past, 0, "w");
    case VKF_OP_MOE_SUM: /* m tokens, k = n_past expert rows each of n columns */
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m * c->n_past, c->n, 0, "experts"));
        VKF_TRY(operand_make(b, VKF_DTYPE_F32, c->m, c->n_past, 0, "w"));
        fill_normal(a, &r, 0.0f, 2.0f);
        fill_normal(b, &r, 0.3f, 0.2f);
        s->n_src = 2;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "y");
    case VKF_OP_MOE_GROUP_MASK:
        VKF_TRY(operand_make(a, VKF_DTYPE_F32, c->m, c->n, 0, "x"));
        fill_normal(a, &r, 0.0f, 1.0f);
        s->n_src = 1;
        return operand_make(&s->dst, VKF_DTYPE_F32, c->m, c->n, 0, "y");
    default: break;
    }
    return vkf_error(VKF_ERROR_INTERNAL, "harness: no inputs for op %s", vkf_op_name(c->op));
}

static void setup_free(setup *s) {
    for (int i = 0; i < VKF_MAX_SRC; i++)
        free(s->src[i].host);
    free(s->dst.host);
}

/* Runs the case's node on be; out receives dst (rows*cols elements, 4 bytes each). */
static vkf_status run_on(vkf_backend *be, const vkf_harness_case *c, setup *s, void *out) {
    vkf_tensor src[VKF_MAX_SRC], dst = s->dst.t;
    vkf_graph *g = NULL;
    vkf_status st = VKF_OK;
    int n_alloc = 0;
    memset(src, 0, sizeof src);
    for (int i = 0; i < s->n_src; i++) {
        if (!s->src[i].host) { /* an optional source left out (attention's sinks without lengths) */
            n_alloc++;
            continue;
        }
        src[i] = s->src[i].t;
        st = vkf_tensor_alloc(be, &src[i], VKF_BUFFER_WEIGHTS, NULL);
        if (st != VKF_OK) goto done;
        n_alloc++;
        st = be->i->buffer_write(be, src[i].buf, 0, s->src[i].host, vkf_tensor_nbytes(&src[i]));
        if (st != VKF_OK) goto done;
    }
    st = vkf_tensor_alloc(be, &dst, VKF_BUFFER_ACTIVATIONS, NULL);
    if (st != VKF_OK) goto done;
    { /* sentinel: an element the kernel never writes stays visible */
        size_t n = (size_t)(dst.rows * dst.cols);
        uint32_t *fill = malloc(n * 4);
        if (!fill) {
            st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "harness: out of memory");
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            fill[i] = dst.dtype == VKF_DTYPE_I32 ? 0xFFFFFF85u : 0x4640E400u; /* -123 / 12345.0f */
        st = vkf_tensor_write(be, &dst, fill);
        free(fill);
        if (st != VKF_OK) goto done;
    }
    st = vkf_graph_create(be, "harness", &g);
    if (st != VKF_OK) goto done;
    vkf_node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = c->op;
    nd.dst = &dst;
    for (int i = 0; i < s->n_src; i++)
        nd.src[i] = src[i].buf ? &src[i] : NULL;
    nd.p = c->p;
    st = vkf_graph_add_node(g, &nd);
    if (st == VKF_OK) st = vkf_graph_plan(g);
    if (st == VKF_OK) st = be->i->graph_compute(be, g, c->n_past);
    if (st == VKF_OK)
        st = dst.dtype == VKF_DTYPE_F16 ? vkf_tensor_read_f32(be, &dst, out)
                                        : vkf_tensor_read(be, &dst, out);
done:
    vkf_graph_free(g);
    if (dst.buf) be->i->buffer_free(be, dst.buf);
    for (int i = 0; i < n_alloc; i++)
        if (src[i].buf) be->i->buffer_free(be, src[i].buf);
    return st;
}

vkf_status vkf_harness_run(vkf_backend *ref, vkf_backend *be, const vkf_harness_case *c,
                           vkf_harness_result *r) {
    setup s;
    memset(r, 0, sizeof *r);
    vkf_status st = build(c, &s);
    if (st != VKF_OK) {
        setup_free(&s);
        return st;
    }
    size_t n = (size_t)(s.dst.t.rows * s.dst.t.cols);
    void *want = malloc(n * 4), *got = malloc(n * 4);
    if (!want || !got) st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "harness: out of memory");
    if (st == VKF_OK) st = run_on(ref, c, &s, want);
    if (st == VKF_OK) st = run_on(be, c, &s, got);
    if (st == VKF_OK) {
        if (s.dst.t.dtype == VKF_DTYPE_I32) {
            for (size_t i = 0; i < n; i++)
                if (((int32_t *)want)[i] != ((int32_t *)got)[i]) {
                    if (!r->index_mismatch) r->worst = (int64_t)i;
                    r->index_mismatch++;
                }
            r->pass = r->index_mismatch == 0;
        } else {
            const float *w = want, *g = got;
            double num = 0, den = 0;
            for (size_t i = 0; i < n; i++) {
                int fw = isfinite(w[i]), fg = isfinite(g[i]);
                if (fw != fg || (!fw && !(isnan(w[i]) && isnan(g[i])) && w[i] != g[i])) {
                    r->nonfinite++;
                    r->worst = (int64_t)i;
                    continue;
                }
                if (!fw) continue;
                double diff = (double)g[i] - (double)w[i];
                num += diff * diff;
                den += (double)w[i] * w[i];
                if (fabs(diff) > r->max_abs) {
                    r->max_abs = fabs(diff);
                    if (!r->nonfinite) r->worst = (int64_t)i;
                }
            }
            r->nmse = den > 0 ? num / den : num;
            r->pass = !r->nonfinite && r->nmse <= c->thr;
        }
    }
    free(want);
    free(got);
    setup_free(&s);
    return st;
}
