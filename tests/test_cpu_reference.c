/* The CPU reference checked against independent closed forms, computed here in double or
 * known from the literature, so the specification itself is trusted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "core/dtype.h"
#include "graph/backend.h"
#include "testutil.h"

static vkf_backend *cpu;

/* Makes a contiguous CPU tensor holding data (may be NULL). */
static vkf_tensor mk(vkf_dtype dt, int64_t rows, int64_t cols, const void *data) {
    vkf_tensor t = vkf_tensor_make(dt, rows, cols, "t");
    vkf_tensor_alloc(cpu, &t, VKF_BUFFER_ACTIVATIONS, data);
    return t;
}

static vkf_status run1(vkf_op op, vkf_tensor *d, vkf_tensor *a, vkf_tensor *b, vkf_tensor *c,
                       vkf_tensor *e, const vkf_op_params *p, int n_past) {
    vkf_graph *g;
    vkf_graph_create(cpu, "t", &g);
    vkf_status s = vkf_graph_add(g, op, d, a, b, c, e, p);
    if (s == VKF_OK) s = vkf_graph_plan(g);
    if (s == VKF_OK) s = cpu->i->graph_compute(cpu, g, n_past);
    vkf_graph_free(g);
    return s;
}

static float *f(vkf_tensor *t) { return (float *)((char *)t->buf->data + t->offset); }

static void test_softmax_and_norms(void) {
    float x[3 * 5] = {1, 2, 3, 4, 5, -100, 0, 100, 0.5f, 3, 88, 89, 90, 87, 86};
    vkf_tensor tx = mk(VKF_DTYPE_F32, 3, 5, x), ty = mk(VKF_DTYPE_F32, 3, 5, NULL);
    vkf_op_params p = {0};
    VKT_OK(run1(VKF_OP_SOFTMAX, &ty, &tx, NULL, NULL, NULL, &p, 0));
    for (int r = 0; r < 3; r++) {
        double sum = 0, max = -1e30, den = 0;
        for (int j = 0; j < 5; j++)
            max = fmax(max, x[r * 5 + j]);
        for (int j = 0; j < 5; j++)
            den += exp((double)x[r * 5 + j] - max);
        for (int j = 0; j < 5; j++) {
            sum += f(&ty)[r * 5 + j];
            double want = exp((double)x[r * 5 + j] - max) / den;
            VKT_CHECK(fabs(f(&ty)[r * 5 + j] - want) < 1e-6, "softmax[%d,%d] = %g, want %g", r, j,
                      f(&ty)[r * 5 + j], want);
        }
        VKT_CHECK(fabs(sum - 1.0) < 1e-6, "softmax row %d sums to %.9f", r, sum);
    }
    /* a fully masked row gives zeros, a partly masked row ignores the masked entries */
    float mask[3 * 5];
    for (int i = 0; i < 15; i++)
        mask[i] = (i < 5 || i % 2) ? -INFINITY : 0.0f;
    vkf_tensor tm = mk(VKF_DTYPE_F32, 3, 5, mask);
    VKT_OK(run1(VKF_OP_SOFTMAX, &ty, &tx, &tm, NULL, NULL, &p, 0));
    for (int j = 0; j < 5; j++)
        VKT_CHECK(f(&ty)[j] == 0.0f, "fully masked row: %g", f(&ty)[j]);
    /* row 1 keeps j = 1 (x = 0) and j = 3 (x = 0.5) */
    VKT_CHECK(f(&ty)[5] == 0.0f && f(&ty)[7] == 0.0f && f(&ty)[9] == 0.0f,
              "masked entries must be 0");
    double want_1_1 = 1.0 / (1.0 + exp(0.5));
    VKT_CHECK(fabs(f(&ty)[6] - want_1_1) < 1e-7, "masked softmax %g want %g", f(&ty)[6], want_1_1);

    /* LayerNorm without gamma/beta: mean 0, variance 1 (biased), per row */
    float xl[2 * 64];
    for (int i = 0; i < 128; i++)
        xl[i] = 5.0f + 3.0f * sinf((float)i * 1.7f) + (float)(i % 7);
    vkf_tensor a = mk(VKF_DTYPE_F32, 2, 64, xl), y = mk(VKF_DTYPE_F32, 2, 64, NULL);
    p.norm.eps = 1e-5f;
    VKT_OK(run1(VKF_OP_LAYERNORM, &y, &a, NULL, NULL, NULL, &p, 0));
    for (int r = 0; r < 2; r++) {
        double m = 0, v = 0, mx = 0, vx = 0;
        for (int j = 0; j < 64; j++)
            m += f(&y)[r * 64 + j], mx += xl[r * 64 + j];
        m /= 64, mx /= 64;
        for (int j = 0; j < 64; j++)
            v += pow(f(&y)[r * 64 + j] - m, 2), vx += pow(xl[r * 64 + j] - mx, 2);
        v /= 64, vx /= 64;
        VKT_CHECK(fabs(m) < 1e-6, "layernorm mean %g", m);
        double want_var = vx / (vx + 1e-5); /* eps shrinks the variance a hair below 1 */
        VKT_CHECK(fabs(v - want_var) < 1e-5, "layernorm var %.9f want %.9f", v, want_var);
    }
    VKT_OK(run1(VKF_OP_RMSNORM, &y, &a, NULL, NULL, NULL, &p, 0));
    for (int r = 0; r < 2; r++) {
        double ms = 0, msx = 0;
        for (int j = 0; j < 64; j++)
            ms += pow(f(&y)[r * 64 + j], 2), msx += pow(xl[r * 64 + j], 2);
        ms /= 64, msx /= 64;
        VKT_CHECK(fabs(ms - msx / (msx + 1e-5)) < 1e-5, "rmsnorm mean square %.9f", ms);
    }
}

