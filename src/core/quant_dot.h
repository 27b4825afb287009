/* The activation side of llama.cpp's CPU matmuls (the ggml-activation reference mode): ggml
 * quantizes each activation row to the weight type's "vec_dot_type" and takes integer dot
 * products block by block, combining the integer sums with the f16 / f32 scales in float.
 * Each weight type's row in the traits table (core/wtype.h) names its activation type and its
 * dot product (act, act_dot); this file holds the activation types and the summation orders
 * the rows share:
 *
 *     weight type                          activation type
 *     Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4      Q8_0  (32 per block, f16 scale)
 *     Q4_1, Q5_1                           Q8_1  (32 per block, f16 scale and f16 d * sum)
 *     Q2_K..Q6_K, IQ4_XS                   Q8_K  (256 per block, f32 scale, 16-sums)
 *     F16 / BF16                           the activations rounded to F16 / BF16
 *
 * Q8_0 and Q8_1 are quantized as ggml's x86 (AVX2 / AVX-512) code does: scale 127 / max|x|
 * multiplied in, round half to even; Q8_K as ggml's reference: -127 / max, nearest_int.
 *
 * Usage:
 *     vkf_act_type at = vkf_act_type_of(VKF_DTYPE_Q4_K);        // VKF_ACT_Q8_K
 *     void *a = malloc(vkf_act_row_bytes(at, K));
 *     vkf_act_quantize(at, x, a, K);                            // one activation row
 *     float y = vkf_act_dot(VKF_DTYPE_Q4_K, wrow, a, K, 0);     // one weight row
 */
#ifndef VKF_CORE_QUANT_DOT_H
#define VKF_CORE_QUANT_DOT_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

typedef enum vkf_act_type {
    VKF_ACT_F32 = 0,
    VKF_ACT_F16,
    VKF_ACT_BF16,
    VKF_ACT_Q8_0,
    VKF_ACT_Q8_1,
    VKF_ACT_Q8_K,
    VKF_ACT_COUNT
} vkf_act_type;

/* The activation type ggml pairs with weight type w (F32 for F32 and unknown types). */
vkf_act_type vkf_act_type_of(vkf_dtype w);
/* Bytes of one activation row of k elements (k a multiple of the activation block). */
size_t vkf_act_row_bytes(vkf_act_type t, int64_t k);
/* Quantizes (or rounds) k floats into an activation row. */
void vkf_act_quantize(vkf_act_type t, const float *x, void *dst, int64_t k);
enum {
    VKF_DOT_SINGLE_ROW = 1, /* the matmul has one activation row: llama.cpp's per-row kernels
                               (tinyBLAS takes batches of 2 or more) */
    VKF_DOT_REPACKED = 2,   /* the weight has a multiple of 8 rows: llama.cpp repacks Q4_0 (and,
                               with VKF_DOT_LLAMA_2610, Q4_K, IQ4_NL and MXFP4) on AVX2 machines */
    VKF_DOT_BATCH8 = 4,     /* the matmul has 8 activation rows or more */
    VKF_DOT_LLAMA_2610 = 8, /* llama.cpp's kernels of Oct 2026 (0c1e570): K-quant matmuls of 8
                               rows or more in its tiled kernel (unrepacked weights), Q6_K's
                               vec_dot subtracting its offset through the 16-sums */
    VKF_DOT_GEMM4 = 16,     /* the activation row is in one of the matmul's groups of 4 rows
                               (rows 0 .. M - M % 4 - 1): llama.cpp's repacked kernels take
                               those in their gemm, the rest row by row in their gemv */
};

/* The dot product of a weight row of type w with an activation row of vkf_act_type_of(w), the
 * way ggml combines the block sums (bit for bit where ggml's kernels are reproduced; see
 * quant_dot.c); flags: VKF_DOT_*. 0 for a type it does not know. */
float vkf_act_dot(vkf_dtype w, const void *wrow, const void *act, int64_t k, int flags);

/* ------------------------------------------------------------------ for the type files
 *
 * ggml's x86 dot products keep 8 float lanes: lane t takes the integer sum of elements
 * 4t..4t+3 of every 32 elements (times their sub-block scale), fused-multiply-added with the
 * block's scale product; the lanes are added at the end as hsum8 does. A type file describes
 * its blocks with an unpack function and picks the accumulation its ggml kernel uses. */

