/* The ggml-activation reference mode of the CPU backend (vkf_context_params.ggml_activations):
 * the ops where llama.cpp's CPU backend computes differently from the plain reference, done its
 * way, so a quantized model can be checked against llama.cpp's logits at a tight tolerance.
 *
 * - MATMUL with an F16 / BF16 / quantized weight: each activation row is quantized to the weight
 *   type's activation type (core/quant_dot.h) and the dot products are integer block sums
 *   combined with the scales as ggml does;
 * - RMSNORM: the mean of squares accumulated in double, then 1 / sqrtf(mean + eps) in float, the
 *   normalized row rounded to float before the weight multiplies it (ggml's rms_norm, then mul).
 * Every other op is the plain reference (cpu_ops.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/quant_dot.h"

static const void *row_ptr(const vkf_tensor *t, int64_t r) {
    return (const char *)t->buf->data + t->offset + vkf_tensor_row_offset(t, r);
}

static float *row_f32(const vkf_tensor *t, int64_t r) {
    return (float *)((char *)t->buf->data + t->offset) + r * t->row_stride;
}

static float reduce16(const float v[16]);
static float vec_dot_f32(const float *x, size_t sx, const float *y, size_t sy, int64_t n);

/* F32 and F16 weights: tinyBLAS for batches (16 lanes of fused multiply-adds along K, then
 * reduce16; K a multiple of 16), ggml_vec_dot_f32 / _f16 for one row (the F16 one sums what is
 * left after the 64-element steps in double); F16 activations rounded to F16 first. */
static vkf_status ggml_matmul_float(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *b = nd->src[2], *y = nd->dst;
    int64_t M = x->rows, N = w->rows, K = x->cols;
    int f16 = w->dtype == VKF_DTYPE_F16;
    float *xa = malloc((size_t)(M * K) * sizeof *xa), *wr = malloc((size_t)K * sizeof *wr);
    if (!xa || !wr) {
        free(xa);
        free(wr);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "matmul %s: out of host memory", w->name);
    }
    for (int64_t m = 0; m < M; m++) {
        const float *xs = row_f32(x, m);
        for (int64_t k = 0; k < K; k++)
            xa[m * K + k] = f16 ? vkf_f16_to_f32(vkf_f32_to_f16(xs[k])) : xs[k];
    }
    for (int64_t n = 0; n < N; n++) {
        const void *wp = row_ptr(w, n);
        for (int64_t k = 0; k < K; k++)
            wr[k] = f16 ? vkf_f16_to_f32(((const uint16_t *)wp)[k]) : ((const float *)wp)[k];
        for (int64_t m = 0; m < M; m++) {
            const float *xr = xa + m * K;
            float acc;
            if (M >= 2 && K % 16 == 0) {
                float lane[16] = {0};
                for (int64_t k = 0; k < K; k++)
                    lane[k % 16] = fmaf(wr[k], xr[k], lane[k % 16]);
                acc = reduce16(lane);
            } else if (f16) {
                int64_t np = K & ~(int64_t)63;
                double sum = np ? (double)vec_dot_f32(wr, 1, xr, 1, np) : 0.0;
                for (int64_t k = np; k < K; k++)
                    sum += (double)(wr[k] * xr[k]);
                acc = (float)sum;
            } else {
                acc = vec_dot_f32(wr, 1, xr, 1, K);
            }
            row_f32(y, m)[n] = acc + (b ? row_f32(b, 0)[n] : 0.0f);
        }
    }
    free(xa);
    free(wr);
    return VKF_OK;
}

static vkf_status ggml_matmul(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *b = nd->src[2], *y = nd->dst;
    int64_t M = x->rows, N = w->rows, K = x->cols;
    vkf_act_type at = vkf_act_type_of(w->dtype);
    size_t arb = vkf_act_row_bytes(at, K);
    char *act = malloc(arb ? arb : 1);
    if (!act) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "matmul %s: out of host memory", w->name);
    int flags = (M == 1 ? VKF_DOT_SINGLE_ROW : 0) | (N % 8 == 0 ? VKF_DOT_REPACKED : 0);
    for (int64_t m = 0; m < M; m++) {
        vkf_act_quantize(at, row_f32(x, m), act, K);
        float *yr = row_f32(y, m);
        for (int64_t n = 0; n < N; n++)
            yr[n] =
                vkf_act_dot(w->dtype, row_ptr(w, n), act, K, flags) + (b ? row_f32(b, 0)[n] : 0.0f);
    }
    free(act);
    return VKF_OK;
}

