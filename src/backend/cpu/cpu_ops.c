/* CPU reference ops. Plain loops that read like the math: this file is the specification the
 * Vulkan kernels are tested against. Accumulation is in f32 unless noted. */
#include "backend/cpu/cpu_ops.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/quant.h"

/* ------------------------------------------------------------------ access */

static void *ptr(const vkf_tensor *t) { return (char *)t->buf->data + t->offset; }

/* Row r of an f32 or i32 tensor. */
static float *row_f32(const vkf_tensor *t, int64_t r) {
    return (float *)ptr(t) + r * t->row_stride;
}
static int32_t *row_i32(const vkf_tensor *t, int64_t r) {
    return (int32_t *)ptr(t) + r * t->row_stride;
}
/* Row r of a tensor of any storage type, dequantized into out[cols]. */
static void row_deq(const vkf_tensor *t, int64_t r, float *out) {
    vkf_dequantize_row(t->dtype, (const char *)ptr(t) + vkf_tensor_row_offset(t, r), out, t->cols);
}

/* ------------------------------------------------------------------ linear algebra */

/* y[m, n] = sum_k x[m, k] * w[n, k] + b[n] */
static vkf_status op_matmul(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *b = nd->src[2], *y = nd->dst;
    int64_t M = x->rows, N = w->rows, K = x->cols;
    float *wrow = malloc((size_t)K * sizeof *wrow);
    if (!wrow) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "matmul: out of host memory");
    for (int64_t n = 0; n < N; n++) {
        row_deq(w, n, wrow); /* the weight row, dequantized once for every m */
        float bias = b ? row_f32(b, 0)[n] : 0.0f;
        for (int64_t m = 0; m < M; m++) {
            const float *xr = row_f32(x, m);
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++)
                acc += xr[k] * wrow[k];
            row_f32(y, m)[n] = acc + bias;
        }
    }
    free(wrow);
    return VKF_OK;
}

