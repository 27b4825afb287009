/* MXFP4: blocks of 32: an E8M0 scale byte e, 16 bytes of E2M1 nibbles (byte j: element j low,
 * j + 16 high); x = 2^(e - 128) * vkf_mxfp4_values[q] (17 bytes; ggml's block_mxfp4, GGUF type
 * 39). The values are E2M1 doubled to integers and the scale halved, as ggml keeps them, so the
 * integer dot products of llama.cpp's CPU kernels come out the same. */
#include <math.h>

#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_mxfp4 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = vkf_e8m0_to_f32_half(b[i].e);
        for (int j = 0; j < 16; j++) {
            dst[j] = (float)vkf_mxfp4_values[b[i].qs[j] & 15] * d;
            dst[j + 16] = (float)vkf_mxfp4_values[b[i].qs[j] >> 4] * d;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 17)

/* ggml's best_index_mxfp4: the first of the 16 values nearest to x / d */
static uint8_t best_index(float x, float d) {
    int best = 0;
    float best_err = fabsf((float)vkf_mxfp4_values[0] * d - x);
    for (int i = 1; i < 16; i++) {
        float err = fabsf((float)vkf_mxfp4_values[i] * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

/* ggml's quantize_row_mxfp4_ref: e = floor(log2(max |x|)) - 2 + 127, so the largest value maps
 * to [4, 8) times the scale, below E2M1's top value 6 only by rounding; then each element to
 * its nearest value. ggml converts the float exponent to uint8_t directly, which x86 compilers
 * do through a 32-bit integer: below 2^-125 it wraps (e = 255 for 2^-126), reproduced here. */
static void quant(const float *src, void *dst, int64_t n) {
    vkf_block_mxfp4 *y = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        const float *x = src + 32 * i;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]);
        const uint8_t e =
            amax > 0.0f ? (uint8_t)(int32_t)(floorf(log2f(amax)) - 2.0f + 127.0f) : (uint8_t)0;
        const float d = vkf_e8m0_to_f32_half(e);
        y[i].e = e;
        for (int j = 0; j < 16; j++)
            y[i].qs[j] = (uint8_t)(best_index(x[j], d) | (best_index(x[j + 16], d) << 4));
    }
}

/* llama.cpp: Q8_0 activations; ggml_vec_dot_mxfp4_q8_0 on AVX2 takes blocks in pairs into two
 * sets of 8 lanes and an odd last block in a scalar tail (no tinyBLAS kernel for MXFP4, so every
 * unrepacked matmul runs it); Oct 2026 on AVX2 repacks a weight of 8k rows (mxfp4_8x8, the
 * IQ4_NL kernels with E8M0 scales: one float step per block). */
static void unpack(const void *blk, int q[32], float *d, float *m) {
    const vkf_block_mxfp4 *b = blk;
    for (int j = 0; j < 16; j++) {
        q[j] = vkf_mxfp4_values[b->qs[j] & 15];
        q[j + 16] = vkf_mxfp4_values[b->qs[j] >> 4];
    }
    *d = vkf_e8m0_to_f32_half(b->e);
    *m = 0.0f;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    if ((flags & VKF_DOT_LLAMA_2610) && (flags & VKF_DOT_REPACKED)) /* mxfp4_8x8 */
        return vkf_act_dot32(unpack, 17, 0, w, a, k, VKF_DOT32_BLOCKSUM);
    return vkf_act_dot32(unpack, 17, 0, w, a, k, VKF_DOT32_LANES2);
}

const vkf_wtype vkf_wtype_mxfp4 = {"MXFP4", 39,    32, 17,           1,       32, 0, {0, 0}, deq,
                                   dot,     quant, 0,  VKF_ACT_Q8_0, act_dot, 1,  0};
