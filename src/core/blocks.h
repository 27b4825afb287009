/* ggml's block layouts, byte for byte as they sit in a GGUF file (ggml-common.h defines them;
 * these are written from the format, not copied). Every scale is an IEEE f16 stored as its bits.
 * Storage types (vkf_dtype) and the activation types of llama.cpp's CPU dot products (Q8_1,
 * Q8_K: never stored in model files, used by the ggml-activation reference mode). */
#ifndef VKF_CORE_BLOCKS_H
#define VKF_CORE_BLOCKS_H

#include <stdint.h>
#include <string.h>

#define VKF_QK4_0 32
#define VKF_QK4_1 32
#define VKF_QK5_0 32
#define VKF_QK5_1 32
#define VKF_QK8_0 32
#define VKF_QK8_1 32
#define VKF_QK_K 256        /* super-block of the K-quants and IQ4_XS */
#define VKF_K_SCALE_SIZE 12 /* packed 6-bit scales and mins of Q4_K / Q5_K */
#define VKF_QK4_NL 32
#define VKF_QK_MXFP4 32

typedef struct vkf_block_q4_1 {
    uint16_t d, m;             /* f16 scale, f16 min */
    uint8_t qs[VKF_QK4_1 / 2]; /* element j: low nibble of qs[j], element j+16: high nibble */
} vkf_block_q4_1;

typedef struct vkf_block_q5_0 {
    uint16_t d;
    uint8_t qh[4]; /* bit j: 5th bit of element j (little-endian uint32) */
    uint8_t qs[VKF_QK5_0 / 2];
} vkf_block_q5_0;

typedef struct vkf_block_q5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[VKF_QK5_1 / 2];
} vkf_block_q5_1;

typedef struct vkf_block_q8_1 {
    uint16_t d, s; /* f16 scale, f16 of d * sum(qs) */
    int8_t qs[VKF_QK8_1];
} vkf_block_q8_1;

typedef struct vkf_block_q2_k {
    uint8_t scales[VKF_QK_K / 16]; /* low nibble scale, high nibble min, per 16 elements */
    uint8_t qs[VKF_QK_K / 4];
    uint16_t d, dmin;
} vkf_block_q2_k;

typedef struct vkf_block_q3_k {
    uint8_t hmask[VKF_QK_K / 8];
    uint8_t qs[VKF_QK_K / 4];
    uint8_t scales[12]; /* 16 x 6-bit scales, offset by 32 */
    uint16_t d;
} vkf_block_q3_k;

typedef struct vkf_block_q4_k {
    uint16_t d, dmin;
    uint8_t scales[VKF_K_SCALE_SIZE];
    uint8_t qs[VKF_QK_K / 2];
} vkf_block_q4_k;

typedef struct vkf_block_q5_k {
    uint16_t d, dmin;
    uint8_t scales[VKF_K_SCALE_SIZE];
    uint8_t qh[VKF_QK_K / 8];
    uint8_t qs[VKF_QK_K / 2];
} vkf_block_q5_k;

typedef struct vkf_block_q6_k {
    uint8_t ql[VKF_QK_K / 2];
    uint8_t qh[VKF_QK_K / 4];
    int8_t scales[VKF_QK_K / 16];
    uint16_t d;
} vkf_block_q6_k;

typedef struct vkf_block_q8_k {
    float d; /* f32 scale (not f16) */
    int8_t qs[VKF_QK_K];
    int16_t bsums[VKF_QK_K / 16]; /* sums of each group of 16 qs */
} vkf_block_q8_k;

typedef struct vkf_block_iq4_nl {
    uint16_t d;
    uint8_t qs[VKF_QK4_NL / 2];
} vkf_block_iq4_nl;

typedef struct vkf_block_iq4_xs {
    uint16_t d;
    uint16_t scales_h;               /* 2 high bits of each of the 8 scales */
    uint8_t scales_l[VKF_QK_K / 64]; /* 4 low bits of each scale, two per byte */
    uint8_t qs[VKF_QK_K / 2];
} vkf_block_iq4_xs;

/* MXFP4 (OCP microscaling): an E8M0 scale byte (2^(e - 127), no sign or mantissa) and 32 E2M1
 * values as nibbles (element j: low nibble of qs[j], element j+16: high nibble); 17 bytes, so
 * blocks sit at any byte offset. */
typedef struct vkf_block_mxfp4 {
    uint8_t e;
    uint8_t qs[VKF_QK_MXFP4 / 2];
} vkf_block_mxfp4;

_Static_assert(sizeof(vkf_block_q4_1) == 20, "ggml Q4_1 block is 20 bytes");
_Static_assert(sizeof(vkf_block_q5_0) == 22, "ggml Q5_0 block is 22 bytes");
_Static_assert(sizeof(vkf_block_q5_1) == 24, "ggml Q5_1 block is 24 bytes");
_Static_assert(sizeof(vkf_block_q8_1) == 36, "ggml Q8_1 block is 36 bytes");
_Static_assert(sizeof(vkf_block_q2_k) == 84, "ggml Q2_K block is 84 bytes");
_Static_assert(sizeof(vkf_block_q3_k) == 110, "ggml Q3_K block is 110 bytes");
_Static_assert(sizeof(vkf_block_q4_k) == 144, "ggml Q4_K block is 144 bytes");
_Static_assert(sizeof(vkf_block_q5_k) == 176, "ggml Q5_K block is 176 bytes");
_Static_assert(sizeof(vkf_block_q6_k) == 210, "ggml Q6_K block is 210 bytes");
_Static_assert(sizeof(vkf_block_q8_k) == 292, "ggml Q8_K block is 292 bytes");
_Static_assert(sizeof(vkf_block_iq4_nl) == 18, "ggml IQ4_NL block is 18 bytes");
_Static_assert(sizeof(vkf_block_iq4_xs) == 136, "ggml IQ4_XS block is 136 bytes");
_Static_assert(sizeof(vkf_block_mxfp4) == 17, "ggml MXFP4 block is 17 bytes");

/* The 16 values an IQ4_NL / IQ4_XS nibble indexes (scaled by d, and by the sub-block scale). */
extern const int8_t vkf_iq4nl_values[16];
/* The 16 E2M1 values an MXFP4 nibble encodes, doubled to integers (ggml's kvalues_mxfp4: bit 3
 * the sign, then 0, 0.5, 1, 1.5, 2, 3, 4, 6 times 2); the block scale is halved to match. */
extern const int8_t vkf_mxfp4_values[16];

/* An E8M0 scale byte as a float, halved (ggml's ggml_e8m0_to_fp32_half: 2^(e - 128); e < 2
 * gives the subnormals 2^-128 and 2^-127, e = 255 2^127 rather than NaN). */
static inline float vkf_e8m0_to_f32_half(uint8_t e) {
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif
