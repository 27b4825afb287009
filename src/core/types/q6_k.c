/* Q6_K: super-blocks of 256: 128 bytes of low nibbles ql, 64 bytes of 2-bit highs qh, 16 int8
 * scales, f16 d. Element e: n = e / 128, g = e % 128 / 32, l = e % 32;
 * q = ((ql[64n + 32 (g & 1) + l] >> 4 (g >> 1)) & 15) | (((qh[32n + l] >> 2g) & 3) << 4);
 * x = d * scales[e / 16] * (q - 32) (210 bytes: only 2-byte aligned in a file). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q6_k *b = src;
    for (int64_t i = 0; i < n / 256; i++, dst += 256) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int e = 0; e < 256; e++) {
            int nn = e / 128, g = e % 128 / 32, l = e % 32;
            int q = (b[i].ql[64 * nn + 32 * (g & 1) + l] >> (4 * (g >> 1))) & 15;
            q |= ((b[i].qh[32 * nn + l] >> (2 * g)) & 3) << 4;
            dst[e] = d * (float)b[i].scales[e / 16] * (float)(q - 32);
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 210)

const vkf_wtype vkf_wtype_q6_k = {"Q6_K", 14, 256, 210, 1, 64, 1, {208, 0}, deq, dot, NULL, 1};
