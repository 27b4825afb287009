/* ggml's 32-element reference quantizers: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (see quant.h). The
 * quantized value is the float truncated after adding the offset plus one half, as ggml does
 * (not round-half-even), and clamped where ggml clamps. */
#include "core/quant.h"

#include <float.h>
#include <math.h>

void vkf_quantize_q8_0(const float *x, vkf_block_q8_0 *y, int64_t k) {
    for (int64_t i = 0; i < k / 32; i++, x += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = vkf_f32_to_f16(d);
        for (int j = 0; j < 32; j++)
            y[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

/* Largest |x| of a block with its sign (the first one on ties), as ggml picks it. */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

static void min_max(const float *x, int n, float *mn, float *mx) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

static int min_int(int a, int b) { return a < b ? a : b; }

void vkf_quantize_q4_0(const float *x, vkf_block_q4_0 *y, int64_t k) {
    for (int64_t i = 0; i < k / 32; i++, x += 32) {
        const float d = signed_absmax(x, 32) / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = vkf_f32_to_f16(d);
        for (int j = 0; j < 16; j++) {
            int q0 = min_int(15, (int)(x[j] * id + 8.5f)),
                q1 = min_int(15, (int)(x[j + 16] * id + 8.5f));
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void vkf_quantize_q4_1(const float *x, vkf_block_q4_1 *y, int64_t k) {
    for (int64_t i = 0; i < k / 32; i++, x += 32) {
        float mn, mx;
        min_max(x, 32, &mn, &mx);
        const float d = (mx - mn) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = vkf_f32_to_f16(d);
        y[i].m = vkf_f32_to_f16(mn);
        for (int j = 0; j < 16; j++) {
            int q0 = min_int(15, (int)((x[j] - mn) * id + 0.5f));
            int q1 = min_int(15, (int)((x[j + 16] - mn) * id + 0.5f));
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

/* Low nibbles into qs, fifth bits into the little-endian 32-bit qh. */
static void pack5(const uint8_t q[32], uint8_t qs[16], uint8_t qh[4]) {
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
        h |= (uint32_t)((q[j] >> 4) & 1) << j;
        h |= (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
    }
    for (int b = 0; b < 4; b++)
        qh[b] = (uint8_t)(h >> (8 * b));
}

void vkf_quantize_q5_0(const float *x, vkf_block_q5_0 *y, int64_t k) {
    uint8_t q[32];
    for (int64_t i = 0; i < k / 32; i++, x += 32) {
        const float d = signed_absmax(x, 32) / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = vkf_f32_to_f16(d);
        for (int j = 0; j < 32; j++)
            q[j] = (uint8_t)min_int(31, (int)(x[j] * id + 16.5f));
        pack5(q, y[i].qs, y[i].qh);
    }
}

void vkf_quantize_q5_1(const float *x, vkf_block_q5_1 *y, int64_t k) {
    uint8_t q[32];
    for (int64_t i = 0; i < k / 32; i++, x += 32) {
        float mn, mx;
        min_max(x, 32, &mn, &mx);
        const float d = (mx - mn) / 31.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = vkf_f32_to_f16(d);
        y[i].m = vkf_f32_to_f16(mn);
        /* no clamp here in ggml: a value that rounds to 32 keeps only its low five bits (0) */
        for (int j = 0; j < 32; j++)
            q[j] = (uint8_t)(int)((x[j] - mn) * id + 0.5f);
        pack5(q, y[i].qs, y[i].qh);
    }
}
