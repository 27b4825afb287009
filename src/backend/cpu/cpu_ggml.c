/* The ggml-activation reference mode of the CPU backend (vkf_context_params.ggml_activations):
 * the ops where llama.cpp's CPU backend computes differently from the plain reference, done its
 * way, so a model can be checked against llama.cpp's logits bit for bit.
 *
 * - MATMUL with an F16 / BF16 / quantized weight: each activation row is quantized to the weight
 *   type's activation type and the dot products are integer block sums combined with the scales
 *   as ggml does (the weight type's row of the traits table, core/quant_dot.h); F32 / F16
 *   weights as tinyBLAS (batches) and ggml_vec_dot_f32 / _f16 (one row) sum them;
 * - RMSNORM: the mean of squares accumulated in double, then 1 / sqrtf(mean + eps) in float, the
 *   normalized row rounded to float before the weight multiplies it (ggml's rms_norm, then mul);
 * - SwiGLU through ggml's vector exp, GeGLU through its f16 GELU table;
 * - ROPE with the table llama.cpp's cache holds (built ggml's way in this mode, model/arch.c);
 * - ATTENTION as llama.cpp's graph without flash attention: q . k per key, soft-caps as ggml's
 *   scale / tanh / scale, soft_max_ext over the padded KV cells (with gpt-oss's sinks as
 *   ggml_soft_max_add_sinks), the value sums; swiglu_oai with scalar expf;
 * - SCALE with a soft-cap (final logits) as ggml's scale / tanh / scale.
 * Every other op is the plain reference (cpu_ops.c).
 *
 * Where llama.cpp's results depend on the build (the vector width of its float kernels, the KV
 * padding of its cache, which quantized kernels it picks), a target names the build reproduced
 * (vkf_ggml_target in vkformer.h); the table below says what each one does. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/quant_dot.h"

/* ------------------------------------------------------------------ targets */

typedef struct ggml_build {
    const char *name;
    int lanes;          /* float vector width of its kernels: 16 (AVX-512) or 8 (AVX2) */
    int kv_pad;         /* attention runs over the KV cells padded to a multiple of this (32 until
                           llama.cpp padded its cache view to 256 in late 2025) */
    int cvar;           /* LayerNorm's variance in vectors (ggml_vec_cvar_f32, since late 2025) */
    int dot_flags;      /* VKF_DOT_* that select its quantized kernels */
    const char *build;  /* the llama.cpp commit and ISA it reproduces */
    uint32_t checked;   /* bit (1 << vkf_dtype) per weight type checked bit-identical against
                           that build (README's ggml-activations table says on what) */
    const char *others; /* why the other weight types are not reproduced */
} ggml_build;

#define DT(t) (1u << VKF_DTYPE_##t)
/* every weight type of the 2025 kernels: the outside llama-kq, llama-tiny and gpt2-tiny sets
 * c392e50 made (11 quantized files, F32, F16, Q8_0, Q4_0) */
#define CHECKED_2025                                                                               \
    (DT(F32) | DT(F16) | DT(Q8_0) | DT(Q4_0) | DT(Q4_1) | DT(Q5_0) | DT(Q5_1) | DT(Q2_K) |         \
     DT(Q3_K) | DT(Q4_K) | DT(Q5_K) | DT(Q6_K) | DT(IQ4_NL) | DT(IQ4_XS))

static const ggml_build g_builds[] = {
    /* tools/refs builds 0c1e570 for this path: the sets llama-tiny, llama-kq (with BF16 and
       MXFP4) and moe hold every weight type */
    [VKF_GGML_AVX2] = {"avx2", 8, 256, 1, VKF_DOT_LLAMA_2610,
                       "llama.cpp 0c1e570 (Oct 2026) built for AVX2",
                       CHECKED_2025 | DT(BF16) | DT(MXFP4), NULL},
    /* its only references (an outside arch set) are F32 models; its quantized kernels are taken
       to be 2025's, which the pinned 0c1e570's AVX-512 build contradicts on Q4_K */
    [VKF_GGML_AVX512_2026] = {"avx512-2026", 16, 256, 1, 0,
                              "llama.cpp dc02e1f (Jul 2026) built for AVX-512", DT(F32),
                              "no reference of that build holds another weight type, and "
                              "llama.cpp's AVX-512 paths of 2026 repack and sum Q4_K "
                              "differently from 2025's (0c1e570 built for AVX-512 differs by "
                              "up to 2.08 on Gemma 3 270M Q4_K_M)"},
    [VKF_GGML_AVX512_2025] = {"avx512-2025", 16, 32, 0, 0,
                              "llama.cpp c392e50 (Feb 2025) built for AVX-512", CHECKED_2025,
                              "that build predates llama.cpp's BF16 activations and MXFP4"},
};
#undef CHECKED_2025
#undef DT
#define N_BUILDS (int)(sizeof g_builds / sizeof g_builds[0])

const char *vkf_ggml_target_name(int target) {
    if (target <= 0 || target >= N_BUILDS) return NULL;
    return g_builds[target].name;
}

const char *vkf_ggml_target_build(int target) {
    if (target <= 0 || target >= N_BUILDS) return NULL;
    return g_builds[target].build;
}

vkf_status vkf_ggml_target_check(int target, vkf_dtype t) {
    if (target <= 0 || target >= N_BUILDS)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "ggml-activations target %d is not known",
                         target);
    const ggml_build *b = &g_builds[target];
    if ((unsigned)t < 32 && (b->checked >> t & 1u)) return VKF_OK;
    char list[256] = "";
    for (int d = 0; d < VKF_DTYPE_COUNT; d++)
        if (b->checked >> d & 1u)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
                     vkf_dtype_name((vkf_dtype)d));
    return vkf_error(VKF_ERROR_UNSUPPORTED,
                     "ggml-activations target %s (%s) does not reproduce %s weights: %s; it is "
                     "checked on %s",
                     b->name, b->build, vkf_dtype_name(t), b->others ? b->others : "unchecked",
                     list);
}

/* ------------------------------------------------------------------ access */

static const void *row_ptr(const vkf_tensor *t, int64_t r) {
    return (const char *)t->buf->data + t->offset + vkf_tensor_row_offset(t, r);
}

