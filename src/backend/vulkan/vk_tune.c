/* Kernel variants per device (docs/DESIGN.md, 'Cross-vendor by data'): a tuning table keyed by the
 * device's capabilities gives the default matmul variant and tile sizes; `vkformer tune`
 * (vkf_backend_vulkan_tune) times the candidates on the user's device and caches the fastest per
 * shape class and weight type in the cache directory, and those choices override the table.
 *
 * The cache file is tune_<vendor>_<device>_<driver version>_<pipeline cache uuid>.json: a new
 * driver (or device) starts from the table again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "graph/graph.h"

/* ---------------------------------------------------------------- the table */

/* Shape classes: decode (M = 1), small batches (2..8), prefill (M > 8). */
static int vkf_vk_mclass(int64_t M) { return M <= 1 ? 0 : M <= 8 ? 1 : 2; }
static const char *const k_mclass_names[3] = {"decode (M = 1)", "batch (M 2..8)",
                                              "prefill (M > 8)"};

/* Defaults by device kind. CPU drivers (lavapipe, SwiftShader): the texel kernel for every M;
 * split-K with 8 weight rows per subgroup and 8 activation rows for M <= 8; for prefill, weight
 * rows per lane and no split-K (`lanes`: nothing to reduce across lanes, 2-3x faster on
 * lavapipe): 4 rows per lane x 16 activation rows (8 x 8 for the quant types), 8 x 16 from
 * M = 48, 8 x 32 for F32 from M = 256 and 16 x 16 for the other types from M = 64
 * (bench/RESULTS.md). GPUs: the texel split-K kernel for M <= 8 (a
 * bandwidth-bound matrix-vector product reduced with subgroup adds) and the shared-memory
 * tiled kernel for prefill, with smaller tiles where shared memory or invocations are scarce
 * and on vendors whose GPUs favour small workgroups. */
