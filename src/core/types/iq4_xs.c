/* IQ4_XS: super-blocks of 256 = 8 sub-blocks of 32: f16 d, 8 six-bit scales (low 4 bits in
 * scales_l, two per byte; high 2 bits in scales_h), 128 bytes of nibbles (sub-block s uses bytes
 * 16s..16s+15: element j low nibble, j + 16 high) indexing vkf_iq4nl_values;
 * x = d * (scale - 32) * table[q] (136 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/wtype.h"

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_iq4_xs *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        float d = vkf_f16_to_f32(b[i].d);
        for (int s = 0; s < 8; s++, dst += 32) {
            int ls = ((b[i].scales_l[s / 2] >> (4 * (s % 2))) & 15) |
                     (((b[i].scales_h >> (2 * s)) & 3) << 4);
            float dl = d * (float)(ls - 32);
            const uint8_t *q = b[i].qs + 16 * s;
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * (float)vkf_iq4nl_values[q[j] & 15];
                dst[j + 16] = dl * (float)vkf_iq4nl_values[q[j] >> 4];
            }
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 136)

static void quant(const float *src, void *dst, int64_t n) {
    vkf_block_iq4_xs *y = dst;
    for (int64_t i = 0; i < n / 256; i++) {
        uint16_t sh;
        vkf_quantize_iq4_block(256, 32, src + 256 * i, &y[i].d, y[i].qs, &sh, y[i].scales_l, 7);
        y[i].scales_h = sh;
    }
}

/* llama.cpp: Q8_K activations, 8 lanes, 8 sub-blocks of 32 with their signed scales. */
static int unpack(const void *blk, int q[256], int sc[16], int m[16], float *d, float *dmin) {
    (void)m;
    (void)dmin;
    const vkf_block_iq4_xs *b = blk;
    for (int j = 0; j < 256; j++) {
        int s = j / 32, l = j % 32;
        uint8_t byte = b->qs[16 * s + l % 16];
        q[j] = vkf_iq4nl_values[l < 16 ? byte & 15 : byte >> 4];
    }
    for (int s = 0; s < 8; s++) {
        int ls =
            ((b->scales_l[s / 2] >> (4 * (s & 1))) & 15) | (((b->scales_h >> (2 * s)) & 3) << 4);
        sc[s] = ls - 32;
    }
    *d = vkf_f16_to_f32(b->d);
    return 32;
}

static float act_dot(const void *w, const void *a, int64_t k, int flags) {
    return vkf_act_dot256(unpack, 136, VKF_MINS_NONE, 0, vkf_dot256_order_of(flags, 0), w, a, k);
}

const vkf_wtype vkf_wtype_iq4_xs = {"IQ4_XS", 23,    256, 136,          1,       32, 1, {0, 0}, deq,
                                    dot,      quant, 0,   VKF_ACT_Q8_K, act_dot, 0,  0};
