/* Q3_K: super-blocks of 256: 32 bytes of high-bit mask, 64 bytes of 2-bit quants, 12 bytes of
 * packed 6-bit scales (16, offset by 32), f16 d. Element e: n = e / 128, j = e % 128 / 32,
 * l = e % 32; q = ((qs[32n + l] >> 2j) & 3) - (hmask[l] bit 4n + j ? 0 : 4);
 * x = d * (scale[e / 16] - 32) * q (110 bytes: only 2-byte aligned in a file). Scale i: low 4
 * bits from nibble i / 8 of byte i % 8, high 2 bits from bits 2 (i / 4) of byte 8 + i % 4. */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

static int q3k_scale(const uint8_t *s, int i) {
    int k = i & 3, g = i >> 2;
    int lo = (s[k + 4 * (g & 1)] >> (4 * (g >> 1))) & 15;
    int hi = (s[8 + k] >> (2 * g)) & 3;
    return (lo | (hi << 4)) - 32;
}

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q3_k *b = src;
    for (int64_t i = 0; i < n / 256; i++, dst += 256) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int e = 0; e < 256; e++) {
            int nn = e / 128, j = e % 128 / 32, l = e % 32;
            int q = (b[i].qs[32 * nn + l] >> (2 * j)) & 3;
            if (!(b[i].hmask[l] & (1 << (4 * nn + j)))) q -= 4;
            dst[e] = d * (float)q3k_scale(b[i].scales, e / 16) * (float)q;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 110)

const vkf_wtype vkf_wtype_q3_k = {"Q3_K", 11, 256, 110, 1, 64, 1, {108, 0}, deq, dot, NULL, 0};
