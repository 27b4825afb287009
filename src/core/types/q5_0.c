/* Q5_0: blocks of 32: f16 scale d, 32 high bits (little-endian; bit j is element j's 5th bit),
 * 16 bytes of low nibbles (byte j: element j low, j + 16 high); x = d * (q - 16) (22 bytes,
 * so blocks are only 2-byte aligned in a file). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        float d = vkf_f16_to_f32(b[i].d);
        uint32_t qh = vkf_rd32(b[i].qh);
        for (int j = 0; j < 16; j++) {
            int lo = (b[i].qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            int hi = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            dst[j] = d * (float)(lo - 16);
            dst[j + 16] = d * (float)(hi - 16);
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 22)

const vkf_wtype vkf_wtype_q5_0 = {"Q5_0", 6, 32, 22, 1, 32, 1, {0, 0}, deq, dot, NULL, 0};
