/* The decode kernel on CPU drivers (ROWSEQ in shaders/matmul_texel.comp): whether a matmul
 * takes it, how its lanes read their blocks, and how many weight rows a subgroup walks so that
 * the driver's threads share the workgroups evenly. Numbers are lavapipe's (bench/RESULTS.md). */
#include <stdint.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "core/wtype.h"

/* ROWSEQ in matmul_texel.comp: decode (M = 1) on CPU drivers, split-K, when every lane's share
 * of a row fits ROWSEQ units (held in registers): the subgroup walks its rows one after
 * another. Returns the units per lane, or 0. VKF_NO_ROWSEQ=1 turns it off,
 * and so does VKF_GPU_TABLE=1 (lavapipe taking the GPUs' choices). VKF_ROWSEQ=1 (an experiment
 * for GPUs, whose split-K decode reads 4-8 activation texels per weight texel, bench/RESULTS.md)
 * takes it on any device; VKF_ROWSEQ_R then sets the rows per subgroup. Sets *pair to 2 where
 * the lanes take two rows' units as one run (RS_P in the shader), else 1. */
int vkf_vk_mm_rowseq(const vkf_vk_backend *vb, const vkf_vk_mm_cfg *cfg, int64_t M, int64_t K,
                     vkf_dtype wt, int small, int *pair) {
    *pair = 1;
    int any = vb->xp.rowseq;
    if (M != 1 || cfg->lanes || small || !vb->caps.subgroup_size || vb->xp.no_rowseq ||
        (!any && !vkf_vk_plan_cpu(vb)))
        return 0;
    int64_t unit = vkf_vk_wunit(wt),
            per = (K / unit + vb->caps.subgroup_size - 1) / vb->caps.subgroup_size;
    /* at most 32 units and 448 activation texels per lane (the units are unrolled): every
     * ffn_down of the 0.5B-8B models (K = 4864..14336). 1xNxK CPU ms, split-K -> ROWSEQ (weights
     * read cold, bench/RESULTS.md): K = 5632 (22 units) Q4_0 2.36-2.62 -> 1.81-2.28, Q8_0
     * 2.78-2.98 -> 2.37-2.43; K = 6912 Q4_K (14) 1.95-1.99 -> 1.18, Q6_K 3.8-4.0 -> 2.19; K =
     * 8192 (N = 2048) Q4_0 (32) 3.16-3.34 -> 2.46-2.48, Q4_K (16) 3.85-3.92 -> 2.40, Q6_K 7.0-7.6
     * -> 4.3-4.7, Q8_0 3.5-3.7 either way; K = 14336 (N = 4096) Q4_K (28) 12.4-12.5 -> 8.3-9.9,
     * Q6_K 22.8-23.3 -> 14.6-14.8. Past 32 units it loses: K = 11008 Q4_0 (43) 8.4-8.5 ->
     * 10.5-11.6, K = 14336 Q4_0 (56) 10.5 -> 15.0 */
    int64_t mx = 1792 / unit, cap = 32;
    if (mx > cap) mx = cap;
    /* exactly the units a lane needs: llvmpipe runs an iteration whose lanes are all masked
     * off at full cost, so rounding up to a few pipeline variants (4, 8, 12, ...) cost K = 1152
     * (gemma-3-1b: 5 units, run as 8) 29-40% (1x16384x1152 CPU ms: Q4_0 5.03 -> 3.57, Q8_0
     * 6.1-7.2 -> 4.2-4.4); a model has one or two such K */
    int64_t rs = per;
    /* rows whose units leave the last round of lanes part idle (10% of the slots or more), when
     * two rows' units split evenly into at most 16 a lane: two rows a step (RS_P = 2).
     * gemma-3-1b's K = 1152 (36 blocks, 4.5 a lane) and Qwen2.5-0.5B's K = 896 (28); llvmpipe
     * runs the idle lanes at full cost. 1xNxK CPU ms: 1x262144x1152 Q8_0 (gemma's LM head)
     * 57.9-58.0 -> 52.1-52.6, 1x6912x1152 Q5_0 1.76-2.01 -> 1.68-1.72; with 27 units a lane
     * (K = 6912 Q4_K, 3.7% idle) it lost, 1.08-1.11 -> 1.39-1.47 (bench/RESULTS.md).
     * VKF_NO_RSPAIR=1 turns it off. */
    int64_t S = vb->caps.subgroup_size, units = K / unit;
    if (units % S && (2 * units) % S == 0 && (per * S - units) * 10 >= units &&
        2 * units / S <= 16 && 2 * units / S <= mx && !vb->xp.no_rspair) {
        *pair = 2;
        return (int)(2 * units / S);
    }
    return rs <= mx ? (int)rs : 0;
}

