/* The op set: one list, two backends (docs/DESIGN.md, 'One op set, two backends').
 *
 * Each node has a destination, up to four sources, and a parameter block. Shapes below use
 * the tensors' (rows, cols). "n_past" is the one per-step dynamic value: the number of
 * positions already in the KV cache. It is read at execution time (a small buffer on Vulkan),
 * so a recorded command buffer replays for every decoding step without re-recording. */
#ifndef VKF_GRAPH_OPS_H
#define VKF_GRAPH_OPS_H

#include <stdint.h>

#include "graph/tensor.h"

typedef enum vkf_op {
    /* dst[M,N] = src0[M,K] · src1[N,K]ᵀ (+ src2[1,N] bias, optional).
     * src0 F32; src1 (the weight) any weight type (src/core/wtype.c); accumulation in f32. */
    VKF_OP_MATMUL = 0,
    /* dst[n,d] = src0[ids[i], :] * scale, ids = src1 (I32 [1,n]); src0 any weight dtype.
     * Ids are validated on the host before execution (VKF_ERROR_TOKEN), kernels clamp. */
    VKF_OP_EMBED,
    /* dst[r,:] = src0[r,:] + src1[pos(r), :] with pos(r) = pos0 + n_past + r % seq_len.
     * src1 is a position table: learned, or sinusoidal built in double (vkf_sinusoidal_table). */
    VKF_OP_ADD_POS,
    /* Rotary embedding of each head of src0 [rows, n_head*head_dim] at pos(r) as ADD_POS.
     * Pairs (x[2i], x[2i+1]) (NORMAL, GGUF "normal") or (x[i], x[i+n_rot/2]) (NEOX), for
     * i < n_rot/2, rotated by theta = pos * freq_base^(-2i/n_rot). Dimensions >= n_rot pass
     * through. src1 is the rotation table from vkf_rope_table: [n_pos, n_rot] holding
     * (cos theta_i, sin theta_i) pairs, computed in double on the host (GPU sin/cos lose
     * precision at large angles). */
    VKF_OP_ROPE,
    /* dst = src0 + src1 (same shape); src1 may have one row, broadcast to all rows. */
    VKF_OP_ADD,
    /* dst = src0 * src1 (same shape, or src1 one row broadcast). */
    VKF_OP_MUL,
    /* dst = src0 * scale, or with params.scale.softcap c > 0: c * tanh(src0 * scale / c) (the
     * final-logit soft-cap of gemma2). */
    VKF_OP_SCALE,
    /* dst[r] = (x - mean) / sqrt(var + eps) * src1 + src2, var biased; src1/src2 [1,cols],
     * either may be absent (then 1 and 0). */
    VKF_OP_LAYERNORM,
    /* dst[r] = x / sqrt(mean(x²) + eps) * src1 (src1 [1,cols], optional). */
    VKF_OP_RMSNORM,
    /* dst = act(src0), act = params.act. */
    VKF_OP_UNARY,
    /* dst[r, j] = silu(src0[r, j]) * src1[r, j]; params.glu.gelu = 1: GeGLU with the tanh GELU,
     * gelu_tanh(src0[r, j]) * src1[r, j] (gemma); params.glu.oai = 1: gpt-oss's clamped SwiGLU
     * (ggml's swiglu_oai), x = min(src0, limit), y = clamp(src1, -limit, limit),
     * dst = x / (1 + exp(-alpha x)) * (y + 1) with params.glu.alpha, params.glu.limit. */
    VKF_OP_SWIGLU,
    /* dst[r] = softmax(src0[r] * scale + mask[r]) over cols; src1 optional additive mask of the
     * same shape (-INFINITY entries allowed; a fully masked row gives zeros). */
    VKF_OP_SOFTMAX,
    /* dst[r] = log_softmax(src0[r]) over cols. */
    VKF_OP_LOG_SOFTMAX,
    /* Fused scaled-dot-product attention, see vkf_attn_params. src0 = Q, src1 = K, src2 = V,
     * src3 = key lengths (I32 [1, batch], optional). K and V are F32, or both F16 (an F16 KV
     * cache, read as f32). src4 (optional, F32 [1, n_head]): attention sinks (gpt-oss), one
     * learned logit per head that joins every softmax as an extra score with no value:
     * p_j = exp(s_j - m) / (sum_j' exp(s_j' - m) + exp(sink_h - m)), m = max(max_j s_j, sink_h). */
    VKF_OP_ATTENTION,
    /* dst rows [dst_row0 + n_past(if dyn) + src1[0](if src1) + i] = src0 rows i, for
     * i < src0.rows (KV write); src1 optional I32 [1, 1], the row offset of one sequence that
     * has its own position (serve's batched decoding), read at execution time.
     * dst F32, or F16 (an F16 KV cache: rounded to nearest even). */
    VKF_OP_COPY_ROWS,
    /* dst (I32 [rows, 1]) = argmax of each row of src0 (ties: lowest index). */
    VKF_OP_ARGMAX,
    /* dst (I32 [rows, k]) = indices of the k largest of each row, descending (ties: lowest
     * index first). */
    VKF_OP_TOPK,
    /* dst[b, :] (F32 [B, cols]) = one vector per sequence of src0 [B * seq_len, cols]: sequence
     * b is rows [b * seq_len, b * seq_len + len_b), len_b = src1[b] (I32 [1, B]; the host
     * validates, kernels clamp to [1, seq_len]). params.pool.mode: VKF_POOL_MEAN, the sum of
     * those rows in row order divided by len_b (sentence-transformers' mean pooling);
     * VKF_POOL_FIRST, row 0 (BERT's [CLS]); VKF_POOL_LAST, row len_b - 1 (the last token).
     * Padding rows past len_b are never read. */
    VKF_OP_POOL,
    /* Mixture of experts (docs/DESIGN.md, 'Experts are data too'): a router MATMUL, its gating
     * (SOFTMAX, or UNARY sigmoid), optionally MOE_GROUP_MASK, TOPK for the ids, MOE_WEIGHTS for
     * the weights, MUL_MAT_ID for each chosen expert's gate / up / down, MOE_SUM to combine.
     *
     * dst[t*k + i, n] = src0[r(t, i), :] · W_e[n, :] with e = ids[t, i]: src1 holds the experts
     * one after the other, [n_expert * N, K] (GGUF's 3-D [K, N, n_expert]), W_e its rows
     * [e * N, (e + 1) * N), any weight type; src2 = ids (I32 [T, k]); src0 F32 [T, K] (one input
     * row for all k experts of token t: r = t) or [T * k, K] (one per expert: r = t * k + i);
     * params.moe.n_expert. Only the k chosen experts' rows are read. Ids outside
     * [0, n_expert) are an error on the CPU; kernels clamp. */
    VKF_OP_MUL_MAT_ID,
    /* dst (F32 [T, k]) = the gate weights of the chosen experts: w[t, i] = src0[t, ids[t, i]]
     * (src0 F32 [T, n_expert] the gating probabilities, src1 ids I32 [T, k]); then, in this
     * order, params.moe.softmax_w: w = softmax(w) over the k (gpt-oss: top-k, then softmax);
     * params.moe.norm: w /= max(sum_i w, 2^-14) (renormalised top-k: Mixtral, Qwen3-MoE; the
     * clamp is llama.cpp's, the smallest normal f16); params.moe.scale != 0 and != 1: w *= it. */
    VKF_OP_MOE_WEIGHTS,
    /* dst[t, :] = sum over i < k of src0[t * k + i, :] * src1[t, i]: the experts' outputs (F32
     * [T * k, d]) weighted (F32 [T, k]) and summed, each product rounded to f32, then added in
     * the order i = 0, 1, ..., k - 1 (llama.cpp's ggml_mul, then its chain of ggml_add). With
     * k = 1 it scales each row by its own factor (Qwen2-MoE's gated shared expert). */
    VKF_OP_MOE_SUM,
    /* Grouped expert selection (DeepSeek-V3): src0 (F32 [T, n_expert]) split into
     * params.moe.n_group groups of n_expert / n_group consecutive experts; a group's score is
     * the sum of its two largest entries (its largest alone when a group has one expert); the
     * params.moe.n_group_used groups with the highest scores (ties: lower group first) keep
     * their entries in dst, every other entry is -INFINITY (so TOPK picks inside them). */
    VKF_OP_MOE_GROUP_MASK,
    VKF_OP_COUNT
} vkf_op;