static void vkf_vk_table(const vkf_vk_caps *c, int cpu, int mclass, int64_t M, vkf_dtype wt,
                         vkf_vk_mm_cfg *o) {
    memset(o, 0, sizeof *o);
    o->bm = o->bn = 64;
    o->bk = 16;
    uint32_t sg = c->subgroup_size ? c->subgroup_size : 32;
    /* cpu: a CPU driver's choices (vkf_vk_plan_cpu: not under VKF_GPU_TABLE=1, which gives
     * lavapipe the GPUs', so it exercises them) */
    if (cpu) {
        o->kind = VKF_VK_MM_TEXEL;
        o->wg = sg * 8 < 64 ? 64 : sg * 8;
        o->r = 8;
        o->tm = 8;
        if (mclass == 2) {
            /* LLVM's compile time grows with the R x TM accumulators (cold cache, llama-tiny F32,
             * 20-token prompt: R 8 x TM 32 15.5 s, 8 x 16 6.0 s, 4 x 16 2.9 s, 8 x 8 2.8 s) while
             * short prompts run about as fast with 64 of them, so more only where the prompt is
             * long enough to pay (512x4096x4096 F32: 57.8 GFLOP/s at 8 x 32, 40.8 at 8 x 16) */
            int quant = vkf_wtype_is_quant(wt);
            o->lanes = 1;
            o->r = M >= 48 || quant ? 8 : 4;
            o->tm = quant ? 8 : M >= 256 && wt == VKF_DTYPE_F32 ? 32 : 16;
            o->wg = sg * 4 < 32 ? 32 : sg * 4;
            /* from 64 rows, 16 x 16 for every type but F32 (512x2048x2048, GFLOP/s, 8 x 8 or
             * 8 x 16 -> 16 x 16: Q8_0 48.5 -> 56.4, Q4_0 48.8 -> 60.3, Q4_K 46.7 -> 50.4, Q5_K
             * 40.1-41.6 -> 43.0-44.6, Q6_K 32.0-32.7 -> 36.3-36.8, F16 60.4 -> 67.5; F32 is
             * slower, 58.7 -> 53.4; bench/RESULTS.md); its compile costs ~0.7 s more once,
             * hence not for short prompts */
            if (M >= 64 && wt != VKF_DTYPE_F32) o->r = o->tm = 16;
        }
        return;
    }
    if (mclass < 2) {
        /* 4 activation rows per pass: on an H200 8 rows fell off a cliff for the quantized
         * types (1x4096x4096 at M = 8, ms, TM 8 -> 4: Q4_0 0.439 -> 0.083, Q8_0 0.466 -> 0.088,
         * Q4_K 0.535 -> 0.087; F16 0.043 -> 0.032; bench/RESULTS.md) */
        /* one subgroup per workgroup (its largest size), 2 weight rows each, reduced with
         * subgroup adds and no shared memory, reading storage buffers (W_SSBO, vk_plan.c): the
         * shape of llama.cpp's mul_mat_vec; the H200 runs had 4 such subgroups per workgroup,
         * each with its own rows (the same work per subgroup). GPU speed of this choice is
         * unmeasured (no GPU lent since). */
        uint32_t smax = c->subgroup_max > sg ? c->subgroup_max : sg;
        o->kind = VKF_VK_MM_TEXEL;
        o->wg = smax;
        o->r = 2;
        o->tm = 4;
        /* quantized weights: activations quantized to int8 blocks and integer dot products
         * (matmul_q8.comp, as llama.cpp's MMVQ) where the device has shaderIntegerDotProduct
         * (vk_plan.c checks it and the shape); GPU speed unmeasured (no GPU lent since) */
        o->int_dot = vkf_wtype_is_quant(wt) ? 1u : 0u;
        return;
    }
    o->kind = VKF_VK_MM_TILED;
    o->wg = 256;
    if (c->max_shared < 2 * o->bk * (o->bm + o->bn) * 4 + 1024 || c->max_wg_invocations < 256 ||
        c->vendor_id == 0x8086 || c->vendor_id == 0x13b5 ||
        c->vendor_id == 0x5143) { /* Intel, ARM, Qualcomm */
        o->bm = o->bn = 32;
        o->wg = 64;
    }
}

/* ---------------------------------------------------------------- the cache file */

static void vkf_vk_tune_path(const vkf_vk_backend *vb, char *out, size_t n) {
    const vkf_vk_caps *c = &vb->caps;
    char uuid[17];
    for (int i = 0; i < 8; i++)
        snprintf(uuid + 2 * i, 3, "%02x", c->pipeline_cache_uuid[i]);
    snprintf(out, n, "%s/tune_%04x_%04x_%08x_%s.json", vb->cache_dir, c->vendor_id, c->device_id,
             c->driver_version, uuid);
}

static const char *vkf_vk_kind_name(vkf_vk_mm_kind k) {
    return k == VKF_VK_MM_TEXEL ? "texel" : "tiled";
}

static int vkf_vk_tune_alloc(vkf_vk_backend *vb) {
    if (vb->tune_cfg) return 1;
    vb->tune_cfg = calloc(3 * VKF_DTYPE_COUNT, sizeof *vb->tune_cfg);
    return vb->tune_cfg != NULL;
}

/* Reads the cached choices, once, when the backend is made; a missing or malformed file leaves
 * the table in charge. */
