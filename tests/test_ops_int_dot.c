/* The integer-dot decode path (shaders/quantize_q8.comp + matmul_q8.comp) against its reference,
 * the CPU backend's ggml-activation mode (docs/DESIGN.md, 'Precision'): every quantized weight
 * type, M = 1..8, K of one and of several activation blocks, ragged N, with and without bias. Two
 * Vulkan contexts run each case: OpSDot (VKF_INT_DOT=on: the path wherever valid, whatever the
 * table) and the plain integer fallback (VKF_INT_DOT=plain); their results must be bit-identical
 * (integer sums are exact and the float arithmetic is the same), which the two harness runs show as
 * equal NMSE and max|d| against the same reference.
 *
 * Teeth: the float kernels (f32 activations) differ from the ggml-mode reference by the
 * activations' Q8 rounding, NMSE 1e-5 .. 1e-7 on these inputs (test_ops_gpu_table's matmul
 * cases, measured with the path on), so a case that silently took them fails here; a wrong
 * block decode, scale or offset is an NMSE of 1e-3 .. 1. ctest runs it under VKF_GPU_TABLE=1,
 * the GPUs' configuration (2 rows per subgroup, 4 activation rows per workgroup), and with
 * VKT_INT_DOT_QUICK=1 in the CPU drivers' (8 x 8), where VKF_INT_DOT=on forces the path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/vulkan/vk_backend.h"
#include "core/dtype.h"
#include "graph/backend.h"
#include "graph/graph.h"
#include "graph/op_harness.h"
#include "runtime/context.h"
#include "testutil.h"

/* Same activation quants (the GPU quantizes as ggml's x86 code: roundEven of x * 127 / max,
 * the same f16 scales), the same integer sums; only the float combination of the block sums
 * runs in another order (per unit, then a subgroup tree, against ggml's 8 lanes): relative
 * error ~ sqrt(K / 32) * 6e-8 per output, NMSE < 1e-12 expected, measured <= 3e-13. A GPU whose
 * division 127 / max rounds differently (GLSL allows 2.5 ulp; lavapipe's is exact) may put one
 * activation quant a step off in rare blocks: one d_a * w term in a sum of K, NMSE ~1e-9 at
 * worst. 1e-8 keeps two orders of margin below the float kernels' 1e-7 .. 1e-5. */
#define THR_INT_DOT 1e-8
#define WHY_INT_DOT                                                                                \
    "same Q8 activation quants and integer sums as ggml; float block sums in another order"

/* VKT_INT_DOT_QUICK=1: Q4_0 and Q4_K at M = 1 and 8 only (the run in the CPU drivers' table,
 * whose 8 x 8 accumulators LLVM compiles in ~1.4 s a pipeline: the full table cold took 140 s) */
static int g_quick;

/* ------------------------------------------------------------------ the folded RMSNorm */

/* y = RMSNorm(x) * g . W^T on be (x [M,K], g [1,K], W [N,K] of type wt; fixed data): on Vulkan a
 * NORM group, whose quantizer normalizes the rows (one workgroup per row: past 2048 values its
 * invocations take several passes). y gets M * N floats. */