static void test_activations(void) {
    /* reference values from the closed forms evaluated in double (erf, tanh from libm) */
    const float xs[] = {-3.0f, -1.0f, 0.0f, 0.5f, 1.0f, 2.5f};
    vkf_tensor tx = mk(VKF_DTYPE_F32, 1, 6, xs), ty = mk(VKF_DTYPE_F32, 1, 6, NULL);
    for (int a = 0; a < VKF_UNARY_COUNT; a++) {
        vkf_op_params p = {.unary = {a}};
        VKT_OK(run1(VKF_OP_UNARY, &ty, &tx, NULL, NULL, NULL, &p, 0));
        for (int i = 0; i < 6; i++) {
            double x = xs[i], want = 0;
            switch (a) {
            case VKF_UNARY_RELU: want = x > 0 ? x : 0; break;
            case VKF_UNARY_GELU_ERF: want = 0.5 * x * (1 + erf(x / sqrt(2.0))); break;
            case VKF_UNARY_GELU_TANH:
                want = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
                break;
            case VKF_UNARY_SILU: want = x / (1 + exp(-x)); break;
            case VKF_UNARY_SIGMOID: want = 1 / (1 + exp(-x)); break;
            case VKF_UNARY_TANH: want = tanh(x); break;
            }
            VKT_CHECK(fabs(f(&ty)[i] - want) < 2e-7 * (1 + fabs(want)), "%s(%g) = %.9g want %.9g",
                      vkf_unary_name(a), x, f(&ty)[i], want);
        }
    }
    /* published values: GELU(1) = 0.8413447460685429 (erf), 0.8411919906082768 (tanh) */
    vkf_op_params p = {.unary = {VKF_UNARY_GELU_ERF}};
    run1(VKF_OP_UNARY, &ty, &tx, NULL, NULL, NULL, &p, 0);
    VKT_CHECK(fabs(f(&ty)[4] - 0.8413447460685429) < 1e-7, "gelu_erf(1) = %.9g", f(&ty)[4]);
    p.unary.act = VKF_UNARY_GELU_TANH;
    run1(VKF_OP_UNARY, &ty, &tx, NULL, NULL, NULL, &p, 0);
    VKT_CHECK(fabs(f(&ty)[4] - 0.8411919906082768) < 1e-7, "gelu_tanh(1) = %.9g", f(&ty)[4]);
}