static float *row_f32(const vkf_tensor *t, int64_t r) {
    return (float *)((char *)t->buf->data + t->offset) + r * t->row_stride;
}

/* ------------------------------------------------------------------ vector sums
 *
 * ggml's float kernels keep vectors of 16 (AVX-512) or 8 (AVX2) lanes and add them up in fixed
 * trees. The scalar code below performs the same roundings in the same order (fmaf is
 * exact-then-round, like the vector instructions). */

/* _mm512_reduce_add_ps: halves added pairwise, 16 -> 8 -> 4 -> 2 -> 1. */
static float reduce16(const float v[16]) {
    float a[8], b[4];
    for (int i = 0; i < 8; i++)
        a[i] = v[i + 8] + v[i];
    for (int i = 0; i < 4; i++)
        b[i] = a[i + 4] + a[i];
    return (b[0] + b[2]) + (b[1] + b[3]);
}

/* An __m256's sum as tinyBLAS's hsum and the softmax take it: high half plus low half, then
 * movehl and movehdup: (a0 + a2) + (a1 + a3). */
static float hsum8(const float v[8]) {
    float a[4];
    for (int i = 0; i < 4; i++)
        a[i] = v[i + 4] + v[i];
    return (a[0] + a[2]) + (a[1] + a[3]);
}

/* The sum of one vector of b->lanes. */
static float vsum(const ggml_build *b, const float *v) {
    return b->lanes == 16 ? reduce16(v) : hsum8(v);
}

/* ggml_vec_dot_f32 / _f16's SIMD part: 4 vectors of fused sums over steps of 4 * lanes,
 * combined as GGML_F32_VEC_REDUCE does (x0 += x2, x1 += x3, x0 += x1, then the vector's sum:
 * _mm512_reduce_add_ps, or on AVX2 low + high half and two hadds). np: a multiple of the step. */
static float vec_dot_simd(const ggml_build *b, const float *x, size_t sx, const float *y, size_t sy,
                          int64_t np) {
    const int L = b->lanes;
    float s[4][16] = {{0}};
    for (int64_t i = 0; i < np; i += 4 * L)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < L; l++) {
                int64_t e = i + (int64_t)L * j + l;
                s[j][l] = fmaf(x[e * sx], y[e * sy], s[j][l]);
            }
    float v[16];
    for (int l = 0; l < L; l++)
        v[l] = (s[0][l] + s[2][l]) + (s[1][l] + s[3][l]);
    if (L == 16) return reduce16(v);
    float t[4];
    for (int i = 0; i < 4; i++)
        t[i] = v[i] + v[i + 4];
    return (t[0] + t[1]) + (t[2] + t[3]);
}

/* ggml_vec_dot_f32: the SIMD part, then the remaining elements one multiply and one add at a
 * time (not fused: fusing them flips roundings in llama-tiny, whose head_dim 32 leaves every
 * element of K.Q to this loop on AVX-512). */
static float vec_dot_f32(const ggml_build *b, const float *x, size_t sx, const float *y, size_t sy,
                         int64_t n) {
    int64_t np = n / (4 * b->lanes) * (4 * b->lanes);
    float sum = np ? vec_dot_simd(b, x, sx, y, sy, np) : 0.0f;
    for (int64_t i = np; i < n; i++)
        sum += x[i * sx] * y[i * sy];
    return sum;
}

/* tinyBLAS's dot product of two rows (k a multiple of the lanes): lane k % L accumulates fused
 * multiply-adds along k, then the vector's sum. */
static float tinyblas_dot(const ggml_build *b, const float *x, const float *y, int64_t k) {
    float lane[16] = {0};
    for (int64_t i = 0; i < k; i++)
        lane[i % b->lanes] = fmaf(x[i], y[i], lane[i % b->lanes]);
    return vsum(b, lane);
}

/* ------------------------------------------------------------------ matmul */

/* ggml_vec_dot_bf16's SIMD part (np a multiple of 32), its multiplies and adds fused as the
 * compiler fuses its mul / add intrinsics: on AVX2 four 8-lane sums over steps of 32, combined
 * as (c1 + c3) + (c2 + c4), then the vector's sum (hsum8's order); on AVX-512 two 16-lane sums,
 * each reduced and added to the double total. */
static double vec_dot_bf16_simd(const ggml_build *b, const float *x, const float *y, int64_t np) {
    const int L = b->lanes, nacc = 32 / L;
    float s[4][16] = {{0}};
    for (int64_t i = 0; i < np; i += 32)
        for (int j = 0; j < nacc; j++)
            for (int l = 0; l < L; l++) {
                int64_t e = i + (int64_t)L * j + l;
                s[j][l] = fmaf(x[e], y[e], s[j][l]);
            }
    if (L == 16) return (double)reduce16(s[0]) + (double)reduce16(s[1]);
    float v[8];
    for (int l = 0; l < 8; l++)
        v[l] = (s[0][l] + s[2][l]) + (s[1][l] + s[3][l]);
    return (double)hsum8(v);
}

/* F32, F16 and BF16 weights: tinyBLAS for batches (K a multiple of the lanes, the weight's row
 * count a multiple of 4: its tiles), else ggml_vec_dot_f32 / _f16 / _bf16 row by row (the F16
 * and BF16 ones sum what is left after the SIMD steps in double); F16 / BF16 activations
 * rounded to the weight's type first (ggml's vec_dot_type). */
