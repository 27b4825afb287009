/* Q4_1: blocks of 32: f16 scale d, f16 min m, 16 bytes of nibbles (byte j: element j low,
 * j + 16 high); x = d * q + m (20 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        float d = vkf_f16_to_f32(b[i].d), m = vkf_f16_to_f32(b[i].m);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)(b[i].qs[j] & 15) + m;
            dst[j + 16] = d * (float)(b[i].qs[j] >> 4) + m;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 20)

const vkf_wtype vkf_wtype_q4_1 = {"Q4_1", 3, 32, 20, 1, 32, 2, {0, 2}, deq, dot, NULL, 0};