static void test_matmul_embed(void) {
    float x[4] = {1, 2, 3, 4}, w[4] = {5, 6, 7, 8}, b[2] = {0.5f, -1};
    vkf_tensor tx = mk(VKF_DTYPE_F32, 2, 2, x), tw = mk(VKF_DTYPE_F32, 2, 2, w),
               tb = mk(VKF_DTYPE_F32, 1, 2, b), ty = mk(VKF_DTYPE_F32, 2, 2, NULL);
    VKT_OK(run1(VKF_OP_MATMUL, &ty, &tx, &tw, &tb, NULL, NULL, 0));
    /* [[1,2],[3,4]] · [[5,6],[7,8]]ᵀ + [0.5,-1] = [[17.5, 22], [39.5, 52]] */
    const float want[4] = {17.5f, 22, 39.5f, 52};
    for (int i = 0; i < 4; i++)
        VKT_CHECK(f(&ty)[i] == want[i], "matmul[%d] = %g want %g", i, f(&ty)[i], want[i]);

    /* Q8_0 / Q4_0 blocks decode by the ggml formulas */
    vkf_block_q8_0 q8 = {.d = 0x3800 /* 0.5 */};
    vkf_block_q4_0 q4 = {.d = 0x4000 /* 2.0 */};
    for (int i = 0; i < 32; i++)
        q8.qs[i] = (int8_t)(i - 16);
    for (int i = 0; i < 16; i++)
        q4.qs[i] = (uint8_t)(i | ((15 - i) << 4));
    float o8[32], o4[32];
    vkf_dequantize_row(VKF_DTYPE_Q8_0, &q8, o8, 32);
    vkf_dequantize_row(VKF_DTYPE_Q4_0, &q4, o4, 32);
    int ok = 1;
    for (int i = 0; i < 32; i++)
        ok &= o8[i] == 0.5f * (float)(i - 16);
    for (int i = 0; i < 16; i++)
        ok &= o4[i] == 2.0f * (float)(i - 8) && o4[i + 16] == 2.0f * (float)(7 - i);
    VKT_CHECK(ok, "Q8_0/Q4_0 dequantization");

    /* f16 conversions: exact values from IEEE 754 binary16 */
    VKT_CHECK(vkf_f32_to_f16(1.0f) == 0x3C00 && vkf_f32_to_f16(-2.0f) == 0xC000, "f16 1, -2");
    VKT_CHECK(vkf_f32_to_f16(65504.0f) == 0x7BFF && vkf_f32_to_f16(65520.0f) == 0x7C00,
              "f16 max, overflow");
    VKT_CHECK(vkf_f32_to_f16(5.960464477539063e-08f) == 0x0001 &&
                  vkf_f16_to_f32(0x0001) == 5.960464477539063e-08f,
              "f16 subnormal");
    VKT_CHECK(vkf_f32_to_f16(1.0009765625f + 0.00048828125f) == 0x3C02, "f16 ties to even");
    VKT_CHECK(vkf_bf16_to_f32(0x3F80) == 1.0f && vkf_f32_to_bf16(3.140625f) == 0x4049, "bf16");

    /* embedding lookup with scale, and an out-of-range id is an error naming the id */
    float table[3 * 2] = {1, 2, 3, 4, 5, 6};
    int32_t ids[2] = {2, 0}, bad[1] = {3};
    vkf_tensor tt = mk(VKF_DTYPE_F32, 3, 2, table), ti = mk(VKF_DTYPE_I32, 1, 2, ids),
               te = mk(VKF_DTYPE_F32, 2, 2, NULL);
    vkf_op_params p = {.embed = {2.0f}};
    VKT_OK(run1(VKF_OP_EMBED, &te, &tt, &ti, NULL, NULL, &p, 0));
    VKT_CHECK(f(&te)[0] == 10 && f(&te)[1] == 12 && f(&te)[2] == 2 && f(&te)[3] == 4, "embed rows");
    vkf_tensor tbad = mk(VKF_DTYPE_I32, 1, 1, bad), te1 = mk(VKF_DTYPE_F32, 1, 2, NULL);
    vkf_status s = run1(VKF_OP_EMBED, &te1, &tt, &tbad, NULL, NULL, &p, 0);
    VKT_CHECK(s == VKF_ERROR_TOKEN && strstr(vkf_last_error(), "token id 3"), "bad id: %s",
              vkf_last_error());
}

