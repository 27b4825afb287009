/* Push-constant blocks shared by the C host code and the GLSL kernels: defined once, here.
 *
 * Every field is a 4-byte scalar, so the C layout and GLSL's std430 push-constant layout agree
 * by construction; the C side checks the sizes with _Static_assert. Offsets named *_off are in
 * elements from the start of the bound window (the window starts at an offset aligned to
 * minStorageBufferOffsetAlignment), except weight offsets/strides (*_boff, *_bstride) which are
 * in bytes because quantized rows are byte-addressed. Strides are between row starts.
 * Bindings: 0 = the dyn buffer (n_past), then the tensors in the order each kernel lists. */
#ifndef VKF_ABI_H
#define VKF_ABI_H

#ifdef VKF_GLSL
#define VKF_U32 uint
#define VKF_I32 int
#define VKF_F32 float
#define VKF_PC(name) struct name
#else
#include <stdint.h>
#define VKF_U32 uint32_t
#define VKF_I32 int32_t
#define VKF_F32 float
#define VKF_PC(name)                                                                               \
    typedef struct name name;                                                                      \
    struct name
#endif

/* Weight dtypes as kernels see them (WTYPE define): the vkf_dtype values (include/vkformer.h;
 * the decoding of each is shaders/dtype_<t>.glsl). */
#define VKF_W_F32 0
#define VKF_W_F16 1
#define VKF_W_BF16 2
#define VKF_W_Q8_0 3
#define VKF_W_Q4_0 4
#define VKF_W_Q4_1 6
#define VKF_W_Q5_0 7
#define VKF_W_Q5_1 8
#define VKF_W_Q2_K 9
#define VKF_W_Q3_K 10
#define VKF_W_Q4_K 11
#define VKF_W_Q5_K 12
#define VKF_W_Q6_K 13
#define VKF_W_IQ4_NL 14
#define VKF_W_IQ4_XS 15
#define VKF_W_MXFP4 16

/* Element-wise ops: scale, add, mul, unary, swiglu. dst[r,c] = f(a[r,c], b[r or 0, c]). */
VKF_PC(vkf_pc_eltwise) {
    VKF_U32 rows, cols;
    VKF_U32 d_off, d_stride;
    VKF_U32 a_off, a_stride;
    VKF_U32 b_off, b_stride; /* b_stride 0: one row broadcast */
    VKF_F32 scale;
    VKF_I32 act; /* vkf_unary */
    VKF_F32 cap; /* SCALE: > 0 soft-caps the result, cap * tanh(x * scale / cap) */
};

/* layernorm / rmsnorm: one workgroup per row. */
VKF_PC(vkf_pc_norm) {
    VKF_U32 rows, cols;
    VKF_U32 d_off, d_stride;
    VKF_U32 x_off, x_stride;
    VKF_U32 w_off, b_off;
    VKF_U32 has_w, has_b;
    VKF_F32 eps;
    VKF_U32 r_off, r_stride; /* norm_texel RES=1: dst = residual + norm(x) (gemma's post-norms) */
    VKF_U32 rows1, x_off2, d_off2, w_off2; /* norm_texel PAIR=1: rows rows1.. are a second norm's
                                              (x, dst and weight at these offsets, same strides) */
};

/* softmax / log_softmax: one workgroup per row. */
VKF_PC(vkf_pc_softmax) {
    VKF_U32 rows, cols;
    VKF_U32 d_off, d_stride;
    VKF_U32 x_off, x_stride;
    VKF_U32 m_off, m_stride;
    VKF_U32 has_mask;
    VKF_F32 scale;
};

/* matmul: dst[M,N] = a[M,K] . w[N,K]^T (+ bias[N]). */
VKF_PC(vkf_pc_matmul) {
    VKF_U32 M, N, K;
    VKF_U32 a_off, a_stride;
    VKF_U32 w_boff, w_bstride; /* bytes */
    VKF_U32 b_off, has_bias;
    VKF_U32 d_off, d_stride;
};

/* embed: dst[i,:] = table[clamp(ids[i])] * scale, for ids inside this window's table rows. */
VKF_PC(vkf_pc_embed) {
    VKF_U32 n, cols;
    VKF_U32 ids_off;
    VKF_U32 w_boff, w_bstride; /* bytes, window of table rows [row0, row0 + nrows) */
    VKF_U32 row0, nrows, vocab;
    VKF_U32 d_off, d_stride;
    VKF_F32 scale;
};

/* add_pos: dst[r,:] = x[r,:] + table[pos(r),:] for pos(r) inside this window's table rows. */
VKF_PC(vkf_pc_addpos) {
    VKF_U32 rows, cols;
    VKF_U32 d_off, d_stride;
    VKF_U32 x_off, x_stride;
    VKF_U32 t_off, t_stride;
    VKF_U32 row0, nrows, t_rows; /* window [row0, row0 + nrows) of a t_rows table */
    VKF_I32 seq_len, pos0, dyn;
    VKF_U32 r0; /* global index of this dispatch's first row (pos uses r % seq_len) */
};

