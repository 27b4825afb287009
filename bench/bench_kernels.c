/* Kernel benchmark (`vkformer bench --kernels`): matmul over decode (M = 1..8) and prefill
 * shapes for every weight dtype (src/core/wtype.c; the weight-bound ones also as GB/s of
 * weights read and % of the copy probe), attention over sequence lengths (decode and prefill),
 * norms and softmax. Each figure is set against a peak measured on the same device in the same run
 * (vk_probe.c): compute-bound kernels against the fp32 FMA probe, bandwidth-bound ones against
 * the best read-bandwidth probe.
 *
 * Method: one graph holds the op repeated R times (each repetition rewrites the same output,
 * so consecutive dispatches are separated by a real hazard barrier, as in a model); R is chosen
 * so one submission takes ~25 ms (quick: ~8 ms), which amortizes the submission. The graph is
 * recorded once, run once untimed, then timed `reps` times; the median per-op time is reported.
 * The machine's load average is printed with the results: on a shared machine it matters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cjson/cJSON.h>

#include "backend/vulkan/vk_backend.h"
#include "bench.h"
#include "core/dtype.h"
#include "core/error.h"
#include "frontend/args.h"
#include "graph/backend.h"
#include "graph/graph.h"

/* ---------------------------------------------------------------- cases */

typedef enum { KC_MATMUL, KC_ATTN, KC_RMSNORM, KC_LAYERNORM, KC_SOFTMAX } vkf_kc_kind;

typedef struct vkf_kcase {
    vkf_kc_kind kind;
    int64_t M, N, K; /* matmul: a [M,K], w [N,K]; norms/softmax: rows M, cols K */
    vkf_dtype wt;
    int n_q, n_kv, n_head, n_kv_head, hd, causal;
    vkf_dtype kv; /* attention: the K/V cache's type (F32 or F16) */
} vkf_kcase;

typedef struct vkf_kresult {
    char name[32];
    char shape[64];
    char dtype[8];
    double ms;     /* median time per op */
    double cpu_ms; /* process CPU time per op (user + system, all threads): on a CPU device this is
                      the work done, which a loaded machine does not inflate */
    double gflops; /* 0 when not meaningful */
    double gbs;    /* bytes the op must move / time */
    double wgbs;   /* matmul: weight bytes / time (0 otherwise) */
    double pct_copy; /* wgbs as % of the copy probe (read + write bytes per second) */
    double flop, bytes;
    double pct_peak;   /* of the FMA peak (compute) or the read peak (memory) */
    const char *bound; /* "compute" or "memory": which peak pct_peak uses */
    int reps, per_graph;
} vkf_kresult;

/* ---------------------------------------------------------------- data */

