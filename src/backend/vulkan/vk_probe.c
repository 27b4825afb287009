/* Peak probes and dispatch-overhead probes (shaders/probe.comp), run on the device the
 * benchmarks measure, so every figure has a measured denominator:
 *   - FMA throughput in fp32 (and fp16 where the device has shaderFloat16), GFLOP/s;
 *   - copy bandwidth (read + write bytes; the better of storage buffers and texel buffers) and
 *     read bandwidth in several access patterns (storage buffers, 16-byte texels), GB/s;
 *   - the cost of one dispatch (1 workgroup, with and without a hazard barrier, and with many
 *     workgroups) and of one empty submission, microseconds.
 * Each probe is recorded once and submitted several times; the best repetition counts (a peak
 * is what the device can do, not what a loaded machine happened to give). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "vkf_abi.h"

/* ---------------------------------------------------------------- recording one probe */

typedef struct vkf_probe_job {
    vkf_vk_pipeline *pl;
    vkf_buffer *dst, *src;
    uint64_t dst_bytes, src_bytes;
    vkf_pc_probe pc;
    uint32_t groups;
    int repeat;       /* dispatches recorded */
    int distinct_dst; /* each dispatch writes its own 16 bytes of dst (no hazard) */
} vkf_probe_job;

static vkf_status vkf_probe_record(vkf_vk_rec *r, void *user) {
    vkf_probe_job *j = user;
    for (int i = 0; i < j->repeat; i++) {
        vkf_vk_win w[2];
        uint64_t dlo = j->distinct_dst ? (uint64_t)i * 256 : 0;
        uint64_t dhi = j->distinct_dst ? dlo + 256 : j->dst_bytes;
        if (j->pl->texel_mask & 2u)
            VKF_TRY(vkf_vk_window_texel(r, j->dst, dlo, dhi, 1, &w[0]));
        else
            VKF_TRY(vkf_vk_window(r, j->dst, dlo, dhi, 1, &w[0]));
        if (j->pl->texel_mask & 4u)
            VKF_TRY(vkf_vk_window_texel(r, j->src, 0, j->src_bytes, 0, &w[1]));
        else
            VKF_TRY(vkf_vk_window(r, j->src, 0, j->src_bytes, 0, &w[1]));
        VKF_TRY(vkf_vk_dispatch(r, j->pl, w, 2, &j->pc, sizeof j->pc, j->groups, 1, 1));
    }
    return VKF_OK;
}

/* Best and median time of `reps` submissions of the job, ms. */
static vkf_status vkf_probe_time(vkf_vk_backend *vb, vkf_probe_job *j, int reps, double *best,
                                 double *median) {
    double ms[32];
    if (reps > 32) reps = 32;
    VKF_TRY(vkf_vk_run_recorded(vb, vkf_probe_record, j, reps, ms));
    double b = ms[0];
    for (int i = 1; i < reps; i++)
        if (ms[i] < b) b = ms[i];
    /* insertion sort for the median */
    for (int i = 1; i < reps; i++)
        for (int k = i; k > 0 && ms[k] < ms[k - 1]; k--) {
            double t = ms[k];
            ms[k] = ms[k - 1];
            ms[k - 1] = t;
        }
    *best = b;
    if (median) *median = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    return VKF_OK;
}

static vkf_status vkf_probe_pipe_chains(vkf_vk_backend *vb, int mode, int chains, uint32_t wg,
                                        vkf_vk_pipeline **pl) {
    vkf_vk_kplan k = vkf_vk_kplan_of(VKF_VK_K_PROBE);
    k.v.probe.mode = mode;
    k.v.probe.chains = chains ? chains : 16; /* the shader's default */
    k.spec[0] = wg;
    k.n_spec = 1;
    return vkf_vk_kplan_pipe(vb, &k, pl);
}

static vkf_status vkf_probe_pipe(vkf_vk_backend *vb, int mode, uint32_t wg, vkf_vk_pipeline **pl) {
    return vkf_probe_pipe_chains(vb, mode, 0, wg, pl);
}