/* rope: rotation table [n_pos, n_rot] of (cos, sin) pairs. */
VKF_PC(vkf_pc_rope) {
    VKF_U32 rows;
    VKF_U32 n_head, head_dim, n_rot, mode;
    VKF_U32 d_off, d_stride;
    VKF_U32 x_off, x_stride;
    VKF_U32 t_off, t_stride;
    VKF_U32 row0, nrows, t_rows;
    VKF_I32 seq_len, pos0, dyn;
    VKF_U32 r0;
};

/* copy_rows: dst[dst_row0 + (dyn ? n_past : 0) + (has_idx ? idx[idx_off] : 0) + i] = src[i],
 * for target rows in this window. */
VKF_PC(vkf_pc_copy) {
    VKF_U32 rows, cols;
    VKF_U32 s_off, s_stride;
    VKF_U32 d_off, d_stride;
    VKF_I32 dst_row0, dyn;
    VKF_U32 row0, nrows;      /* window of dst rows */
    VKF_U32 d_rows;           /* all rows of dst (targets beyond are dropped) */
    VKF_U32 has_idx, idx_off; /* per-sequence row offset read from binding 3 (serve batching) */
};

/* argmax / topk: one workgroup per row. */
VKF_PC(vkf_pc_select) {
    VKF_U32 rows, cols, k;
    VKF_U32 x_off, x_stride;
    VKF_U32 d_off, d_stride;
};

/* pool: one workgroup per sequence, lanes over columns. */
VKF_PC(vkf_pc_pool) {
    VKF_U32 rows, cols; /* sequences in this dispatch, columns */
    VKF_U32 seq_len, mode;
    VKF_U32 d_off, d_stride;
    VKF_U32 x_off, x_stride;
    VKF_U32 len_off; /* lengths of this dispatch's first sequence on */
};

/* mixture of experts: mul_mat_id (one invocation per output element), moe_weights and
 * moe_group_mask (one per row), moe_sum (one per output element). Offsets in elements, except
 * w_boff / w_bstride (bytes of the expert weights' window). */
VKF_PC(vkf_pc_moe) {
    VKF_U32 rows, k, cols, K;   /* tokens T, experts per token, output columns, inner length */
    VKF_U32 n_expert, per_pair; /* mul_mat_id: experts; x holds one row per (token, expert) */
    VKF_U32 d_off, d_stride;
    VKF_U32 a_off, a_stride; /* x / probs / expert outputs */
    VKF_U32 b_off, b_stride; /* moe_sum: weights (F32) */
    VKF_U32 ids_off, ids_stride;
    VKF_U32 w_boff, w_bstride;
    VKF_U32 softmax_w, norm;
    VKF_F32 scale;
    VKF_U32 n_group, n_group_used;
    VKF_U32 row0, nrows; /* mul_mat_id: the expert rows [row0, row0 + nrows) (of all experts'
                            n_expert * cols) bound in this dispatch's window */
};

/* attention: one workgroup per (query row, head). */
VKF_PC(vkf_pc_attn) {
    VKF_U32 batch, n_q, n_kv, kv_stride;
    VKF_U32 n_head, n_kv_head, head_dim;
    VKF_U32 causal, kv_dyn;
    VKF_F32 scale;
    VKF_U32 q_off, q_stride;
    VKF_U32 k_off, k_stride;
    VKF_U32 v_off, v_stride;
    VKF_U32 d_off, d_stride;
    VKF_U32 has_len, len_off; /* has_len bit 0: key lengths bound; bit 1 (len_pos, serve
                                 batching): q_pos(i) = len[b] - n_q + i */
    VKF_U32 b0;               /* global index of this dispatch's first sequence */
    VKF_U32 j0, jn;  /* keys [j0, j0 + jn) of each sequence are bound (K/V row 0 = key j0) */
    VKF_U32 carry;   /* bit 0: continue from the state of the previous key chunk (dst + state),
                        bit 1: save the state for the next key chunk */
    VKF_U32 s_off;   /* element offset of the (max, sum) state, 2 floats per (query row, head) */
    VKF_U32 q0, qn;  /* queries [q0, q0 + qn) of each sequence are bound (Q/dst row 0 = query q0) */
    VKF_U32 window;  /* > 0: sliding window, keys j > q_pos - window only */
    VKF_F32 softcap; /* > 0: scores softcap * tanh(s / softcap) */
    VKF_U32 sink_off; /* attention.comp SINKS=1: element offset of the per-head sink logits */
};

/* matmul_texel: dst[M,N] = a[M,K] . w[N,K]^T (+ bias) (+ residual), a and w read as 16-byte
 * texels. a_off/a_stride in floats (multiples of 4), w_boff/w_bstride in bytes of the weight
 * view, d_* and r_* in floats of their (storage-buffer) windows. Fused groups (vk_fuse.c):
 * up to three weight matrices sharing a (n_mats; their rows, weight offsets and outputs in
 * N1/N2, w_boff1/2, d_off1/2, d_stride1/2, all inside the same bound windows), an RMSNorm of
 * the rows of a folded in (NORM=1 pipelines: g_off in floats of the norm-weight texels, eps),
 * and silu(gate) * up of matrices 0 and 1 (SWIGLU=1 pipelines: one output). */