/* ROWSEQ_CH in matmul_texel.comp: for the types whose step is one block of 32 values (Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL), the fewest consecutive blocks whose bytes fill whole texels
 * (Q4_0: 8 blocks of 18 bytes in 9 texels), which a ROWSEQ lane then decodes at offsets known
 * at compile time, without realigning. Only when the row's chunks split evenly among the subgroup's
 * lanes (a lane whose chunk is past the row would idle at full cost on a CPU driver), every row
 * starts on a texel, and at most 11 texels a chunk. 1x32000x2048 on lavapipe, CPU ms, single blocks
 * -> chunks: Q4_1 11.7 -> 8.6-9.4, Q5_1 14.4 -> 9.7-10.5, IQ4_NL 20.6 -> 15.3-15.9, Q5_0 13.5-14.2
 * -> 11.4-12.3, Q4_0 9.1-9.6 -> 8.3-9.4; Q8_0 (17 texels) 11.1 -> 14.6-16.4: lanes reading
 * 272 bytes apart instead of 34 cost more than the realigning saves (bench/RESULTS.md).
 * Returns the blocks per chunk and sets *texels, or 0. VKF_NO_ROWSEQ_CH=1 turns it off. */
int vkf_vk_rowseq_chunk(const vkf_vk_caps *c, const vkf_switches_xp *xp, const vkf_vk_mm_group *g,
                        int64_t K, int *texels) {
    vkf_dtype t = g->w[0]->dtype;
    int64_t S = c->subgroup_size;
    if (!vkf_wtype_is_quant(t) || vkf_dtype_block_elems(t) != 32 || vkf_vk_wunit(t) != 32 ||
        S <= 0 || xp->no_rowseq_ch)
        return 0;
    int64_t bb = (int64_t)vkf_dtype_block_bytes(t), units = K / 32, ch = 1;
    while (ch < 8 && ch * bb % 16)
        ch *= 2;
    if (ch * bb % 16 || ch * bb / 16 > 11 || units % ch || (units / ch) % S) return 0;
    for (int i = 0; i < g->n_mats; i++)
        if ((g->w[i]->buf->offset + g->w[i]->offset) % 16 || vkf_vk_stride_bytes(g->w[i]) % 16)
            return 0;
    *texels = (int)(ch * bb / 16);
    return (int)ch;
}

/* The time of a ROWSEQ dispatch of `R` rows per subgroup on `T` driver threads, in units of one
 * weight row's work (K = 2048: 0.3 us on lavapipe). llvmpipe's pool hands out a dispatch's G
 * workgroups as T runs of G / T, then the G % T left one at a time, each to the first thread
 * free, and the dispatch ends with its slowest thread. The threads do not start together: the
 * driver's queue thread wakes them and then runs on for ~20 us on one CPU, so that CPU's worker
 * starts ~30 us late (`perf sched` on the 2-core VM): VKF_VK_RS_LATE_US. A workgroup costs its
 * rows (twice for SwiGLU's gate and up) and VKF_VK_RS_WG_COST more, the activation loads and
 * the start: 1x11264x2048 Q8_0 lost 0.31 of 3.94 CPU ms with 8 times the workgroups (R 256 ->
 * 32, 5.5 -> 44 of 8 subgroups), 8 us a workgroup, 23 rows. */
