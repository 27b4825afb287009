/* The Vulkan backend's record-time fusions (src/backend/vulkan/vk_fuse.c) against the CPU
 * reference: graphs shaped like a decoder layer (RMSNorm -> q/k/v, RoPE + KV-cache stores,
 * output projection + residual, RMSNorm -> gate/up -> SWIGLU, MLP bias + activation, q/k/v
 * with biases as qwen2 and GPT-2 have them), for
 * several weight types, compared output by output by NMSE. Each graph also runs with
 * VKF_NO_FUSE=1 and with an extra reader of an intermediate (which must stop its fusion), so
 * the fused and unfused paths are both checked. Dispatch counts show that fusion happened. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/wtype.h"
#include "graph/backend.h"
#include "graph/graph.h"
#include "testutil.h"

/* ---------------------------------------------------------------- data */

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static float rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* host copies of every external tensor, so both backends get the same bytes */
typedef struct ext {
    vkf_tensor t;
    void *data; /* NULL: zero-filled output */
    size_t bytes;
} ext;

static void ext_make(ext *e, vkf_dtype dt, int64_t rows, int64_t cols, float scale,
                     const char *name, int zero) {
    e->t = vkf_tensor_make(dt, rows, cols, name);
    e->bytes = vkf_dtype_row_bytes(dt, cols) * (size_t)rows;
    e->data = calloc(1, e->bytes);
    if (zero) return;
    float *row = malloc(sizeof *row * (size_t)cols);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++)
            row[c] = rnd() * scale;
        if (dt == VKF_DTYPE_F32)
            memcpy((char *)e->data + (size_t)r * cols * 4, row, (size_t)cols * 4);
        else
            vkf_quantize_row(dt, row, (char *)e->data + vkf_dtype_row_bytes(dt, cols) * (size_t)r,
                             cols);
    }
    free(row);
}

/* ---------------------------------------------------------------- the layer graph */

enum { N_EXT = 24 };

typedef struct layer {
    ext e[N_EXT];
    int n_ext;
    int64_t rows, d, kvd, ff, seq, batch, n_ctx, head_dim, n_head, n_kv_head;
    vkf_dtype wt;
    int extra_reader; /* also read the normalized rows after the matmuls (blocks that fusion) */
    int gelu;         /* 1: MLP as up(+bias) -> GELU -> down instead of SWIGLU; 2: GeGLU, and
                         RMSNorms after the attention output and the MLP (gemma's post-norms),
                         and per-head RMSNorms of q and k (gemma3's, qwen3's);
                         3: SWIGLU of the two column halves of one fused gate|up matrix (phi3) */
    int qkv_bias;     /* q, k and v projections with biases */
    int kv;           /* 0: F32 caches, NORMAL RoPE; 1: F16 caches; 2: F16 caches, NEOX RoPE on
                         half of each head (the pass-through dims too) */
} layer;

enum {
    E_X,
    E_NORM1,
    E_WQ,
    E_WK,
    E_WV,
    E_WO,
    E_NORM2,
    E_WG,
    E_WU,
    E_WD,
    E_KC,
    E_VC,
    E_ROPE,
    E_BU,
    E_BQ,
    E_BK,
    E_BV,
    E_PN1,
    E_PN2,
    E_WGU,
    E_QN,
    E_KN,
    E_OUT,
    E_OUT2
};

/* the v projection's weight type when it differs from the others' (0: the same), as Q4_K_M
 * files keep v in Q6_K beside Q4_K q and k */
static vkf_dtype g_wv_type;

/* decode = 0: two sequences of three tokens per step, d 64; decode = 1: one token per step
 * (M = 1, the matrix-vector kernels: on CPU drivers the rows-in-sequence ROWSEQ variant of
 * shaders/matmul_texel.comp) with d 256 and ff 768, so that the rows span several subgroups
 * and K several units per lane; decode = 2: d 384, 12 blocks of 32 a row, which lanes of 8
 * take two rows at a time (RS_P = 2), in the fused norm, gate/up and residual variants too */