static vkf_status norm_matmul(vkf_backend *be, vkf_dtype wt, int64_t M, int64_t K, int64_t N,
                              float *y) {
    uint32_t rng = 77u;
    float *xd = malloc(sizeof *xd * (size_t)(M * K)), *gd = malloc(sizeof *gd * (size_t)K);
    float *row = malloc(sizeof *row * (size_t)K);
    size_t rb = vkf_dtype_row_bytes(wt, K);
    unsigned char *wd = malloc(rb * (size_t)N);
    vkf_status st = xd && gd && row && wd ? VKF_OK : VKF_ERROR_OUT_OF_MEMORY;
    for (int64_t i = 0; st == VKF_OK && i < M * K; i++) {
        rng = rng * 1664525u + 1013904223u;
        xd[i] = ((float)(rng >> 8) / 16777216.0f - 0.5f) * 4.0f + 0.3f;
    }
    for (int64_t i = 0; st == VKF_OK && i < K; i++)
        gd[i] = 1.0f + 0.1f * (float)((i * 7) % 13 - 6) / 6.0f;
    for (int64_t n = 0; st == VKF_OK && n < N; n++) {
        for (int64_t k = 0; k < K; k++) {
            rng = rng * 1664525u + 1013904223u;
            row[k] = (float)(rng >> 8) / 16777216.0f - 0.5f;
        }
        vkf_quantize_row(wt, row, wd + rb * (size_t)n, K);
    }
    vkf_tensor x = vkf_tensor_make(VKF_DTYPE_F32, M, K, "x"),
               g = vkf_tensor_make(VKF_DTYPE_F32, 1, K, "g"), w = vkf_tensor_make(wt, N, K, "w"),
               d = vkf_tensor_make(VKF_DTYPE_F32, M, N, "y");
    if (st == VKF_OK) st = vkf_tensor_alloc(be, &x, VKF_BUFFER_ACTIVATIONS, xd);
    if (st == VKF_OK) st = vkf_tensor_alloc(be, &g, VKF_BUFFER_WEIGHTS, gd);
    if (st == VKF_OK) st = vkf_tensor_alloc(be, &w, VKF_BUFFER_WEIGHTS, wd);
    if (st == VKF_OK) st = vkf_tensor_alloc(be, &d, VKF_BUFFER_ACTIVATIONS, NULL);
    vkf_graph *gr = NULL;
    if (st == VKF_OK) st = vkf_graph_create(be, "norm_matmul", &gr);
    vkf_tensor *h = gr ? vkf_graph_tensor(gr, VKF_DTYPE_F32, M, K, "h") : NULL;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.norm.eps = 1e-5f;
    if (st == VKF_OK) st = vkf_graph_add(gr, VKF_OP_RMSNORM, h, &x, &g, NULL, NULL, &p);
    memset(&p, 0, sizeof p);
    if (st == VKF_OK) st = vkf_graph_add(gr, VKF_OP_MATMUL, &d, h, &w, NULL, NULL, &p);
    if (st == VKF_OK) st = vkf_graph_plan(gr);
    vkf_vk_stats s0 = vkf_backend_vulkan_stats(be);
    if (st == VKF_OK) st = be->i->graph_compute(be, gr, 0);
    vkf_vk_stats s1 = vkf_backend_vulkan_stats(be);
    /* on Vulkan one group: the quantizer (with the norm) and the matmul, or the float kernel */
    if (st == VKF_OK && vkf_backend_is_vulkan(be))
        VKT_CHECK(s1.dispatches - s0.dispatches <= 2,
                  "rmsnorm + matmul: %llu dispatches, not fused",
                  (unsigned long long)(s1.dispatches - s0.dispatches));
    if (st == VKF_OK) st = vkf_tensor_read_f32(be, &d, y);
    vkf_graph_free(gr);
    vkf_tensor *ts[4] = {&x, &g, &w, &d};
    for (int i = 0; i < 4; i++)
        if (ts[i]->buf) be->i->buffer_free(be, ts[i]->buf);
    free(xd);
    free(gd);
    free(row);
    free(wd);
    return st;
}

/* The NORM groups against the ggml mode (RMSNorm, then the matmul on Q8 activations), K of 2048
 * values (one pass), 4096 (two) and 6144 (three), against the float kernels' NMSE on the same
 * graph. The two sides normalize in another order (the ggml mode sums in double): a value that
 * lands on a quant's rounding boundary moves by one step, ~1.5e-7 of NMSE each at K = 4096;
 * expected rarely (a 1-ulp change meets a boundary about once in 1e5 values); none measured. 1e-6
 * allows a few, 10x below the float kernels (Q8 rounding, ~1e-5). */