#define VKF_MAX_HEAD_DIM 1024

typedef enum vkf_unary {
    VKF_UNARY_RELU = 0,
    VKF_UNARY_GELU_ERF,  /* 0.5 x (1 + erf(x / sqrt 2)) */
    VKF_UNARY_GELU_TANH, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))) */
    VKF_UNARY_SILU,      /* x / (1 + exp(-x)) */
    VKF_UNARY_SIGMOID,   /* 1 / (1 + exp(-x)); params.unary.silu_div = 1: llama.cpp computes it
                            as silu(x) / x (Qwen2-MoE's shared-expert gate): the same function,
                            an order only the CPU's ggml-activation mode follows */
    VKF_UNARY_TANH,      /* tanh x (the classifier head of a cross-encoder) */
    VKF_UNARY_COUNT
} vkf_unary;

typedef enum vkf_pool_mode { VKF_POOL_MEAN = 0, VKF_POOL_FIRST, VKF_POOL_LAST } vkf_pool_mode;

typedef enum vkf_rope_mode { VKF_ROPE_NORMAL = 0, VKF_ROPE_NEOX = 1 } vkf_rope_mode;

typedef struct vkf_attn_params {
    int32_t batch;     /* B sequences */
    int32_t n_q;       /* queries per sequence; Q rows = B * n_q, row b*n_q + i */
    int32_t n_kv;      /* keys per sequence when !kv_dyn; max keys (cache rows) otherwise */
    int32_t kv_stride; /* rows between sequences in K and V (>= n_kv) */
    int32_t n_head;    /* query heads; Q cols = n_head * head_dim */
    int32_t
        n_kv_head; /* K/V heads, divides n_head; query head h uses KV head h / (n_head/n_kv_head) */
    int32_t head_dim;
    int32_t causal;  /* query i (position q_pos(i)) sees keys j <= q_pos(i) */
    int32_t kv_dyn;  /* keys per sequence = n_past + n_q (decoding with a cache) */
    float scale;     /* usually 1/sqrt(head_dim) */
    int32_t window;  /* > 0: sliding window, query i also needs j > q_pos(i) - window (itself
                        and window-1 earlier keys; gemma2/3 local layers); 0: no window */
    float softcap;   /* > 0: scores s = scale q.k become softcap * tanh(s / softcap) before
                        the softmax (gemma2 attention-logit soft-cap); 0: none */
    int32_t len_pos; /* serve batching, with key lengths (src3): sequences at their own
                        positions, q_pos(i) = key_len[b] - n_q + i (causal limit and window) */
    int32_t scale_q; /* 1: llama.cpp's graph multiplies q by scale before the dot products
                        instead of scaling the scores (gemma): the same math, an order only the
                        CPU's ggml-activation mode follows */
} /* query position q_pos(i) = n_past + i when kv_dyn, else i + (n_kv - n_q) if causal; with
   * len_pos, key_len[b] - n_q + i */
