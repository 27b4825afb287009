/* The graph walk (docs/DESIGN.md, 'Record once, replay every step'): a graph is recorded once into
 * one command buffer, node by node, each through the fusions (vk_fuse.c) or its op's encoder
 * (vk_ops.c, vk_matmul.c, vk_attention.c), which record through the dispatch helpers below them all
 * (vk_dispatch.c: windows, hazard barriers, descriptors); later calls replay it. n_past, the one
 * per-step value, lives in a host-visible buffer that every kernel may read at binding 0. Also the
 * submission, its profile, and recordings outside any graph (probes). */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"

/* ---------------------------------------------------------------- graphs */

void vkf_vk_graph_release(vkf_backend *be, vkf_graph *g) {
    vkf_vk_backend *vb = vkf_vk(be);
    if (!g || !g->exec) return;
    vb->vk.vkDeviceWaitIdle(vb->device);
    vkf_vk_exec_free(vb, g->exec);
    g->exec = NULL;
}

/* Submits ex and waits; with profiling, adds its timestamps to the per-op counters. */
static vkf_status vkf_vk_exec_submit(vkf_vk_backend *vb, vkf_vk_exec *ex, double *ms) {
    double t0 = vkf_vk_now_ms();
    VKF_TRY(vkf_vk_submit_wait(vb, ex->cmd));
    double dt = vkf_vk_now_ms() - t0;
    if (ms) *ms = dt;
    if (!ex->qpool || ex->n_ts < 2) return VKF_OK;
    uint64_t *ts = malloc(sizeof *ts * ex->n_ts);
    if (!ts) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "profile timestamps");
    VkResult r =
        vb->vk.vkGetQueryPoolResults(vb->device, ex->qpool, 0, ex->n_ts, sizeof *ts * ex->n_ts, ts,
                                     sizeof *ts, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) {
        free(ts);
        return vkf_vk_fail(r, "vkGetQueryPoolResults", __FILE__, __LINE__);
    }
    uint64_t mask = vb->ts_bits >= 64 ? ~0ull : ((1ull << vb->ts_bits) - 1);
    double tick_ms = (double)vb->caps.timestamp_period * 1e-6;
    for (uint32_t i = 1; i < ex->n_ts; i++) {
        int op = ex->ts_op[i - 1];
        if (op < 0 || op >= VKF_OP_COUNT) continue;
        vb->stats.prof_ms[op] += (double)((ts[i] - ts[i - 1]) & mask) * tick_ms;
        vb->stats.prof_dispatches[op]++;
    }
    vb->stats.prof_busy_ms += (double)((ts[ex->n_ts - 1] - ts[0]) & mask) * tick_ms;
    vb->stats.prof_rec_dispatches += ex->dispatches;
    vb->stats.prof_rec_barriers += ex->barriers;
    vb->stats.prof_submit_ms += dt;
    vb->stats.prof_submits++;
    free(ts);
    return VKF_OK;
}

static vkf_status vkf_vk_record(vkf_vk_backend *vb, vkf_graph *g, vkf_vk_exec **out) {
    vkf_status st = VKF_OK;
    vkf_vk_exec *ex;
    VKF_TRY(vkf_vk_exec_begin(vb, &ex));
    vkf_vk_rec rec = {0};
    rec.vb = vb;
    rec.ex = ex;
    rec.cmd = ex->cmd;
    vb->plan_batch = g->plan_batch;
    for (int i = 0; i < g->n_nodes;) {
        const vkf_node *nd = &g->nodes[i];
        rec.op = (int)nd->op;
        int used = 0;
        st = vkf_vk_fuse_record(&rec, g, i, &used);
        if (st == VKF_OK && used == 0) {
            rec.op = (int)nd->op;
            st = vkf_vk_op_record(&rec, nd);
            used = 1;
        }
        i += used;
        if (st != VKF_OK) {
            vkf_error_prefix(st, "graph %s: node %d (%s -> %s)", g->name, i - used,
                             vkf_op_name(nd->op), nd->dst ? nd->dst->name : "?");
            vb->vk.vkEndCommandBuffer(ex->cmd);
            goto fail;
        }
    }
    vb->plan_batch = 0;
    st = vkf_vk_exec_end(vb, ex);
    if (st != VKF_OK) goto fail;
    ex->n_nodes = g->n_nodes;
    ex->arena = g->arena;
    vb->stats.recordings++;
    free(rec.reads);
    free(rec.writes);
    *out = ex;
    return VKF_OK;
fail:
    vb->plan_batch = 0;
    free(rec.reads);
    free(rec.writes);
    vkf_vk_exec_free(vb, ex);
    return st;
}