static void test_positions(void) {
    /* sinusoidal table vs the formula in double, in the exp/log form (not the code's pow form) */
    enum { NP = 300, D = 64 };
    static float pe[NP * D];
    vkf_sinusoidal_table(pe, NP, D);
    const int poss[] = {0, 1, 17, 127, 299};
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < D / 2; i += 7) {
            double a = poss[k] * exp(-(2.0 * i) * log(10000.0) / D);
            VKT_CHECK(pe[poss[k] * D + 2 * i] == (float)sin(a) &&
                          pe[poss[k] * D + 2 * i + 1] == (float)cos(a),
                      "PE[%d, %d]", poss[k], 2 * i);
        }
    /* RoPE NORMAL rotates (x0, x1) by theta_0 = pos; NEOX pairs i with i + n_rot/2 */
    enum { HD = 8 };
    float rt[64 * HD], x[HD] = {1, 0, 0, 1, 2, 0, 0, 0};
    vkf_rope_table(rt, 64, HD, 10000.0);
    vkf_tensor tx = mk(VKF_DTYPE_F32, 1, HD, x), ttab = mk(VKF_DTYPE_F32, 64, HD, rt),
               ty = mk(VKF_DTYPE_F32, 1, HD, NULL);
    vkf_op_params p = {.rope = {.seq_len = 1,
                                .pos0 = 0,
                                .dyn = 1,
                                .n_head = 1,
                                .head_dim = HD,
                                .n_rot = HD,
                                .mode = VKF_ROPE_NORMAL}};
    VKT_OK(run1(VKF_OP_ROPE, &ty, &tx, &ttab, NULL, NULL, &p, 5));
    double th1 = 5 * pow(10000.0, -2.0 / HD);
    VKT_CHECK(fabs(f(&ty)[0] - cos(5.0)) < 1e-6 && fabs(f(&ty)[1] - sin(5.0)) < 1e-6,
              "rope pair 0");
    VKT_CHECK(fabs(f(&ty)[2] + sin(th1)) < 1e-6 && fabs(f(&ty)[3] - cos(th1)) < 1e-6,
              "rope pair 1");
    p.rope.mode = VKF_ROPE_NEOX; /* pairs (0,4), (1,5), ...: x0 = 1, x4 = 2 rotate by theta_0 = 5 */
    VKT_OK(run1(VKF_OP_ROPE, &ty, &tx, &ttab, NULL, NULL, &p, 5));
    VKT_CHECK(fabs(f(&ty)[0] - (cos(5.0) - 2 * sin(5.0))) < 1e-6 &&
                  fabs(f(&ty)[4] - (sin(5.0) + 2 * cos(5.0))) < 1e-6,
              "rope neox pair 0: %g %g", f(&ty)[0], f(&ty)[4]);
}

/* POOL: two sequences of 3 padded rows, lengths 2 and 3: mean, first and last row by hand */
static void test_pool(void) {
    float x[6 * 2] = {1, 10, 3, 20, 1000, -1000, 2, 4, 4, 8, 9, 0};
    int32_t lens[2] = {2, 3};
    vkf_tensor tx = mk(VKF_DTYPE_F32, 6, 2, x), tl = mk(VKF_DTYPE_I32, 1, 2, lens);
    static const float want[3][4] = {{2, 15, 5, 4}, {1, 10, 2, 4}, {3, 20, 9, 0}};
    for (int mode = 0; mode < 3; mode++) {
        vkf_tensor ty = mk(VKF_DTYPE_F32, 2, 2, NULL);
        vkf_op_params p = {0};
        p.pool.mode = mode;
        p.pool.seq_len = 3;
        VKT_OK(run1(VKF_OP_POOL, &ty, &tx, &tl, NULL, NULL, &p, 0));
        VKT_CHECK(!memcmp(f(&ty), want[mode], sizeof want[mode]),
                  "pool mode %d: %g %g %g %g (the padding row 1000 must never count)", mode,
                  f(&ty)[0], f(&ty)[1], f(&ty)[2], f(&ty)[3]);
    }
}