static uint64_t g_krng = 88172645463325252ull;
static float vkf_kb_randf(void) {
    g_krng ^= g_krng << 13;
    g_krng ^= g_krng >> 7;
    g_krng ^= g_krng << 17;
    return (float)((g_krng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* Allocates t on be filled with uniform(-scale, scale) values in t's dtype; with copies > 1,
 * t's rows repeated that many times (t->rows grows to rows * copies: see vkf_kb_cold). */
static vkf_status vkf_kb_tensor_n(vkf_backend *be, vkf_tensor *t, vkf_buffer_usage usage,
                                  float scale, int copies) {
    size_t rb = vkf_dtype_row_bytes(t->dtype, t->cols);
    unsigned char *data = malloc(rb * (size_t)t->rows * (size_t)copies);
    float *row = malloc(sizeof *row * (size_t)t->cols);
    if (!data || !row) {
        free(data);
        free(row);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "bench tensor %s", t->name);
    }
    const vkf_wtype *wt = vkf_wtype_of(t->dtype);
    for (int64_t r = 0; r < t->rows; r++) {
        unsigned char *dst = data + rb * (size_t)r;
        if (wt && wt->block_elems > 1) { /* random blocks, scale fields set to `scale` / 64 */
            uint16_t h = vkf_f32_to_f16(scale / 64.0f);
            for (size_t i = 0; i < rb; i++)
                dst[i] = (unsigned char)(vkf_kb_randf() * 127.0f + 128.0f);
            for (size_t b = 0; b < rb / wt->block_bytes; b++)
                for (int f = 0; f < wt->n_f16; f++)
                    memcpy(dst + b * wt->block_bytes + wt->f16_off[f], &h, 2);
            continue;
        }
        for (int64_t c = 0; c < t->cols; c++)
            row[c] = vkf_kb_randf() * scale;
        if (t->dtype == VKF_DTYPE_F32)
            memcpy(dst, row, rb);
        else
            vkf_quantize_row(t->dtype, row, dst, t->cols);
    }
    for (int c = 1; c < copies; c++)
        memcpy(data + rb * (size_t)t->rows * (size_t)c, data, rb * (size_t)t->rows);
    t->rows *= copies;
    vkf_status st = vkf_tensor_alloc(be, t, usage, data);
    free(data);
    free(row);
    return st;
}

static vkf_status vkf_kb_tensor(vkf_backend *be, vkf_tensor *t, vkf_buffer_usage usage,
                                float scale) {
    return vkf_kb_tensor_n(be, t, usage, scale, 1);
}

/* Decode-shaped matmuls (M <= 8) and attention read their weights / K and V once per op, as a
 * model's decode step does, where they come from memory: every layer's are different and a
 * step reads more than any cache holds. A benchmark repeating the op on one copy would read
 * them from the last-level cache instead, and rank kernels wrongly: on lavapipe a decode
 * attention layout 36% faster than the default on cache-hot K/V (2048 keys, heads of 128) was
 * 17% slower in qwen3-0.6b's decode (bench/RESULTS.md). So those operands get
 * enough copies to span VKF_KB_COLD_BYTES, and the graph's repetitions take them in turn. */
/* past the last-level caches of the devices measured so far: the H100's 50 MiB and H200's
 * 60 MiB L2, this VM's 32 MiB L3 */
#define VKF_KB_COLD_BYTES (192ull << 20)
/* the most repetitions a graph has (vkf_kb_run) */
#define VKF_KB_COPIES_MAX 64
static int vkf_kb_copies(size_t bytes) {
    uint64_t n = bytes ? (VKF_KB_COLD_BYTES + bytes - 1) / bytes : 1;
    return n > VKF_KB_COPIES_MAX ? VKF_KB_COPIES_MAX : (int)(n < 1 ? 1 : n);
}

static void vkf_kb_free(vkf_backend *be, vkf_tensor *t) {
    if (t->buf) be->i->buffer_free(be, t->buf);
    t->buf = NULL;
}

/* ---------------------------------------------------------------- one case */

typedef struct vkf_kb_ctx {
    vkf_backend *be;
    vkf_tensor t[6];
    int copies;                            /* of t[2] (and t[3] for attention), >= 1 */
    vkf_tensor view[2][VKF_KB_COPIES_MAX]; /* [operand][copy]: rows of one copy each */
} vkf_kb_ctx;

/* the copies' views of t[2] (w, or k) and, for attention, t[3] (v) */
static void vkf_kb_views(vkf_kb_ctx *k, int n_ops) {
    for (int o = 0; o < n_ops; o++) {
        const vkf_tensor *t = &k->t[2 + o];
        int64_t rows = t->rows / k->copies;
        for (int c = 0; c < k->copies; c++)
            k->view[o][c] = vkf_tensor_view(t, c * rows, rows, 0, t->cols);
    }
}

static vkf_status vkf_kb_build(vkf_kb_ctx *k, const vkf_kcase *c, int R, vkf_graph **out) {
    vkf_graph *g;
    VKF_TRY(vkf_graph_create(k->be, "bench", &g));
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    vkf_status st = VKF_OK;
    for (int i = 0; i < R && st == VKF_OK; i++) {
        vkf_tensor *w = &k->view[0][i % k->copies], *v = &k->view[1][i % k->copies];
        switch (c->kind) {
        case KC_MATMUL:
            st = vkf_graph_add(g, VKF_OP_MATMUL, &k->t[0], &k->t[1], w, NULL, NULL, &p);
            break;
        case KC_ATTN:
            p.attn = (vkf_attn_params){.batch = 1,
                                       .n_q = c->n_q,
                                       .n_kv = c->n_kv,
                                       .kv_stride = c->n_kv,
                                       .n_head = c->n_head,
                                       .n_kv_head = c->n_kv_head,
                                       .head_dim = c->hd,
                                       .causal = c->causal,
                                       .kv_dyn = 0,
                                       .scale = 1.0f / sqrtf((float)c->hd)};
            st = vkf_graph_add(g, VKF_OP_ATTENTION, &k->t[0], &k->t[1], w, v, NULL, &p);
            break;
        case KC_RMSNORM:
        case KC_LAYERNORM:
            p.norm.eps = 1e-5f;
            st = vkf_graph_add(g, c->kind == KC_RMSNORM ? VKF_OP_RMSNORM : VKF_OP_LAYERNORM,
                               &k->t[0], &k->t[1], &k->t[2],
                               c->kind == KC_LAYERNORM ? &k->t[3] : NULL, NULL, &p);
            break;
        case KC_SOFTMAX:
            p.scale.scale = 1.0f;
            st = vkf_graph_add(g, VKF_OP_SOFTMAX, &k->t[0], &k->t[1], NULL, NULL, NULL, &p);
            break;
        }
    }
    if (st == VKF_OK) st = vkf_graph_plan(g);
    if (st != VKF_OK) {
        vkf_graph_free(g);
        return st;
    }
    *out = g;
    return VKF_OK;
}

static vkf_status vkf_kb_alloc(vkf_kb_ctx *k, const vkf_kcase *c) {
    memset(k->t, 0, sizeof k->t);
    k->copies = 1;
    switch (c->kind) {
    case KC_MATMUL:
        k->t[0] = vkf_tensor_make(VKF_DTYPE_F32, c->M, c->N, "dst");
        k->t[1] = vkf_tensor_make(VKF_DTYPE_F32, c->M, c->K, "a");
        k->t[2] = vkf_tensor_make(c->wt, c->N, c->K, "w");
        if (c->M <= 8) k->copies = vkf_kb_copies(vkf_dtype_row_bytes(c->wt, c->K) * (size_t)c->N);
        VKF_TRY(vkf_kb_tensor(k->be, &k->t[1], VKF_BUFFER_ACTIVATIONS, 1.0f));
        VKF_TRY(vkf_kb_tensor_n(k->be, &k->t[2], VKF_BUFFER_WEIGHTS, 0.05f, k->copies));
        vkf_kb_views(k, 1);
        return vkf_tensor_alloc(k->be, &k->t[0], VKF_BUFFER_ACTIVATIONS, NULL);
    case KC_ATTN:
        k->t[0] = vkf_tensor_make(VKF_DTYPE_F32, c->n_q, (int64_t)c->n_head * c->hd, "out");
        k->t[1] = vkf_tensor_make(VKF_DTYPE_F32, c->n_q, (int64_t)c->n_head * c->hd, "q");
        k->t[2] = vkf_tensor_make(c->kv, c->n_kv, (int64_t)c->n_kv_head * c->hd, "k");
        k->t[3] = vkf_tensor_make(c->kv, c->n_kv, (int64_t)c->n_kv_head * c->hd, "v");
        if (c->n_q == 1)
            k->copies =
                vkf_kb_copies(2 * vkf_dtype_row_bytes(c->kv, k->t[2].cols) * (size_t)c->n_kv);
        VKF_TRY(vkf_kb_tensor(k->be, &k->t[1], VKF_BUFFER_ACTIVATIONS, 1.0f));
        for (int i = 2; i < 4; i++)
            VKF_TRY(vkf_kb_tensor_n(k->be, &k->t[i], VKF_BUFFER_ACTIVATIONS, 1.0f, k->copies));
        vkf_kb_views(k, 2);
        return vkf_tensor_alloc(k->be, &k->t[0], VKF_BUFFER_ACTIVATIONS, NULL);
    default:
        k->t[0] = vkf_tensor_make(VKF_DTYPE_F32, c->M, c->K, "dst");
        k->t[1] = vkf_tensor_make(VKF_DTYPE_F32, c->M, c->K, "x");
        VKF_TRY(vkf_kb_tensor(k->be, &k->t[1], VKF_BUFFER_ACTIVATIONS, 2.0f));
        if (c->kind != KC_SOFTMAX) {
            k->t[2] = vkf_tensor_make(VKF_DTYPE_F32, 1, c->K, "w");
            k->t[3] = vkf_tensor_make(VKF_DTYPE_F32, 1, c->K, "b");
            VKF_TRY(vkf_kb_tensor(k->be, &k->t[2], VKF_BUFFER_WEIGHTS, 1.0f));
            VKF_TRY(vkf_kb_tensor(k->be, &k->t[3], VKF_BUFFER_WEIGHTS, 1.0f));
        }
        return vkf_tensor_alloc(k->be, &k->t[0], VKF_BUFFER_ACTIVATIONS, NULL);
    }
}

static double vkf_kb_cpu_ms(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

/* median ms of `reps` computes of g; *cpu gets the mean process CPU ms per compute */
static vkf_status vkf_kb_time(vkf_backend *be, vkf_graph *g, int reps, double *ms, double *cpu) {
    double t[32];
    if (reps > 32) reps = 32;
    VKF_TRY(be->i->graph_compute(be, g, 0)); /* records, compiles: untimed */
    double c0 = vkf_kb_cpu_ms();
    for (int i = 0; i < reps; i++) {
        double t0 = vkf_bench_now_ms();
        VKF_TRY(be->i->graph_compute(be, g, 0));
        t[i] = vkf_bench_now_ms() - t0;
    }
    if (cpu) *cpu = (vkf_kb_cpu_ms() - c0) / reps;
    *ms = vkf_bench_median(t, reps);
    return VKF_OK;
}

static void vkf_kb_metrics(const vkf_kcase *c, vkf_kresult *r) {
    double f = 0, b = 0;
    switch (c->kind) {
    case KC_MATMUL:
        f = 2.0 * (double)c->M * (double)c->N * (double)c->K;
        b = (double)vkf_dtype_row_bytes(c->wt, c->K) * (double)c->N +
            4.0 * (double)c->M * (double)(c->K + c->N);
        snprintf(r->name, sizeof r->name, "matmul");
        snprintf(r->shape, sizeof r->shape, "M=%lld N=%lld K=%lld", (long long)c->M,
                 (long long)c->N, (long long)c->K);
        snprintf(r->dtype, sizeof r->dtype, "%s", vkf_dtype_name(c->wt));
        break;
    case KC_ATTN: {
        /* keys each query sees: all (decode), or a causal triangle */
        double keys = c->causal ? ((double)c->n_kv - c->n_q + 1 + c->n_kv) * 0.5 * c->n_q
                                : (double)c->n_q * c->n_kv;
        f = 4.0 * keys * c->hd * c->n_head;
        b = (double)vkf_dtype_row_bytes(c->kv, 1) * 2.0 * c->n_kv * c->n_kv_head * c->hd +
            4.0 * 2.0 * c->n_q * c->n_head * c->hd;
        snprintf(r->name, sizeof r->name, "attention");
        snprintf(r->shape, sizeof r->shape, "q=%d kv=%d heads=%d/%d hd=%d%s", c->n_q, c->n_kv,
                 c->n_head, c->n_kv_head, c->hd, c->causal ? " causal" : "");
        snprintf(r->dtype, sizeof r->dtype, "%s", vkf_dtype_name(c->kv));
        break;
    }
    default:
        f = 0;
        b = 4.0 * 2.0 * (double)c->M * (double)c->K;
        snprintf(r->name, sizeof r->name, "%s",
                 c->kind == KC_RMSNORM     ? "rmsnorm"
                 : c->kind == KC_LAYERNORM ? "layernorm"
                                           : "softmax");
        snprintf(r->shape, sizeof r->shape, "%lld x %lld", (long long)c->M, (long long)c->K);
        snprintf(r->dtype, sizeof r->dtype, "F32");
        break;
    }
    r->flop = f;
    r->bytes = b;
}

static vkf_status vkf_kb_run(vkf_backend *be, const vkf_kcase *c, int quick, const vkf_vk_peaks *pk,
                             vkf_kresult *r) {
    memset(r, 0, sizeof *r);
    vkf_kb_metrics(c, r);
    vkf_kb_ctx k = {.be = be};
    vkf_status st = vkf_kb_alloc(&k, c);
    vkf_graph *g = NULL;
    double ms = 0, cpu = 0;
    int R = 1, reps = quick ? 3 : 5;
    if (st == VKF_OK) st = vkf_kb_build(&k, c, 1, &g);
    if (st == VKF_OK) st = vkf_kb_time(be, g, 2, &ms, &cpu);
    if (st == VKF_OK) {
        double target = quick ? 8.0 : 25.0;
        R = ms > 0 ? (int)(target / ms) : 64;
        if (R < 1) R = 1;
        if (R > 64) R = 64;
        if (R > 1) {
            vkf_graph_free(g);
            g = NULL;
            st = vkf_kb_build(&k, c, R, &g);
            if (st == VKF_OK) st = vkf_kb_time(be, g, reps, &ms, &cpu);
        } else {
            st = vkf_kb_time(be, g, reps, &ms, &cpu);
        }
    }
    vkf_graph_free(g);
    for (int i = 0; i < 6; i++)
        vkf_kb_free(be, &k.t[i]);
    if (st != VKF_OK) return st;
    r->ms = ms / R;
    r->cpu_ms = cpu / R;
    r->per_graph = R;
    r->reps = reps;
    r->gflops = r->flop / (r->ms * 1e-3) * 1e-9;
    r->gbs = r->bytes / (r->ms * 1e-3) * 1e-9;
    if (c->kind == KC_MATMUL) {
        r->wgbs = (double)vkf_dtype_row_bytes(c->wt, c->K) * (double)c->N / (r->ms * 1e-3) * 1e-9;
        r->pct_copy = pk->copy_gbs > 0 ? 100.0 * r->wgbs / pk->copy_gbs : 0;
    }
    /* memory-bound when the op does fewer flops per byte than the device's balance point */
    double balance = pk->read_best_gbs > 0 ? pk->fma_f32_gflops / pk->read_best_gbs : 1;
    int compute = r->flop > 0 && r->flop / r->bytes > balance;
    r->bound = compute ? "compute" : "memory";
    double peak = compute ? pk->fma_f32_gflops : pk->read_best_gbs;
    r->pct_peak = peak > 0 ? 100.0 * (compute ? r->gflops : r->gbs) / peak : 0;
    return VKF_OK;
}

/* ---------------------------------------------------------------- the sweep */

/* the weight types to run: every one the kernels read, or those named in `dtypes` (a
 * comma-separated list such as "Q4_0,Q4_K"); returns their count */
static int vkf_kb_wtypes(const char *dtypes, vkf_dtype *out) {
    int n = 0;
    for (int t = 0; t < VKF_DTYPE_COUNT; t++) {
        if (!vkf_wtype_is_weight((vkf_dtype)t)) continue;
        if (dtypes) {
            const char *name = vkf_dtype_name((vkf_dtype)t), *p = dtypes;
            size_t l = strlen(name);
            int hit = 0;
            while (p && *p) {
                if (strncmp(p, name, l) == 0 && (p[l] == ',' || p[l] == 0)) hit = 1;
                p = strchr(p, ',');
                if (p) p++;
            }
            if (!hit) continue;
        }
        out[n++] = (vkf_dtype)t;
    }
    return n;
}

/* one attention shape "NQxNKVxHEADSxKV_HEADSxHEAD_DIM[xf16|xf32]" (causal; the K/V cache's
 * type, F32 unless the suffix says f16, as models use by default): 1 case, or -1 when malformed */
static int vkf_kb_attn_case(const char *attn, vkf_kcase *c) {
    int nq, nkv, h, kvh, hd, used = 0;
    if (sscanf(attn, "%dx%dx%dx%dx%d%n", &nq, &nkv, &h, &kvh, &hd, &used) != 5 || nq < 1 ||
        nkv < 1 || h < 1 || kvh < 1 || h % kvh || hd < 1)
        return -1;
    vkf_dtype kv = VKF_DTYPE_F32;
    if (!strcmp(attn + used, "xf16"))
        kv = VKF_DTYPE_F16;
    else if (attn[used] && strcmp(attn + used, "xf32"))
        return -1;
    *c = (vkf_kcase){.kind = KC_ATTN,
                     .n_q = nq,
                     .n_kv = nkv,
                     .n_head = h,
                     .n_kv_head = kvh,
                     .hd = hd,
                     .causal = 1,
                     .kv = kv};
    return 1;
}

static int vkf_kb_cases(int quick, const char *only, const char *shape, const char *dtypes,
                        const char *attn, vkf_kcase *cs, int cap) {
    int n = 0;
    vkf_dtype wts[VKF_DTYPE_COUNT];
    int nw = vkf_kb_wtypes(dtypes, wts);
    if (attn) return cap > 0 ? vkf_kb_attn_case(attn, cs) : 0;
    if (shape) { /* one matmul shape "MxNxK" for every weight dtype */
        long long M, N, K;
        if (sscanf(shape, "%lldx%lldx%lld", &M, &N, &K) != 3 || M < 1 || N < 1 || K < 1) return -1;
        for (int w = 0; w < nw && n < cap; w++) {
            if (K % vkf_dtype_block_elems(wts[w])) continue;
            cs[n++] = (vkf_kcase){.kind = KC_MATMUL, .M = M, .N = N, .K = K, .wt = wts[w]};
        }
        return n;
    }
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (n < cap) cs[n++] = (vkf_kcase){__VA_ARGS__};                                           \
    } while (0)
    int64_t dN = quick ? 1024 : 4096, dK = quick ? 1024 : 4096;
    if (!only || strstr("matmul", only)) {
        for (int w = 0; w < nw; w++) {
            /* decode: matrix-vector and small batches */
            static const int ms[] = {1, 2, 4, 8};
            for (int i = 0; i < 4; i++)
                ADD(.kind = KC_MATMUL, .M = ms[i], .N = dN, .K = dK, .wt = wts[w]);
            if (!quick) ADD(.kind = KC_MATMUL, .M = 1, .N = 1024, .K = 4096, .wt = wts[w]);
            /* prefill */
            ADD(.kind = KC_MATMUL, .M = 64, .N = quick ? 1024 : 1024, .K = quick ? 1024 : 1024,
                .wt = wts[w]);
            ADD(.kind = KC_MATMUL, .M = quick ? 128 : 512, .N = dN, .K = dK, .wt = wts[w]);
        }
    }
    if (!only || strstr("attention", only)) {
        static const int kv[] = {128, 512, 2048};
        for (int i = 0; i < 3; i++) {
            if (quick && kv[i] > 512) continue;
            ADD(.kind = KC_ATTN, .n_q = 1, .n_kv = kv[i], .n_head = 8, .n_kv_head = 4, .hd = 64,
                .causal = 1, .kv = VKF_DTYPE_F32);
        }
        static const int pq[] = {64, 256, 512};
        for (int i = 0; i < 3; i++) {
            if (quick && pq[i] > 256) continue;
            ADD(.kind = KC_ATTN, .n_q = pq[i], .n_kv = pq[i], .n_head = 8, .n_kv_head = 4, .hd = 64,
                .causal = 1, .kv = VKF_DTYPE_F32);
        }
        /* a 64-query prefill chunk deep in a long context: at 32768 keys CPU drivers take the
         * chunked kernel (16384 keys per dispatch; llvmpipe's loop limiter, vk_attention.c) */
        static const int dk[] = {16384, 32768};
        for (int i = 0; i < 2 && !quick; i++)
            ADD(.kind = KC_ATTN, .n_q = 64, .n_kv = dk[i], .n_head = 8, .n_kv_head = 4, .hd = 64,
                .causal = 1, .kv = VKF_DTYPE_F32);
    }
    if (!only || strstr("norm", only) || strstr("softmax", only)) {
        if (!only || strstr("rmsnorm", only)) {
            ADD(.kind = KC_RMSNORM, .M = 1, .K = 4096);
            ADD(.kind = KC_RMSNORM, .M = quick ? 64 : 512, .K = 4096);
        }
        if (!only || strstr("layernorm", only)) {
            ADD(.kind = KC_LAYERNORM, .M = 1, .K = 4096);
            ADD(.kind = KC_LAYERNORM, .M = quick ? 64 : 512, .K = 4096);
        }
        if (!only || strstr("softmax", only)) {
            ADD(.kind = KC_SOFTMAX, .M = 1, .K = 32000);
            ADD(.kind = KC_SOFTMAX, .M = quick ? 64 : 512, .K = 512);
        }
    }
#undef ADD
    return n;
}

/* JSON of the peaks and results (also read by --plot --from-json). */
static cJSON *vkf_kb_json(const char *device, const char *driver, const vkf_vk_peaks *pk,
                          const vkf_kresult *res, int n, double load0, double load1, int ncpu) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "device", device);
    cJSON_AddStringToObject(root, "driver", driver);
    cJSON_AddNumberToObject(root, "cpus", ncpu);
    cJSON_AddNumberToObject(root, "load_before", load0);
    cJSON_AddNumberToObject(root, "load_after", load1);
    cJSON *p = cJSON_AddObjectToObject(root, "peaks");
    cJSON_AddNumberToObject(p, "fma_f32_gflops", pk->fma_f32_gflops);
    cJSON_AddNumberToObject(p, "fma_f16_gflops", pk->fma_f16_gflops);
    cJSON_AddNumberToObject(p, "copy_gbs", pk->copy_gbs);
    cJSON_AddNumberToObject(p, "copy_median_gbs", pk->copy_median_gbs);
    cJSON_AddNumberToObject(p, "probe_bytes", (double)pk->probe_bytes);
    cJSON_AddNumberToObject(p, "read_best_gbs", pk->read_best_gbs);
    cJSON *rd = cJSON_AddArrayToObject(p, "read");
    for (int i = 0; i < pk->n_read; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pattern", pk->read_names[i]);
        cJSON_AddNumberToObject(o, "gbs", pk->read_gbs[i]);
        cJSON_AddNumberToObject(o, "gbs_median", pk->read_median_gbs[i]);
        cJSON_AddItemToArray(rd, o);
    }
    cJSON_AddNumberToObject(p, "dispatch_us", pk->dispatch_us);
    cJSON_AddNumberToObject(p, "dispatch_barrier_us", pk->dispatch_barrier_us);
    cJSON_AddNumberToObject(p, "dispatch_64wg_us", pk->dispatch_64wg_us);
    cJSON_AddNumberToObject(p, "submit_us", pk->submit_us);
    cJSON *arr = cJSON_AddArrayToObject(root, "kernels");
    for (int i = 0; i < n; i++) {
        const vkf_kresult *r = &res[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kernel", r->name);
        cJSON_AddStringToObject(o, "shape", r->shape);
        cJSON_AddStringToObject(o, "dtype", r->dtype);
        cJSON_AddNumberToObject(o, "ms", r->ms);
        cJSON_AddNumberToObject(o, "cpu_ms", r->cpu_ms);
        cJSON_AddNumberToObject(o, "flop", r->flop);
        cJSON_AddNumberToObject(o, "bytes", r->bytes);
        cJSON_AddNumberToObject(o, "gflops", r->gflops);
        cJSON_AddNumberToObject(o, "gbs", r->gbs);
        if (r->wgbs > 0) {
            cJSON_AddNumberToObject(o, "weight_gbs", r->wgbs);
            cJSON_AddNumberToObject(o, "pct_copy", r->pct_copy);
        }
        cJSON_AddStringToObject(o, "bound", r->bound);
        cJSON_AddNumberToObject(o, "pct_peak", r->pct_peak);
        cJSON_AddNumberToObject(o, "ops_per_submission", r->per_graph);
        cJSON_AddItemToArray(arr, o);
    }
    return root;
}

/* Runs the sweep quietly and returns the JSON report (malloc'ed; NULL on failure). */
char *vkf_bench_kernels_json(const char *device, int quick, const char *only) {
    vkf_backend *be = NULL;
    if (vkf_backend_vulkan_create(device, 0, &be) != VKF_OK) return NULL;
    const vkf_vk_caps *caps = vkf_backend_vulkan_caps(be);
    char driver[512];
    snprintf(driver, sizeof driver, "%s %s", caps->driver_name, caps->driver_info);
    double load0, load1;
    int ncpu;
    vkf_bench_load(&load0, &ncpu);
    vkf_vk_peaks pk;
    char *txt = NULL;
    vkf_kcase cs[256];
    int nc = vkf_kb_cases(quick, only, NULL, NULL, NULL, cs, 256), n = 0;
    vkf_kresult *res = calloc((size_t)(nc > 0 ? nc : 1), sizeof *res);
    if (res && vkf_backend_vulkan_peaks(be, quick, &pk) == VKF_OK) {
        for (int i = 0; i < nc; i++)
            if (vkf_kb_run(be, &cs[i], quick, &pk, &res[n]) == VKF_OK) n++;
        vkf_bench_load(&load1, &ncpu);
        cJSON *root = vkf_kb_json(caps->name, driver, &pk, res, n, load0, load1, ncpu);
        txt = root ? cJSON_Print(root) : NULL;
        cJSON_Delete(root);
    }
    free(res);
    vkf_backend_free(be);
    return txt;
}

static int vkf_kb_opt_fmt(void *dst, const char *value, char *err, size_t n) {
    int f = vkf_bench_parse_fmt(value);
    if (f < 0) {
        snprintf(err, n, "expected md, json or csv, got '%s'", value);
        return -1;
    }
    *(int *)dst = f;
    return 0;
}

int vkf_bench_kernels(int argc, char **argv) {
    int quick = 0, fmt = VKF_BENCH_MD, peaks_on = 1;
    const char *device = NULL, *only = NULL, *json_out = NULL, *shape = NULL, *dtypes = NULL;
    const char *attn = NULL;
    int mode = 0;
    vkf_arg args[] = {
        {"--kernels", VKF_ARG_SET, &mode, .hidden = 1},
        {"--quick", VKF_ARG_SET, &quick, .help = "fewer shapes"},
        {"--only", VKF_ARG_STR, &only, .metavar = "KIND",
         .help = "matmul, attention, norm or softmax"},
        {"-dev|--device", VKF_ARG_STR, &device, .metavar = "N|NAME", .help = "Vulkan device"},
        {"--shape", VKF_ARG_STR, &shape, .metavar = "MxNxK", .help = "one matmul shape"},
        {"--attn", VKF_ARG_STR, &attn, .metavar = "SHAPE",
         .help = "one causal attention shape NQxNKVxHEADSxKV_HEADSxHEAD_DIM[xf16|xf32], e.g. "
                 "1x2048x16x8x128xf16 (decode at depth 2048, an F16 cache)"},
        {"--dtypes", VKF_ARG_STR, &dtypes, .metavar = "LIST",
         .help = "weight types of the matmul rows, e.g. Q4_0,Q4_K"},
        {"-o|--output", VKF_ARG_CALL, &fmt, .metavar = "FMT", .call = vkf_kb_opt_fmt,
         .help = "md (default), json or csv"},
        {"--json-out", VKF_ARG_STR, &json_out, .metavar = "FILE",
         .help = "also write the JSON report to FILE"},
        {"--no-peaks", VKF_ARG_CLEAR, &peaks_on,
         .help = "skip the peak FLOP/s and bandwidth probes"},
        {0}};
    vkf_cmd_spec spec = {
        "bench --kernels",
        "[--quick] [--only KIND] [-dev N] [--shape MxNxK] [--attn SHAPE] [--dtypes LIST] "
        "[-o md|json|csv]",
        "Kernel sweeps on a Vulkan device against its measured peaks.", args, .epilog = NULL};
    int prc = vkf_args_parse(&spec, argc, argv);
    if (prc >= 0) return prc;
    /* the cases first: a malformed --shape or --attn fails before any probe runs */
    vkf_kcase cs[256];
    int nc = vkf_kb_cases(quick, only, shape, dtypes, attn, cs, 256);
    if (nc < 0) {
        if (attn)
            fprintf(stderr,
                    "vkformer: bench --kernels: bad --attn '%s' (expected "
                    "NQxNKVxHEADSxKV_HEADSxHEAD_DIM[xf16|xf32], HEADS a multiple of KV_HEADS)\n",
                    attn);
        else
            fprintf(stderr, "vkformer: bench --kernels: bad --shape '%s' (expected MxNxK)\n",
                    shape);
        return 2;
    }
    vkf_backend *be = NULL;
    if (vkf_backend_vulkan_create(device, 0, &be) != VKF_OK) {
        fprintf(stderr, "vkformer: bench --kernels: %s\n", vkf_last_error());
        return 1;
    }
    const vkf_vk_caps *caps = vkf_backend_vulkan_caps(be);
    char driver[512];
    snprintf(driver, sizeof driver, "%s %s", caps->driver_name, caps->driver_info);
    double load0, load1;
    int ncpu;
    vkf_bench_load(&load0, &ncpu);
    fprintf(stderr, "device: %s (%s), driver: %s; %d CPUs, load average %.2f\n", caps->name,
            caps->type_name, driver, ncpu, load0);
    vkf_vk_peaks pk;
    memset(&pk, 0, sizeof pk);
    if (peaks_on && vkf_backend_vulkan_peaks(be, quick, &pk) != VKF_OK) {
        fprintf(stderr, "vkformer: bench --kernels: peak probes: %s\n", vkf_last_error());
        vkf_backend_free(be);
        return 1;
    }
    if (fmt == VKF_BENCH_MD) {
        printf("## peaks measured on %s\n\n", caps->name);
        printf("| probe | result |\n| --- | ---: |\n");
        printf("| FMA fp32 | %.2f GFLOP/s |\n", pk.fma_f32_gflops);
        if (pk.fma_f16_gflops > 0) printf("| FMA fp16 | %.2f GFLOP/s |\n", pk.fma_f16_gflops);
        printf("| copy (read + write), best (median) of the repetitions | %.2f (%.2f) GB/s |\n",
               pk.copy_gbs, pk.copy_median_gbs);
        for (int i = 0; i < pk.n_read; i++)
            printf("| read: %s | %.2f (%.2f) GB/s |\n", pk.read_names[i], pk.read_gbs[i],
                   pk.read_median_gbs[i]);
        printf("| bandwidth probe buffers | %.0f MiB |\n", (double)pk.probe_bytes / (1 << 20));
        printf("| one dispatch (1 workgroup) | %.1f us |\n", pk.dispatch_us);
        printf("| one dispatch behind a barrier | %.1f us |\n", pk.dispatch_barrier_us);
        printf("| one dispatch of 64 workgroups | %.1f us |\n", pk.dispatch_64wg_us);
        printf("| one submission (submit to fence) | %.1f us |\n\n", pk.submit_us);
    }
    vkf_kresult *res = calloc((size_t)nc + 1, sizeof *res);
    if (!res) {
        vkf_backend_free(be);
        return 1;
    }
    if (fmt == VKF_BENCH_MD) {
        printf("## kernels\n\n| kernel | shape | dtype | time | CPU time | GFLOP/s | GB/s | bound "
               "| %% of peak "
               "| weights GB/s | %% of copy |\n");
        printf("| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n");
    } else if (fmt == VKF_BENCH_CSV) {
        printf("kernel,shape,dtype,ms,cpu_ms,gflops,gbs,bound,pct_peak,weight_gbs,pct_copy\n");
    }
    fflush(stdout);
    int rc = 0, n = 0;
    for (int i = 0; i < nc; i++) {
        vkf_kresult *r = &res[n];
        if (vkf_kb_run(be, &cs[i], quick, &pk, r) != VKF_OK) {
            fprintf(stderr, "vkformer: bench --kernels: case %d: %s\n", i, vkf_last_error());
            rc = 1;
            continue;
        }
        n++;
        if (fmt == VKF_BENCH_MD) {
            char gf[32] = "-";
            if (r->flop > 0) snprintf(gf, sizeof gf, "%.2f", r->gflops);
            char wg[32] = "-", pc[32] = "-";
            if (r->wgbs > 0)
                snprintf(wg, sizeof wg, "%.2f", r->wgbs),
                    snprintf(pc, sizeof pc, "%.1f%%", r->pct_copy);
            printf("| %s | %s | %s | %.3f ms | %.3f ms | %s | %.2f | %s | %.1f%% | %s | %s |\n",
                   r->name, r->shape, r->dtype, r->ms, r->cpu_ms, gf, r->gbs, r->bound, r->pct_peak,
                   wg, pc);
        } else if (fmt == VKF_BENCH_CSV) {
            printf("%s,\"%s\",%s,%.6f,%.6f,%.4f,%.4f,%s,%.2f,%.4f,%.2f\n", r->name, r->shape,
                   r->dtype, r->ms, r->cpu_ms, r->gflops, r->gbs, r->bound, r->pct_peak, r->wgbs,
                   r->pct_copy);
        }
        fflush(stdout);
    }
    vkf_bench_load(&load1, &ncpu);
    cJSON *root = vkf_kb_json(caps->name, driver, &pk, res, n, load0, load1, ncpu);
    char *txt = root ? cJSON_Print(root) : NULL;
    if (fmt == VKF_BENCH_JSON && txt) printf("%s\n", txt);
    if (json_out && txt) {
        FILE *f = fopen(json_out, "w");
        if (!f || fputs(txt, f) < 0) {
            fprintf(stderr, "vkformer: bench --kernels: cannot write %s\n", json_out);
            rc = 1;
        }
        if (f) fclose(f);
    }
    free(txt);
    cJSON_Delete(root);
    if (fmt == VKF_BENCH_MD)
        printf("\nload average: %.2f before, %.2f after (%d CPUs)\n", load0, load1, ncpu);
    free(res);
    vkf_backend_free(be);
    return rc;
}