static vkf_status ggml_matmul_float(const ggml_build *bd, const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *b = nd->src[2], *y = nd->dst;
    int64_t M = x->rows, N = w->rows, K = x->cols;
    int f16 = w->dtype == VKF_DTYPE_F16, bf16 = w->dtype == VKF_DTYPE_BF16;
    float *xa = malloc((size_t)(M * K) * sizeof *xa), *wr = malloc((size_t)K * sizeof *wr);
    if (!xa || !wr) {
        free(xa);
        free(wr);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "matmul %s: out of host memory", w->name);
    }
    for (int64_t m = 0; m < M; m++) {
        const float *xs = row_f32(x, m);
        for (int64_t k = 0; k < K; k++)
            xa[m * K + k] = f16    ? vkf_f16_to_f32(vkf_f32_to_f16(xs[k]))
                            : bf16 ? vkf_bf16_to_f32(vkf_f32_to_bf16(xs[k]))
                                   : xs[k];
    }
    for (int64_t n = 0; n < N; n++) {
        const void *wp = row_ptr(w, n);
        for (int64_t k = 0; k < K; k++)
            wr[k] = f16    ? vkf_f16_to_f32(((const uint16_t *)wp)[k])
                    : bf16 ? vkf_bf16_to_f32(((const uint16_t *)wp)[k])
                           : ((const float *)wp)[k];
        for (int64_t m = 0; m < M; m++) {
            const float *xr = xa + m * K;
            float acc;
            if (M >= 2 && K % bd->lanes == 0 && N % 4 == 0) {
                acc = tinyblas_dot(bd, wr, xr, K);
            } else if (f16 || bf16) {
                int64_t step = bf16 ? 32 : 4 * bd->lanes, np = K / step * step;
                double sum = !np    ? 0.0
                             : bf16 ? vec_dot_bf16_simd(bd, wr, xr, np)
                                    : (double)vec_dot_simd(bd, wr, 1, xr, 1, np);
                for (int64_t k = np; k < K; k++)
                    sum += (double)(wr[k] * xr[k]);
                acc = (float)sum;
            } else {
                acc = vec_dot_f32(bd, wr, 1, xr, 1, K);
            }
            row_f32(y, m)[n] = acc + (b ? row_f32(b, 0)[n] : 0.0f);
        }
    }
    free(xa);
    free(wr);
    return VKF_OK;
}

static vkf_status ggml_matmul(const ggml_build *bd, const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *b = nd->src[2], *y = nd->dst;
    int64_t M = x->rows, N = w->rows, K = x->cols;
    vkf_act_type at = vkf_act_type_of(w->dtype);
    size_t arb = vkf_act_row_bytes(at, K);
    char *act = malloc(arb ? arb : 1);
    if (!act) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "matmul %s: out of host memory", w->name);
    int flags = bd->dot_flags | (M == 1 ? VKF_DOT_SINGLE_ROW : 0) | (M >= 8 ? VKF_DOT_BATCH8 : 0) |
                (N % 8 == 0 ? VKF_DOT_REPACKED : 0);
    for (int64_t m = 0; m < M; m++) {
        vkf_act_quantize(at, row_f32(x, m), act, K);
        float *yr = row_f32(y, m);
        const int fm = flags | (m < M - M % 4 ? VKF_DOT_GEMM4 : 0);
        for (int64_t n = 0; n < N; n++)
            yr[n] =
                vkf_act_dot(w->dtype, row_ptr(w, n), act, K, fm) + (b ? row_f32(b, 0)[n] : 0.0f);
    }
    free(act);
    return VKF_OK;
}

/* ------------------------------------------------------------------ norms, activations */

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

/* LayerNorm as ggml_norm, then ggml_mul and ggml_add: the mean from a double sum; the
 * variance of the centred row summed in double, element by element, or (cvar builds) by
 * vectors of squares each summed as a vector first. */
static vkf_status ggml_layernorm(const ggml_build *bd, const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *b = nd->src[2], *y = nd->dst;
    int64_t n = x->cols, nv = bd->cvar ? n / bd->lanes * bd->lanes : 0;
    for (int64_t r = 0; r < x->rows; r++) {
        const float *xr = row_f32(x, r);
        float *yr = row_f32(y, r);
        double sum = 0.0, sum2 = 0.0;
        for (int64_t j = 0; j < n; j++)
            sum += (double)xr[j];
        const float mean = bd->cvar ? (float)sum / (float)n : (float)(sum / (double)n);
        for (int64_t j = 0; j < n; j++)
            yr[j] = xr[j] - mean;
        for (int64_t j = 0; j < nv; j += bd->lanes) {
            float sq[16];
            for (int l = 0; l < bd->lanes; l++)
                sq[l] = yr[j + l] * yr[j + l];
            sum2 += (double)vsum(bd, sq);
        }
        for (int64_t j = nv; j < n; j++)
            sum2 += (double)(yr[j] * yr[j]);
        const float variance = (float)(sum2 / (double)n);
        const float scale = 1.0f / sqrtf(variance + nd->p.norm.eps);
        for (int64_t j = 0; j < n; j++) {
            float v = yr[j] * scale;
            if (w) v *= row_f32(w, 0)[j];
            if (b) v += row_f32(b, 0)[j];
            yr[j] = v;
        }
    }
    return VKF_OK;
}

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ggml_v_expf, one lane (ARM's optimized routine): 2^n * p(b) with n = round(x / ln 2) and b
 * the reduced argument; the AVX-512 code scales with vscalefps (0 or inf beyond |n| > 192), the
 * AVX2 code builds 2^n from the exponent bits, with a polynomial one fused step shorter and a
 * two-factor scale beyond |n| > 126. */
static float v_expf(const ggml_build *bd, float x) {
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float p =
        fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f));
    if (bd->lanes == 16) {
        const float j = fmaf(p, u, fmaf(0x1.ffffecp-1f, b, 1.0f));
        if (fabsf(n) > 192) return n <= 0 ? 0.0f : INFINITY;
        return ldexpf(j, (int)n);
    }
    const float j = fmaf(p, u, 0x1.ffffecp-1f * b);
    const uint32_t e = f_bits(z) << 23;
    const float k = bits_f(e + f_bits(1.0f));
    if (!(fabsf(n) > 126)) return fmaf(j, k, k);
    const uint32_t g = n <= 0 ? 0x82000000u : 0u;
    const float s1 = bits_f(g + 0x7f000000u), s2 = bits_f(e - g);
    if (fabsf(n) > 192) return s1 * s1;
    return fmaf(s2, j, s2) * s1;
}

/* SiLU(a) * b: ggml_vec_swiglu_f32 (vectors of x / (1 + v_expf(-x)) times b, scalar expf for
 * the rest of the row; before the fused op, ggml_vec_silu_f32 then the multiply: the same). */
static float silu(const ggml_build *bd, float x, int vector) {
    return x / (1.0f + (vector ? v_expf(bd, -x) : expf(-x)));
}