vkf_attn_params;

typedef union vkf_op_params {
    struct {
        float scale;
    } embed; /* EMBED */
    struct {
        int32_t seq_len; /* rows per sequence (batch folding) */
        int32_t pos0;    /* static position offset */
        int32_t dyn;     /* 1: add n_past */
    } pos;               /* ADD_POS, ROPE */
    struct {
        int32_t seq_len, pos0, dyn;
        int32_t n_head, head_dim, n_rot, mode;
        float freq_base; /* the table's base; the CPU's ggml-activation mode recomputes cos / sin
                            as ggml does from it (0: the table as it is) */
    } rope;
    struct {
        float scale;
        float softcap; /* SCALE only: > 0 soft-caps the result */
    } scale;           /* SCALE, SOFTMAX (scale on logits; 0 means 1) */
    struct {
        int32_t gelu;       /* SWIGLU: 0 silu (SwiGLU), 1 gelu_tanh (GeGLU) */
        int32_t oai;        /* 1: swiglu_oai (gelu 0), see VKF_OP_SWIGLU */
        float alpha, limit; /* swiglu_oai's constants (gpt-oss: 1.702, 7) */
    } glu;
    struct {
        float eps;
    } norm; /* LAYERNORM, RMSNORM */
    struct {
        int32_t act;      /* vkf_unary */
        int32_t silu_div; /* SIGMOID only, see VKF_UNARY_SIGMOID */
    } unary;
    vkf_attn_params attn;
    struct {
        int32_t dst_row0; /* static row offset in dst */
        int32_t dyn;      /* 1: add n_past */
    } copy;
    struct {
        int32_t k;
    } topk;
    struct {
        int32_t n_expert;     /* MUL_MAT_ID: experts in src1 */
        int32_t softmax_w;    /* MOE_WEIGHTS: softmax over the k chosen weights */
        int32_t norm;         /* MOE_WEIGHTS: divide by their sum */
        float scale;          /* MOE_WEIGHTS: multiply (0 or 1: not) */
        int32_t n_group;      /* MOE_GROUP_MASK: expert groups, divides n_expert */
        int32_t n_group_used; /* MOE_GROUP_MASK: groups kept, in [1, n_group] */
    } moe;
    struct {
        int32_t mode;    /* vkf_pool_mode */
        int32_t seq_len; /* rows per sequence in src0 */
    } pool;
} vkf_op_params;

const char *vkf_op_name(vkf_op op);
const char *vkf_unary_name(vkf_unary a);

/* The sinusoidal table of "Attention Is All You Need", computed in double and rounded:
 * table[pos*d + 2i] = sin(pos / 10000^(2i/d)), table[pos*d + 2i+1] = cos(same). */
void vkf_sinusoidal_table(float *table, int n_pos, int d);
/* The RoPE rotation table: table[pos*n_rot + 2i] = cos(pos * base^(-2i/n_rot)), [.. + 2i+1] = sin.
 */
void vkf_rope_table(float *table, int n_pos, int n_rot, double freq_base);
/* The same with llama.cpp's variants: theta_i = pos * pos_scale * base^(-2i/n_rot) / factors[i]
 * (linear scaling; llama3 rope_freqs and LongRoPE factors, n_rot/2 values or NULL), and cos and
 * sin multiplied by mscale (the LongRoPE attention factor). */
void vkf_rope_table_ext(float *table, int n_pos, int n_rot, double freq_base, double pos_scale,
                        const float *factors, double mscale);

#endif
