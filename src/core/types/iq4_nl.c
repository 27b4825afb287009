/* IQ4_NL: blocks of 32: f16 scale d, 16 bytes of nibbles (byte j: element j low, j + 16 high)
 * indexing the non-linear table vkf_iq4nl_values; x = d * table[q] (18 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)vkf_iq4nl_values[b[i].qs[j] & 15];
            dst[j + 16] = d * (float)vkf_iq4nl_values[b[i].qs[j] >> 4];
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 32, 18)

const vkf_wtype vkf_wtype_iq4_nl = {"IQ4_NL", 20, 32, 18, 1, 32, 1, {0, 0}, deq, dot, NULL, 0};
