/* Q4_K: super-blocks of 256 = 8 sub-blocks of 32: f16 d, f16 dmin, 12 bytes of packed 6-bit
 * scales and mins, 128 bytes of nibbles (sub-block s: bytes 32 (s / 2).. + 31, low nibble for
 * even s, high for odd); x = d * sc[s] * q - dmin * m[s] (144 bytes). Scale/min s < 4: low 6
 * bits of bytes s / s + 4; s >= 4: low / high nibble of byte s + 4 with the top 2 bits of bytes
 * s - 4 / s. */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

void vkf_k4_scale_min(const uint8_t *q, int s, int *sc, int *m);
void vkf_k4_scale_min(const uint8_t *q, int s, int *sc, int *m) {
    if (s < 4) {
        *sc = q[s] & 63;
        *m = q[s + 4] & 63;
    } else {
        *sc = (q[s + 4] & 15) | ((q[s - 4] >> 6) << 4);
        *m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
    }
}

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q4_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        float d = vkf_f16_to_f32(b[i].d), dmin = vkf_f16_to_f32(b[i].dmin);
        for (int s = 0; s < 8; s++, dst += 32) {
            int sc, m;
            vkf_k4_scale_min(b[i].scales, s, &sc, &m);
            float dl = d * (float)sc, ml = dmin * (float)m;
            const uint8_t *q = b[i].qs + 32 * (s / 2);
            for (int l = 0; l < 32; l++)
                dst[l] = dl * (float)((q[l] >> (4 * (s & 1))) & 15) - ml;
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 144)

const vkf_wtype vkf_wtype_q4_k = {"Q4_K", 12, 256, 144, 1, 64, 2, {0, 2}, deq, dot, NULL, 1};