static vkf_status ggml_rmsnorm(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *b = nd->src[2], *y = nd->dst;
    int64_t n = x->cols;
    for (int64_t r = 0; r < x->rows; r++) {
        const float *xr = row_f32(x, r);
        float *yr = row_f32(y, r);
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++)
            sum += (double)(xr[j] * xr[j]);
        const float mean = (float)(sum / (double)n);
        const float scale = 1.0f / sqrtf(mean + nd->p.norm.eps);
        for (int64_t j = 0; j < n; j++) {
            float v = xr[j] * scale;
            if (w) v *= row_f32(w, 0)[j];
            if (b) v += row_f32(b, 0)[j];
            yr[j] = v;
        }
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ exp, SiLU, attention
 *
 * llama.cpp's reference machine runs ggml's AVX-512 code: exp through a polynomial with fused
 * multiply-adds (ggml_v_expf) in blocks of 16, horizontal sums in a fixed tree. The scalar code
 * below performs the same roundings in the same order (fmaf is exact-then-round, like the
 * vector instructions). */

/* ggml_v_expf, one lane: 2^n * p(b) with n = round(x / ln 2), b the reduced argument. */
static float v_expf(float x) {
    if (x == -INFINITY) return 0.0f;
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(
        fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
        u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    if (fabsf(n) > 126) return expf(x); /* outside the fast path's range: ggml special-cases */
    return ldexpf(j, (int)n);
}

/* _mm512_reduce_add_ps: halves added pairwise, 16 -> 8 -> 4 -> 2 -> 1. */
static float reduce16(const float v[16]) {
    float a[8], b[4];
    for (int i = 0; i < 8; i++)
        a[i] = v[i + 8] + v[i];
    for (int i = 0; i < 4; i++)
        b[i] = a[i + 4] + a[i];
    return (b[0] + b[2]) + (b[1] + b[3]);
}

/* ggml_vec_dot_f32 (AVX-512): 4 x 16 lanes over steps of 64, combined (s0+s2)+(s1+s3), reduced,
 * then the remaining elements one multiply and one add at a time (not fused: fusing them flips
 * roundings in llama-tiny, whose head_dim 32 leaves every element of K.Q to this loop). */
static float vec_dot_f32(const float *x, size_t sx, const float *y, size_t sy, int64_t n) {
    int64_t np = n & ~(int64_t)63;
    float sum = 0.0f;
    if (np) {
        float s[4][16] = {{0}};
        for (int64_t i = 0; i < np; i += 64)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 16; l++) {
                    int64_t e = i + 16 * j + l;
                    s[j][l] = fmaf(x[e * sx], y[e * sy], s[j][l]);
                }
        float v[16];
        for (int l = 0; l < 16; l++)
            v[l] = (s[0][l] + s[2][l]) + (s[1][l] + s[3][l]);
        sum = reduce16(v);
    }
    for (int64_t i = np; i < n; i++)
        sum += x[i * sx] * y[i * sy];
    return sum;
}

/* SiLU(a) * b: ggml_vec_silu_f32 (16 lanes of x / (1 + v_expf(-x)), scalar expf for the rest of
 * the row), then the separate multiply. */
static vkf_status ggml_swiglu(const vkf_node *nd) {
    const vkf_tensor *a = nd->src[0], *b = nd->src[1], *y = nd->dst;
    int64_t n = a->cols, nv = n & ~(int64_t)15;
    for (int64_t r = 0; r < a->rows; r++) {
        const float *ar = row_f32(a, r), *br = row_f32(b, b->rows == 1 ? 0 : r);
        float *yr = row_f32(y, r);
        for (int64_t j = 0; j < n; j++) {
            float s = j < nv ? ar[j] / (1.0f + v_expf(-ar[j])) : ar[j] / (1.0f + expf(-ar[j]));
            yr[j] = s * br[j];
        }
    }
    return VKF_OK;
}

/* llama.cpp's attention without flash attention, over a KV cache padded to 32 cells:
 * KQ per row with ggml_vec_dot_f32; soft_max_ext: scale, max, v_expf in blocks of 16 summed
 * in double, times (float)(1 / sum); KQV with tinyBLAS (16 lanes of fused multiply-adds along
 * the keys, reduce16) for a batch, ggml_vec_dot_f32 over the padded length for one token. */
static vkf_status ggml_attention(const vkf_node *nd, int32_t n_past) {
    const vkf_attn_params *p = &nd->p.attn;
    const vkf_tensor *q = nd->src[0], *k = nd->src[1], *v = nd->src[2], *lens = nd->src[3];
    int hd = p->head_dim, group = p->n_head / p->n_kv_head;
    int64_t n_keys = p->kv_dyn ? (int64_t)n_past + p->n_q : p->n_kv;
    if (n_keys > p->n_kv)
        return vkf_error(VKF_ERROR_CONTEXT_FULL, "attention: %lld keys exceed the cache of %d",
                         (long long)n_keys, p->n_kv);
    int64_t n_pad = (n_keys + 31) / 32 * 32;
    if (n_pad < 32) n_pad = 32;
    float *prob = calloc((size_t)n_pad, sizeof *prob), *vcol = calloc((size_t)n_pad, sizeof *vcol);
    if (!prob || !vcol) {
        free(prob);
        free(vcol);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "attention: out of host memory");
    }
    for (int b = 0; b < p->batch; b++) {
        int64_t klen = n_keys;
        if (lens && ((const int32_t *)row_f32(lens, 0))[b] < klen)
            klen = ((const int32_t *)row_f32(lens, 0))[b];
        for (int i = 0; i < p->n_q; i++) {
            int64_t qpos =
                p->kv_dyn ? (int64_t)n_past + i : (p->causal ? i + (int64_t)(p->n_kv - p->n_q) : i);
            if (lens && p->len_pos) /* serve batching: the sequence's own position */
                qpos = (int64_t)((const int32_t *)row_f32(lens, 0))[b] - p->n_q + i;
            int64_t jmax = klen;
            if (p->causal && qpos + 1 < jmax) jmax = qpos + 1;
            for (int h = 0; h < p->n_head; h++) {
                int kvh = h / group;
                const float *qr = row_f32(q, (int64_t)b * p->n_q + i) + h * hd;
                float *out = row_f32(nd->dst, (int64_t)b * p->n_q + i) + h * hd;
                float max = -INFINITY;
                for (int64_t j = 0; j < n_pad; j++)
                    prob[j] = -INFINITY;
                for (int64_t j = 0; j < jmax; j++) {
                    const float *kr = row_f32(k, (int64_t)b * p->kv_stride + j) + kvh * hd;
                    prob[j] = vec_dot_f32(kr, 1, qr, 1, hd) * p->scale;
                    if (prob[j] > max) max = prob[j];
                }
                if (jmax == 0) {
                    for (int d = 0; d < hd; d++)
                        out[d] = 0.0f;
                    continue;
                }
                double sum = 0.0;
                for (int64_t c = 0; c < n_pad; c += 16) {
                    for (int l = 0; l < 16; l++)
                        prob[c + l] = v_expf(prob[c + l] - max);
                    sum += (double)reduce16(prob + c);
                }
                const float inv = (float)(1.0 / sum);
                for (int64_t j = 0; j < n_pad; j++)
                    prob[j] *= inv;
                for (int d = 0; d < hd; d++) {
                    for (int64_t j = 0; j < jmax; j++)
                        vcol[j] = row_f32(v, (int64_t)b * p->kv_stride + j)[kvh * hd + d];
                    if (p->n_q >= 2) {
                        float lane[16] = {0};
                        for (int64_t j = 0; j < jmax; j++)
                            lane[j % 16] = fmaf(vcol[j], prob[j], lane[j % 16]);
                        out[d] = reduce16(lane);
                    } else {
                        out[d] = vec_dot_f32(vcol, 1, prob, 1, n_pad);
                    }
                }
            }
        }
    }
    free(prob);
    free(vcol);
    return VKF_OK;
}