static void layer_init(layer *L, vkf_dtype wt, int extra_reader, int gelu, int qkv_bias, int decode,
                       int kv) {
    memset(L, 0, sizeof *L);
    L->qkv_bias = qkv_bias;
    L->kv = kv;
    L->wt = wt;
    L->extra_reader = extra_reader;
    L->gelu = gelu;
    L->batch = decode ? 1 : 2;
    L->seq = decode ? 1 : 3;
    L->rows = L->batch * L->seq;
    L->head_dim = decode ? 32 : 16;
    L->n_head = decode == 2 ? 12 : decode ? 8 : 4;
    L->n_kv_head = 2;
    L->d = L->n_head * L->head_dim; /* 64, 256 or 384 */
    L->kvd = L->n_kv_head * L->head_dim;
    L->ff = decode ? 768 : 96;
    L->n_ctx = 8;
    ext_make(&L->e[E_X], VKF_DTYPE_F32, L->rows, L->d, 1.0f, "x", 0);
    ext_make(&L->e[E_NORM1], VKF_DTYPE_F32, 1, L->d, 1.0f, "norm1", 0);
    ext_make(&L->e[E_WQ], wt, L->d, L->d, 0.2f, "wq", 0);
    ext_make(&L->e[E_WK], wt, L->kvd, L->d, 0.2f, "wk", 0);
    ext_make(&L->e[E_WV], g_wv_type ? g_wv_type : wt, L->kvd, L->d, 0.2f, "wv", 0);
    ext_make(&L->e[E_WO], wt, L->d, L->d, 0.2f, "wo", 0);
    ext_make(&L->e[E_NORM2], VKF_DTYPE_F32, 1, L->d, 1.0f, "norm2", 0);
    ext_make(&L->e[E_WG], wt, L->ff, L->d, 0.2f, "wg", 0);
    ext_make(&L->e[E_WU], wt, L->ff, L->d, 0.2f, "wu", 0);
    ext_make(&L->e[E_WD], wt, L->d, L->ff, 0.2f, "wd", 0);
    vkf_dtype ct = kv ? VKF_DTYPE_F16 : VKF_DTYPE_F32;
    ext_make(&L->e[E_KC], ct, L->batch * L->n_ctx, L->kvd, 1.0f, "k_cache", 1);
    ext_make(&L->e[E_VC], ct, L->batch * L->n_ctx, L->kvd, 1.0f, "v_cache", 1);
    int64_t n_rot = kv == 2 ? L->head_dim / 2 : L->head_dim; /* the table covers the rotated dims */
    ext_make(&L->e[E_ROPE], VKF_DTYPE_F32, L->n_ctx, n_rot, 1.0f, "rope", 1);
    vkf_rope_table((float *)L->e[E_ROPE].data, (int)L->n_ctx, (int)n_rot, 10000.0);
    ext_make(&L->e[E_BU], VKF_DTYPE_F32, 1, L->ff, 0.5f, "b_up", 0);
    ext_make(&L->e[E_BQ], VKF_DTYPE_F32, 1, L->d, 0.5f, "b_q", 0);
    ext_make(&L->e[E_BK], VKF_DTYPE_F32, 1, L->kvd, 0.5f, "b_k", 0);
    ext_make(&L->e[E_BV], VKF_DTYPE_F32, 1, L->kvd, 0.5f, "b_v", 0);
    ext_make(&L->e[E_PN1], VKF_DTYPE_F32, 1, L->d, 1.0f, "post_norm1", 0);
    ext_make(&L->e[E_PN2], VKF_DTYPE_F32, 1, L->d, 1.0f, "post_norm2", 0);
    ext_make(&L->e[E_WGU], wt, 2 * L->ff, L->d, 0.2f, "w_gate_up", 0);
    ext_make(&L->e[E_QN], VKF_DTYPE_F32, 1, L->head_dim, 1.0f, "q_norm", 0);
    ext_make(&L->e[E_KN], VKF_DTYPE_F32, 1, L->head_dim, 1.0f, "k_norm", 0);
    ext_make(&L->e[E_OUT], VKF_DTYPE_F32, L->rows, L->d, 1.0f, "out", 1);
    ext_make(&L->e[E_OUT2], VKF_DTYPE_F32, L->rows, L->d, 1.0f, "out2", 1);
    L->n_ext = N_EXT;
}

