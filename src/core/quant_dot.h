/* The activation side of llama.cpp's CPU matmuls (the ggml-activation reference mode): ggml
 * quantizes each activation row to the weight type's "vec_dot_type" and takes integer dot
 * products block by block, combining the integer sums with the f16 / f32 scales in float.
 *
 *     weight type                          activation type
 *     Q4_0, Q5_0, Q8_0, IQ4_NL             Q8_0  (32 per block, f16 scale)
 *     Q4_1, Q5_1                           Q8_1  (32 per block, f16 scale and f16 d * sum)
 *     Q2_K..Q6_K, IQ4_XS                   Q8_K  (256 per block, f32 scale, 16-sums)
 *     F16 / BF16                           the activations rounded to F16 / BF16
 *
 * Q8_0 and Q8_1 are quantized as ggml's x86 (AVX2 / AVX-512) code does: scale 127 / max|x|
 * multiplied in, round half to even; Q8_K as ggml's reference: -127 / max, nearest_int.
 *
 * Usage:
 *     vkf_dtype at = vkf_act_type(VKF_DTYPE_Q4_K);              // VKF_ACT_Q8_K
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
    VKF_DOT_REPACKED = 2,   /* the weight has a multiple of 8 rows: llama.cpp repacks Q4_0 */
};

/* The dot product of a weight row of type w with an activation row of vkf_act_type_of(w), the
 * way ggml combines the block sums (bit for bit where ggml's kernels are reproduced; see
 * quant_dot.c); flags: VKF_DOT_*. 0 for a type it does not know. */
float vkf_act_dot(vkf_dtype w, const void *wrow, const void *act, int64_t k, int flags);

#endif