/* ggml_gelu_f32 as GCC compiles it (1 + a x^2 contracted into one fused multiply-add). */
static float gelu_f32(float x) {
    const float t = tanhf(0.79788456080286535587989211986876f * x * fmaf(0.044715f * x, x, 1.0f));
    return 0.5f * x * (1.0f + t);
}

/* GELU through ggml's f16 table (GGML_GELU_FP16): f16(gelu(f16(x))) for -10 < x < 10. */
static float gelu_table(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return vkf_f16_to_f32(vkf_f32_to_f16(gelu_f32(vkf_f16_to_f32(vkf_f32_to_f16(x)))));
}

static vkf_status ggml_swiglu(const ggml_build *bd, const vkf_node *nd) {
    const vkf_tensor *a = nd->src[0], *b = nd->src[1], *y = nd->dst;
    int64_t n = a->cols, nv = n / bd->lanes * bd->lanes;
    for (int64_t r = 0; r < a->rows; r++) {
        const float *ar = row_f32(a, r), *br = row_f32(b, b->rows == 1 ? 0 : r);
        float *yr = row_f32(y, r);
        for (int64_t j = 0; j < n; j++) {
            if (nd->p.glu.oai) { /* ggml_compute_forward_swiglu_oai_f32: scalar expf */
                const float lim = nd->p.glu.limit;
                const float x = fminf(ar[j], lim), yv = fminf(fmaxf(br[j], -lim), lim);
                const float out_glu = x / (1.f + expf(nd->p.glu.alpha * (-x)));
                yr[j] = out_glu * (yv + 1.f);
                continue;
            }
            float s = nd->p.glu.gelu ? gelu_table(ar[j]) : silu(bd, ar[j], j < nv);
            yr[j] = s * br[j];
        }
    }
    return VKF_OK;
}

/* UNARY GELU (tanh form: gpt2) through the same table. */
static vkf_status ggml_gelu(const vkf_node *nd) {
    const vkf_tensor *a = nd->src[0], *y = nd->dst;
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t j = 0; j < a->cols; j++)
            row_f32(y, r)[j] = gelu_table(row_f32(a, r)[j]);
    return VKF_OK;
}

/* c tanh(x / c) as llama.cpp's graphs compute it: ggml_scale by 1 / c, ggml_tanh, scale by c. */
static float softcap(float x, float c) { return tanhf(x * (1.0f / c)) * c; }

/* SCALE with a soft-cap (gemma2's final logits). */
static vkf_status ggml_scale_cap(const vkf_node *nd) {
    const vkf_tensor *a = nd->src[0], *y = nd->dst;
    for (int64_t r = 0; r < a->rows; r++) {
        const float *ar = row_f32(a, r);
        float *yr = row_f32(y, r);
        for (int64_t j = 0; j < a->cols; j++)
            yr[j] = softcap(ar[j] * nd->p.scale.scale, nd->p.scale.softcap);
    }
    return VKF_OK;
}

/* The keys [*jmin, *jmax) query i of sequence b sees: its sequence's length when lengths are
 * given, up to its position when causal (serve's batched step: the sequence's own position,
 * from its length), from its sliding window's start. */
static void attn_keys(const vkf_attn_params *p, const vkf_tensor *lens, int b, int i,
                      int32_t n_past, int64_t n_keys, int64_t *jmin, int64_t *jmax) {
    const int32_t *len = lens ? (const int32_t *)row_f32(lens, 0) : NULL;
    int64_t klen = len && len[b] < n_keys ? len[b] : n_keys;
    int64_t qpos = len && p->len_pos ? (int64_t)len[b] - p->n_q + i
                   : p->kv_dyn       ? (int64_t)n_past + i
                   : p->causal       ? i + (int64_t)(p->n_kv - p->n_q)
                                     : i;
    *jmax = p->causal && qpos + 1 < klen ? qpos + 1 : klen;
    *jmin = p->window > 0 && qpos - p->window + 1 > 0 ? qpos - p->window + 1 : 0;
}

/* ------------------------------------------------------------------ attention
 *
 * llama.cpp's attention without flash attention, over the KV cache padded to kv_pad cells:
 * KQ per row with ggml_vec_dot_f32 (q scaled first where the graph does, vkf_attn_params
 * scale_q); the soft-cap; soft_max_ext: scale, mask, max, v_expf in vectors summed in double,
 * times (float)(1 / sum); KQV with tinyBLAS (lanes of fused multiply-adds along the keys) for
 * a batch, ggml_vec_dot_f32 over the padded length for one token. */