#define THR_NORM_GROUP 1e-6
static void norm_groups(vkf_backend *ref, vkf_backend *vk, vkf_backend *vk_float) {
    static const struct {
        vkf_dtype wt;
        int64_t m, k;
    } cs[] = {{VKF_DTYPE_Q4_0, 1, 2048},
              {VKF_DTYPE_Q4_0, 3, 4096},
              {VKF_DTYPE_Q8_0, 1, 6144},
              {VKF_DTYPE_Q4_K, 2, 4096},
              {VKF_DTYPE_Q6_K, 1, 6144}};
    for (size_t i = 0; i < (g_quick ? 2 : sizeof cs / sizeof cs[0]); i++) {
        int64_t N = 37;
        size_t n = (size_t)(cs[i].m * N);
        float *y0 = malloc(n * 4), *y1 = malloc(n * 4), *y2 = malloc(n * 4);
        if (!y0 || !y1 || !y2) {
            VKT_CHECK(0, "out of memory");
            free(y0);
            free(y1);
            free(y2);
            return;
        }
        VKT_OK(norm_matmul(ref, cs[i].wt, cs[i].m, cs[i].k, N, y0));
        VKT_OK(norm_matmul(vk, cs[i].wt, cs[i].m, cs[i].k, N, y1));
        VKT_OK(norm_matmul(vk_float, cs[i].wt, cs[i].m, cs[i].k, N, y2));
        double e = vkt_nmse(y1, y0, n, NULL), ef = vkt_nmse(y2, y0, n, NULL);
        printf("rmsnorm + matmul %s M=%lld K=%lld: nmse vs ggml mode %.2e (float kernels %.2e)\n",
               vkf_dtype_name(cs[i].wt), (long long)cs[i].m, (long long)cs[i].k, e, ef);
        VKT_CHECK(e <= THR_NORM_GROUP && ef > 10 * THR_NORM_GROUP,
                  "rmsnorm + matmul %s M=%lld K=%lld: nmse %.2e (threshold %.0e), float %.2e",
                  vkf_dtype_name(cs[i].wt), (long long)cs[i].m, (long long)cs[i].k, e,
                  THR_NORM_GROUP, ef);
        free(y0);
        free(y1);
        free(y2);
    }
}

/* `vkformer tune`'s cache: a choice with "int_dot" decides (0: the float kernels), and one from
 * before the integer-dot path, without it, takes the table's (the GPUs' table: on for quantized
 * decode). Seen through the results: the integer-dot path matches the ggml-mode reference to
 * THR_INT_DOT, the float kernels are 1e-7 .. 1e-5 off it. */