static void layer_free(layer *L) {
    for (int i = 0; i < L->n_ext; i++)
        free(L->e[i].data);
}

/* Allocates copies of the externals on be (into ts) and builds the layer graph. */
static vkf_status layer_build(layer *L, vkf_backend *be, vkf_tensor *ts, vkf_graph **out) {
    for (int i = 0; i < L->n_ext; i++) {
        ts[i] = L->e[i].t;
        VKF_TRY(vkf_tensor_alloc(be, &ts[i],
                                 i == E_KC || i == E_VC || i >= E_OUT ? VKF_BUFFER_ACTIVATIONS
                                                                      : VKF_BUFFER_WEIGHTS,
                                 L->e[i].data));
    }
    vkf_graph *g;
    VKF_TRY(vkf_graph_create(be, "fusion", &g));
    vkf_op_params p;
    int64_t R = L->rows;
#define T(r, c, n) vkf_graph_tensor(g, VKF_DTYPE_F32, r, c, n)
#define ADD(op, dst, a, b, c, d)                                                                   \
    do {                                                                                           \
        vkf_status s_ = vkf_graph_add(g, op, dst, a, b, c, d, &p);                                 \
        if (s_ != VKF_OK) {                                                                        \
            vkf_graph_free(g);                                                                     \
            return s_;                                                                             \
        }                                                                                          \
    } while (0)
    memset(&p, 0, sizeof p);
    p.norm.eps = 1e-5f;
    vkf_tensor *h = T(R, L->d, "h");
    ADD(VKF_OP_RMSNORM, h, &ts[E_X], &ts[E_NORM1], NULL, NULL);
    memset(&p, 0, sizeof p);
    vkf_tensor *q = T(R, L->d, "q"), *k = T(R, L->kvd, "k"), *v = T(R, L->kvd, "v");
    int qb = L->qkv_bias;
    ADD(VKF_OP_MATMUL, q, h, &ts[E_WQ], qb ? &ts[E_BQ] : NULL, NULL);
    ADD(VKF_OP_MATMUL, k, h, &ts[E_WK], qb ? &ts[E_BK] : NULL, NULL);
    ADD(VKF_OP_MATMUL, v, h, &ts[E_WV], qb ? &ts[E_BV] : NULL, NULL);
    if (L->gelu == 2) { /* per-head norms: q and k as rows of head_dim */
        memset(&p, 0, sizeof p);
        p.norm.eps = 1e-6f;
        vkf_tensor *qh = vkf_graph_view(g, q, 0, R, 0, L->d, "q_heads"),
                   *kh = vkf_graph_view(g, k, 0, R, 0, L->kvd, "k_heads");
        qh->rows = R * L->n_head;
        kh->rows = R * L->n_kv_head;
        qh->cols = qh->row_stride = kh->cols = kh->row_stride = L->head_dim;
        vkf_tensor *qn = T(R * L->n_head, L->head_dim, "q_normed"),
                   *kn = T(R * L->n_kv_head, L->head_dim, "k_normed");
        ADD(VKF_OP_RMSNORM, qn, qh, &ts[E_QN], NULL, NULL);
        ADD(VKF_OP_RMSNORM, kn, kh, &ts[E_KN], NULL, NULL);
        q = vkf_graph_view(g, qn, 0, qn->rows, 0, L->head_dim, "q_n");
        k = vkf_graph_view(g, kn, 0, kn->rows, 0, L->head_dim, "k_n");
        q->rows = k->rows = R;
        q->cols = q->row_stride = L->d;
        k->cols = k->row_stride = L->kvd;
    }
    memset(&p, 0, sizeof p);
    p.rope.seq_len = (int32_t)L->seq;
    p.rope.dyn = 1;
    p.rope.head_dim = (int32_t)L->head_dim;
    p.rope.n_rot = (int32_t)(L->kv == 2 ? L->head_dim / 2 : L->head_dim);
    p.rope.mode = L->kv == 2 ? VKF_ROPE_NEOX : VKF_ROPE_NORMAL;
    p.rope.n_head = (int32_t)L->n_head;
    vkf_tensor *qr = T(R, L->d, "q_rope"), *kr = T(R, L->kvd, "k_rope");
    ADD(VKF_OP_ROPE, qr, q, &ts[E_ROPE], NULL, NULL);
    p.rope.n_head = (int32_t)L->n_kv_head;
    ADD(VKF_OP_ROPE, kr, k, &ts[E_ROPE], NULL, NULL);
    for (int64_t b = 0; b < L->batch; b++) {
        memset(&p, 0, sizeof p);
        p.copy.dst_row0 = (int32_t)(b * L->n_ctx);
        p.copy.dyn = 1;
        ADD(VKF_OP_COPY_ROWS, &ts[E_KC], vkf_graph_view(g, kr, b * L->seq, L->seq, 0, L->kvd, "kv"),
            NULL, NULL, NULL);
        ADD(VKF_OP_COPY_ROWS, &ts[E_VC], vkf_graph_view(g, v, b * L->seq, L->seq, 0, L->kvd, "vv"),
            NULL, NULL, NULL);
    }
    memset(&p, 0, sizeof p);
    p.attn = (vkf_attn_params){.batch = (int32_t)L->batch,
                               .n_q = (int32_t)L->seq,
                               .n_kv = (int32_t)L->n_ctx,
                               .kv_stride = (int32_t)L->n_ctx,
                               .n_head = (int32_t)L->n_head,
                               .n_kv_head = (int32_t)L->n_kv_head,
                               .head_dim = (int32_t)L->head_dim,
                               .causal = 1,
                               .kv_dyn = 1,
                               .scale = 0.25f};
    vkf_tensor *a = T(R, L->d, "attn");
    ADD(VKF_OP_ATTENTION, a, qr, &ts[E_KC], &ts[E_VC], NULL);
    memset(&p, 0, sizeof p);
    vkf_tensor *o = T(R, L->d, "o"), *x1 = T(R, L->d, "res1");
    ADD(VKF_OP_MATMUL, o, a, &ts[E_WO], NULL, NULL);
    if (L->gelu == 2) { /* post-norm (the extra reader then reads the normalized o) */
        p.norm.eps = 1e-5f;
        vkf_tensor *on = T(R, L->d, "o_post");
        ADD(VKF_OP_RMSNORM, on, o, &ts[E_PN1], NULL, NULL);
        o = on;
    }
    ADD(VKF_OP_ADD, x1, &ts[E_X], o, NULL, NULL);
    p.norm.eps = 1e-5f;
    vkf_tensor *h2 = T(R, L->d, "h2");
    ADD(VKF_OP_RMSNORM, h2, x1, &ts[E_NORM2], NULL, NULL);
    memset(&p, 0, sizeof p);
    vkf_tensor *f = T(R, L->ff, "f");
    if (L->gelu == 1) {
        vkf_tensor *u = T(R, L->ff, "up");
        ADD(VKF_OP_MATMUL, u, h2, &ts[E_WU], &ts[E_BU], NULL);
        p.unary.act = VKF_UNARY_GELU_ERF;
        ADD(VKF_OP_UNARY, f, u, NULL, NULL, NULL);
        memset(&p, 0, sizeof p);
    } else if (L->gelu == 3) {
        vkf_tensor *gu = T(R, 2 * L->ff, "gate_up");
        ADD(VKF_OP_MATMUL, gu, h2, &ts[E_WGU], NULL, NULL);
        ADD(VKF_OP_SWIGLU, f, vkf_graph_view(g, gu, 0, R, 0, L->ff, "gate"),
            vkf_graph_view(g, gu, 0, R, L->ff, L->ff, "up"), NULL, NULL);
    } else {
        vkf_tensor *gt = T(R, L->ff, "gate"), *u = T(R, L->ff, "up");
        ADD(VKF_OP_MATMUL, gt, h2, &ts[E_WG], NULL, NULL);
        ADD(VKF_OP_MATMUL, u, h2, &ts[E_WU], NULL, NULL);
        p.glu.gelu = L->gelu == 2; /* gemma's GeGLU: gelu_tanh(gate) * up */
        ADD(VKF_OP_SWIGLU, f, gt, u, NULL, NULL);
        memset(&p, 0, sizeof p);
    }
    vkf_tensor *dn = T(R, L->d, "down");
    ADD(VKF_OP_MATMUL, dn, f, &ts[E_WD], NULL, NULL);
    if (L->gelu == 2) {
        p.norm.eps = 1e-5f;
        vkf_tensor *dnn = T(R, L->d, "down_post");
        ADD(VKF_OP_RMSNORM, dnn, dn, &ts[E_PN2], NULL, NULL);
        memset(&p, 0, sizeof p);
        dn = dnn;
    }
    ADD(VKF_OP_ADD, &ts[E_OUT], x1, dn, NULL, NULL);
    if (L->extra_reader) { /* reads the normalized rows and the attention output late */
        p.scale.scale = 0.5f;
        vkf_tensor *hs = T(R, L->d, "h_scaled");
        ADD(VKF_OP_SCALE, hs, h, NULL, NULL, NULL);
        ADD(VKF_OP_ADD, &ts[E_OUT2], hs, o, NULL, NULL);
    }
#undef T
#undef ADD
    vkf_status st = vkf_graph_plan(g);
    if (st != VKF_OK) {
        vkf_graph_free(g);
        return st;
    }
    *out = g;
    return VKF_OK;
}