static vkf_status ggml_attention(const ggml_build *bd, const vkf_node *nd, int32_t n_past) {
    const vkf_attn_params *p = &nd->p.attn;
    const vkf_tensor *q = nd->src[0], *k = nd->src[1], *v = nd->src[2], *lens = nd->src[3];
    const float *sinks = nd->src[4] ? row_f32(nd->src[4], 0) : NULL;
    int hd = p->head_dim, group = p->n_head / p->n_kv_head, L = bd->lanes;
    int64_t n_keys = p->kv_dyn ? (int64_t)n_past + p->n_q : p->n_kv;
    if (n_keys > p->n_kv)
        return vkf_error(VKF_ERROR_CONTEXT_FULL, "attention: %lld keys exceed the cache of %d",
                         (long long)n_keys, p->n_kv);
    int64_t n_pad = (n_keys + bd->kv_pad - 1) / bd->kv_pad * bd->kv_pad;
    if (n_pad < bd->kv_pad) n_pad = bd->kv_pad;
    float *prob = calloc((size_t)n_pad, sizeof *prob), *vcol = calloc((size_t)n_pad, sizeof *vcol);
    if (!prob || !vcol) {
        free(prob);
        free(vcol);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "attention: out of host memory");
    }
    for (int b = 0; b < p->batch; b++) {
        for (int i = 0; i < p->n_q; i++) {
            int64_t jmin, jmax;
            attn_keys(p, lens, b, i, n_past, n_keys, &jmin, &jmax);
            for (int h = 0; h < p->n_head; h++) {
                int kvh = h / group;
                const float *qr = row_f32(q, (int64_t)b * p->n_q + i) + h * hd;
                float *out = row_f32(nd->dst, (int64_t)b * p->n_q + i) + h * hd;
                float qs[VKF_MAX_HEAD_DIM];
                if (p->scale_q) { /* ggml_scale of q; the scores are scaled by 1 */
                    for (int d = 0; d < hd; d++)
                        qs[d] = qr[d] * p->scale;
                    qr = qs;
                }
                float max = -INFINITY;
                for (int64_t j = 0; j < n_pad; j++)
                    prob[j] = -INFINITY; /* masked cells */
                for (int64_t j = jmin; j < jmax; j++) {
                    const float *kr = row_f32(k, (int64_t)b * p->kv_stride + j) + kvh * hd;
                    float sc = vec_dot_f32(bd, kr, 1, qr, 1, hd);
                    if (p->softcap > 0) sc = softcap(sc, p->softcap);
                    prob[j] = p->scale_q ? sc : sc * p->scale;
                    if (prob[j] > max) max = prob[j];
                }
                if (jmax <= jmin) {
                    for (int d = 0; d < hd; d++)
                        out[d] = 0.0f;
                    continue;
                }
                if (sinks) max = fmaxf(max, sinks[h]); /* ggml_soft_max_add_sinks: MAX */
                double sum = 0.0;
                for (int64_t c = 0; c < n_pad; c += L) {
                    for (int l = 0; l < L; l++)
                        prob[c + l] = v_expf(bd, prob[c + l] - max);
                    sum += (double)vsum(bd, prob + c);
                }
                if (sinks) sum += (double)expf(sinks[h] - max);
                const float inv = (float)(1.0 / sum);
                for (int64_t j = 0; j < n_pad; j++)
                    prob[j] *= inv;
                for (int d = 0; d < hd; d++) {
                    for (int64_t j = jmin; j < jmax; j++)
                        vcol[j] = row_f32(v, (int64_t)b * p->kv_stride + j)[kvh * hd + d];
                    if (p->n_q >= 2 && hd % 4 == 0) {
                        float lane[16] = {0};
                        for (int64_t j = jmin; j < jmax; j++)
                            lane[j % L] = fmaf(vcol[j], prob[j], lane[j % L]);
                        out[d] = vsum(bd, lane);
                    } else {
                        out[d] = vec_dot_f32(bd, vcol, 1, prob, 1, n_pad);
                    }
                }
            }
        }
    }
    free(prob);
    free(vcol);
    return VKF_OK;
}

/* ------------------------------------------------------------------ flash attention
 *
 * llama.cpp's attention over a cache of another type than F32 (its -ctk / -ctv: a quantized V
 * needs flash attention, and tools/refs/make_llama_kv.py turns it on for every type):
 * ggml_compute_forward_flash_attn_ext_f16_one_chunk of ggml-cpu/ops.cpp, one query row and head
 * at a time. An F32 K or V beside one of another type is cast to F16 first (llama-graph.cpp does
 * so before ggml_flash_attn_ext). q is converted to the K type's vec_dot type (F16 / BF16
 * rounded, Q8_0 or Q8_1 for the block types, their x86 quantizers) and each key's score is that
 * type's vec_dot (the single-row kernels); score * scale (scale / softcap, then softcap * tanhf,
 * with a soft-cap); masked keys skipped; an online softmax in float with scalar expf: a new
 * maximum rescales the sums by expf(Mold - M), else the key weighs expf(s - M); the values are
 * summed with ggml_vec_mad (fused multiply-adds) in f32, or in f16 for an F16 V (each step
 * rounded to f16, the rescales too); the quantized / BF16 V rows decoded by the type's to_float;
 * the end times 1 / S. For an F16 K and V, llama.cpp takes its tiled kernel from 64 query rows
 * of a pass and its split-KV kernel for one row over 512 cells and more: not reproduced here
 * (the other types always take this one). */

/* ggml_vec_dot_bf16: AVX2 four vectors of 8 (mul, add) over steps of 32, summed
 * ((c1 + c3) + (c2 + c4)) and as hsum8; AVX-512 two vectors of 16 summed apart in double; the
 * rest in double. */
static float vec_dot_bf16(const ggml_build *bd, const float *x, const float *y, int64_t n) {
    double sum = 0.0;
    int64_t i = 0;
    if (bd->lanes == 16) {
        float c[2][16] = {{0}};
        for (; i + 32 <= n; i += 32)
            for (int v = 0; v < 2; v++)
                for (int l = 0; l < 16; l++)
                    c[v][l] = x[i + 16 * v + l] * y[i + 16 * v + l] + c[v][l];
        sum += (double)reduce16(c[0]);
        sum += (double)reduce16(c[1]);
    } else {
        float c[4][8] = {{0}}, t[8];
        for (; i + 32 <= n; i += 32)
            for (int v = 0; v < 4; v++)
                for (int l = 0; l < 8; l++)
                    c[v][l] = x[i + 8 * v + l] * y[i + 8 * v + l] + c[v][l];
        for (int l = 0; l < 8; l++)
            t[l] = (c[0][l] + c[2][l]) + (c[1][l] + c[3][l]);
        sum += (double)hsum8(t);
    }
    for (; i < n; i++)
        sum += (double)(x[i] * y[i]);
    return (float)sum;
}

/* ggml_vec_mad_f32 (y += x v): fused over whole steps of 4 vectors, then a multiply and an add. */
static void vec_mad_f32(const ggml_build *bd, float *y, const float *x, float v, int64_t n) {
    int64_t np = n / (4 * bd->lanes) * (4 * bd->lanes);
    for (int64_t i = 0; i < np; i++)
        y[i] = fmaf(x[i], v, y[i]);
    for (int64_t i = np; i < n; i++)
        y[i] += x[i] * v;
}

