/* Element types: sizes, ggml block layouts and scalar conversions shared by every layer. */
#ifndef VKF_CORE_DTYPE_H
#define VKF_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/wtype.h"
#include "vkformer.h"

#define VKF_QK 32 /* elements per Q8_0 / Q4_0 block */

typedef struct vkf_block_q8_0 {
    uint16_t d;        /* f16 scale */
    int8_t qs[VKF_QK]; /* x[i] = d * qs[i] */
} vkf_block_q8_0;      /* 34 bytes */

typedef struct vkf_block_q4_0 {
    uint16_t d;             /* f16 scale */
    uint8_t qs[VKF_QK / 2]; /* x[i] = d * ((qs[i] & 15) - 8), x[i+16] = d * ((qs[i] >> 4) - 8) */
} vkf_block_q4_0;           /* 18 bytes */

_Static_assert(sizeof(vkf_block_q8_0) == 34, "ggml Q8_0 block is 34 bytes");
_Static_assert(sizeof(vkf_block_q4_0) == 18, "ggml Q4_0 block is 18 bytes");

/* Per-type facts come from the traits table (core/wtype.h); these read it. */
/* Elements per storage block (1 for plain types, 32 or 256 for quantized). */
int vkf_dtype_block_elems(vkf_dtype t);
/* Bytes per storage block. */
size_t vkf_dtype_block_bytes(vkf_dtype t);
/* Bytes for a row of n elements (n must be a multiple of the block size); 0 if not. */
size_t vkf_dtype_row_bytes(vkf_dtype t, int64_t n);

float vkf_f16_to_f32(uint16_t h);
uint16_t vkf_f32_to_f16(float f); /* round to nearest even, like the hardware */
float vkf_bf16_to_f32(uint16_t h);
uint16_t vkf_f32_to_bf16(float f);

/* Dequantizes one row of n elements of type t starting at src into dst (f32). */
void vkf_dequantize_row(vkf_dtype t, const void *src, float *dst, int64_t n);
/* Quantizes n floats into type t as ggml's reference quantizer does (every type whose traits
 * have a quantize_row: all weight types, and I32); other types: dst is left unchanged. */
void vkf_quantize_row(vkf_dtype t, const float *src, void *dst, int64_t n);

#endif