VKF_PC(vkf_pc_mm) {
    VKF_U32 M, N, K;
    VKF_U32 a_off, a_stride;
    VKF_U32 w_boff, w_bstride;
    VKF_U32 d_off, d_stride;
    VKF_U32 flags; /* VKF_MM_BIAS | VKF_MM_RESIDUAL */
    VKF_U32 b_off;
    VKF_U32 r_off, r_stride; /* residual: dst = r + a.w^T */
    VKF_U32 n_mats, N1, N2;
    VKF_U32 w_boff1, w_boff2;
    VKF_U32 d_off1, d_off2, d_stride1, d_stride2;
    VKF_U32 g_off;
    VKF_F32 eps;
    VKF_U32 b_off1, b_off2; /* the biases of matrices 1 and 2 (VKF_MM_BIAS) in the bias window */
};
#define VKF_MM_BIAS 1u
#define VKF_MM_RESIDUAL 2u

/* quantize_q8 (the integer-dot decode path, vk_matmul.c): rows [0, M) of x (x_off, x_stride
 * in floats of its window), K values each, quantized to blocks of 32 int8 with their scale and
 * sums (48 bytes: see shaders/quantize_q8.comp) at q_off + row * q_stride (16-byte units); with
 * NORM=1 pipelines the RMSNorm of each row times the weight at g_off (floats) first (eps). */
VKF_PC(vkf_pc_q8) {
    VKF_U32 M, K;
    VKF_U32 x_off, x_stride;
    VKF_U32 q_off, q_stride;
    VKF_U32 g_off;
    VKF_F32 eps;
};

/* kv_store: the RoPE of q and k and the KV-cache write of k and v of one layer in one dispatch
 * (vk_fuse.c). Offsets/strides in floats of their windows: q, qr, k, kr, v in the activation
 * window, kc / vc in the caches, t in the rotation table. Row r of sequence r / seq goes to
 * cache row c_row0 + (r / seq) * c_seq + n_past + r % seq. */
VKF_PC(vkf_pc_kvstore) {
    VKF_U32 rows, seq, n_rot, mode, head_dim, qh, kh, flags;
    VKF_I32 pos0;
    VKF_U32 q_off, q_stride, qr_off, qr_stride, k_off, k_stride, kr_off, kr_stride, v_off, v_stride;
    VKF_U32 kc_off, kc_stride, vc_off, vc_stride, c_seq, c_row0, c_rows;
    VKF_U32 t_off, t_stride, t_rows;
};
#define VKF_KV_ROPE_K 1u   /* rotate k before storing it */
#define VKF_KV_WRITE_KR 2u /* also write the rotated k (kr), when something else reads it */
#define VKF_KV_ROPE_DYN 4u /* rope positions add n_past */

/* peak probes (probe.comp): n elements (vec4 units for memory modes), iters per invocation */
VKF_PC(vkf_pc_probe) {
    VKF_U32 n, iters, span;
    VKF_F32 a, b;
};

#ifndef VKF_GLSL
_Static_assert(sizeof(vkf_pc_probe) == 20, "vkf_pc_probe layout");
_Static_assert(sizeof(vkf_pc_pool) == 36, "vkf_pc_pool layout");
_Static_assert(sizeof(vkf_pc_mm) == 104, "vkf_pc_mm layout");
_Static_assert(sizeof(vkf_pc_q8) == 32, "vkf_pc_q8 layout");
_Static_assert(sizeof(vkf_pc_kvstore) == 116, "vkf_pc_kvstore layout");
_Static_assert(sizeof(vkf_pc_eltwise) == 44, "vkf_pc_eltwise layout");
_Static_assert(sizeof(vkf_pc_norm) == 68, "vkf_pc_norm layout");
_Static_assert(sizeof(vkf_pc_softmax) == 40, "vkf_pc_softmax layout");
_Static_assert(sizeof(vkf_pc_matmul) == 44, "vkf_pc_matmul layout");
_Static_assert(sizeof(vkf_pc_embed) == 44, "vkf_pc_embed layout");
_Static_assert(sizeof(vkf_pc_addpos) == 60, "vkf_pc_addpos layout");
_Static_assert(sizeof(vkf_pc_rope) == 72, "vkf_pc_rope layout");
_Static_assert(sizeof(vkf_pc_copy) == 52, "vkf_pc_copy layout");
_Static_assert(sizeof(vkf_pc_select) == 28, "vkf_pc_select layout");
_Static_assert(sizeof(vkf_pc_moe) == 92, "vkf_pc_moe layout");
_Static_assert(sizeof(vkf_pc_attn) == 120, "vkf_pc_attn layout");
#endif

#endif