static vkf_status ggml_flash_attention(const ggml_build *bd, const vkf_node *nd, int32_t n_past) {
    const vkf_attn_params *p = &nd->p.attn;
    const vkf_tensor *q = nd->src[0], *k = nd->src[1], *v = nd->src[2], *lens = nd->src[3];
    const int hd = p->head_dim, group = p->n_head / p->n_kv_head;
    const vkf_dtype kt = k->dtype, vt = v->dtype;
    int64_t n_keys = p->kv_dyn ? (int64_t)n_past + p->n_q : p->n_kv;
    if (n_keys > p->n_kv)
        return vkf_error(VKF_ERROR_CONTEXT_FULL, "attention: %lld keys exceed the cache of %d",
                         (long long)n_keys, p->n_kv);
    const int blocks = kt != VKF_DTYPE_F32 && kt != VKF_DTYPE_F16 && kt != VKF_DTYPE_BF16;
    const vkf_act_type at = blocks ? vkf_act_type_of(kt) : VKF_ACT_F32;
    const int dflags = bd->dot_flags | VKF_DOT_SINGLE_ROW;
    float scale = p->scale_q ? 1.0f : p->scale;
    if (p->softcap > 0) scale /= p->softcap;
    char *qa = malloc(blocks ? vkf_act_row_bytes(at, hd) : 1);
    if (!qa) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "attention: out of host memory");
    for (int b = 0; b < p->batch; b++) {
        for (int i = 0; i < p->n_q; i++) {
            int64_t jmin, jmax;
            attn_keys(p, lens, b, i, n_past, n_keys, &jmin, &jmax);
            for (int h = 0; h < p->n_head; h++) {
                const int64_t c0 = (int64_t)(h / group) * hd; /* the KV head's first column */
                const float *qr = row_f32(q, (int64_t)b * p->n_q + i) + h * hd;
                float *out = row_f32(nd->dst, (int64_t)b * p->n_q + i) + h * hd;
                float qf[VKF_MAX_HEAD_DIM], kf[VKF_MAX_HEAD_DIM], vf[VKF_MAX_HEAD_DIM];
                float acc[VKF_MAX_HEAD_DIM];
                uint16_t acc16[VKF_MAX_HEAD_DIM];
                for (int d = 0; d < hd; d++) { /* ggml_scale of q where the graph has it */
                    qf[d] = p->scale_q ? qr[d] * p->scale : qr[d];
                    if (kt == VKF_DTYPE_F16 || kt == VKF_DTYPE_F32)
                        qf[d] = vkf_f16_to_f32(vkf_f32_to_f16(qf[d]));
                    if (kt == VKF_DTYPE_BF16) qf[d] = vkf_bf16_to_f32(vkf_f32_to_bf16(qf[d]));
                    acc[d] = 0.0f;
                    acc16[d] = 0;
                }
                if (blocks) vkf_act_quantize(at, qf, qa, hd);
                float S = 0.0f, M = -INFINITY;
                for (int64_t j = jmin; j < jmax; j++) {
                    const int64_t r = (int64_t)b * p->kv_stride + j;
                    const char *kr = (const char *)row_ptr(k, r) + vkf_dtype_row_bytes(kt, c0);
                    const char *vr = (const char *)row_ptr(v, r) + vkf_dtype_row_bytes(vt, c0);
                    float s;
                    if (blocks) {
                        s = vkf_act_dot(kt, kr, qa, hd, dflags);
                    } else {
                        if (kt == VKF_DTYPE_F32) /* ggml_cast to F16 */
                            for (int d = 0; d < hd; d++)
                                kf[d] = vkf_f16_to_f32(vkf_f32_to_f16(((const float *)kr)[d]));
                        else
                            vkf_dequantize_row(kt, kr, kf, hd);
                        if (kt == VKF_DTYPE_BF16) {
                            s = vec_dot_bf16(bd, kf, qf, hd);
                        } else { /* ggml_vec_dot_f16: SIMD steps, the rest in double */
                            int64_t np = hd / (4 * bd->lanes) * (4 * bd->lanes);
                            double sum = np ? (double)vec_dot_simd(bd, kf, 1, qf, 1, np) : 0.0;
                            for (int64_t d = np; d < hd; d++)
                                sum += (double)(kf[d] * qf[d]);
                            s = (float)sum;
                        }
                    }
                    s = s * scale;
                    if (p->softcap > 0) s = p->softcap * tanhf(s);
                    const float Mold = M;
                    const int newmax = s > M;
                    float ms = 1.0f, vs = 1.0f;
                    if (newmax) {
                        M = s;
                        ms = expf(Mold - M);
                    } else {
                        vs = expf(s - M);
                    }
                    if (vt == VKF_DTYPE_F16 || vt == VKF_DTYPE_F32) { /* ggml_vec_scale_f16,
                                                                         ggml_vec_mad_f16 */
                        const uint16_t *v16 = (const uint16_t *)vr;
                        int64_t np = hd / (4 * bd->lanes) * (4 * bd->lanes);
                        for (int d = 0; d < hd; d++) {
                            float y = vkf_f16_to_f32(acc16[d]);
                            if (newmax) y = vkf_f16_to_f32(vkf_f32_to_f16(y * ms));
                            float x = vt == VKF_DTYPE_F32 /* ggml_cast to F16 */
                                          ? vkf_f16_to_f32(vkf_f32_to_f16(((const float *)vr)[d]))
                                          : vkf_f16_to_f32(v16[d]);
                            y = d < np ? fmaf(x, vs, y) : y + x * vs;
                            acc16[d] = vkf_f32_to_f16(y);
                        }
                    } else {
                        if (newmax) /* ggml_vec_scale_f32 */
                            for (int d = 0; d < hd; d++)
                                acc[d] *= ms;
                        vkf_dequantize_row(vt, vr, vf, hd);
                        vec_mad_f32(bd, acc, vf, vs, hd);
                    }
                    S = fmaf(S, ms, vs);
                }
                if (vt == VKF_DTYPE_F16 || vt == VKF_DTYPE_F32)
                    for (int d = 0; d < hd; d++)
                        acc[d] = vkf_f16_to_f32(acc16[d]);
                const float inv = S == 0.0f ? 0.0f : 1.0f / S;
                for (int d = 0; d < hd; d++)
                    out[d] = acc[d] * inv;
            }
        }
    }
    free(qa);
    return VKF_OK;
}

/* COPY_ROWS into a Q8_0 cache as llama.cpp's set_rows writes it: the CPU's from_float of Q8_0,
 * its x86 quantizer (round half to even: the activation quantizer), not the reference's
 * roundf; the other types as the float path writes them (their from_float is the reference). */