static void test_attention(void) {
    /* A causal first query sees only key 0, so it returns value row 0 exactly; a key length of
     * 1 does the same for every query; GQA maps query head h to KV head h / 2. */
    enum { T = 4, H = 2, HKV = 1, HD = 4 };
    float q[T * H * HD], k[T * HKV * HD], v[T * HKV * HD];
    for (int i = 0; i < T * H * HD; i++)
        q[i] = sinf((float)i);
    for (int i = 0; i < T * HKV * HD; i++)
        k[i] = cosf((float)i * 0.7f), v[i] = (float)i;
    vkf_tensor tq = mk(VKF_DTYPE_F32, T, H * HD, q), tk = mk(VKF_DTYPE_F32, T, HKV * HD, k),
               tv = mk(VKF_DTYPE_F32, T, HKV * HD, v), to = mk(VKF_DTYPE_F32, T, H * HD, NULL);
    vkf_op_params p = {.attn = {1, T, T, T, H, HKV, HD, 1, 0, 0.5f}};
    VKT_OK(run1(VKF_OP_ATTENTION, &to, &tq, &tk, &tv, NULL, &p, 0));
    for (int h = 0; h < H; h++)
        for (int d = 0; d < HD; d++)
            VKT_CHECK(f(&to)[h * HD + d] == v[d], "causal query 0 head %d", h);
    /* query 1 in double: softmax over keys 0..1 */
    for (int h = 0; h < H; h++) {
        double s[2], m, z = 0;
        for (int j = 0; j < 2; j++) {
            s[j] = 0;
            for (int d = 0; d < HD; d++)
                s[j] += (double)q[1 * H * HD + h * HD + d] * k[j * HD + d];
            s[j] *= 0.5;
        }
        m = fmax(s[0], s[1]);
        for (int j = 0; j < 2; j++)
            z += exp(s[j] - m);
        for (int d = 0; d < HD; d++) {
            double want = (exp(s[0] - m) * v[d] + exp(s[1] - m) * v[HD + d]) / z;
            VKT_CHECK(fabs(f(&to)[H * HD + h * HD + d] - want) < 1e-5,
                      "query 1 head %d dim %d: %g want %g", h, d, f(&to)[H * HD + h * HD + d],
                      want);
        }
    }
    int32_t one = 1;
    vkf_tensor tl = mk(VKF_DTYPE_I32, 1, 1, &one);
    p.attn.causal = 0;
    VKT_OK(run1(VKF_OP_ATTENTION, &to, &tq, &tk, &tv, &tl, &p, 0));
    int ok = 1;
    for (int i = 0; i < T; i++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < HD; d++)
                ok &= f(&to)[i * H * HD + h * HD + d] == v[d];
    VKT_CHECK(ok, "key length 1: every query returns value row 0");
}

static void test_select_and_plan(void) {
    float x[8] = {1, 3, 3, 2, 3, 0, -1, 2};
    vkf_tensor tx = mk(VKF_DTYPE_F32, 1, 8, x), ti = mk(VKF_DTYPE_I32, 1, 1, NULL),
               tk = mk(VKF_DTYPE_I32, 1, 5, NULL);
    VKT_OK(run1(VKF_OP_ARGMAX, &ti, &tx, NULL, NULL, NULL, NULL, 0));
    VKT_CHECK(((int32_t *)f(&ti))[0] == 1, "argmax ties go to the lowest index");
    vkf_op_params p = {.topk = {5}};
    VKT_OK(run1(VKF_OP_TOPK, &tk, &tx, NULL, NULL, NULL, &p, 0));
    const int32_t want[5] = {1, 2, 4, 3, 7};
    VKT_CHECK(memcmp(f(&tk), want, sizeof want) == 0, "topk order with ties");

    /* memory plan: a chain a -> b -> c -> d lets d reuse a's space; a and b overlap in time */
    vkf_graph *g;
    vkf_graph_create(cpu, "plan", &g);
    vkf_tensor in = mk(VKF_DTYPE_F32, 4, 64, NULL);
    vkf_tensor *a = vkf_graph_tensor(g, VKF_DTYPE_F32, 4, 64, "a"),
               *b = vkf_graph_tensor(g, VKF_DTYPE_F32, 4, 64, "b"),
               *c = vkf_graph_tensor(g, VKF_DTYPE_F32, 4, 64, "c"),
               *d = vkf_graph_tensor(g, VKF_DTYPE_F32, 4, 64, "d");
    vkf_op_params sp = {.scale = {2.0f}};
    vkf_graph_add(g, VKF_OP_SCALE, a, &in, NULL, NULL, NULL, &sp);
    vkf_graph_add(g, VKF_OP_SCALE, b, a, NULL, NULL, NULL, &sp);
    vkf_graph_add(g, VKF_OP_SCALE, c, b, NULL, NULL, NULL, &sp);
    vkf_graph_add(g, VKF_OP_SCALE, d, c, NULL, NULL, NULL, &sp);
    VKT_OK(vkf_graph_plan(g));
    VKT_CHECK(a->offset != b->offset && b->offset != c->offset && c->offset != d->offset,
              "live tensors apart");
    VKT_CHECK(g->arena_bytes == 2 * 1024,
              "arena %zu bytes, want 2 KiB (two 1 KiB tensors live at a time)", g->arena_bytes);
    vkf_graph_free(g);
    /* a bad shape is rejected with both shapes in the message */
    vkf_tensor w = mk(VKF_DTYPE_F32, 3, 5, NULL), y = mk(VKF_DTYPE_F32, 4, 3, NULL);
    vkf_status s = run1(VKF_OP_MATMUL, &y, &in, &w, NULL, NULL, NULL, 0);
    VKT_CHECK(s == VKF_ERROR_INVALID_ARGUMENT && strstr(vkf_last_error(), "expected"), "%s",
              vkf_last_error());
}