/* RoPE as ggml_compute_forward_rope_f32: theta_scale = powf(base, -2 / n_rot) in float, the
 * angle of pair i multiplied up from the position one float step at a time, cosf / sinf of it,
 * and x0 * c - x1 * s, x0 * s + x1 * c with the first product fused into the sum (GCC's
 * contraction of ggml's expressions; the other orders flip roundings in 4 of 22 llama-kq cases).
 * Only where these angles are the table's (no frequency factors or scaling: checked against the
 * table); otherwise the table. */
static int ggml_rope_cs(const vkf_node *nd, const float *table_row, int64_t pos, float *cs) {
    int half = nd->p.rope.n_rot / 2;
    if (nd->p.rope.freq_base <= 0.0f) return 0;
    const float theta_scale = powf(nd->p.rope.freq_base, -2.0f / (float)nd->p.rope.n_rot);
    float theta = (float)pos;
    for (int i = 0; i < half; i++) {
        cs[2 * i] = cosf(theta);
        cs[2 * i + 1] = sinf(theta);
        theta *= theta_scale;
        /* the float angle drifts from the table's double one by ~1e-6 per unit of angle */
        float tol = 1e-5f * (1.0f + (float)pos);
        if (fabsf(cs[2 * i] - table_row[2 * i]) > tol ||
            fabsf(cs[2 * i + 1] - table_row[2 * i + 1]) > tol)
            return 0;
    }
    return 1;
}