void vkf_vk_tune_init(vkf_vk_backend *vb) {
    if (!vb->cache_dir[0] || vb->sw.no_tune) return;
    char path[1200];
    vkf_vk_tune_path(vb, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *root = cJSON_Parse(buf);
    cJSON *arr = root ? cJSON_GetObjectItem(root, "choices") : NULL;
    cJSON *e;
    if (!vkf_vk_tune_alloc(vb)) {
        cJSON_Delete(root);
        return;
    }
    cJSON_ArrayForEach(e, arr) {
        cJSON *mc = cJSON_GetObjectItem(e, "mclass"), *dt = cJSON_GetObjectItem(e, "dtype");
        cJSON *kind = cJSON_GetObjectItem(e, "kind");
        if (!cJSON_IsNumber(mc) || !cJSON_IsString(dt) || !cJSON_IsString(kind)) continue;
        int m = mc->valueint, t = -1;
        for (int i = 0; i < VKF_DTYPE_COUNT; i++)
            if (strcmp(vkf_dtype_name((vkf_dtype)i), dt->valuestring) == 0) t = i;
        if (m < 0 || m > 2 || t < 0) continue;
        vkf_vk_mm_cfg c;
        memset(&c, 0, sizeof c);
        c.kind = strcmp(kind->valuestring, "tiled") == 0 ? VKF_VK_MM_TILED : VKF_VK_MM_TEXEL;
#define U(name)                                                                                    \
    (uint32_t)(cJSON_IsNumber(cJSON_GetObjectItem(e, #name))                                       \
                   ? cJSON_GetObjectItem(e, #name)->valueint                                       \
                   : 0)
        c.wg = U(wg);
        c.r = U(r);
        c.tm = U(tm);
        c.lanes = U(lanes) ? 1 : 0;
        c.bm = U(bm);
        c.bn = U(bn);
        c.bk = U(bk);
        c.tt = U(tt);
        /* files written before the integer-dot path have no "int_dot": the table's choice */
        if (cJSON_IsNumber(cJSON_GetObjectItem(e, "int_dot"))) {
            c.int_dot = U(int_dot) ? 1u : 0u;
        } else {
            vkf_vk_mm_cfg tc;
            vkf_vk_table(&vb->caps, vkf_vk_plan_cpu(vb), m,
                         m == 0   ? 1
                         : m == 1 ? 4
                                  : 64,
                         (vkf_dtype)t, &tc);
            c.int_dot = c.kind == tc.kind ? tc.int_dot : 0u;
        }
#undef U
        /* sanity: what the kernels accept */
        if (c.kind == VKF_VK_MM_TEXEL && (c.wg < 1 || c.wg > vb->caps.max_wg_invocations ||
                                          c.r < 1 || c.r > 32 || c.tm < 1 || c.tm > 32))
            continue;
        uint32_t tt = c.tt ? c.tt : 4;
        if (c.kind == VKF_VK_MM_TILED &&
            ((tt != 4 && tt != 8) || c.bm % tt || c.bn % tt || c.bm < 16 || c.bn < 16 || c.bk < 4 ||
             c.bk > 64 || 2 * c.bk * (c.bm + c.bn) * 4 > vb->caps.max_shared ||
             (c.bm / tt) * (c.bn / tt) > vb->caps.max_wg_invocations))
            continue;
        vb->tune_cfg[m * VKF_DTYPE_COUNT + t] = c;
        vb->tune_have[m][t] = 1;
    }
    cJSON_Delete(root);
}

void vkf_vk_tune_destroy(vkf_vk_backend *vb) {
    free(vb->tune_cfg);
    vb->tune_cfg = NULL;
}

vkf_status vkf_vk_tune_matmul(const vkf_vk_backend *vb, int64_t M, int64_t N, int64_t K,
                              vkf_dtype wtype, vkf_vk_mm_cfg *out) {
    (void)N;
    (void)K;
    if (vb->tune_force) {
        *out = *vb->tune_force;
        return VKF_OK;
    }
    int mc = vkf_vk_mclass(M);
    vkf_vk_table(&vb->caps, vkf_vk_plan_cpu(vb), mc, M, wtype, out);
    if ((unsigned)wtype < VKF_DTYPE_COUNT && vb->tune_have[mc][wtype])
        *out = vb->tune_cfg[mc * VKF_DTYPE_COUNT + wtype];
    return VKF_OK;
}

/* ---------------------------------------------------------------- the autotuner */

typedef struct vkf_vk_tune_bench {
    vkf_backend *be;
    vkf_tensor a, w, d;
    vkf_graph *g;
} vkf_vk_tune_bench;

static void vkf_vk_tune_bench_free(vkf_vk_tune_bench *b) {
    vkf_graph_free(b->g);
    b->g = NULL;
    vkf_tensor *ts[3] = {&b->a, &b->w, &b->d};
    for (int i = 0; i < 3; i++)
        if (ts[i]->buf) b->be->i->buffer_free(b->be, ts[i]->buf);
}

static vkf_status vkf_vk_tune_bench_make(vkf_backend *be, int64_t M, int64_t N, int64_t K,
                                         vkf_dtype wt, int reps_per_graph, vkf_vk_tune_bench *b) {
    memset(b, 0, sizeof *b);
    b->be = be;
    b->a = vkf_tensor_make(VKF_DTYPE_F32, M, K, "tune.a");
    b->w = vkf_tensor_make(wt, N, K, "tune.w");
    b->d = vkf_tensor_make(VKF_DTYPE_F32, M, N, "tune.d");
    size_t rb = vkf_dtype_row_bytes(wt, K);
    float *row = malloc(sizeof *row * (size_t)K);
    unsigned char *wd = malloc(rb * (size_t)N);
    float *ad = malloc(sizeof *ad * (size_t)(M * K));
    vkf_status st = row && wd && ad ? VKF_OK : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tune data");
    uint32_t x = 12345;
    for (int64_t r = 0; st == VKF_OK && r < N; r++) {
        for (int64_t c = 0; c < K; c++) {
            x = x * 1664525u + 1013904223u;
            row[c] = (float)(x >> 8) / 16777216.0f - 0.5f;
        }
        if (wt == VKF_DTYPE_F32)
            memcpy(wd + rb * (size_t)r, row, rb);
        else
            vkf_quantize_row(wt, row, wd + rb * (size_t)r, K);
    }
    for (int64_t i = 0; ad && i < M * K; i++)
        ad[i] = (float)(i % 13) * 0.05f - 0.3f;
    if (st == VKF_OK) st = vkf_tensor_alloc(be, &b->a, VKF_BUFFER_ACTIVATIONS, ad);
    if (st == VKF_OK) st = vkf_tensor_alloc(be, &b->w, VKF_BUFFER_WEIGHTS, wd);
    if (st == VKF_OK) st = vkf_tensor_alloc(be, &b->d, VKF_BUFFER_ACTIVATIONS, NULL);
    free(row);
    free(wd);
    free(ad);
    if (st == VKF_OK) st = vkf_graph_create(be, "tune", &b->g);
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    for (int i = 0; st == VKF_OK && i < reps_per_graph; i++)
        st = vkf_graph_add(b->g, VKF_OP_MATMUL, &b->d, &b->a, &b->w, NULL, NULL, &p);
    if (st == VKF_OK) st = vkf_graph_plan(b->g);
    if (st != VKF_OK) vkf_vk_tune_bench_free(b);
    return st;
}

/* Best (minimum) time of `reps` runs of the bench graph with cfg forced, ms per matmul. A
 * candidate the device rejects (pipeline creation, limits) is reported as not runnable. */
static vkf_status vkf_vk_tune_time(vkf_vk_backend *vb, vkf_vk_tune_bench *b,
                                   const vkf_vk_mm_cfg *cfg, int reps, int per_graph, double *ms,
                                   int *ok) {
    vkf_backend *be = &vb->base;
    *ok = 0;
    vb->tune_force = cfg;
    if (b->g->exec) be->i->graph_release(be, b->g);
    vkf_status st = be->i->graph_compute(be, b->g, 0); /* records with cfg, compiles: untimed */
    double best = 1e30;
    for (int i = 0; st == VKF_OK && i < reps; i++) {
        double t0 = vkf_vk_now_ms();
        st = be->i->graph_compute(be, b->g, 0);
        double t = vkf_vk_now_ms() - t0;
        if (t < best) best = t;
    }
    be->i->graph_release(be, b->g);
    vb->tune_force = NULL;
    if (st == VKF_ERROR_SHADER || st == VKF_ERROR_UNSUPPORTED || st == VKF_ERROR_VULKAN)
        return VKF_OK;
    VKF_TRY(st);
    *ok = 1;
    *ms = best / per_graph;
    return VKF_OK;
}

/* The candidates of one shape class (table choice first). */
static int vkf_vk_tune_candidates(const vkf_vk_caps *c, int cpu, int mclass, vkf_dtype wt,
                                  int64_t M, int quick, vkf_vk_mm_cfg *out, int cap) {
    int n = 0;
    vkf_vk_table(c, cpu, mclass, M, wt, &out[n++]);
    uint32_t sg = c->subgroup_size ? c->subgroup_size : 32;
    static const uint32_t rs[] = {2, 4, 8, 16};
    static const uint32_t tms[] = {4, 8, 16};
    uint32_t wgs[2] = {sg * 8 < 64 ? 64 : sg * 8, sg * 16 < 128 ? 128 : sg * 16};
    if (c->texel && c->has_subgroup) {
        for (int wi = 0; wi < (quick ? 1 : 2); wi++) {
            if (wgs[wi] > c->max_wg_invocations) continue;
            for (size_t ri = 0; ri < sizeof rs / sizeof rs[0]; ri++) {
                for (size_t ti = 0; ti < (mclass == 2 ? sizeof tms / sizeof tms[0] : 1); ti++) {
                    if (n == cap) return n;
                    vkf_vk_mm_cfg k;
                    memset(&k, 0, sizeof k);
                    k.kind = VKF_VK_MM_TEXEL;
                    k.wg = wgs[wi];
                    k.r = rs[ri];
                    k.tm = mclass == 2 ? tms[ti] : (uint32_t)M;
                    if (quick && (k.r == 2 || (mclass == 2 && k.tm == 4))) continue;
                    out[n++] = k;
                }
            }
        }
    }
    if (c->texel && c->has_subgroup) { /* rows per lane, no split-K */
        static const uint32_t rs_small[] = {1, 2, 4}, rs_prefill[] = {4, 8, 16};
        static const uint32_t ltms[] = {8, 16, 32}, lwgs[] = {32, 64};
        const uint32_t *lrs = mclass == 2 ? rs_prefill : rs_small;
        size_t ntm = mclass == 2 ? 3 : 1;
        for (size_t wi = 0; wi < 2; wi++)
            for (size_t ri = 0; ri < 3; ri++)
                for (size_t ti = 0; ti < ntm; ti++) {
                    if (n == cap || lwgs[wi] > c->max_wg_invocations) continue;
                    if (quick && (mclass == 2 ? lrs[ri] == 16 || ltms[ti] == 8 : lrs[ri] == 1))
                        continue;
                    vkf_vk_mm_cfg k;
                    memset(&k, 0, sizeof k);
                    k.kind = VKF_VK_MM_TEXEL;
                    k.lanes = 1;
                    k.wg = lwgs[wi];
                    k.r = lrs[ri];
                    k.tm = mclass == 2 ? ltms[ti] : (uint32_t)M;
                    out[n++] = k;
                }
    }
    /* integer dot products on / off (matmul_q8.comp) for quantized decode and small batches on
     * devices with shaderIntegerDotProduct: the split-K candidates again with it toggled (only
     * the table's choice with quick) */
    if (mclass < 2 && c->int_dot && vkf_wtype_is_quant(wt)) {
        int n0 = n;
        for (int i = 0; i < n0 && n < cap; i++) {
            if (out[i].kind != VKF_VK_MM_TEXEL || out[i].lanes || (quick && i > 0)) continue;
            out[n] = out[i];
            out[n].int_dot = !out[i].int_dot;
            n++;
        }
    }
    if (mclass == 2) {
        /* BM, BN, BK, outputs per invocation TT x TT. On an H200 8 x 8 per invocation was not
         * faster (TinyLlama Q4_0 pp512 t/s: 64x64x16x4 7634, 64x128x16x8 7381, 128x128x16x8
         * 7022; 512x4096x4096 F16 at 128x128x8x8 32.7% of the FMA probe, 31.7% at 64x64x16x4),
         * so the table keeps 4 x 4; the tuner tries both on the user's device */
        static const uint32_t tiles[][4] = {{64, 64, 16, 4},  {32, 32, 16, 4},   {64, 32, 8, 4},
                                            {128, 128, 8, 8}, {128, 128, 16, 8}, {64, 64, 16, 8},
                                            {128, 64, 16, 8}};
        for (size_t i = 0; i < (quick ? 1 : sizeof tiles / sizeof tiles[0]) && n < cap; i++) {
            vkf_vk_mm_cfg k;
            memset(&k, 0, sizeof k);
            k.kind = VKF_VK_MM_TILED;
            k.bm = tiles[i][0];
            k.bn = tiles[i][1];
            k.bk = tiles[i][2];
            k.tt = tiles[i][3];
            k.wg = (k.bm / k.tt) * (k.bn / k.tt);
            if (2 * k.bk * (k.bm + k.bn) * 4 + 1024 > c->max_shared || k.wg > c->max_wg_invocations)
                continue;
            out[n++] = k;
        }
    }
    return n;
}

static void vkf_vk_cfg_str(const vkf_vk_mm_cfg *k, int64_t M, char *buf, size_t n) {
    if (k->kind == VKF_VK_MM_TEXEL)
        snprintf(buf, n, "texel wg %u, %u rows/%s, %u act rows%s", k->wg, k->r,
                 k->lanes ? "lane" : "subgroup", k->tm < M ? k->tm : (uint32_t)M,
                 k->int_dot ? ", int8 dot" : "");
    else
        snprintf(buf, n, "tiled %ux%u, k %u, %ux%u per invocation", k->bm, k->bn, k->bk,
                 k->tt ? k->tt : 4, k->tt ? k->tt : 4);
}

/* Writes the choices so far to the tune file, atomically (a temporary file renamed over it). */
static vkf_status vkf_vk_tune_save(vkf_vk_backend *vb, const cJSON *root, char *path_out,
                                   size_t path_n) {
    char path[1200], tmp[1300];
    vkf_vk_tune_path(vb, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    vkf_status st = VKF_OK;
    char *txt = cJSON_Print(root);
    FILE *f = txt ? fopen(tmp, "wb") : NULL;
    if (!f || fputs(txt, f) < 0) st = vkf_error(VKF_ERROR_IO, "tune: cannot write %s", tmp);
    if (f && fclose(f) != 0 && st == VKF_OK)
        st = vkf_error(VKF_ERROR_IO, "tune: cannot write %s", tmp);
    if (st == VKF_OK && rename(tmp, path) != 0)
        st = vkf_error(VKF_ERROR_IO, "tune: cannot rename %s to %s", tmp, path);
    free(txt);
    if (path_out) snprintf(path_out, path_n, "%s", path);
    return st;
}

vkf_status vkf_backend_vulkan_tune(vkf_backend *be, int quick,
                                   void (*log)(void *user, const char *line), void *user,
                                   char *path_out, size_t path_n) {
    if (!vkf_backend_is_vulkan(be))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tune: not a Vulkan backend");
    vkf_vk_backend *vb = vkf_vk(be);
    if (!vb->cache_dir[0])
        return vkf_error(VKF_ERROR_IO,
                         "tune: no cache directory (set VKF_CACHE_DIR, XDG_CACHE_HOME or HOME)");
    if (!vkf_vk_tune_alloc(vb)) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "tune table");
    static const vkf_dtype wts[] = {VKF_DTYPE_F32, VKF_DTYPE_F16, VKF_DTYPE_Q8_0, VKF_DTYPE_Q4_0};
    static const int64_t Ms[3] = {1, 4, 64};
    int64_t NK = quick ? 1024 : 2048;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "device", vb->caps.name);
    cJSON_AddStringToObject(root, "driver", vb->caps.driver_info);
    cJSON *arr = cJSON_AddArrayToObject(root, "choices");
    char line[512], cs[128];
    vkf_status st = VKF_OK;
    for (int mc = 0; mc < 3 && st == VKF_OK; mc++) {
        for (size_t wi = 0; wi < sizeof wts / sizeof wts[0] && st == VKF_OK; wi++) {
            int64_t M = Ms[mc], N = mc == 2 ? NK / 2 : NK, K = mc == 2 ? NK / 2 : NK;
            int per_graph = mc == 2 ? 2 : 8;
            vkf_vk_tune_bench b;
            st = vkf_vk_tune_bench_make(be, M, N, K, wts[wi], per_graph, &b);
            if (st != VKF_OK) break;
            vkf_vk_mm_cfg cand[64];
            int nc = vkf_vk_tune_candidates(&vb->caps, vkf_vk_plan_cpu(vb), mc, wts[wi], M, quick,
                                            cand, 64);
            int best = -1;
            double best_ms = 1e30, table_ms = 0;
            for (int i = 0; i < nc && st == VKF_OK; i++) {
                double ms = 0;
                int ok = 0;
                st = vkf_vk_tune_time(vb, &b, &cand[i], quick ? 2 : 3, per_graph, &ms, &ok);
                if (st != VKF_OK || !ok) continue;
                if (i == 0) table_ms = ms;
                if (ms < best_ms) {
                    best_ms = ms;
                    best = i;
                }
            }
            vkf_vk_tune_bench_free(&b);
            if (st != VKF_OK || best < 0) continue;
            vkf_vk_cfg_str(&cand[best], M, cs, sizeof cs);
            snprintf(line, sizeof line,
                     "%-16s %-5s M=%lld N=%lld K=%lld: %s, %.3f ms (table %.3f ms, %d candidates)",
                     k_mclass_names[mc], vkf_dtype_name(wts[wi]), (long long)M, (long long)N,
                     (long long)K, cs, best_ms, table_ms, nc);
            if (log) log(user, line);
            vb->tune_cfg[mc * VKF_DTYPE_COUNT + wts[wi]] = cand[best];
            vb->tune_have[mc][wts[wi]] = 1;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "mclass", mc);
            cJSON_AddStringToObject(o, "dtype", vkf_dtype_name(wts[wi]));
            cJSON_AddStringToObject(o, "kind", vkf_vk_kind_name(cand[best].kind));
            cJSON_AddNumberToObject(o, "wg", cand[best].wg);
            cJSON_AddNumberToObject(o, "r", cand[best].r);
            cJSON_AddNumberToObject(o, "tm", cand[best].tm);
            cJSON_AddNumberToObject(o, "lanes", cand[best].lanes);
            cJSON_AddNumberToObject(o, "bm", cand[best].bm);
            cJSON_AddNumberToObject(o, "bn", cand[best].bn);
            cJSON_AddNumberToObject(o, "bk", cand[best].bk);
            cJSON_AddNumberToObject(o, "tt", cand[best].tt);
            cJSON_AddNumberToObject(o, "int_dot", cand[best].int_dot);
            cJSON_AddNumberToObject(o, "ms", best_ms);
            cJSON_AddNumberToObject(o, "table_ms", table_ms);
            cJSON_AddItemToArray(arr, o);
            /* saved after every class: an interrupted tune keeps what it measured */
            st = vkf_vk_tune_save(vb, root, path_out, path_n);
        }
    }
    if (st == VKF_OK) st = vkf_vk_tune_save(vb, root, path_out, path_n); /* also when nothing ran */
    cJSON_Delete(root);
    return st;
}