/* ---------------------------------------------------------------- the probes */

#define VKF_PROBE_WG 64

/* One FMA variant: mode 1 (8 chains in an array) or 10 (`chains` separate variables), `groups`
 * workgroups of VKF_PROBE_WG. */
static vkf_status vkf_probe_fma_variant(vkf_vk_backend *vb, vkf_buffer *dst, int mode, int chains,
                                        uint32_t groups, int quick, double *gflops) {
    vkf_probe_job j;
    memset(&j, 0, sizeof j);
    VKF_TRY(vkf_probe_pipe_chains(vb, mode, mode == 10 ? chains : 0, VKF_PROBE_WG, &j.pl));
    j.dst = dst;
    j.src = dst;
    j.groups = groups;
    j.dst_bytes = (uint64_t)j.groups * VKF_PROBE_WG * 16;
    j.src_bytes = 16;
    j.pc.a = 0.999f;
    j.pc.b = 0.001f;
    j.repeat = 1;
    /* scale the iteration count so one submission takes ~20 ms (~5 ms quick) */
    double target = quick ? 5.0 : 20.0, best = 0;
    uint32_t iters = 64;
    for (int tries = 0; tries < 8; tries++) {
        j.pc.iters = iters;
        VKF_TRY(vkf_probe_time(vb, &j, 2, &best, NULL));
        if (best >= target * 0.5 || iters >= (1u << 24)) break;
        double f = best > 0.05 ? target / best : 64;
        iters = (uint32_t)((double)iters * (f > 64 ? 64 : f));
    }
    VKF_TRY(vkf_probe_time(vb, &j, quick ? 3 : 7, &best, NULL));
    double flop_per_step = mode == 10 ? 8.0 * chains : 64.0; /* chains x vec4 x (mul + add) */
    double flop = (double)j.groups * VKF_PROBE_WG * (double)j.pc.iters * flop_per_step;
    *gflops = flop / (best * 1e-3) * 1e-9;
    return VKF_OK;
}

/* The FMA peak: the best of several variants (chains in an array or in separate variables, 8 or
 * 16 of them, fewer or more workgroups). A peak must be the best the device does: the array form
 * alone read 30 GFLOP/s on llvmpipe in a run where a 4096^3 matmul reached 46.6 ("155% of peak"),
 * and compilers differ in which form they keep in registers. fp16 keeps its single variant. */
static vkf_status vkf_probe_fma(vkf_vk_backend *vb, vkf_buffer *dst, int mode, int quick,
                                double *gflops) {
    if (mode != 1) return vkf_probe_fma_variant(vb, dst, mode, 0, 256, quick, gflops);
    static const struct {
        int mode, chains;
        uint32_t groups;
    } v[] = {{1, 0, 256}, {10, 8, 256}, {10, 16, 256}, {10, 16, 1024}};
    *gflops = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        double g = 0;
        VKF_TRY(vkf_probe_fma_variant(vb, dst, v[i].mode, v[i].chains, v[i].groups, quick, &g));
        if (g > *gflops) *gflops = g;
    }
    return VKF_OK;
}

/* Bandwidth of one access pattern: *gbs from the best repetition, *gbs_median from the median
 * (their spread says how much the machine moved while it was measured). A peak must be the
 * best the device does, so each pattern runs with a few workgroup counts and the best counts:
 * 128 read workgroups (8,192 invocations) are plenty for a CPU driver but leave a large GPU
 * idle (the H200 read 87-800 GB/s with them while copying at 2.6 TB/s). */