/* Mixture of experts in closed form: each expert's rows hold (e + 1, n + 1), so a token's
 * output for expert e, row n is x0 (e + 1) + x1 (n + 1). */
static void test_moe(void) {
    float w[3 * 2 * 2], x[2 * 2] = {1, 10, 2, 0};
    for (int e = 0; e < 3; e++)
        for (int n = 0; n < 2; n++)
            w[(e * 2 + n) * 2] = (float)(e + 1), w[(e * 2 + n) * 2 + 1] = (float)(n + 1);
    const int32_t ids[4] = {2, 0, 1, 2};
    vkf_tensor tw = mk(VKF_DTYPE_F32, 6, 2, w), tx = mk(VKF_DTYPE_F32, 2, 2, x),
               ti = mk(VKF_DTYPE_I32, 2, 2, ids), ty = mk(VKF_DTYPE_F32, 4, 2, NULL);
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.moe.n_expert = 3;
    VKT_OK(run1(VKF_OP_MUL_MAT_ID, &ty, &tx, &tw, &ti, NULL, &p, 0));
    const float want[8] = {13, 23, 11, 21, 4, 4, 6, 6};
    VKT_CHECK(memcmp(f(&ty), want, sizeof want) == 0, "mul_mat_id: the chosen experts' rows");
    /* one input row per (token, expert): the down projection's form */
    float xp[4 * 2] = {1, 0, 0, 1, 1, 1, 2, 2};
    vkf_tensor txp = mk(VKF_DTYPE_F32, 4, 2, xp);
    VKT_OK(run1(VKF_OP_MUL_MAT_ID, &ty, &txp, &tw, &ti, NULL, &p, 0));
    const float want2[8] = {3, 3, 1, 2, 3, 4, 8, 10};
    VKT_CHECK(memcmp(f(&ty), want2, sizeof want2) == 0, "mul_mat_id: per-pair input rows");
    const int32_t bad[4] = {0, 3, 1, 2};
    vkf_tensor tb = mk(VKF_DTYPE_I32, 2, 2, bad);
    VKT_CHECK(run1(VKF_OP_MUL_MAT_ID, &ty, &tx, &tw, &tb, NULL, &p, 0) ==
                  VKF_ERROR_INVALID_ARGUMENT,
              "mul_mat_id: an expert id past n_expert is an error");

    /* gate weights: gathered; renormalised; softmax over the k; scaled */
    float pr[4] = {0.1f, 0.4f, 0.2f, 0.3f}, zero[4] = {0};
    const int32_t sel[2] = {1, 3};
    vkf_tensor tp = mk(VKF_DTYPE_F32, 1, 4, pr), ts = mk(VKF_DTYPE_I32, 1, 2, sel),
               tg = mk(VKF_DTYPE_F32, 1, 2, NULL), tz = mk(VKF_DTYPE_F32, 1, 4, zero);
    memset(&p, 0, sizeof p);
    VKT_OK(run1(VKF_OP_MOE_WEIGHTS, &tg, &tp, &ts, NULL, NULL, &p, 0));
    VKT_CHECK(f(&tg)[0] == 0.4f && f(&tg)[1] == 0.3f, "moe_weights: gathered");
    p.moe.norm = 1;
    p.moe.scale = 2.0f;
    VKT_OK(run1(VKF_OP_MOE_WEIGHTS, &tg, &tp, &ts, NULL, NULL, &p, 0));
    VKT_CHECK(fabsf(f(&tg)[0] - 8.0f / 7) < 1e-6f && fabsf(f(&tg)[1] - 6.0f / 7) < 1e-6f,
              "moe_weights: renormalised then scaled: %g %g", f(&tg)[0], f(&tg)[1]);
    VKT_OK(run1(VKF_OP_MOE_WEIGHTS, &tg, &tz, &ts, NULL, NULL, &p, 0));
    VKT_CHECK(f(&tg)[0] == 0.0f && f(&tg)[1] == 0.0f, "moe_weights: a zero sum is clamped");
    memset(&p, 0, sizeof p);
    p.moe.softmax_w = 1;
    VKT_OK(run1(VKF_OP_MOE_WEIGHTS, &tg, &tp, &ts, NULL, NULL, &p, 0));
    float s0 = 1.0f / (1.0f + expf(-0.1f));
    VKT_CHECK(fabsf(f(&tg)[0] - s0) < 1e-6f && fabsf(f(&tg)[1] - (1 - s0)) < 1e-6f,
              "moe_weights: softmax over the k: %g %g", f(&tg)[0], f(&tg)[1]);

    /* the weighted sum adds expert 0, 1, 2 in that order: (1e8 + 1) - 1e8 is 0 in f32 */
    float ex[3] = {1e8f, 1.0f, -1e8f}, ones[3] = {1, 1, 1};
    vkf_tensor te = mk(VKF_DTYPE_F32, 3, 1, ex), to = mk(VKF_DTYPE_F32, 1, 3, ones),
               tsum = mk(VKF_DTYPE_F32, 1, 1, NULL);
    VKT_OK(run1(VKF_OP_MOE_SUM, &tsum, &te, &to, NULL, NULL, NULL, 0));
    VKT_CHECK(f(&tsum)[0] == 0.0f, "moe_sum: in expert order, got %g", f(&tsum)[0]);

    /* groups of 4 scored by their two largest: 6, 4 (ties inside), 9 */
    float gx[12] = {1, 5, 0, 0, 2, 2, 2, 2, 9, -10, 0, 0};
    vkf_tensor tgx = mk(VKF_DTYPE_F32, 1, 12, gx), tgy = mk(VKF_DTYPE_F32, 1, 12, NULL);
    memset(&p, 0, sizeof p);
    p.moe.n_group = 3;
    p.moe.n_group_used = 2;
    VKT_OK(run1(VKF_OP_MOE_GROUP_MASK, &tgy, &tgx, NULL, NULL, NULL, &p, 0));
    int ok = 1;
    for (int j = 0; j < 12; j++)
        ok &= (j / 4 == 1) ? isinf(f(&tgy)[j]) && f(&tgy)[j] < 0 : f(&tgy)[j] == gx[j];
    VKT_CHECK(ok, "moe_group_mask: groups 0 and 2 kept, group 1 masked");
    float tie[4] = {1, 2, 2, 1};
    vkf_tensor ttx = mk(VKF_DTYPE_F32, 1, 4, tie), tty = mk(VKF_DTYPE_F32, 1, 4, NULL);
    p.moe.n_group = 2;
    p.moe.n_group_used = 1;
    VKT_OK(run1(VKF_OP_MOE_GROUP_MASK, &tty, &ttx, NULL, NULL, NULL, &p, 0));
    VKT_CHECK(f(&tty)[0] == 1 && isinf(f(&tty)[2]), "moe_group_mask: a tie keeps the lower group");

    float sx[3] = {0.0f, 40.0f, -2.0f};
    vkf_tensor tsx = mk(VKF_DTYPE_F32, 1, 3, sx), tsy = mk(VKF_DTYPE_F32, 1, 3, NULL);
    memset(&p, 0, sizeof p);
    p.unary.act = VKF_UNARY_SIGMOID;
    VKT_OK(run1(VKF_OP_UNARY, &tsy, &tsx, NULL, NULL, NULL, &p, 0));
    VKT_CHECK(f(&tsy)[0] == 0.5f && f(&tsy)[1] == 1.0f && fabsf(f(&tsy)[2] - 0.11920292f) < 1e-7f,
              "sigmoid: %g %g %g", f(&tsy)[0], f(&tsy)[1], f(&tsy)[2]);
}