/* A 32-element block: its 32 integer values, f16 scale (and min, or 0). */
typedef void (*vkf_unpack32_fn)(const void *blk, int q[32], float *d, float *m);

/* How a 32-block type's float sums run: */
typedef enum vkf_dot32_order {
    VKF_DOT32_LANES = 1,    /* 8 lanes of fused sums over every block */
    VKF_DOT32_LANES2 = 2,   /* two sets of 8 lanes for even and odd blocks, added at the end;
                               an odd last block in a scalar fused step after their sum (the
                               AVX2 vec_dot of IQ4_NL and MXFP4: pairs of blocks, then a tail) */
    VKF_DOT32_BLOCKSUM = 0, /* one scalar chain of whole-block sums (repacked kernels) */
} vkf_dot32_order;

/* Blocks of 32 (block_bytes each) against Q8_0 activations, or Q8_1 with with_min (the min
 * term m * s in a scalar fused chain, as ggml's Q4_1 / Q5_1 kernels). */
float vkf_act_dot32(vkf_unpack32_fn unpack, size_t block_bytes, int with_min, const void *wrow,
                    const void *act, int64_t k, vkf_dot32_order order);

/* A 256-element super-block: its integer values before the sub-block scales (q), the integer
 * sub-block scales (sc) and mins (m: zeroed before the call; a type without mins leaves them),
 * the float scale d (and dmin: likewise); returns the sub-block length (16 or 32). */
typedef int (*vkf_unpack256_fn)(const void *blk, int q[256], int sc[16], int m[16], float *d,
                                float *dmin);

/* Where a super-block type's mins go (d_a * dmin_w times the integer min sums): */
typedef enum vkf_dot256_mins {
    VKF_MINS_NONE = 0, /* no mins */
    VKF_MINS_LANES8,   /* fused into the 8 lanes before the scaled sums (Q2_K's kernel) */
    VKF_MINS_LANES4,   /* 4 lanes of their own, added after hsum8 (Q4_K's) */
    VKF_MINS_SCALAR,   /* one scalar fused chain, added after hsum8 (Q5_K's) */
} vkf_dot256_mins;

/* How llama.cpp's kernel for the matmul at hand sums super-blocks (s1: a block's exact integer
 * sum, s2: its integer min sum): */
typedef enum vkf_dot256_order {
    VKF_DOT256_LANES = 0,  /* vec_dot: 8 lanes, fma(d_a * d_w, lane), mins as vkf_dot256_mins */
    VKF_DOT256_TILED,      /* the tiled K-quant matmul (Oct 2026, 8 rows or more): res =
                              d_w * s1 (- dmin_w * s2 fused), acc = fma(res, d_a, acc) */
    VKF_DOT256_BLOCKSUM,   /* repacked 8x8 gemv (rows outside the groups of 4): acc =
                              fma(s1, d_w * d_a, acc), accm = fma(s2, dmin_w * d_a, accm),
                              acc - accm */
    VKF_DOT256_BLOCKSUM64, /* repacked 8x8 gemm (rows in groups of 4): the same two chains,
                              one step per 64 elements (a pair of sub-blocks) */
} vkf_dot256_order;

/* The order a K-quant's matmul takes (flags: VKF_DOT_*; repackable: the type has llama.cpp's
 * AVX2 8x8 repacking). */
vkf_dot256_order vkf_dot256_order_of(int flags, int repackable);

/* Super-blocks of 256 (block_bytes each) against Q8_K activations. bias > 0 (LANES): the
 * kernel takes the values unsigned (q + bias) and subtracts bias * scale * 16-sum per lane
 * (lane t: the 16-sums 2t and 2t + 1), as llama.cpp's Q6_K kernel of Oct 2026. */
float vkf_act_dot256(vkf_unpack256_fn unpack, size_t block_bytes, vkf_dot256_mins mins, int bias,
                     vkf_dot256_order order, const void *wrow, const void *act, int64_t k);

/* F16 / BF16 weights against activations rounded to the same type, and F32 against F32: one
 * scalar chain (the matmul of the ggml mode sums F32 / F16 its own way, backend/cpu). */
float vkf_act_dot_f16(const void *wrow, const void *act, int64_t k, int flags);
float vkf_act_dot_bf16(const void *wrow, const void *act, int64_t k, int flags);
float vkf_act_dot_f32(const void *wrow, const void *act, int64_t k, int flags);

#endif
