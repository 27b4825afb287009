/* Q5_1: blocks of 32: f16 scale d, f16 min m, 32 high bits, 16 bytes of low nibbles (as Q5_0);
 * x = d * q + m (24 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        float d = vkf_f16_to_f32(b[i].d), m = vkf_f16_to_f32(b[i].m);
        uint32_t qh = vkf_rd32(b[i].qh);
        for (int j = 0; j < 16; j++) {
            int lo = (b[i].qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            int hi = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            dst[j] = d * (float)lo + m;
            dst[j + 16] = d * (float)hi + m;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 24)

const vkf_wtype vkf_wtype_q5_1 = {"Q5_1", 7, 32, 24, 1, 32, 2, {0, 2}, deq, dot, NULL, 0};