static vkf_status vkf_probe_mem(vkf_vk_backend *vb, vkf_buffer *dst, vkf_buffer *src,
                                uint64_t src_bytes, int mode, uint32_t span, int quick, double *gbs,
                                double *gbs_median) {
    int copy = mode == 3 || mode == 9;
    const uint32_t read_groups[] = {128, 4096, 32768}, copy_groups[] = {1024, 32768};
    const uint32_t *groups = copy ? copy_groups : read_groups;
    int n_groups = copy ? 2 : 3;
    if (vb->caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU)
        n_groups = 1; /* its threads are few and busy already */
    *gbs = 0;
    if (gbs_median) *gbs_median = 0;
    for (int g = 0; g < n_groups; g++) {
        uint64_t threads = (uint64_t)groups[g] * VKF_PROBE_WG;
        /* more invocations than vec4s (or span chunks) would leave lanes idle */
        if (g > 0 &&
            (groups[g] > vb->caps.max_wg_count[0] || threads * (span ? span : 1) > src_bytes / 16))
            break;
        vkf_probe_job j;
        memset(&j, 0, sizeof j);
        VKF_TRY(vkf_probe_pipe(vb, mode, VKF_PROBE_WG, &j.pl));
        j.dst = dst;
        j.src = src;
        j.groups = groups[g];
        j.pc.n = (uint32_t)(src_bytes / 16);
        j.pc.span = span;
        j.dst_bytes = copy ? src_bytes : threads * 16;
        if (j.dst_bytes > src_bytes) break; /* dst is as large as src */
        j.src_bytes = src_bytes;
        j.repeat = 1;
        double best, median;
        VKF_TRY(vkf_probe_time(vb, &j, quick ? 3 : 7, &best, &median));
        double bytes = (double)src_bytes * (copy ? 2.0 : 1.0);
        double b = bytes / (best * 1e-3) * 1e-9;
        if (b > *gbs) {
            *gbs = b;
            if (gbs_median) *gbs_median = bytes / (median * 1e-3) * 1e-9;
        }
    }
    return VKF_OK;
}

/* Per-dispatch cost: (time of R dispatches - time of one) / (R - 1). */
static vkf_status vkf_probe_dispatch(vkf_vk_backend *vb, vkf_buffer *dst, vkf_buffer *src,
                                     int distinct, uint32_t groups, int quick, double *us) {
    vkf_probe_job j;
    memset(&j, 0, sizeof j);
    VKF_TRY(vkf_probe_pipe(vb, 3, VKF_PROBE_WG, &j.pl));
    j.dst = dst;
    j.src = src;
    j.groups = groups;
    j.pc.n = 1; /* one vec4 copied: the work is negligible */
    j.dst_bytes = 256;
    j.src_bytes = 256;
    j.distinct_dst = distinct;
    int R = quick ? 64 : 256;
    double t1, tr;
    j.repeat = 1;
    VKF_TRY(vkf_probe_time(vb, &j, quick ? 5 : 11, &t1, NULL));
    j.repeat = R;
    VKF_TRY(vkf_probe_time(vb, &j, quick ? 3 : 7, &tr, NULL));
    *us = (tr - t1) / (R - 1) * 1e3;
    return VKF_OK;
}