static void tune_cache(vkf_backend *ref) {
    char dir[] = "/tmp/vkf_tune_int_dot_XXXXXX";
    if (!mkdtemp(dir)) {
        VKT_CHECK(0, "mkdtemp");
        return;
    }
    vkf_switches sw;
    memset(&sw, 0, sizeof sw);
    snprintf(sw.cache_dir, sizeof sw.cache_dir, "%s", dir);
    VKT_OK(vkf_switches_set(&sw, "gpu_table", "1"));
    vkf_backend_vulkan_params vp = {.switches = &sw};
    vkf_backend *be = NULL;
    VKT_OK(vkf_backend_vulkan_create_ex(&vp, &be));
    if (!be) return;
    const vkf_vk_caps *c = vkf_backend_vulkan_caps(be);
    int int_dot = c->int_dot;
    char path[1400], uuid[17];
    for (int i = 0; i < 8; i++)
        snprintf(uuid + 2 * i, 3, "%02x", c->pipeline_cache_uuid[i]);
    snprintf(path, sizeof path, "%s/tune_%04x_%04x_%08x_%s.json", dir, c->vendor_id, c->device_id,
             c->driver_version, uuid);
    vkf_backend_free(be);
    FILE *f = fopen(path, "wb");
    VKT_CHECK(f != NULL, "write %s", path);
    if (!f) return;
    fputs("{\"choices\": [{\"mclass\": 0, \"dtype\": \"Q4_0\", \"kind\": \"texel\", \"wg\": 16, "
          "\"r\": 2, \"tm\": 1, \"lanes\": 0},\n"
          "{\"mclass\": 1, \"dtype\": \"Q4_0\", \"kind\": \"texel\", \"wg\": 16, \"r\": 2, "
          "\"tm\": 4, \"lanes\": 0, \"int_dot\": 0}]}\n",
          f);
    fclose(f);
    VKT_OK(vkf_backend_vulkan_create_ex(&vp, &be));
    for (int k = 0; be && k < 2; k++) {
        vkf_harness_case hc;
        memset(&hc, 0, sizeof hc);
        hc.op = VKF_OP_MATMUL;
        hc.wtype = VKF_DTYPE_Q4_0;
        hc.m = k ? 4 : 1;
        hc.n = 33;
        hc.k = 256;
        vkf_harness_result r;
        VKT_OK(vkf_harness_run(ref, be, &hc, &r));
        int want = k ? 0 : int_dot; /* the old choice: the table's (on where the device has it) */
        printf("tune cache: M=%lld %s: nmse vs ggml mode %.2e\n", (long long)hc.m,
               k ? "\"int_dot\": 0" : "no \"int_dot\"", r.nmse);
        VKT_CHECK(want ? r.nmse <= THR_INT_DOT : r.nmse > 100 * THR_INT_DOT,
                  "tune cache, M=%lld: nmse %.2e, expected the %s path", (long long)hc.m, r.nmse,
                  want ? "integer-dot" : "float");
    }
    vkf_backend_free(be);
    remove(path);
    rmdir(dir);
}