#define VKF_VK_RS_WG_COST 24
#define VKF_VK_RS_LATE_US 30
static uint64_t vkf_vk_rowseq_span(const int64_t *n, int n_rows, int64_t K, uint32_t nsg,
                                   uint32_t T, uint32_t R, int nw, uint32_t *groups) {
    /* subgroups, in the grid's order: each matrix's rows padded to R (rows past n are skipped) */
    uint64_t sgs = 0;
    for (int i = 0; i < n_rows; i++)
        sgs += ((uint64_t)n[i] + R - 1) / R;
    uint32_t G = (uint32_t)((sgs + nsg - 1) / nsg);
    *groups = G;
    /* thread 0 starts late: 30 us in rows of K weights (0.3 us a row at K = 2048) */
    uint64_t fin[32] = {0}, per = G / T;
    fin[0] = (uint64_t)VKF_VK_RS_LATE_US * 2048 * 10 / 3 / (uint64_t)(K > 0 ? K : 1);
    for (uint32_t j = 0; j < G;) {
        /* the next piece: a run of `per` workgroups while T runs remain, then single ones */
        uint32_t take = per && j < per * T ? (uint32_t)per : 1u;
        uint64_t cost = 0;
        for (uint32_t q = j; q < j + take; q++) {
            /* the real rows of workgroup q: its subgroups [q * nsg, (q + 1) * nsg) */
            uint64_t s0 = (uint64_t)q * nsg, s1 = s0 + nsg, at = 0;
            cost += VKF_VK_RS_WG_COST;
            for (int i = 0; i < n_rows; i++) {
                uint64_t k = ((uint64_t)n[i] + R - 1) / R, lo = s0 > at ? s0 - at : 0,
                         hi = s1 - at < k ? s1 - at : k;
                if (s1 > at && lo < k) {
                    uint64_t rows_hi = hi * R < (uint64_t)n[i] ? hi * R : (uint64_t)n[i];
                    cost += (rows_hi - lo * R) * (uint64_t)nw;
                }
                at += k;
            }
        }
        uint32_t t = 0; /* the first thread free takes it */
        for (uint32_t u = 1; u < T; u++)
            if (fin[u] < fin[t]) t = u;
        fin[t] += cost;
        j += take;
    }
    uint64_t span = 0;
    for (uint32_t u = 0; u < T; u++)
        if (fin[u] > span) span = fin[u];
    return span;
}

/* weight rows per subgroup of ROWSEQ (a multiple of `step`) for the weight rows n[0..n_rows) of
 * the group's outputs, `nw` weight rows a result (2: SwiGLU). A subgroup loads its lanes'
 * activations once and then walks its rows, so more rows amortize that: 32, doubled up to 256
 * while the dispatch keeps at least 8 workgroups (halved for SwiGLU's two accumulator sets).
 * 1xNxK CPU ms on lavapipe (weights read cold), 32 -> 64 -> 128 -> 256 rows: 1x11264x2048 Q8_0
 * 4.25, 4.06, 3.98, 3.94, Q4_0 3.49, 3.35, 3.29, 3.30; 1x32000x2048 Q4_0 (32 -> 64) 9.9-10.5 ->
 * 9.5; 1x2048x5632 (8 workgroups already) unchanged (bench/RESULTS.md). On a CPU driver the
 * count of workgroups then fits its threads (vkf_vk_rowseq_span): any R from 16 to 256 that ends
 * the dispatch soonest, the fewest workgroups of those. TinyLlama's gate/up (2 x 5632 rows) took
 * 11 workgroups, 6 a thread on one of 2 and 5 on the other, idle 0.25 ms a layer; R 118 makes 6.
 * VKF_ROWSEQ_R overrides; VKF_NO_RS_BALANCE=1 keeps the powers of two. */
uint32_t vkf_vk_rowseq_rows(const vkf_vk_caps *c, const vkf_switches_xp *xp,
                            const vkf_vk_mm_cfg *cfg, const int64_t *n, int n_rows, int64_t K,
                            int nw, uint32_t step) {
    uint64_t v = xp->rowseq_r;
    uint32_t R;
    if (v >= 2 && v <= 256)
        R = (uint32_t)v;
    else {
        uint32_t smax = c->subgroup_max ? c->subgroup_max : 64;
        uint64_t nsg = cfg->wg / smax ? cfg->wg / smax : 1, wrows = 0;
        for (int i = 0; i < n_rows; i++)
            wrows += (uint64_t)n[i] * (uint64_t)nw;
        R = 32;
        while (R < 256 && (wrows + 2u * R * nsg - 1) / (2u * R * nsg) >= 8)
            R *= 2;
        R /= (uint32_t)nw;
        if (c->cpu_threads > 1 && !xp->no_rs_balance) {
            uint32_t best_g = 0;
            uint64_t best = UINT64_MAX;
            for (uint32_t r = 16 / (uint32_t)nw; r <= 256 / (uint32_t)nw; r++) {
                if (r % step) continue;
                uint32_t G;
                uint64_t t =
                    vkf_vk_rowseq_span(n, n_rows, K, (uint32_t)nsg, c->cpu_threads, r, nw, &G);
                if (t < best || (t == best && G < best_g)) best = t, best_g = G, R = r;
            }
        }
    }
    R -= R % step;
    return R ? R : step;
}
