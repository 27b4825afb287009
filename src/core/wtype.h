/* Weight types as data: one traits record per storage type (name, GGUF type id, block geometry,
 * CPU dequantize-row and dot-product functions, ggml's reference quantizer, and the activation
 * type and integer dot product of llama.cpp's CPU matmuls). Every layer asks this table instead
 * of testing for particular types; adding a type is one file in src/core/types/, its line in
 * the table (wtype.c), its enum value (include/vkformer.h) and its GLSL include
 * (shaders/dtype_<t>.glsl). */
#ifndef VKF_CORE_WTYPE_H
#define VKF_CORE_WTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/quant_dot.h"
#include "vkformer.h"

typedef struct vkf_wtype {
    const char *name;   /* ggml's name, e.g. "Q4_K" */
    int gguf_type;      /* ggml_type id in GGUF tensor infos; -1: none */
    int block_elems;    /* elements per block (1 for plain types) */
    size_t block_bytes; /* bytes per block */
    int weight;         /* 1: usable as a matmul / embedding weight (kernels read it in place) */
    /* GPU decode unit: elements one kernel step decodes (matmul FAST / texel paths need K to be
     * a multiple of it); 0 for non-weight types */
    int gpu_unit;
    /* byte offsets of the f16 scale fields in a block (random valid blocks for the op harness:
     * random bytes with these fields set to small finite values); n_f16 of them */
    int n_f16;
    uint8_t f16_off[2];
    /* dst[0..n) = the values of the n elements at src (n a multiple of block_elems) */
    void (*dequantize_row)(const void *src, float *dst, int64_t n);
    /* sum_i x[i] * w[i] over a row of n elements in this type, f32 accumulation */
    float (*dot)(const void *w, const float *x, int64_t n);
    /* ggml's reference quantizer without an importance matrix, bit for bit (llama-quantize's
     * blocks; F32 / F16 / BF16 / I32: the conversion); n a multiple of block_elems */
    void (*quantize_row)(const float *src, void *dst, int64_t n);
    /* 1: decode units 2k and 2k + 1 share texels, which the GLSL include loads once for both
     * (W_HAVE_PAIRLOAD in shaders/dtypes.glsl; the Vulkan decode's RS_PAIRU) */
    int gpu_pairload;
    /* llama.cpp's CPU matmul (core/quant_dot.h): the vkf_act_type its activation rows are
     * converted to (ggml's vec_dot_type), and the dot product of a weight row with one such row
     * in ggml's summation order (flags: VKF_DOT_*); NULL for non-weight types */
    int act;
    float (*act_dot)(const void *w, const void *act, int64_t k, int flags);
    /* E8M0 scale bytes in a block (MXFP4: 1, at byte e8m0_off): the op harness sets them to
     * exponents near 1 (random bytes would reach 2^127) */
    int n_e8m0;
    int e8m0_off;
} vkf_wtype;

/* The traits of t, or NULL when t is not a valid vkf_dtype. */
const vkf_wtype *vkf_wtype_of(vkf_dtype t);
/* The dtype whose gguf_type is id; 0 if none. */
int vkf_wtype_from_gguf(uint32_t id, vkf_dtype *out);
/* 1 if t is a block-quantized type (block_elems > 1). */
int vkf_wtype_is_quant(vkf_dtype t);
/* 1 if t can be a matmul / embedding weight. */
int vkf_wtype_is_weight(vkf_dtype t);
/* The weight types the Vulkan kernels and CPU reference take, comma separated (for messages). */
const char *vkf_wtype_weight_list(void);
/* A generic dot: dequantizes one block at a time. */
float vkf_wtype_dot_generic(vkf_dtype t, const void *w, const float *x, int64_t n);

/* One file per type in src/core/types/ defines its record. */
extern const vkf_wtype vkf_wtype_f32, vkf_wtype_f16, vkf_wtype_bf16, vkf_wtype_q8_0, vkf_wtype_q4_0,
    vkf_wtype_i32, vkf_wtype_q4_1, vkf_wtype_q5_0, vkf_wtype_q5_1, vkf_wtype_q2_k, vkf_wtype_q3_k,
    vkf_wtype_q4_k, vkf_wtype_q5_k, vkf_wtype_q6_k, vkf_wtype_iq4_nl, vkf_wtype_iq4_xs,
    vkf_wtype_mxfp4;

/* Helpers for the type files: little-endian reads at any byte offset. */
static inline uint16_t vkf_rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t vkf_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Defines the dot function of a type from its dequantize_row, block by block. */
#define VKF_WTYPE_DOT(fn, deq, BE, BB)                                                             \
    static float fn(const void *w, const float *x, int64_t n) {                                    \
        float tmp[BE], acc = 0.0f;                                                                 \
        const uint8_t *b = w;                                                                      \
        for (int64_t i = 0; i < n / (BE); i++) {                                                   \
            deq(b + (size_t)i * (BB), tmp, BE);                                                    \
            for (int j = 0; j < (BE); j++)                                                         \
                acc += tmp[j] * x[i * (BE) + j];                                                   \
        }                                                                                          \
        return acc;                                                                                \
    }

/* The dequantize, dot and quantize functions of a 16-bit float type (F16, BF16) from its
 * element conversions. */
#define VKF_WTYPE_HALF(TO_F32, FROM_F32)                                                           \
    static void deq(const void *src, float *dst, int64_t n) {                                      \
        const uint16_t *s = src;                                                                   \
        for (int64_t i = 0; i < n; i++)                                                            \
            dst[i] = TO_F32(s[i]);                                                                 \
    }                                                                                              \
    static float dot(const void *w, const float *x, int64_t n) {                                   \
        const uint16_t *s = w;                                                                     \
        float acc = 0.0f;                                                                          \
        for (int64_t i = 0; i < n; i++)                                                            \
            acc += TO_F32(s[i]) * x[i];                                                            \
        return acc;                                                                                \
    }                                                                                              \
    static void quant(const float *src, void *dst, int64_t n) {                                    \
        uint16_t *d = dst;                                                                         \
        for (int64_t i = 0; i < n; i++)                                                            \
            d[i] = FROM_F32(src[i]);                                                               \
    }

#endif