/* Runs the layer on both backends for two steps (n_past 0 then seq) and compares the outputs
 * and the caches. */
static int g_int_dot; /* the integer-dot path is on (int_dot_on) */

static void check_layer(vkf_backend *cpu, vkf_backend *vk, vkf_dtype wt, int extra_reader, int gelu,
                        int qkv_bias, int no_fuse, int decode, int kv, uint64_t *dispatches) {
    layer L;
    layer_init(&L, wt, extra_reader, gelu, qkv_bias, decode, kv);
    vkf_tensor tc[N_EXT], tv[N_EXT];
    vkf_graph *gc = NULL, *gv = NULL;
    char what[128];
    snprintf(what, sizeof what, "%s%s%s%s%s%s%s%s", vkf_dtype_name(wt),
             g_wv_type ? (g_wv_type == VKF_DTYPE_Q8_0 ? " v:Q8_0" : " v:other") : "",
             extra_reader ? " +reader" : "",
             gelu == 3   ? " gate|up"
             : gelu == 2 ? " geglu"
             : gelu == 1 ? " gelu"
                         : " swiglu",
             qkv_bias ? " qkv-bias" : "", no_fuse ? " VKF_NO_FUSE" : "",
             decode == 2 ? " decode d384"
             : decode    ? " decode"
                         : "",
             kv == 1   ? " f16-cache"
             : kv == 2 ? " f16-cache neox"
                       : "");
    vkf_backend_vulkan_switches(vk)->no_fuse = no_fuse; /* VKF_NO_FUSE, for the graphs below */
    VKT_OK(layer_build(&L, cpu, tc, &gc));
    VKT_OK(layer_build(&L, vk, tv, &gv));
    vkf_vk_stats s0 = vkf_backend_vulkan_stats(vk);
    for (int step = 0; gc && gv && step < 2; step++) {
        int32_t n_past = (int32_t)(step * L.seq);
        VKT_OK(cpu->i->graph_compute(cpu, gc, n_past));
        VKT_OK(vk->i->graph_compute(vk, gv, n_past));
        const int outs[] = {E_OUT, E_OUT2, E_KC, E_VC};
        for (int k = 0; k < 4; k++) {
            int e = outs[k];
            size_t n = (size_t)tc[e].rows * (size_t)tc[e].cols;
            float *a = malloc(n * 4), *b = malloc(n * 4);
            VKT_OK(vkf_tensor_read_f32(vk, &tv[e], a));
            VKT_OK(vkf_tensor_read_f32(cpu, &tc[e], b));
            int nf;
            double err = vkt_nmse(a, b, n, &nf);
            double thr = wt == VKF_DTYPE_F32 ? 1e-10 : 1e-8;
            /* an F16 cache: where the f32 inputs differ in the last bits, a value near a
             * rounding boundary can round to the neighbouring half (2^-11 relative), and the
             * outputs see it through attention (one such value among the decode layer's 64 value
             * dims: v_cache NMSE 1.2e-8, out 1.6e-8; without a flip both read below 1e-12) */
            if (kv) thr = 1e-7;
            /* the integer-dot path (quantized weights, decode-shaped steps): activations
             * quantized to int8 blocks, against the reference's f32 activations, NMSE 1e-5 ..
             * 5e-5 measured (its exact reference, the CPU's ggml-activation mode, is
             * test_ops_int_dot's: a layer there differs by the norm's and attention's last bits,
             * which move activation quants across rounding boundaries just as much); a wrong
             * fusion (matrix offsets, gate/up, residual, norm) reads 1e-2 or more */
            if (g_int_dot && vkf_wtype_is_quant(wt)) thr = 3e-4;
            VKT_CHECK(err <= thr && nf == 0,
                      "%s step %d %s: nmse %.3e (threshold %.0e), nonfinite %d", what, step,
                      tc[e].name, err, thr, nf);
            free(a);
            free(b);
        }
    }
    vkf_vk_stats s1 = vkf_backend_vulkan_stats(vk);
    *dispatches = (s1.dispatches - s0.dispatches);
    printf("%-36s %llu dispatches recorded\n", what, (unsigned long long)*dispatches);
    vkf_graph_free(gc);
    vkf_graph_free(gv);
    for (int i = 0; i < N_EXT; i++) {
        if (tc[i].buf) cpu->i->buffer_free(cpu, tc[i].buf);
        if (tv[i].buf) vk->i->buffer_free(vk, tv[i].buf);
    }
    layer_free(&L);
    vkf_backend_vulkan_switches(vk)->no_fuse = 0;
}

