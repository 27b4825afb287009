#include "core/dtype.h"
#include "core/blocks.h"

#include <math.h>

const char *vkf_dtype_name(vkf_dtype t) {
    switch (t) {
    case VKF_DTYPE_F32: return "F32";
    case VKF_DTYPE_F16: return "F16";
    case VKF_DTYPE_BF16: return "BF16";
    case VKF_DTYPE_Q8_0: return "Q8_0";
    case VKF_DTYPE_Q4_0: return "Q4_0";
    case VKF_DTYPE_I32: return "I32";
    default: return "?";
    }
}

int vkf_dtype_block_elems(vkf_dtype t) {
    return (t == VKF_DTYPE_Q8_0 || t == VKF_DTYPE_Q4_0) ? VKF_QK : 1;
}

size_t vkf_dtype_block_bytes(vkf_dtype t) {
    switch (t) {
    case VKF_DTYPE_F32: return 4;
    case VKF_DTYPE_F16: return 2;
    case VKF_DTYPE_BF16: return 2;
    case VKF_DTYPE_Q8_0: return sizeof(vkf_block_q8_0);
    case VKF_DTYPE_Q4_0: return sizeof(vkf_block_q4_0);
    case VKF_DTYPE_I32: return 4;
    default: return 0;
    }
}

size_t vkf_dtype_row_bytes(vkf_dtype t, int64_t n) {
    int be = vkf_dtype_block_elems(t);
    if (n < 0 || n % be) return 0;
    return (size_t)(n / be) * vkf_dtype_block_bytes(t);
}

float vkf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            man &= 0x3ff;
            bits = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000 | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t vkf_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffff;
    if (ax >= 0x7f800000) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 : 0));
    if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (ax < 0x38800000) {                                   /* subnormal or zero in f16 */
        if (ax < 0x33000000) return (uint16_t)sign;          /* < half the smallest subnormal */
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14 + (113 - e) - 1 ... bits dropped = shift */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax >> 13) - ((127 - 15) << 10));
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

float vkf_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t vkf_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 64); /* quiet NaN */
    return (uint16_t)((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}

void vkf_dequantize_row(vkf_dtype t, const void *src, float *dst, int64_t n) {
    switch (t) {
    case VKF_DTYPE_F32: memcpy(dst, src, (size_t)n * 4); break;
    case VKF_DTYPE_F16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = vkf_f16_to_f32(s[i]);
    } break;
    case VKF_DTYPE_BF16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = vkf_bf16_to_f32(s[i]);
    } break;
    case VKF_DTYPE_Q8_0: {
        const vkf_block_q8_0 *b = src;
        for (int64_t i = 0; i < n / VKF_QK; i++) {
            float d = vkf_f16_to_f32(b[i].d);
            for (int j = 0; j < VKF_QK; j++) dst[i * VKF_QK + j] = d * (float)b[i].qs[j];
        }
    } break;
    case VKF_DTYPE_Q4_0: {
        const vkf_block_q4_0 *b = src;
        for (int64_t i = 0; i < n / VKF_QK; i++) {
            float d = vkf_f16_to_f32(b[i].d);
            for (int j = 0; j < VKF_QK / 2; j++) {
                dst[i * VKF_QK + j] = d * (float)((b[i].qs[j] & 15) - 8);
                dst[i * VKF_QK + j + VKF_QK / 2] = d * (float)((b[i].qs[j] >> 4) - 8);
            }
        }
    } break;
    case VKF_DTYPE_I32: {
        const int32_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = (float)s[i];
    } break;
    default: break;
    }
}

void vkf_quantize_row(vkf_dtype t, const float *src, void *dst, int64_t n) {
    switch (t) {
    case VKF_DTYPE_F32: memcpy(dst, src, (size_t)n * 4); break;
    case VKF_DTYPE_F16: {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = vkf_f32_to_f16(src[i]);
    } break;
    case VKF_DTYPE_BF16: {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = vkf_f32_to_bf16(src[i]);
    } break;
    case VKF_DTYPE_Q8_0: {
        vkf_block_q8_0 *b = dst;
        for (int64_t i = 0; i < n / VKF_QK; i++) {
            const float *x = src + i * VKF_QK;
            float amax = 0;
            for (int j = 0; j < VKF_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
            float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
            b[i].d = vkf_f32_to_f16(d);
            for (int j = 0; j < VKF_QK; j++) b[i].qs[j] = (int8_t)roundf(x[j] * id);
        }
    } break;
    case VKF_DTYPE_Q4_0: {
        vkf_block_q4_0 *b = dst;
        for (int64_t i = 0; i < n / VKF_QK; i++) {
            const float *x = src + i * VKF_QK;
            float amax = 0, max = 0;
            for (int j = 0; j < VKF_QK; j++)
                if (fabsf(x[j]) > amax) {
                    amax = fabsf(x[j]);
                    max = x[j];
                }
            float d = max / -8.0f, id = d ? 1.0f / d : 0.0f;
            b[i].d = vkf_f32_to_f16(d);
            for (int j = 0; j < VKF_QK / 2; j++) {
                int q0 = (int)(x[j] * id + 8.5f), q1 = (int)(x[j + VKF_QK / 2] * id + 8.5f);
                q0 = q0 > 15 ? 15 : q0;
                q1 = q1 > 15 ? 15 : q1;
                b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
            }
        }
    } break;
    case VKF_DTYPE_I32: {
        int32_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = (int32_t)src[i];
    } break;
    default: break;
    }
}

const int8_t vkf_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};
