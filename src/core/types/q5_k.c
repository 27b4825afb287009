/* Q5_K: Q4_K plus 32 bytes of high bits (element l of sub-block s: bit s of qh[l]);
 * x = d * sc[s] * (q + 16 h) - dmin * m[s] (176 bytes). */
#include "core/blocks.h"
#include "core/dtype.h"
#include "core/wtype.h"

void vkf_k4_scale_min(const uint8_t *q, int s, int *sc, int *m);

static void deq(const void *src, float *dst, int64_t n) {
    const vkf_block_q5_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        float d = vkf_f16_to_f32(b[i].d), dmin = vkf_f16_to_f32(b[i].dmin);
        for (int s = 0; s < 8; s++, dst += 32) {
            int sc, m;
            vkf_k4_scale_min(b[i].scales, s, &sc, &m);
            float dl = d * (float)sc, ml = dmin * (float)m;
            const uint8_t *q = b[i].qs + 32 * (s / 2);
            for (int l = 0; l < 32; l++) {
                int v = ((q[l] >> (4 * (s & 1))) & 15) | (((b[i].qh[l] >> s) & 1) << 4);
                dst[l] = dl * (float)v - ml;
            }
        }
    }
}

VKF_WTYPE_DOT(dot, deq, 256, 176)

const vkf_wtype vkf_wtype_q5_k = {"Q5_K", 13, 256, 176, 1, 64, 2, {0, 2}, deq, dot, NULL, 1};