vkf_status vkf_vk_run_recorded(vkf_vk_backend *vb, vkf_status (*fn)(vkf_vk_rec *r, void *user),
                               void *user, int reps, double *ms) {
    vkf_vk_exec *ex;
    VKF_TRY(vkf_vk_check_messages(vb));
    VKF_TRY(vkf_vk_exec_begin(vb, &ex));
    vkf_vk_rec rec = {0};
    rec.vb = vb;
    rec.ex = ex;
    rec.cmd = ex->cmd;
    rec.op = -1;
    vkf_status st = fn(&rec, user);
    free(rec.reads);
    free(rec.writes);
    if (st != VKF_OK) vb->vk.vkEndCommandBuffer(ex->cmd);
    if (st == VKF_OK) st = vkf_vk_exec_end(vb, ex);
    for (int i = 0; st == VKF_OK && i < reps; i++)
        st = vkf_vk_exec_submit(vb, ex, ms ? &ms[i] : NULL);
    vkf_vk_exec_free(vb, ex);
    if (st != VKF_OK) return st;
    return vkf_vk_check_messages(vb);
}

vkf_status vkf_vk_graph_compute(vkf_backend *be, vkf_graph *g, int32_t n_past) {
    vkf_vk_backend *vb = vkf_vk(be);
    VKF_TRY(vkf_vk_check_usable(vb));
    VKF_TRY(vkf_vk_check_messages(vb));
    if (!g) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vulkan graph_compute: graph is NULL");
    if (n_past < 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "graph %s: n_past %d < 0", g->name, n_past);
    vkf_vk_exec *ex = g->exec;
    if (ex && (ex->n_nodes != g->n_nodes || ex->arena != g->arena ||
               ex->profiled != (vb->profile && vb->ts_bits))) {
        vkf_vk_graph_release(be, g);
        ex = NULL;
    }
    int new_pipelines = 0; /* this recording created pipelines: their first dispatch follows */
    if (!ex) {
        double t0 = vkf_vk_now_ms();
        uint64_t p0 = vb->stats.pipelines;
        VKF_TRY(vkf_vk_record(vb, g, &ex));
        vb->stats.record_ms += vkf_vk_now_ms() - t0;
        new_pipelines = vb->stats.pipelines != p0;
        g->exec = ex;
    }
    if (ex->dispatches == 0) return vkf_vk_check_messages(vb);
    vb->dyn_map[0] = n_past;
    /* tests: VKF_SIMULATE_DEVICE_LOST=N fails the Nth graph submission and every later one */
    uint64_t lost_at = vb->xp.simulate_device_lost;
    if (lost_at && vb->stats.submits + 1 >= lost_at && (vb->unusable = 1))
        return vkf_vk_fail(VK_ERROR_DEVICE_LOST,
                           "vkQueueSubmit (simulated by VKF_SIMULATE_DEVICE_LOST)", __FILE__,
                           __LINE__);
    double t1 = vkf_vk_now_ms();
    VKF_TRY(vkf_vk_exec_submit(vb, ex, NULL));
    if (new_pipelines) vb->stats.first_dispatch_ms += vkf_vk_now_ms() - t1;
    vb->stats.submits++;
    return vkf_vk_check_messages(vb);
}

/* ---------------------------------------------------------------- profiling */

vkf_status vkf_backend_vulkan_profile(vkf_backend *be, int on) {
    if (!vkf_backend_is_vulkan(be))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "profile: not a Vulkan backend");
    vkf_vk_backend *vb = vkf_vk(be);
    if (on && (!vb->ts_bits || vb->caps.timestamp_period <= 0))
        return vkf_error(VKF_ERROR_UNSUPPORTED, "profile: the queue of %s has no timestamps",
                         vb->caps.name);
    vb->profile = on ? 1 : 0;
    memset(vb->stats.prof_ms, 0, sizeof vb->stats.prof_ms);
    memset(vb->stats.prof_dispatches, 0, sizeof vb->stats.prof_dispatches);
    vb->stats.prof_submit_ms = vb->stats.prof_busy_ms = 0;
    vb->stats.prof_submits = vb->stats.prof_rec_dispatches = vb->stats.prof_rec_barriers = 0;
    return VKF_OK;
}

void vkf_backend_vulkan_stats_reset(vkf_backend *be) {
    if (vkf_backend_is_vulkan(be)) memset(&vkf_vk(be)->stats, 0, sizeof vkf_vk(be)->stats);
}