vkf_status vkf_backend_vulkan_peaks(vkf_backend *be, int quick, vkf_vk_peaks *out) {
    if (!vkf_backend_is_vulkan(be))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "peaks: not a Vulkan backend");
    vkf_vk_backend *vb = vkf_vk(be);
    memset(out, 0, sizeof *out);
    /* Bandwidth must be memory's, not the last-level cache's: up to 512 MiB per buffer (64 MiB
     * quick), within what one binding (maxStorageBufferRange: 128 MiB on lavapipe, still 4x its
     * host's L3) and one allocation can hold; out->probe_bytes says how much. One binding, one
     * dispatch: lavapipe completed four dispatches over four such windows in the time of one,
     * so a multi-window probe would not measure memory (see bench/RESULTS.md). */
    uint64_t bytes = (quick ? 64ull : 512ull) << 20;
    uint64_t budget = vkf_vk_window_budget(vb);
    if (bytes > budget) bytes = budget / 16 * 16;
    if (bytes > vb->caps.max_alloc) bytes = vb->caps.max_alloc / 16 * 16;
    if (bytes > (1ull << 32) - 16) bytes = (1ull << 32) - 16; /* pc.n counts vec4 in 32 bits */
    out->probe_bytes = bytes;
    vkf_buffer *src = NULL, *dst = NULL;
    vkf_status st = vkf_vk_buffer_alloc(be, bytes, VKF_BUFFER_ACTIVATIONS, &src);
    if (st == VKF_OK) st = vkf_vk_buffer_alloc(be, bytes, VKF_BUFFER_ACTIVATIONS, &dst);
    if (st == VKF_OK) {
        /* defined contents (small values: the read sums stay finite) */
        float *tmp = malloc(1 << 20);
        if (!tmp) st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "probe staging");
        for (size_t i = 0; tmp && i < (1u << 18); i++)
            tmp[i] = (float)(i % 7) * 0.125f;
        for (uint64_t off = 0; st == VKF_OK && off < bytes; off += 1 << 20) {
            uint64_t n = bytes - off < (1u << 20) ? bytes - off : (1u << 20);
            st = vkf_vk_buffer_write(be, src, off, tmp, n);
        }
        free(tmp);
    }
    if (st == VKF_OK) st = vkf_probe_fma(vb, dst, 1, quick, &out->fma_f32_gflops);
    if (st == VKF_OK && vb->caps.fp16) st = vkf_probe_fma(vb, dst, 2, quick, &out->fma_f16_gflops);
    if (st == VKF_OK)
        st = vkf_probe_mem(vb, dst, src, bytes, 3, 0, quick, &out->copy_gbs, &out->copy_median_gbs);
    int texel = vb->caps.texel && vb->caps.has_subgroup;
    if (st == VKF_OK && texel) {
        double g = 0, gm = 0;
        st = vkf_probe_mem(vb, dst, src, bytes, 9, 0, quick, &g, &gm);
        if (g > out->copy_gbs) {
            out->copy_gbs = g;
            out->copy_median_gbs = gm;
        }
    }
    static const struct {
        int mode;
        uint32_t span;
        const char *name;
    } reads[] = {
        {4, 0, "buffer float, consecutive lanes"},
        {5, 0, "buffer vec4, consecutive lanes"},
        {6, 16, "buffer vec4, 16 per lane contiguous"},
        {7, 0, "buffer vec4, same address in every lane"},
        {8, 0, "texel 16 B, consecutive lanes"},
    };
    for (int i = 0; st == VKF_OK && i < (int)(sizeof reads / sizeof reads[0]) &&
                    out->n_read < VKF_VK_MAX_READ_PROBES;
         i++) {
        if (reads[i].mode == 8 && !texel) continue;
        int k = out->n_read;
        st = vkf_probe_mem(vb, dst, src, bytes, reads[i].mode, reads[i].span, quick,
                           &out->read_gbs[k], &out->read_median_gbs[k]);
        out->read_names[k] = reads[i].name;
        out->n_read = k + 1;
        if (out->read_gbs[k] > out->read_best_gbs) out->read_best_gbs = out->read_gbs[k];
    }
    if (st == VKF_OK) st = vkf_probe_dispatch(vb, dst, src, 1, 1, quick, &out->dispatch_us);
    if (st == VKF_OK) st = vkf_probe_dispatch(vb, dst, src, 0, 1, quick, &out->dispatch_barrier_us);
    if (st == VKF_OK) st = vkf_probe_dispatch(vb, dst, src, 1, 64, quick, &out->dispatch_64wg_us);
    if (st == VKF_OK) {
        /* an empty submission: one trivial dispatch, best of several */
        vkf_probe_job j;
        memset(&j, 0, sizeof j);
        st = vkf_probe_pipe(vb, 3, VKF_PROBE_WG, &j.pl);
        j.dst = dst;
        j.src = src;
        j.groups = 1;
        j.pc.n = 1;
        j.dst_bytes = j.src_bytes = 256;
        j.repeat = 1;
        double best = 0, med = 0;
        if (st == VKF_OK) st = vkf_probe_time(vb, &j, 21, &best, &med);
        out->submit_us = med * 1e3;
    }
    if (src) vkf_vk_buffer_free(be, src);
    if (dst) vkf_vk_buffer_free(be, dst);
    return st;
}
