/* Quantizer dispatch; block sizes from the weight-type table (core/wtype.h). */
#include "core/quant.h"

#include "core/wtype.h"

int vkf_quant_block_elems(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w ? w->block_elems : 1;
}

size_t vkf_quant_block_bytes(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w ? w->block_bytes : 0;
}

int vkf_quant_supported(vkf_dtype t) {
    switch (t) {
    case VKF_DTYPE_F32:
    case VKF_DTYPE_F16:
    case VKF_DTYPE_BF16:
    case VKF_DTYPE_Q8_0:
    case VKF_DTYPE_Q4_0:
    case VKF_DTYPE_Q4_1:
    case VKF_DTYPE_Q5_0:
    case VKF_DTYPE_Q5_1:
    case VKF_DTYPE_Q2_K:
    case VKF_DTYPE_Q3_K:
    case VKF_DTYPE_Q4_K:
    case VKF_DTYPE_Q5_K:
    case VKF_DTYPE_Q6_K:
    case VKF_DTYPE_IQ4_NL:
    case VKF_DTYPE_IQ4_XS: return vkf_wtype_of(t) != NULL;
    default: return 0;
    }
}

size_t vkf_quant_row_bytes(vkf_dtype t, int64_t n) {
    int be = vkf_quant_block_elems(t);
    if (!vkf_quant_supported(t) || n <= 0 || n % be) return 0;
    return (size_t)(n / be) * vkf_quant_block_bytes(t);
}

void vkf_quantize_rows(vkf_dtype t, const float *src, void *dst, int64_t nrows, int64_t n_per_row) {
    size_t rb = vkf_quant_row_bytes(t, n_per_row);
    if (!rb) return;
    for (int64_t r = 0; r < nrows; r++) {
        const float *x = src + r * n_per_row;
        void *y = (char *)dst + (size_t)r * rb;
        switch (t) {
        case VKF_DTYPE_F32:
        case VKF_DTYPE_F16:
        case VKF_DTYPE_BF16: vkf_quantize_row(t, x, y, n_per_row); break;
        case VKF_DTYPE_Q8_0: vkf_quantize_q8_0(x, y, n_per_row); break;
        case VKF_DTYPE_Q4_0: vkf_quantize_q4_0(x, y, n_per_row); break;
        case VKF_DTYPE_Q4_1: vkf_quantize_q4_1(x, y, n_per_row); break;
        case VKF_DTYPE_Q5_0: vkf_quantize_q5_0(x, y, n_per_row); break;
        case VKF_DTYPE_Q5_1: vkf_quantize_q5_1(x, y, n_per_row); break;
        case VKF_DTYPE_Q2_K: vkf_quantize_q2_k(x, y, n_per_row); break;
        case VKF_DTYPE_Q3_K: vkf_quantize_q3_k(x, y, n_per_row); break;
        case VKF_DTYPE_Q4_K: vkf_quantize_q4_k(x, y, n_per_row); break;
        case VKF_DTYPE_Q5_K: vkf_quantize_q5_k(x, y, n_per_row); break;
        case VKF_DTYPE_Q6_K: vkf_quantize_q6_k(x, y, n_per_row); break;
        case VKF_DTYPE_IQ4_NL: vkf_quantize_iq4_nl(x, y, n_per_row); break;
        case VKF_DTYPE_IQ4_XS: vkf_quantize_iq4_xs(x, y, n_per_row); break;
        default: break;
        }
    }
}
