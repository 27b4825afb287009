/* The quantizer entry points over the traits table (core/wtype.h: each row's quantize_row),
 * and the small helpers ggml's 32-element quantizers share. */
#include "core/quant.h"

#include <float.h>
#include <math.h>

#include "core/wtype.h"

int vkf_quant_supported(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w && w->weight && w->quantize_row;
}

size_t vkf_quant_row_bytes(vkf_dtype t, int64_t n) {
    if (!vkf_quant_supported(t) || n <= 0) return 0;
    return vkf_dtype_row_bytes(t, n);
}

void vkf_quantize_rows(vkf_dtype t, const float *src, void *dst, int64_t nrows, int64_t n_per_row) {
    size_t rb = vkf_quant_row_bytes(t, n_per_row);
    if (!rb) return;
    const vkf_wtype *w = vkf_wtype_of(t);
    for (int64_t r = 0; r < nrows; r++)
        w->quantize_row(src + r * n_per_row, (char *)dst + (size_t)r * rb, n_per_row);
}

float vkf_quant_signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

float vkf_quant_min_scale(const float *x, float nmax, uint16_t *dh, uint16_t *mh, float *mn) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    const float d = (hi - lo) / nmax;
    *dh = vkf_f32_to_f16(d);
    *mh = vkf_f32_to_f16(lo);
    *mn = lo;
    return d != 0.0f ? 1.0f / d : 0.0f;
}

void vkf_quant_pack5(const uint8_t q[32], uint8_t qs[16], uint8_t qh[4]) {
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
        h |= (uint32_t)((q[j] >> 4) & 1) << j;
        h |= (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
    }
    for (int b = 0; b < 4; b++)
        qh[b] = (uint8_t)(h >> (8 * b));
}
