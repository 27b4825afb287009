/* Reference quantizers: ggml's round-to-nearest quantization without an importance matrix, bit
 * for bit (llama-quantize writes these blocks for every type when it has no imatrix). Each
 * weight type's row in the traits table (core/wtype.h) owns its quantizer (quantize_row, in
 * core/types/<type>.c); this header is the entry point and the search helpers the rows share
 * (quant.c, quant_k.c, quant_iq4.c).
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

/* Bytes of a row of n elements; 0 when n is not a multiple of the block or t is not handled. */
size_t vkf_quant_row_bytes(vkf_dtype t, int64_t n);
/* 1 when vkf_quantize_rows handles t: every weight type whose row has a quantizer (F32, F16,
 * BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS). */
int vkf_quant_supported(vkf_dtype t);
/* Quantizes nrows rows of n_per_row floats (n_per_row a multiple of the block). */
void vkf_quantize_rows(vkf_dtype t, const float *src, void *dst, int64_t nrows, int64_t n_per_row);

/* ------------------------------------------------------------------ for the type files */

#define VKF_GROUP_MAX_EPS 1e-15f /* ggml: a group below this |max| quantizes to zeros */

/* Round to nearest, ties to even, for |f| < 2^22: adding 1.5 * 2^23 leaves the integer in the
 * low mantissa bits (ggml's nearest_int; the result must match it exactly). */
static inline int vkf_nearest_int(float f) {
    float v = f + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int vkf_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The largest |x| of x[0..n) with its sign (the first one on ties), as ggml picks it. */
float vkf_quant_signed_absmax(const float *x, int n);
/* A 32-block with a min (Q4_1, Q5_1): d = (max - min) / nmax and the min stored as f16 in *dh,
 * *mh, the min in *mn; returns 1 / d (0 for a constant block). */
float vkf_quant_min_scale(const float *x, float nmax, uint16_t *dh, uint16_t *mh, float *mn);
/* 32 five-bit values: low nibbles into qs (element j and j + 16), fifth bits into the
 * little-endian 32-bit qh (Q5_0, Q5_1). */
void vkf_quant_pack5(const uint8_t q[32], uint8_t qs[16], uint8_t qh[4]);

/* ggml's K-quant searches (quant_k.c). Symmetric levels in [-nmax, nmax) weighted by x^2 (L:
 * offset by nmax; make_qx_quants, rmse_type 1), and the 3-bit form with per-element refinement
 * (make_q3_quants); the asymmetric levels 0..nmax with a min (make_qkx2_quants: *the_min gets
 * -min). Each returns the scale. */
float vkf_make_qx_quants(int n, int nmax, const float *x, int8_t *L);
float vkf_make_q3_quants(int n, int nmax, const float *x, int8_t *L);
float vkf_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                           float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                           int use_mad);
/* 2-bit levels of 256 values: byte l of each 32-byte group holds values l, l+32, l+64, l+96. */
void vkf_quant_pack2_k(const uint8_t *L, uint8_t *qs);
/* Q4_K (nmax 15) and Q5_K (nmax 31): 8 sub-blocks of 32 with scale and min, 6-bit scales and
 * mins in sc6 against the f16 super-scales dd / dmin; L gets levels 0..nmax. */
void vkf_quantize_kx(const float *x, int nmax, float rmin, int nstep, uint16_t *dd, uint16_t *dmin,
                     uint8_t *sc6, uint8_t *L);
/* One IQ4 super-block of sb values in blocks of bs (quant_iq4.c; ggml's
 * quantize_row_iq4_nl_impl with no importance matrix and ntry tries of the scale: 7 as
 * llama-quantize (quantize_iq4_nl / _xs), -1 (none: the first scale) as ggml's
 * quantize_row_iq4_nl_ref, the CPU's from_float that writes an IQ4_NL KV cache): sb == bs
 * (IQ4_NL) puts the block scale in *dh; else (IQ4_XS) *dh is the super-scale and scales_h /
 * scales_l hold the 6-bit sub-block scales. */
void vkf_quantize_iq4_block(int sb, int bs, const float *x, uint16_t *dh, uint8_t *q4,
                            uint16_t *scales_h, uint8_t *scales_l, int ntry);
/* A row of a KV cache as ggml's CPU from_float of its type writes it (ggml_cpy from F32: how
 * llama.cpp fills its cache): the reference quantizer of every type (vkf_quantize_rows) except
 * IQ4_NL, written without the scale search (quantize_row_iq4_nl_ref). n a multiple of 32. */
void vkf_quantize_kv_row(vkf_dtype t, const float *src, void *dst, int64_t n);

#endif
