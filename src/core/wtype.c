#include "core/wtype.h"

#include "core/dtype.h"

/* indexed by vkf_dtype */
static const vkf_wtype *const g_wtypes[VKF_DTYPE_COUNT] = {
    [VKF_DTYPE_F32] = &vkf_wtype_f32,       [VKF_DTYPE_F16] = &vkf_wtype_f16,
    [VKF_DTYPE_BF16] = &vkf_wtype_bf16,     [VKF_DTYPE_Q8_0] = &vkf_wtype_q8_0,
    [VKF_DTYPE_Q4_0] = &vkf_wtype_q4_0,     [VKF_DTYPE_I32] = &vkf_wtype_i32,
    [VKF_DTYPE_Q4_1] = &vkf_wtype_q4_1,     [VKF_DTYPE_Q5_0] = &vkf_wtype_q5_0,
    [VKF_DTYPE_Q5_1] = &vkf_wtype_q5_1,     [VKF_DTYPE_Q2_K] = &vkf_wtype_q2_k,
    [VKF_DTYPE_Q3_K] = &vkf_wtype_q3_k,     [VKF_DTYPE_Q4_K] = &vkf_wtype_q4_k,
    [VKF_DTYPE_Q5_K] = &vkf_wtype_q5_k,     [VKF_DTYPE_Q6_K] = &vkf_wtype_q6_k,
    [VKF_DTYPE_IQ4_NL] = &vkf_wtype_iq4_nl, [VKF_DTYPE_IQ4_XS] = &vkf_wtype_iq4_xs,
    [VKF_DTYPE_MXFP4] = &vkf_wtype_mxfp4,
};

const vkf_wtype *vkf_wtype_of(vkf_dtype t) {
    return (unsigned)t < VKF_DTYPE_COUNT ? g_wtypes[t] : NULL;
}

int vkf_wtype_from_gguf(uint32_t id, vkf_dtype *out) {
    for (int t = 0; t < VKF_DTYPE_COUNT; t++)
        if (g_wtypes[t] && g_wtypes[t]->gguf_type >= 0 && (uint32_t)g_wtypes[t]->gguf_type == id) {
            *out = (vkf_dtype)t;
            return 1;
        }
    return 0;
}

int vkf_wtype_is_quant(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w && w->block_elems > 1;
}

int vkf_wtype_is_weight(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w && w->weight;
}

const char *vkf_wtype_weight_list(void) {
    return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, "
           "IQ4_XS, MXFP4";
}

float vkf_wtype_dot_generic(vkf_dtype t, const void *w, const float *x, int64_t n) {
    const vkf_wtype *wt = vkf_wtype_of(t);
    return wt && wt->dot ? wt->dot(w, x, n) : 0.0f;
}

/* ---------------------------------------------------------------- dtype.h on the table */

const char *vkf_dtype_name(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w ? w->name : "?";
}

int vkf_dtype_block_elems(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w ? w->block_elems : 1;
}

size_t vkf_dtype_block_bytes(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w ? w->block_bytes : 0;
}

size_t vkf_dtype_row_bytes(vkf_dtype t, int64_t n) {
    int be = vkf_dtype_block_elems(t);
    if (n < 0 || n % be) return 0;
    return (size_t)(n / be) * vkf_dtype_block_bytes(t);
}

void vkf_dequantize_row(vkf_dtype t, const void *src, float *dst, int64_t n) {
    const vkf_wtype *w = vkf_wtype_of(t);
    if (w && w->dequantize_row) w->dequantize_row(src, dst, n);
}

void vkf_quantize_row(vkf_dtype t, const float *src, void *dst, int64_t n) {
    const vkf_wtype *w = vkf_wtype_of(t);
    if (w && w->quantize_row) w->quantize_row(src, dst, n);
}
