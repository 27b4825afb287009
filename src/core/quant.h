/* Reference quantizers: ggml's round-to-nearest quantization without an importance matrix, bit
 * for bit (llama-quantize writes these blocks for every type below when it has no imatrix), and
 * the activation quantizers of ggml's CPU dot products (Q8_0, Q8_1, Q8_K) for the ggml-activation
 * reference mode.
 *
 * The arithmetic follows ggml-quants.c's reference functions step by step (same float operations
 * in the same order, no fused multiply-adds: the project builds as ISO C11, where GCC does not
 * contract): the rounding helper is round-half-to-even through the 1.5 * 2^23 trick, scales are
 * searched over the same candidate grids, and every f16 conversion rounds to nearest even.
 *
 * Usage:
 *     size_t row = vkf_quant_row_bytes(VKF_DTYPE_Q4_K, n_per_row);   // 0: not a multiple
 *     vkf_quantize_rows(VKF_DTYPE_Q4_K, src, dst, nrows, n_per_row);  // dst: nrows * row bytes
 */
#ifndef VKF_CORE_QUANT_H
#define VKF_CORE_QUANT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/blocks.h"
#include "core/dtype.h"

/* Elements and bytes per block of every storage type this file quantizes (F32/F16/BF16: 1). */
int vkf_quant_block_elems(vkf_dtype t);
size_t vkf_quant_block_bytes(vkf_dtype t);
/* Bytes of a row of n elements; 0 when n is not a multiple of the block or t is not handled. */
size_t vkf_quant_row_bytes(vkf_dtype t, int64_t n);
/* 1 when vkf_quantize_rows handles t: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS. */
int vkf_quant_supported(vkf_dtype t);
/* Quantizes nrows rows of n_per_row floats (n_per_row a multiple of the block). */
void vkf_quantize_rows(vkf_dtype t, const float *src, void *dst, int64_t nrows, int64_t n_per_row);

/* Per-type reference row quantizers (k elements, a multiple of the block). */
void vkf_quantize_q8_0(const float *x, vkf_block_q8_0 *y, int64_t k);
void vkf_quantize_q4_0(const float *x, vkf_block_q4_0 *y, int64_t k);
void vkf_quantize_q4_1(const float *x, vkf_block_q4_1 *y, int64_t k);
void vkf_quantize_q5_0(const float *x, vkf_block_q5_0 *y, int64_t k);
void vkf_quantize_q5_1(const float *x, vkf_block_q5_1 *y, int64_t k);
void vkf_quantize_q2_k(const float *x, vkf_block_q2_k *y, int64_t k);
void vkf_quantize_q3_k(const float *x, vkf_block_q3_k *y, int64_t k);
void vkf_quantize_q4_k(const float *x, vkf_block_q4_k *y, int64_t k);
void vkf_quantize_q5_k(const float *x, vkf_block_q5_k *y, int64_t k);
void vkf_quantize_q6_k(const float *x, vkf_block_q6_k *y, int64_t k);
void vkf_quantize_iq4_nl(const float *x, vkf_block_iq4_nl *y, int64_t k);
void vkf_quantize_iq4_xs(const float *x, vkf_block_iq4_xs *y, int64_t k);

/* Round to nearest, ties to even, for |f| < 2^22: adding 1.5 * 2^23 leaves the integer in the
 * low mantissa bits (ggml's nearest_int; the result must match it exactly). */
static inline int vkf_nearest_int(float f) {
    float v = f + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

#endif
