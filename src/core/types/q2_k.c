/* Q2_K: super-blocks of 256: 16 bytes of scales (per 16 elements: low nibble scale, high nibble
 * min), 64 bytes of 2-bit quants, f16 d, f16 dmin. Element e: n = e / 128, j = e % 128 / 32,
 * l = e % 32; q = (qs[32n + l] >> 2j) & 3; x = d * sc * q - dmin * m with sc|m = scales[e / 16]
 * (84 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q2_k *b = src;
    for (int64_t i = 0; i < n / 256; i++, dst += 256) {
        float d = vkf_f16_to_f32(b[i].d), dmin = vkf_f16_to_f32(b[i].dmin);
        for (int e = 0; e < 256; e++) {
            int sc = b[i].scales[e / 16];
            int q = (b[i].qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
            dst[e] = d * (float)(sc & 15) * (float)q - dmin * (float)(sc >> 4);
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 84)

const vkf_wtype vkf_wtype_q2_k = {"Q2_K", 10, 256, 84, 1, 32, 2, {80, 82}, deq, dot, NULL, 0};