/* y[i, :] = table[ids[i], :] * scale */
static vkf_status op_embed(const vkf_node *nd) {
    const vkf_tensor *table = nd->src[0], *ids = nd->src[1], *y = nd->dst;
    for (int64_t i = 0; i < ids->cols; i++) {
        int32_t id = row_i32(ids, 0)[i];
        if (id < 0 || id >= table->rows)
            return vkf_error(VKF_ERROR_TOKEN,
                             "embed %s: token id %d at position %lld is outside [0, %lld)",
                             table->name, id, (long long)i, (long long)table->rows);
        float *out = row_f32(y, i);
        row_deq(table, id, out);
        for (int64_t j = 0; j < table->cols; j++)
            out[j] *= nd->p.embed.scale;
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ positions */

static vkf_status op_add_pos(const vkf_node *nd, int32_t n_past) {
    const vkf_tensor *x = nd->src[0], *table = nd->src[1], *y = nd->dst;
    for (int64_t r = 0; r < x->rows; r++) {
        int64_t pos = nd->p.pos.pos0 + (nd->p.pos.dyn ? n_past : 0) + r % nd->p.pos.seq_len;
        if (pos < 0 || pos >= table->rows)
            return vkf_error(VKF_ERROR_CONTEXT_FULL,
                             "position %lld is outside the position table %s (%lld rows)",
                             (long long)pos, table->name, (long long)table->rows);
        const float *xr = row_f32(x, r), *pr = row_f32(table, pos);
        float *yr = row_f32(y, r);
        for (int64_t j = 0; j < x->cols; j++)
            yr[j] = xr[j] + pr[j];
    }
    return VKF_OK;
}

static vkf_status op_rope(const vkf_node *nd, int32_t n_past) {
    const vkf_tensor *x = nd->src[0], *table = nd->src[1], *y = nd->dst;
    int hd = nd->p.rope.head_dim, n_rot = nd->p.rope.n_rot, half = n_rot / 2;
    for (int64_t r = 0; r < x->rows; r++) {
        int64_t pos = nd->p.rope.pos0 + (nd->p.rope.dyn ? n_past : 0) + r % nd->p.rope.seq_len;
        if (pos < 0 || pos >= table->rows)
            return vkf_error(VKF_ERROR_CONTEXT_FULL,
                             "position %lld is outside the rope table %s (%lld rows)",
                             (long long)pos, table->name, (long long)table->rows);
        const float *xr = row_f32(x, r), *cs = row_f32(table, pos);
        float *yr = row_f32(y, r);
        float tmp[VKF_MAX_HEAD_DIM]; /* one head at a time, so y may alias x */
        for (int h = 0; h < nd->p.rope.n_head; h++) {
            const float *xh = xr + h * hd;
            memcpy(tmp, xh, (size_t)hd * sizeof *tmp);
            for (int i = 0; i < half; i++) {
                float c = cs[2 * i], s = cs[2 * i + 1];
                int i0 = nd->p.rope.mode == VKF_ROPE_NEOX ? i : 2 * i;
                int i1 = nd->p.rope.mode == VKF_ROPE_NEOX ? i + half : 2 * i + 1;
                tmp[i0] = xh[i0] * c - xh[i1] * s;
                tmp[i1] = xh[i0] * s + xh[i1] * c;
            }
            memcpy(yr + h * hd, tmp, (size_t)hd * sizeof *tmp);
        }
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ elementwise */

/* c tanh(x / c) for c > 0, else x */
static float softcap(float x, float c) { return c > 0 ? c * tanhf(x / c) : x; }

static float unary(int act, float x) {
    switch (act) {
    case VKF_UNARY_RELU: return x > 0 ? x : 0;
    case VKF_UNARY_GELU_ERF: return 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2));
    case VKF_UNARY_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case VKF_UNARY_SILU: return x / (1.0f + expf(-x));
    case VKF_UNARY_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case VKF_UNARY_TANH: return tanhf(x); /* ggml_vec_tanh_f32's */
    }
    return NAN;
}

static vkf_status op_elementwise(const vkf_node *nd) {
    const vkf_tensor *a = nd->src[0], *b = nd->src[1], *y = nd->dst;
    for (int64_t r = 0; r < a->rows; r++) {
        const float *ar = row_f32(a, r);
        const float *br = b ? row_f32(b, b->rows == 1 ? 0 : r) : NULL;
        float *yr = row_f32(y, r);
        for (int64_t j = 0; j < a->cols; j++) {
            switch (nd->op) {
            case VKF_OP_ADD: yr[j] = ar[j] + br[j]; break;
            case VKF_OP_MUL: yr[j] = ar[j] * br[j]; break;
            case VKF_OP_SCALE:
                yr[j] = softcap(ar[j] * nd->p.scale.scale, nd->p.scale.softcap);
                break;
            case VKF_OP_UNARY: yr[j] = unary(nd->p.unary.act, ar[j]); break;
            case VKF_OP_SWIGLU:
                if (nd->p.glu.oai) { /* gpt-oss: the gate clamped above, up on both sides */
                    const float lim = nd->p.glu.limit;
                    float x = fminf(ar[j], lim), yv = fminf(fmaxf(br[j], -lim), lim);
                    yr[j] = x / (1.0f + expf(nd->p.glu.alpha * -x)) * (yv + 1.0f);
                    break;
                }
                yr[j] = unary(nd->p.glu.gelu ? VKF_UNARY_GELU_TANH : VKF_UNARY_SILU, ar[j]) * br[j];
                break;
            default:
                return vkf_error(VKF_ERROR_INTERNAL, "elementwise: op %s", vkf_op_name(nd->op));
            }
        }
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ normalization */

static vkf_status op_norm(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *b = nd->src[2], *y = nd->dst;
    int64_t n = x->cols;
    for (int64_t r = 0; r < x->rows; r++) {
        const float *xr = row_f32(x, r);
        float *yr = row_f32(y, r);
        float mean = 0.0f, var = 0.0f;
        if (nd->op == VKF_OP_LAYERNORM) {
            for (int64_t j = 0; j < n; j++)
                mean += xr[j];
            mean /= (float)n;
        }
        for (int64_t j = 0; j < n; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= (float)n; /* biased variance (LayerNorm); mean of squares (RMSNorm, mean = 0) */
        float inv = 1.0f / sqrtf(var + nd->p.norm.eps);
        for (int64_t j = 0; j < n; j++) {
            float v = (xr[j] - mean) * inv;
            if (w) v *= row_f32(w, 0)[j];
            if (b) v += row_f32(b, 0)[j];
            yr[j] = v;
        }
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ softmax */

static vkf_status op_softmax(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *mask = nd->src[1], *y = nd->dst;
    float scale = nd->p.scale.scale != 0.0f ? nd->p.scale.scale : 1.0f;
    int64_t n = x->cols;
    for (int64_t r = 0; r < x->rows; r++) {
        const float *xr = row_f32(x, r);
        const float *mr = mask ? row_f32(mask, r) : NULL;
        float *yr = row_f32(y, r);
        float max = -INFINITY;
        for (int64_t j = 0; j < n; j++) {
            yr[j] = xr[j] * scale + (mr ? mr[j] : 0.0f);
            if (yr[j] > max) max = yr[j];
        }
        if (max == -INFINITY) { /* every entry masked: no distribution, output zeros */
            memset(yr, 0, (size_t)n * sizeof *yr);
            continue;
        }
        /* the sum in double: an f32 running sum over a vocabulary of 262144 drifts by ~2e-5
         * relative (softmax's harness case there read NMSE 1.5e-9 against the Vulkan tree sum) */
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++) {
            yr[j] = expf(yr[j] - max); /* subtract the max: exp() overflows above 88 */
            sum += yr[j];
        }
        for (int64_t j = 0; j < n; j++)
            yr[j] = (float)(yr[j] / sum);
    }
    return VKF_OK;
}

static vkf_status op_log_softmax(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *y = nd->dst;
    for (int64_t r = 0; r < x->rows; r++) {
        const float *xr = row_f32(x, r);
        float *yr = row_f32(y, r);
        float max = -INFINITY;
        for (int64_t j = 0; j < x->cols; j++)
            max = fmaxf(max, xr[j]);
        double sum = 0.0; /* the log of the sum: double keeps log-probs exact to f32 */
        for (int64_t j = 0; j < x->cols; j++)
            sum += exp((double)xr[j] - max);
        float lse = max + (float)log(sum);
        for (int64_t j = 0; j < x->cols; j++)
            yr[j] = xr[j] - lse;
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ attention */

/* For each sequence b, head h and query i:
 *   out = sum_j softmax_j(cap(scale * q·k_j)) v_j over the keys j that query i may see:
 *   j < n_keys, j < key_len[b], j <= q_pos(i) when causal, j > q_pos(i) - window when the
 *   sliding window is on; cap is the soft-cap (or the identity). With len_pos (serve's batched
 *   step) each sequence's queries sit at its own positions: q_pos(i) = key_len[b] - n_q + i. */
/* Columns [c0, c0 + n) of row r of a K or V cache (one head) as f32: the row itself (F32), or
 * decoded into buf (F16, BF16, and the block types, whose blocks a head's columns hold whole:
 * vkf_cache_types_check asks for a head_dim that is a multiple of the block). */
static const float *kv_row(const vkf_tensor *t, int64_t r, int64_t c0, int64_t n, float *buf) {
    if (t->dtype == VKF_DTYPE_F32) return row_f32(t, r) + c0;
    vkf_dequantize_row(t->dtype,
                       (const char *)ptr(t) + vkf_tensor_row_offset(t, r) +
                           vkf_dtype_row_bytes(t->dtype, c0),
                       buf, n);
    return buf;
}

static vkf_status op_attention(const vkf_node *nd, int32_t n_past) {
    const vkf_attn_params *p = &nd->p.attn;
    const vkf_tensor *q = nd->src[0], *k = nd->src[1], *v = nd->src[2], *lens = nd->src[3];
    const float *sinks = nd->src[4] ? row_f32(nd->src[4], 0) : NULL;
    int hd = p->head_dim, group = p->n_head / p->n_kv_head;
    int64_t n_keys = p->kv_dyn ? (int64_t)n_past + p->n_q : p->n_kv;
    if (n_keys > p->n_kv)
        return vkf_error(VKF_ERROR_CONTEXT_FULL, "attention: %lld keys exceed the cache of %d",
                         (long long)n_keys, p->n_kv);
    float *score = malloc((size_t)(n_keys > 0 ? n_keys : 1) * sizeof *score);
    /* the weighted sum of values in double: f32 running sums over 262144 keys and more drift
     * (NMSE 2e-8 at 262144 and 3.5e-7 at 600000 against the Vulkan kernels' split sums) */
    double *acc = malloc((size_t)hd * sizeof *acc);
    /* a cache in another type than F32: one head of a key and of a value row at a time as f32 */
    float *kbuf = malloc((size_t)hd * sizeof *kbuf), *vbuf = malloc((size_t)hd * sizeof *vbuf);
    if (!score || !acc || !kbuf || !vbuf) {
        free(score);
        free(acc);
        free(kbuf);
        free(vbuf);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "attention: out of host memory");
    }
    for (int b = 0; b < p->batch; b++) {
        int64_t klen = n_keys;
        if (lens && row_i32(lens, 0)[b] < klen) klen = row_i32(lens, 0)[b];
        for (int i = 0; i < p->n_q; i++) {
            int64_t qpos =
                p->kv_dyn ? (int64_t)n_past + i : (p->causal ? i + (int64_t)(p->n_kv - p->n_q) : i);
            if (lens && p->len_pos) qpos = (int64_t)row_i32(lens, 0)[b] - p->n_q + i; /* serve */
            int64_t jmax = klen, jmin = 0;
            if (p->causal && qpos + 1 < jmax) jmax = qpos + 1;
            if (p->window > 0 && qpos - p->window + 1 > 0) jmin = qpos - p->window + 1;
            for (int h = 0; h < p->n_head; h++) {
                int kvh = h / group;
                const float *qr = row_f32(q, (int64_t)b * p->n_q + i) + h * hd;
                float *out = row_f32(nd->dst, (int64_t)b * p->n_q + i) + h * hd;
                float max = -INFINITY;
                for (int64_t j = jmin; j < jmax; j++) {
                    const float *kr =
                        kv_row(k, (int64_t)b * p->kv_stride + j, (int64_t)kvh * hd, hd, kbuf);
                    float dot = 0.0f;
                    for (int d = 0; d < hd; d++)
                        dot += qr[d] * kr[d];
                    score[j] = softcap(dot * p->scale, p->softcap);
                    if (score[j] > max) max = score[j];
                }
                if (sinks && sinks[h] > max) max = sinks[h]; /* the sink joins the softmax */
                double sum = sinks ? exp((double)sinks[h] - max) : 0.0;
                for (int64_t j = jmin; j < jmax; j++) {
                    score[j] = expf(score[j] - max);
                    sum += score[j];
                }
                for (int d = 0; d < hd; d++)
                    acc[d] = 0.0;
                for (int64_t j = jmin; j < jmax; j++) { /* no visible key: zeros */
                    const float *vr =
                        kv_row(v, (int64_t)b * p->kv_stride + j, (int64_t)kvh * hd, hd, vbuf);
                    double w = score[j] / sum;
                    for (int d = 0; d < hd; d++)
                        acc[d] += w * vr[d];
                }
                for (int d = 0; d < hd; d++)
                    out[d] = (float)acc[d];
            }
        }
    }
    free(score);
    free(acc);
    free(kbuf);
    free(vbuf);
    return VKF_OK;
}

/* ------------------------------------------------------------------ data movement, selection */

static vkf_status op_copy_rows(const vkf_node *nd, int32_t n_past) {
    const vkf_tensor *x = nd->src[0], *y = nd->dst;
    int64_t r0 = nd->p.copy.dst_row0 + (nd->p.copy.dyn ? n_past : 0);
    if (nd->src[1]) r0 += row_i32(nd->src[1], 0)[0]; /* per-sequence offset (serve batching) */
    if (r0 < 0 || r0 + x->rows > y->rows)
        return vkf_error(VKF_ERROR_CONTEXT_FULL,
                         "copy into %s: rows %lld..%lld exceed its %lld rows", y->name,
                         (long long)r0, (long long)(r0 + x->rows), (long long)y->rows);
    for (int64_t r = 0; r < x->rows; r++) {
        if (y->dtype != VKF_DTYPE_F32) /* a KV cache of another type: F16 / BF16 rounded to
                                          nearest even, blocks as ggml_cpy writes them */
            vkf_quantize_kv_row(y->dtype, row_f32(x, r),
                                (char *)ptr(y) + vkf_tensor_row_offset(y, r0 + r), x->cols);
        else
            memcpy(row_f32(y, r0 + r), row_f32(x, r), (size_t)x->cols * sizeof(float));
    }
    return VKF_OK;
}

static vkf_status op_argmax(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0];
    for (int64_t r = 0; r < x->rows; r++) {
        const float *xr = row_f32(x, r);
        int64_t best = 0;
        for (int64_t j = 1; j < x->cols; j++)
            if (xr[j] > xr[best]) best = j; /* strict: ties keep the lowest index */
        row_i32(nd->dst, r)[0] = (int32_t)best;
    }
    return VKF_OK;
}

static vkf_status op_topk(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0];
    int k = nd->p.topk.k, n = 0;
    for (int64_t r = 0; r < x->rows; r++) {
        const float *xr = row_f32(x, r);
        int32_t *out = row_i32(nd->dst, r);
        n = 0;
        /* insertion into a sorted list of the best k so far; an element goes after every kept
         * element that is >= it, so ties keep the lower index first */
        for (int64_t j = 0; j < x->cols; j++) {
            if (n == k && !(xr[j] > xr[out[k - 1]])) continue;
            int pos = n < k ? n : k - 1;
            while (pos > 0 && xr[out[pos - 1]] < xr[j]) {
                out[pos] = out[pos - 1];
                pos--;
            }
            out[pos] = (int32_t)j;
            if (n < k) n++;
        }
    }
    return VKF_OK;
}

/* One vector per sequence: the mean of its rows (summed in row order, then divided), its
 * first row or its last row. */
static vkf_status op_pool(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *y = nd->dst;
    int32_t L = nd->p.pool.seq_len;
    const int32_t *lens = row_i32(nd->src[1], 0);
    for (int64_t b = 0; b < y->rows; b++) {
        int32_t len = lens[b] < 1 ? 1 : lens[b] > L ? L : lens[b];
        float *out = row_f32(y, b);
        int64_t r0 = b * L;
        if (nd->p.pool.mode == VKF_POOL_MEAN) {
            for (int64_t c = 0; c < x->cols; c++) {
                float sum = 0.0f;
                for (int32_t r = 0; r < len; r++)
                    sum += row_f32(x, r0 + r)[c];
                out[c] = sum / (float)len;
            }
        } else {
            int64_t r = r0 + (nd->p.pool.mode == VKF_POOL_LAST ? len - 1 : 0);
            memcpy(out, row_f32(x, r), (size_t)x->cols * sizeof(float));
        }
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ mixture of experts */

/* Expert e of the chosen (t, i), checked: an id outside [0, n_expert) is an error. */
static vkf_status moe_expert(const vkf_node *nd, const vkf_tensor *ids, int64_t t, int64_t i,
                             int32_t *e) {
    *e = row_i32(ids, t)[i];
    if (*e < 0 || *e >= nd->p.moe.n_expert)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s %s: expert id %d of token %lld outside [0, %d)", vkf_op_name(nd->op),
                         nd->src[1]->name, *e, (long long)t, nd->p.moe.n_expert);
    return VKF_OK;
}

/* y[t*k + i, n] = x[r(t, i)] · W[e * N + n] with e = ids[t, i] */
static vkf_status op_mul_mat_id(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *ids = nd->src[2], *y = nd->dst;
    int64_t T = ids->rows, k = ids->cols, N = w->rows / nd->p.moe.n_expert, K = x->cols;
    int per_pair = x->rows == T * k && k > 1;
    float *wrow = malloc((size_t)K * sizeof *wrow);
    if (!wrow) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "mul_mat_id: out of host memory");
    vkf_status s = VKF_OK;
    for (int64_t t = 0; t < T && s == VKF_OK; t++)
        for (int64_t i = 0; i < k && s == VKF_OK; i++) {
            int32_t e;
            if ((s = moe_expert(nd, ids, t, i, &e)) != VKF_OK) break;
            const float *xr = row_f32(x, per_pair ? t * k + i : t);
            float *yr = row_f32(y, t * k + i);
            for (int64_t n = 0; n < N; n++) {
                row_deq(w, (int64_t)e * N + n, wrow);
                float acc = 0.0f;
                for (int64_t j = 0; j < K; j++)
                    acc += xr[j] * wrow[j];
                yr[n] = acc;
            }
        }
    free(wrow);
    return s;
}

/* The gate weights of the chosen experts: gathered, softmax over them, renormalised, scaled. */
static vkf_status op_moe_weights(const vkf_node *nd) {
    const vkf_tensor *p = nd->src[0], *ids = nd->src[1], *y = nd->dst;
    int64_t k = ids->cols;
    for (int64_t t = 0; t < p->rows; t++) {
        float *w = row_f32(y, t);
        for (int64_t i = 0; i < k; i++) {
            int32_t e = row_i32(ids, t)[i];
            if (e < 0 || e >= p->cols)
                return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                                 "moe_weights %s: expert id %d of token %lld outside [0, %lld)",
                                 ids->name, e, (long long)t, (long long)p->cols);
            w[i] = row_f32(p, t)[e];
        }
        if (nd->p.moe.softmax_w) {
            float max = -INFINITY;
            for (int64_t i = 0; i < k; i++)
                max = fmaxf(max, w[i]);
            double sum = 0.0;
            for (int64_t i = 0; i < k; i++) {
                w[i] = expf(w[i] - max);
                sum += w[i];
            }
            for (int64_t i = 0; i < k; i++)
                w[i] = (float)(w[i] / sum);
        }
        if (nd->p.moe.norm) {
            double sum = 0.0;
            for (int64_t i = 0; i < k; i++)
                sum += w[i];
            /* llama.cpp clamps the sum at the smallest normal f16 (a sum of 0: no division by 0) */
            float den = fmaxf((float)sum, 6.103515625e-5f);
            for (int64_t i = 0; i < k; i++)
                w[i] /= den;
        }
        if (nd->p.moe.scale != 0.0f && nd->p.moe.scale != 1.0f)
            for (int64_t i = 0; i < k; i++)
                w[i] *= nd->p.moe.scale;
    }
    return VKF_OK;
}

/* y[t] = sum_i e[t*k + i] * w[t, i], the products rounded, summed in order i = 0..k-1 */
static vkf_status op_moe_sum(const vkf_node *nd) {
    const vkf_tensor *e = nd->src[0], *w = nd->src[1], *y = nd->dst;
    int64_t k = w->cols;
    for (int64_t t = 0; t < w->rows; t++) {
        float *yr = row_f32(y, t);
        const float *wr = row_f32(w, t);
        for (int64_t c = 0; c < e->cols; c++) {
            float acc = row_f32(e, t * k)[c] * wr[0];
            for (int64_t i = 1; i < k; i++) {
                float prod = row_f32(e, t * k + i)[c] * wr[i];
                acc += prod;
            }
            yr[c] = acc;
        }
    }
    return VKF_OK;
}

/* Keeps the n_group_used groups whose two largest entries sum highest; the rest -inf. */
static vkf_status op_moe_group_mask(const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *y = nd->dst;
    int G = nd->p.moe.n_group, used = nd->p.moe.n_group_used;
    int64_t per = x->cols / G;
    float *score = malloc((size_t)G * sizeof *score);
    unsigned char *keep = malloc((size_t)G);
    if (!score || !keep) {
        free(score);
        free(keep);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "moe_group_mask: out of host memory");
    }
    for (int64_t r = 0; r < x->rows; r++) {
        const float *xr = row_f32(x, r);
        float *yr = row_f32(y, r);
        for (int g = 0; g < G; g++) {
            float a = -INFINITY, b = -INFINITY; /* the largest two */
            for (int64_t j = g * per; j < (g + 1) * per; j++) {
                if (xr[j] > a) {
                    b = a;
                    a = xr[j];
                } else if (xr[j] > b) {
                    b = xr[j];
                }
            }
            score[g] = per > 1 ? a + b : a;
            keep[g] = 0;
        }
        for (int u = 0; u < used; u++) { /* the best remaining group, ties: the lower */
            int best = -1;
            for (int g = 0; g < G; g++)
                if (!keep[g] && (best < 0 || score[g] > score[best])) best = g;
            if (best < 0) break; /* n_group_used > n_group: the graph refuses it, kept safe */
            keep[best] = 1;
        }
        for (int64_t j = 0; j < x->cols; j++)
            yr[j] = keep[j / per] ? xr[j] : -INFINITY;
    }
    free(score);
    free(keep);
    return VKF_OK;
}

/* ------------------------------------------------------------------ dispatch */

vkf_status vkf_cpu_op(const vkf_node *n, int32_t n_past) {
    switch (n->op) {
    case VKF_OP_MATMUL: return op_matmul(n);
    case VKF_OP_EMBED: return op_embed(n);
    case VKF_OP_ADD_POS: return op_add_pos(n, n_past);
    case VKF_OP_ROPE: return op_rope(n, n_past);
    case VKF_OP_ADD:
    case VKF_OP_MUL:
    case VKF_OP_SCALE:
    case VKF_OP_UNARY:
    case VKF_OP_SWIGLU: return op_elementwise(n);
    case VKF_OP_LAYERNORM:
    case VKF_OP_RMSNORM: return op_norm(n);
    case VKF_OP_SOFTMAX: return op_softmax(n);
    case VKF_OP_LOG_SOFTMAX: return op_log_softmax(n);
    case VKF_OP_ATTENTION: return op_attention(n, n_past);
    case VKF_OP_COPY_ROWS: return op_copy_rows(n, n_past);
    case VKF_OP_ARGMAX: return op_argmax(n);
    case VKF_OP_TOPK: return op_topk(n);
    case VKF_OP_POOL: return op_pool(n);
    case VKF_OP_MUL_MAT_ID: return op_mul_mat_id(n);
    case VKF_OP_MOE_WEIGHTS: return op_moe_weights(n);
    case VKF_OP_MOE_SUM: return op_moe_sum(n);
    case VKF_OP_MOE_GROUP_MASK: return op_moe_group_mask(n);
    default: break;
    }
    return vkf_error(VKF_ERROR_INTERNAL, "cpu: unknown op %d", (int)n->op);
}