static vkf_status ggml_copy_rows(const vkf_node *nd, int32_t n_past) {
    const vkf_tensor *x = nd->src[0], *y = nd->dst;
    if (y->dtype != VKF_DTYPE_Q8_0) return vkf_cpu_op(nd, n_past);
    int64_t r0 = nd->p.copy.dst_row0 + (nd->p.copy.dyn ? n_past : 0);
    if (nd->src[1]) r0 += ((const int32_t *)row_f32(nd->src[1], 0))[0];
    if (r0 < 0 || r0 + x->rows > y->rows)
        return vkf_error(VKF_ERROR_CONTEXT_FULL,
                         "copy into %s: rows %lld..%lld exceed its %lld rows", y->name,
                         (long long)r0, (long long)(r0 + x->rows), (long long)y->rows);
    for (int64_t r = 0; r < x->rows; r++)
        vkf_act_quantize(VKF_ACT_Q8_0, row_f32(x, r), (void *)row_ptr(y, r0 + r), x->cols);
    return VKF_OK;
}

/* ------------------------------------------------------------------ rope */

/* RoPE as ggml_compute_forward_rope_f32 with the table llama.cpp's cache holds (the model
 * builds it ggml's way in this mode: model/arch.c): x0 * c - x1 * s, x0 * s + x1 * c with the
 * first product fused into the sum (GCC's contraction of ggml's expressions; the other orders
 * flip roundings in 4 of 22 llama-kq cases). */
static vkf_status ggml_rope(const vkf_node *nd, int32_t n_past) {
    const vkf_tensor *x = nd->src[0], *table = nd->src[1], *y = nd->dst;
    int hd = nd->p.rope.head_dim, n_rot = nd->p.rope.n_rot, half = n_rot / 2;
    float tmp[VKF_MAX_HEAD_DIM]; /* one head at a time, so y may alias x */
    for (int64_t r = 0; r < x->rows; r++) {
        int64_t pos = nd->p.rope.pos0 + (nd->p.rope.dyn ? n_past : 0) + r % nd->p.rope.seq_len;
        if (pos < 0 || pos >= table->rows)
            return vkf_error(VKF_ERROR_CONTEXT_FULL,
                             "position %lld is outside the rope table %s (%lld rows)",
                             (long long)pos, table->name, (long long)table->rows);
        const float *xr = row_f32(x, r), *cs = row_f32(table, pos);
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

/* ------------------------------------------------------------------ mixture of experts
 *
 * llama.cpp's build_moe_ffn on its CPU backend: the router's soft_max as ggml_soft_max; the
 * chosen weights through get_rows, soft_max (gpt-oss), sum_rows in double, clamp and div (the
 * renormalisation) and scale; the experts through ggml_compute_forward_mul_mat_id, which takes
 * every (token, expert) row with the weight type's vec_dot (never tinyBLAS); the weighted sum
 * as ggml_mul, then ggml_add of expert 0 + 1, + 2, ... (MOE_SUM is that order already). */

/* ggml_soft_max of one row in place: the max, v_expf in vectors and expf for the tail, summed
 * in double, times (float)(1 / sum). */
static void ggml_softmax_row(const ggml_build *bd, float *y, const float *x, int64_t n) {
    float max = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        max = fmaxf(max, x[j]);
    const int L = bd->lanes;
    int64_t nv = n / L * L;
    double sum = 0.0;
    for (int64_t c = 0; c < nv; c += L) {
        for (int l = 0; l < L; l++)
            y[c + l] = v_expf(bd, x[c + l] - max);
        sum += (double)vsum(bd, y + c);
    }
    for (int64_t j = nv; j < n; j++) {
        y[j] = expf(x[j] - max);
        sum += (double)y[j];
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t j = 0; j < n; j++)
        y[j] *= inv;
}

/* SOFTMAX without a mask and scale 1 (the router's probabilities); else the plain reference */
static vkf_status ggml_softmax(const ggml_build *bd, const vkf_node *nd, int32_t n_past) {
    const vkf_tensor *x = nd->src[0], *y = nd->dst;
    if (nd->src[1] || (nd->p.scale.scale != 0.0f && nd->p.scale.scale != 1.0f))
        return vkf_cpu_op(nd, n_past);
    for (int64_t r = 0; r < x->rows; r++)
        ggml_softmax_row(bd, row_f32(y, r), row_f32(x, r), x->cols);
    return VKF_OK;
}

static vkf_status ggml_moe_weights(const ggml_build *bd, const vkf_node *nd, int32_t n_past) {
    if (!nd->p.moe.softmax_w) return vkf_cpu_op(nd, n_past); /* gather, double sum, div: ggml's */
    vkf_node g = *nd;                                        /* the gathered weights first */
    g.p.moe.softmax_w = g.p.moe.norm = 0;
    g.p.moe.scale = 0.0f;
    VKF_TRY(vkf_cpu_op(&g, n_past));
    const vkf_tensor *y = nd->dst;
    const float scale = nd->p.moe.scale;
    for (int64_t t = 0; t < y->rows; t++) {
        float *w = row_f32(y, t);
        ggml_softmax_row(bd, w, w, y->cols);
        if (nd->p.moe.norm) { /* ggml_sum_rows (double), ggml_clamp, ggml_div */
            double sum = 0.0;
            for (int64_t i = 0; i < y->cols; i++)
                sum += (double)w[i];
            const float den = fmaxf((float)sum, 6.103515625e-5f);
            for (int64_t i = 0; i < y->cols; i++)
                w[i] /= den;
        }
        if (scale != 0.0f && scale != 1.0f)
            for (int64_t i = 0; i < y->cols; i++)
                w[i] *= scale;
    }
    return VKF_OK;
}

/* The expert matmuls: vec_dot per (token, expert) row and weight row. F32 weights:
 * ggml_vec_dot_f32; F16: the activation rounded to f16, ggml_vec_dot_f16 (SIMD steps, then the
 * rest in double); quantized: the activation quantized to the type's activation type, its
 * vec_dot (the K-quants' tiled kernel when 8 rows or more go to one expert, as llama.cpp's
 * per-expert choice), or for the types llama.cpp repacks (Q4_0, and Q4_K / IQ4_NL on AVX2;
 * experts of a multiple of 8 rows) its repacked gemv, row by row (repack.cpp's
 * forward_mul_mat_id has no gemm). */
static vkf_status ggml_mul_mat_id(const ggml_build *bd, const vkf_node *nd) {
    const vkf_tensor *x = nd->src[0], *w = nd->src[1], *ids = nd->src[2], *y = nd->dst;
    const int32_t E = nd->p.moe.n_expert;
    int64_t T = ids->rows, k = ids->cols, N = w->rows / E, K = x->cols;
    int per_pair = x->rows != T;
    int fl = w->dtype == VKF_DTYPE_F32, f16 = w->dtype == VKF_DTYPE_F16;
    vkf_act_type at = vkf_act_type_of(w->dtype);
    size_t arb = fl || f16 ? (size_t)K * sizeof(float) : vkf_act_row_bytes(at, K);
    char *act = malloc(arb ? arb : 1);
    float *wr = malloc((size_t)K * sizeof *wr);
    int64_t *count = calloc((size_t)E, sizeof *count);
    if (!act || !wr || !count) {
        free(act);
        free(wr);
        free(count);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "mul_mat_id %s: out of host memory", w->name);
    }
    vkf_status s = VKF_OK;
    for (int64_t t = 0; t < T && s == VKF_OK; t++)
        for (int64_t i = 0; i < k; i++) {
            int32_t e = ((const int32_t *)row_f32(ids, t))[i];
            if (e < 0 || e >= E) {
                s = vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                              "mul_mat_id %s: expert id %d of token %lld outside [0, %d)", w->name,
                              e, (long long)t, E);
                break;
            }
            count[e]++;
        }
    for (int64_t t = 0; t < T && s == VKF_OK; t++)
        for (int64_t i = 0; i < k; i++) {
            int32_t e = ((const int32_t *)row_f32(ids, t))[i];
            const float *xs = row_f32(x, per_pair ? t * k + i : t);
            float *xa = (float *)act;
            if (fl || f16)
                for (int64_t j = 0; j < K; j++)
                    xa[j] = f16 ? vkf_f16_to_f32(vkf_f32_to_f16(xs[j])) : xs[j];
            else
                vkf_act_quantize(at, xs, act, K);
            /* repacked experts (N a multiple of 8): gemv row by row, never the 4-row gemm */
            const int flags = bd->dot_flags | (N % 8 == 0 ? VKF_DOT_REPACKED : 0) |
                              (count[e] >= 8 ? VKF_DOT_BATCH8 : VKF_DOT_SINGLE_ROW);
            float *yr = row_f32(y, t * k + i);
            for (int64_t n = 0; n < N; n++) {
                const void *wp = row_ptr(w, (int64_t)e * N + n);
                if (fl) {
                    yr[n] = vec_dot_f32(bd, (const float *)wp, 1, xa, 1, K);
                } else if (f16) {
                    for (int64_t j = 0; j < K; j++)
                        wr[j] = vkf_f16_to_f32(((const uint16_t *)wp)[j]);
                    int64_t np = K / (4 * bd->lanes) * (4 * bd->lanes);
                    double sum = np ? (double)vec_dot_simd(bd, wr, 1, xa, 1, np) : 0.0;
                    for (int64_t j = np; j < K; j++)
                        sum += (double)(wr[j] * xa[j]);
                    yr[n] = (float)sum;
                } else {
                    yr[n] = vkf_act_dot(w->dtype, wp, act, K, flags);
                }
            }
        }
    free(act);
    free(wr);
    free(count);
    return s;
}