/* 1 where the Vulkan backend takes the integer-dot path for quantized decode (vk_plan.c): the
 * GPUs' table on a device with shaderIntegerDotProduct, or VKF_INT_DOT forcing it */
static int int_dot_on(vkf_backend *vk) {
    const vkf_switches *sw = vkf_backend_vulkan_switches(vk);
    const vkf_switches_xp *xp = vkf_backend_vulkan_experiments(vk);
    if (sw->no_int_dot || xp->int_dot == 3) return 0;
    return xp->int_dot == 1 || xp->int_dot == 2 ||
           (xp->gpu_table && vkf_backend_vulkan_caps(vk)->int_dot);
}

int main(void) {
    vkf_backend *cpu = NULL, *vk = NULL;
    VKT_OK(vkf_backend_cpu_create(&cpu));
    vkf_status st = vkf_backend_vulkan_create(NULL, 1, &vk);
    if (st != VKF_OK) {
        printf("no Vulkan device: %s\n", vkf_last_error());
        vkf_backend_free(cpu);
        return vkt_finish();
    }
    printf("device: %s\n", vk->device_name);
    const vkf_vk_caps *caps = vkf_backend_vulkan_caps(vk);
    g_int_dot = int_dot_on(vk);
    printf("integer-dot decode: %s\n", g_int_dot ? "on" : "off");
    static const vkf_dtype wts[] = {VKF_DTYPE_F32, VKF_DTYPE_F16, VKF_DTYPE_Q8_0, VKF_DTYPE_Q4_0};
    for (int w = 0; w < 4; w++) {
        /* the d 384 decode layer for the block types only (their 32-value units) */
        for (int v = 0; v < (w >= 2 ? 12 : 8); v++) {
            uint64_t fused = 0, unfused = 0, blocked = 0, plain = 0, swiglu = 0;
            int decode = v / 4, mlp = v % 4, ge = mlp == 1;
            /* the GELU layer is GPT-2's and qwen2's kind: q/k/v with biases */
            check_layer(cpu, vk, wts[w], 0, mlp, ge, 0, decode, 0, &fused);
            check_layer(cpu, vk, wts[w], 0, mlp, ge, 1, decode, 0, &unfused);
            check_layer(cpu, vk, wts[w], 1, mlp, ge, 0, decode, 0, &blocked);
            /* with texels and subgroups the fusions must have removed dispatches */
            if (caps->texel && caps->has_subgroup)
                VKT_CHECK(fused < unfused, "%s: %llu dispatches fused vs %llu unfused",
                          vkf_dtype_name(wts[w]), (unsigned long long)fused,
                          (unsigned long long)unfused);
            if (ge && caps->texel && caps->has_subgroup) {
                /* biases take nothing from the fusion: norm + q/k/v stay one dispatch */
                check_layer(cpu, vk, wts[w], 0, 1, 0, 0, decode, 0, &plain);
                VKT_CHECK(fused == plain, "%s: %llu dispatches with q/k/v biases vs %llu without",
                          vkf_dtype_name(wts[w]), (unsigned long long)fused,
                          (unsigned long long)plain);
            }
            if (mlp == 2 && caps->texel && caps->has_subgroup) {
                /* GeGLU fuses with gate/up as SwiGLU does, each post-norm with its residual add
                 * (one dispatch more per post-norm than the SwiGLU layer, whose output and down
                 * projections take their adds themselves), and the q and k norms form one */
                check_layer(cpu, vk, wts[w], 0, 0, 0, 0, decode, 0, &swiglu);
                VKT_CHECK(fused == swiglu + 2 + 1,
                          "%s: %llu dispatches with GeGLU, post- and q/k norms vs %llu with SwiGLU",
                          vkf_dtype_name(wts[w]), (unsigned long long)fused,
                          (unsigned long long)swiglu);
            }
            if (mlp == 3 && caps->texel && caps->has_subgroup) {
                /* a fused gate|up matrix: as many dispatches as separate gate and up */
                check_layer(cpu, vk, wts[w], 0, 0, 0, 0, decode, 0, &swiglu);
                VKT_CHECK(fused == swiglu, "%s: %llu dispatches with gate|up vs %llu with SwiGLU",
                          vkf_dtype_name(wts[w]), (unsigned long long)fused,
                          (unsigned long long)swiglu);
            }
        }
    }
    /* F16 caches (the GPUs' default): the RoPE + KV-store fusion writes halves; NORMAL and
     * NEOX with pass-through dims, prefill-shaped and decode, fused and not */
    for (int kv = 1; kv <= 2; kv++) {
        for (int decode = 0; decode < 2; decode++) {
            uint64_t fused = 0, unfused = 0;
            check_layer(cpu, vk, VKF_DTYPE_Q8_0, 0, 0, 0, 0, decode, kv, &fused);
            check_layer(cpu, vk, VKF_DTYPE_Q8_0, 0, 0, 0, 1, decode, kv, &unfused);
            if (caps->texel && caps->has_subgroup)
                VKT_CHECK(fused < unfused, "f16 cache %d: %llu dispatches fused vs %llu unfused",
                          kv, (unsigned long long)fused, (unsigned long long)unfused);
        }
    }
    /* v in another weight type than q and k: the norm folds into the q/k group and into v's,
     * one dispatch more than with a single type (not two: a norm dispatch writing h and v) */
    for (int decode = 0; decode < 2; decode++) {
        uint64_t same = 0, mixed = 0, unfused = 0;
        check_layer(cpu, vk, VKF_DTYPE_Q4_0, 0, 0, 0, 0, decode, 1, &same);
        g_wv_type = VKF_DTYPE_Q8_0;
        check_layer(cpu, vk, VKF_DTYPE_Q4_0, 0, 0, 0, 0, decode, 1, &mixed);
        check_layer(cpu, vk, VKF_DTYPE_Q4_0, 0, 0, 0, 1, decode, 1, &unfused);
        g_wv_type = 0;
        /* with the GPUs' table (VKF_GPU_TABLE=1) prefill-shaped groups go to the tiled kernel,
         * which takes no fusion: there only decode's counts compare */
        int gpu_table = vkf_backend_vulkan_experiments(vk)->gpu_table;
        /* on the integer-dot path v's group quantizes its activations too: one more */
        uint64_t extra = g_int_dot && decode ? 2 : 1;
        if (caps->texel && caps->has_subgroup && (decode || !gpu_table))
            VKT_CHECK(mixed == same + extra && mixed < unfused,
                      "v in Q8_0: %llu dispatches vs %llu with one type, %llu unfused",
                      (unsigned long long)mixed, (unsigned long long)same,
                      (unsigned long long)unfused);
    }
    vkf_backend_free(vk);
    vkf_backend_free(cpu);
    return vkt_finish();
}