/* DeepSeek-V3's routing as the ops chain it (no architecture here uses it yet): sigmoid scores,
 * a per-expert bias for the choice only, the best 2 of 4 groups, top-2 inside them, the weights
 * from the unbiased scores, renormalised and scaled. Scores s and bias b chosen so the groups
 * matter: biased s + b = [.9 .1 | 1 .6 | .2 .3 | .7 .8], group sums 1, 1.6, .5, 1.5 keep groups 1
 * and 3, so the experts are 2 and 7 (without groups: 2 and 0); weights 2.5 * (.5, .8) / 1.3. */
static void test_moe_grouped_routing(void) {
    const float sc[8] = {0.9f, 0.1f, 0.5f, 0.6f, 0.2f, 0.3f, 0.7f, 0.8f};
    float lg[8], bias[8] = {0, 0, 0.5f, 0, 0, 0, 0, 0};
    for (int e = 0; e < 8; e++)
        lg[e] = logf(sc[e] / (1 - sc[e]));
    vkf_tensor tl = mk(VKF_DTYPE_F32, 1, 8, lg), tb = mk(VKF_DTYPE_F32, 1, 8, bias),
               tp = mk(VKF_DTYPE_F32, 1, 8, NULL), tsel = mk(VKF_DTYPE_F32, 1, 8, NULL),
               tm = mk(VKF_DTYPE_F32, 1, 8, NULL), ti = mk(VKF_DTYPE_I32, 1, 2, NULL),
               tw = mk(VKF_DTYPE_F32, 1, 2, NULL);
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.unary.act = VKF_UNARY_SIGMOID;
    VKT_OK(run1(VKF_OP_UNARY, &tp, &tl, NULL, NULL, NULL, &p, 0));
    VKT_OK(run1(VKF_OP_ADD, &tsel, &tp, &tb, NULL, NULL, NULL, 0));
    memset(&p, 0, sizeof p);
    p.moe.n_group = 4;
    p.moe.n_group_used = 2;
    VKT_OK(run1(VKF_OP_MOE_GROUP_MASK, &tm, &tsel, NULL, NULL, NULL, &p, 0));
    memset(&p, 0, sizeof p);
    p.topk.k = 2;
    VKT_OK(run1(VKF_OP_TOPK, &ti, &tm, NULL, NULL, NULL, &p, 0));
    const int32_t *ids = (const int32_t *)f(&ti);
    VKT_CHECK(ids[0] == 2 && ids[1] == 7, "grouped routing chose %d, %d (want 2, 7)", ids[0],
              ids[1]);
    VKT_OK(run1(VKF_OP_TOPK, &ti, &tsel, NULL, NULL, NULL, &p, 0));
    VKT_CHECK(ids[0] == 2 && ids[1] == 0, "without groups: %d, %d (want 2, 0)", ids[0], ids[1]);
    VKT_OK(run1(VKF_OP_TOPK, &ti, &tm, NULL, NULL, NULL, &p, 0));
    memset(&p, 0, sizeof p);
    p.moe.norm = 1;
    p.moe.scale = 2.5f;
    VKT_OK(run1(VKF_OP_MOE_WEIGHTS, &tw, &tp, &ti, NULL, NULL, &p, 0));
    VKT_CHECK(fabsf(f(&tw)[0] - 2.5f * 0.5f / 1.3f) < 1e-6f &&
                  fabsf(f(&tw)[1] - 2.5f * 0.8f / 1.3f) < 1e-6f,
              "grouped routing weights %g %g", f(&tw)[0], f(&tw)[1]);
}

int main(void) {
    VKT_OK(vkf_backend_cpu_create(&cpu));
    test_softmax_and_norms();
    test_activations();
    test_matmul_embed();
    test_positions();
    test_attention();
    test_pool();
    test_select_and_plan();
    test_moe();
    test_moe_grouped_routing();
    vkf_backend_free(cpu); /* test tensors leak with the process; fine for a test */
    return vkt_finish();
}