int main(void) {
    g_quick = getenv("VKT_INT_DOT_QUICK") != NULL;
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN, .validate = 1};
    vkf_context *ctx[2] = {NULL, NULL};
    setenv("VKF_INT_DOT", "on", 1);
    VKT_OK(vkf_context_create(&cp, &ctx[0]));
    setenv("VKF_INT_DOT", "plain", 1);
    VKT_OK(vkf_context_create(&cp, &ctx[1]));
    unsetenv("VKF_INT_DOT");
    vkf_context_params rp = {.backend = VKF_BACKEND_CPU, .ggml_activations = VKF_GGML_AVX512_2026};
    vkf_context *ref = NULL;
    VKT_OK(vkf_context_create(&rp, &ref));
    if (!ctx[0] || !ctx[1] || !ref) return vkt_finish();
    printf("device: %s\n", vkf_context_device_name(ctx[0]));

    static const vkf_dtype types[] = {
        VKF_DTYPE_Q4_0,   VKF_DTYPE_Q4_1,   VKF_DTYPE_Q5_0, VKF_DTYPE_Q5_1, VKF_DTYPE_Q8_0,
        VKF_DTYPE_IQ4_NL, VKF_DTYPE_Q2_K,   VKF_DTYPE_Q3_K, VKF_DTYPE_Q4_K, VKF_DTYPE_Q5_K,
        VKF_DTYPE_Q6_K,   VKF_DTYPE_IQ4_XS, VKF_DTYPE_MXFP4};
    /* N ragged (not a multiple of the rows per subgroup or the workgroup), K one block, and
     * several (not a multiple of the subgroup's lanes: 7 blocks; 37 of 32 values) */
    static const int64_t ns[] = {1, 7, 33, 130};
    static const int64_t kb[] = {1, 7, 37};
    double worst = 0;
    char worst_desc[256] = "";
    int n_cases = 0;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        if (g_quick && types[t] != VKF_DTYPE_Q4_0 && types[t] != VKF_DTYPE_Q4_K) continue;
        int64_t be = vkf_dtype_block_elems(types[t]);
        for (int64_t m = 1; m <= 8; m++) {
            if (g_quick && m != 1 && m != 8) continue;
            /* each M once (the validation layer makes a case cost ~0.3 s): K cycles through
             * the block counts (K-quants: 1 and 7 super-blocks), N through the ragged sizes */
            size_t ki = (size_t)(be == 256 ? m % 2 : m % 3);
            {
                vkf_harness_case c;
                memset(&c, 0, sizeof c);
                c.op = VKF_OP_MATMUL;
                c.wtype = types[t];
                c.m = m;
                c.n = ns[(m + (int64_t)t) % 4];
                c.k = kb[ki] * be;
                c.flags = m % 2 ? VKF_HC_BIAS : 0;
                c.thr = THR_INT_DOT;
                c.why = WHY_INT_DOT;
                char desc[256];
                vkf_harness_describe(&c, desc, sizeof desc);
                vkf_harness_result r[2];
                for (int v = 0; v < 2; v++) {
                    vkf_status s = vkf_harness_run(ref->be, ctx[v]->be, &c, &r[v]);
                    VKT_CHECK(s == VKF_OK, "%s (%s): %s", desc, v ? "plain" : "OpSDot",
                              vkf_last_error());
                    if (s != VKF_OK) r[v].pass = 0;
                    VKT_CHECK(r[v].pass, "%s (%s): nmse %.3e (threshold %.0e: %s), max|d| %.3e",
                              desc, v ? "plain" : "OpSDot", r[v].nmse, c.thr, c.why, r[v].max_abs);
                }
                VKT_CHECK(r[0].nmse == r[1].nmse && r[0].max_abs == r[1].max_abs,
                          "%s: OpSDot and the plain fallback differ (nmse %.3e / %.3e)", desc,
                          r[0].nmse, r[1].nmse);
                printf("%-4s %-60s nmse %.2e max|d| %.2e\n", r[0].pass ? "ok" : "FAIL", desc,
                       r[0].nmse, r[0].max_abs);
                if (r[0].nmse >= worst) {
                    worst = r[0].nmse;
                    snprintf(worst_desc, sizeof worst_desc, "%s", desc);
                }
                n_cases++;
            }
        }
    }
    /* rows past 64 blocks: the quantizer's workgroups split the row (2 and 4 of them) */
    static const struct {
        vkf_dtype wt;
        int64_t m, k;
    } longk[] = {{VKF_DTYPE_Q4_0, 2, 4096}, {VKF_DTYPE_Q4_K, 1, 4096}, {VKF_DTYPE_Q5_1, 5, 8192}};
    for (size_t i = 0; i < (g_quick ? 1 : sizeof longk / sizeof longk[0]); i++) {
        vkf_harness_case c;
        memset(&c, 0, sizeof c);
        c.op = VKF_OP_MATMUL;
        c.wtype = longk[i].wt;
        c.m = longk[i].m;
        c.n = 19;
        c.k = longk[i].k;
        c.thr = THR_INT_DOT;
        c.why = WHY_INT_DOT;
        char desc[256];
        vkf_harness_describe(&c, desc, sizeof desc);
        vkf_harness_result r;
        vkf_status st = vkf_harness_run(ref->be, ctx[0]->be, &c, &r);
        VKT_CHECK(st == VKF_OK && r.pass, "%s: nmse %.3e (threshold %.0e: %s)", desc,
                  st == VKF_OK ? r.nmse : -1.0, c.thr, c.why);
        printf("%-4s %-60s nmse %.2e\n", st == VKF_OK && r.pass ? "ok" : "FAIL", desc,
               st == VKF_OK ? r.nmse : -1.0);
    }
    tune_cache(ref->be);
    setenv("VKF_NO_INT_DOT", "1", 1);
    vkf_context *fctx = NULL;
    VKT_OK(vkf_context_create(&cp, &fctx));
    unsetenv("VKF_NO_INT_DOT");
    if (fctx) norm_groups(ref->be, ctx[0]->be, fctx->be);
    vkf_context_free(fctx);
    printf("%d cases, worst nmse %.2e (%s)\n", n_cases, worst, worst_desc);
    vkf_context_free(ref);
    vkf_context_free(ctx[0]);
    vkf_context_free(ctx[1]);
    return vkt_finish();
}