/* UNARY sigmoid: 1 / (1 + expf(-x)) (ggml_sigmoid), or silu(x) / x where llama.cpp's graph
 * computes it so (ggml_vec_silu_f32: v_expf in vectors, expf for the tail; then ggml_div). */
static vkf_status ggml_sigmoid(const ggml_build *bd, const vkf_node *nd) {
    const vkf_tensor *a = nd->src[0], *y = nd->dst;
    int64_t n = a->cols, nv = n / bd->lanes * bd->lanes;
    for (int64_t r = 0; r < a->rows; r++) {
        const float *ar = row_f32(a, r);
        float *yr = row_f32(y, r);
        for (int64_t j = 0; j < n; j++)
            yr[j] = nd->p.unary.silu_div ? silu(bd, ar[j], j < nv) / ar[j]
                                         : 1.0f / (1.0f + expf(-ar[j]));
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ dispatch */

vkf_status vkf_cpu_ggml_op(const vkf_node *n, int32_t n_past, int target) {
    const ggml_build *bd = &g_builds[vkf_ggml_target_name(target) ? target : VKF_GGML_AVX2];
    switch (n->op) {
    case VKF_OP_ROPE: return ggml_rope(n, n_past);
    case VKF_OP_SWIGLU: return ggml_swiglu(bd, n);
    case VKF_OP_ATTENTION:
        if (n->src[1]->dtype != VKF_DTYPE_F32 || n->src[2]->dtype != VKF_DTYPE_F32)
            return ggml_flash_attention(bd, n, n_past);
        return ggml_attention(bd, n, n_past);
    case VKF_OP_COPY_ROWS: return ggml_copy_rows(n, n_past);
    case VKF_OP_RMSNORM: return ggml_rmsnorm(n);
    case VKF_OP_LAYERNORM: return ggml_layernorm(bd, n);
    case VKF_OP_UNARY:
        if (n->p.unary.act == VKF_UNARY_GELU_TANH) return ggml_gelu(n);
        if (n->p.unary.act == VKF_UNARY_SIGMOID) return ggml_sigmoid(bd, n);
        break;
    case VKF_OP_SOFTMAX: return ggml_softmax(bd, n, n_past);
    case VKF_OP_MOE_WEIGHTS: return ggml_moe_weights(bd, n, n_past);
    case VKF_OP_MUL_MAT_ID: return ggml_mul_mat_id(bd, n);
    case VKF_OP_MATMUL:
        if (n->src[1]->dtype == VKF_DTYPE_F32 || n->src[1]->dtype == VKF_DTYPE_F16 ||
            n->src[1]->dtype == VKF_DTYPE_BF16)
            return ggml_matmul_float(bd, n);
        return ggml_matmul(bd, n);
    case VKF_OP_SCALE:
        if (n->p.scale.softcap > 0) return ggml_scale_cap(n);
        break;
    default: break;
    }
    return vkf_cpu_op(n, n_past);
}