static vkf_status ggml_rope(const vkf_node *nd, int32_t n_past) {
    const vkf_tensor *x = nd->src[0], *table = nd->src[1], *y = nd->dst;
    int hd = nd->p.rope.head_dim, n_rot = nd->p.rope.n_rot, half = n_rot / 2;
    float gcs[VKF_MAX_HEAD_DIM], tmp[VKF_MAX_HEAD_DIM]; /* one head at a time, so y may alias x */
    for (int64_t r = 0; r < x->rows; r++) {
        int64_t pos = nd->p.rope.pos0 + (nd->p.rope.dyn ? n_past : 0) + r % nd->p.rope.seq_len;
        if (pos < 0 || pos >= table->rows)
            return vkf_error(VKF_ERROR_CONTEXT_FULL,
                             "position %lld is outside the rope table %s (%lld rows)",
                             (long long)pos, table->name, (long long)table->rows);
        const float *xr = row_f32(x, r), *cs = row_f32(table, pos);
        if (ggml_rope_cs(nd, cs, pos, gcs)) cs = gcs;
        float *yr = row_f32(y, r);
        for (int h = 0; h < nd->p.rope.n_head; h++) {
            const float *xh = xr + h * hd;
            memcpy(tmp, xh, (size_t)hd * sizeof *tmp);
            for (int i = 0; i < half; i++) {
                float c = cs[2 * i], s = cs[2 * i + 1];
                int i0 = nd->p.rope.mode == VKF_ROPE_NEOX ? i : 2 * i;
                int i1 = nd->p.rope.mode == VKF_ROPE_NEOX ? i + half : 2 * i + 1;
                float x0 = xh[i0], x1 = xh[i1];
                tmp[i0] = fmaf(x0, c, -(x1 * s));
                tmp[i1] = fmaf(x0, s, x1 * c);
            }
            memcpy(yr + h * hd, tmp, (size_t)hd * sizeof *tmp);
        }
    }
    return VKF_OK;
}

vkf_status vkf_cpu_ggml_op(const vkf_node *n, int32_t n_past) {
    if (n->op == VKF_OP_ROPE) return ggml_rope(n, n_past);
    if (n->op == VKF_OP_SWIGLU) return ggml_swiglu(n);
    if (n->op == VKF_OP_ATTENTION) return ggml_attention(n, n_past);
    if (n->op == VKF_OP_MATMUL &&
        (n->src[1]->dtype == VKF_DTYPE_F32 || n->src[1]->dtype == VKF_DTYPE_F16))
        return ggml_matmul_float(n);
    if (n->op == VKF_OP_MATMUL) return ggml_matmul(n);
    if (n->op == VKF_OP_RMSNORM) return ggml_rmsnorm(n);
    return vkf_cpu_op(n, n_past);
}
