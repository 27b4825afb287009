/* Command recording (DESIGN decision 3): a graph is recorded once into one command buffer, with
 * a barrier only where a dispatch reads what an earlier dispatch wrote (since the last barrier)
 * or writes what was read or written; later calls replay it. n_past, the one per-step value,
 * lives in a host-visible buffer that every kernel may read at binding 0. */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"

#define VKF_VK_SETS_PER_POOL 256

#define VKF_VK_PROF_MAX 8192 /* timestamps per recording; dispatches beyond are not profiled */

struct vkf_vk_exec {
    VkCommandBuffer cmd;
    VkDescriptorPool *pools;
    int n_pools;
    uint32_t sets_left; /* in the last pool */
    int n_nodes;        /* the graph as recorded: re-record when it changes */
    vkf_buffer *arena;
    vkf_vk_pipeline *bound;
    uint64_t dispatches, barriers;
    vkf_buffer **scratch; /* kernel scratch (attention key-chunk state), freed with the exec */
    int n_scratch;
    /* profiling: timestamp 0 before the first dispatch, timestamp i+1 after dispatch i */
    int profiled;
    VkQueryPool qpool;
    uint32_t n_ts;
    int *ts_op; /* [VKF_VK_PROF_MAX]: the op of each profiled dispatch */
    /* texel views made for this recording (one per distinct window), destroyed with it */
    struct vkf_vk_view {
        VkBuffer buf;
        VkDeviceSize off, range;
        VkBufferView view;
    } * views;
    int n_views, cap_views;
};

/* ---------------------------------------------------------------- windows */

uint64_t vkf_vk_window_budget(const vkf_vk_backend *vb) {
    uint64_t a = vb->caps.min_storage_align ? vb->caps.min_storage_align : 1;
    uint64_t r = vb->caps.max_storage_range;
    /* alignment slack in front, rounding to 4 bytes at the end */
    return r > a + 4 ? (r - a - 4) / 4 * 4 : 4;
}

vkf_status vkf_vk_window(vkf_vk_rec *r, const vkf_buffer *b, uint64_t lo, uint64_t hi, int write,
                         vkf_vk_win *w) {
    const vkf_vk_backend *vb = r->vb;
    if (!b) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vulkan: a tensor has no buffer");
    if (hi < lo || hi > b->size)
        return vkf_error(
            VKF_ERROR_INVALID_ARGUMENT, "vulkan: bytes [%llu, %llu) outside a buffer of %llu",
            (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)b->size);
    uint64_t a = vb->caps.min_storage_align ? vb->caps.min_storage_align : 1;
    uint64_t abs_lo = b->offset + lo, abs_hi = b->offset + hi;
    uint64_t ws = abs_lo / a * a;
    uint64_t range = (abs_hi - ws + 3) / 4 * 4;
    if (range == 0) range = 4;
    if (ws + range > b->block->size) range = b->block->size - ws;
    if (range > vb->caps.max_storage_range)
        return vkf_error(VKF_ERROR_INTERNAL,
                         "vulkan: window of %llu bytes exceeds maxStorageBufferRange %llu",
                         (unsigned long long)range, (unsigned long long)vb->caps.max_storage_range);
    w->buf = b->block->buf;
    w->off = ws;
    w->range = range;
    w->delta = abs_lo - ws;
    w->write = write;
    w->texel = 0;
    return VKF_OK;
}

uint64_t vkf_vk_texel_budget(const vkf_vk_backend *vb) {
    uint64_t b = vkf_vk_window_budget(vb);
    uint64_t a = vb->caps.min_texel_align > 16 ? vb->caps.min_texel_align : 16;
    uint64_t t = vb->caps.max_texel_elements * 16;
    t = t > a + 16 ? t - a - 16 : 16;
    return b < t ? b : t;
}

vkf_status vkf_vk_window_block(vkf_vk_rec *r, const vkf_vk_block *blk, uint64_t abs_lo,
                               uint64_t abs_hi, int write, int texel, vkf_vk_win *w) {
    const vkf_vk_backend *vb = r->vb;
    if (!texel) {
        uint64_t a = vb->caps.min_storage_align ? vb->caps.min_storage_align : 1;
        uint64_t ws = abs_lo / a * a;
        uint64_t range = (abs_hi - ws + 3) / 4 * 4;
        if (range == 0) range = 4;
        if (ws + range > blk->size) range = blk->size - ws;
        if (range > vb->caps.max_storage_range)
            return vkf_error(VKF_ERROR_INTERNAL,
                             "vulkan: window of %llu bytes exceeds maxStorageBufferRange %llu",
                             (unsigned long long)range,
                             (unsigned long long)vb->caps.max_storage_range);
        *w = (vkf_vk_win){blk->buf, ws, range, abs_lo - ws, write, 0};
        return VKF_OK;
    }
    if (!vb->caps.texel)
        return vkf_error(VKF_ERROR_INTERNAL, "vulkan: texel window on a device without them");
    uint64_t a = vb->caps.min_storage_align ? vb->caps.min_storage_align : 1;
    uint64_t ta = vb->caps.min_texel_align ? vb->caps.min_texel_align : 1;
    while (a % ta || a % 16)
        a += a % ta ? ta - a % ta : 16 - a % 16; /* a multiple of both and 16 */
    uint64_t ws = abs_lo / a * a;
    uint64_t range = (abs_hi - ws + 15) / 16 * 16;
    if (range == 0) range = 16;
    if (ws + range > blk->size) range = (blk->size - ws) / 16 * 16;
    if (range == 0 || range / 16 > vb->caps.max_texel_elements ||
        range > vb->caps.max_storage_range)
        return vkf_error(VKF_ERROR_INTERNAL,
                         "vulkan: texel window of %llu bytes at %llu does not fit the "
                         "block or the texel limit",
                         (unsigned long long)range, (unsigned long long)ws);
    *w = (vkf_vk_win){blk->buf, ws, range, abs_lo - ws, write, 1};
    return VKF_OK;
}

vkf_status vkf_vk_window_texel(vkf_vk_rec *r, const vkf_buffer *b, uint64_t lo, uint64_t hi,
                               int write, vkf_vk_win *w) {
    if (!b) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vulkan: a tensor has no buffer");
    if (hi < lo || hi > b->size)
        return vkf_error(
            VKF_ERROR_INVALID_ARGUMENT, "vulkan: bytes [%llu, %llu) outside a buffer of %llu",
            (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)b->size);
    return vkf_vk_window_block(r, b->block, b->offset + lo, b->offset + hi, write, 1, w);
}

/* The view of a texel window, made once per recording. */
static vkf_status vkf_vk_view_get(vkf_vk_rec *r, const vkf_vk_win *w, VkBufferView *out) {
    vkf_vk_exec *ex = r->ex;
    for (int i = 0; i < ex->n_views; i++)
        if (ex->views[i].buf == w->buf && ex->views[i].off == w->off &&
            ex->views[i].range == w->range) {
            *out = ex->views[i].view;
            return VKF_OK;
        }
    if (ex->n_views == ex->cap_views) {
        int cap = ex->cap_views ? ex->cap_views * 2 : 32;
        struct vkf_vk_view *nv = realloc(ex->views, sizeof *nv * (size_t)cap);
        if (!nv) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "texel views");
        ex->views = nv;
        ex->cap_views = cap;
    }
    VkBufferViewCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    ci.buffer = w->buf;
    ci.format = VK_FORMAT_R32G32B32A32_UINT;
    ci.offset = w->off;
    ci.range = w->range;
    VkBufferView v;
    VKF_VK_CHECK(r->vb->vk.vkCreateBufferView(r->vb->device, &ci, NULL, &v));
    ex->views[ex->n_views++] = (struct vkf_vk_view){w->buf, w->off, w->range, v};
    *out = v;
    return VKF_OK;
}

/* ---------------------------------------------------------------- hazards */

static int vkf_vk_overlaps(const vkf_vk_access *list, int n, VkBuffer buf, VkDeviceSize lo,
                           VkDeviceSize hi) {
    for (int i = 0; i < n; i++)
        if (list[i].buf == buf && list[i].lo < hi && lo < list[i].hi) return 1;
    return 0;
}

static vkf_status vkf_vk_note(vkf_vk_access **list, int *n, int *cap, VkBuffer buf, VkDeviceSize lo,
                              VkDeviceSize hi) {
    for (int i = 0; i < *n; i++) /* extend an entry that touches this one */
        if ((*list)[i].buf == buf && (*list)[i].lo <= hi && lo <= (*list)[i].hi) {
            if (lo < (*list)[i].lo) (*list)[i].lo = lo;
            if (hi > (*list)[i].hi) (*list)[i].hi = hi;
            return VKF_OK;
        }
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 32;
        vkf_vk_access *nl = realloc(*list, sizeof *nl * (size_t)nc);
        if (!nl) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "hazard list");
        *list = nl;
        *cap = nc;
    }
    (*list)[(*n)++] = (vkf_vk_access){buf, lo, hi};
    return VKF_OK;
}

/* ---------------------------------------------------------------- descriptors */

static vkf_status vkf_vk_alloc_set(vkf_vk_rec *r, const vkf_vk_pipeline *p, VkDescriptorSet *out) {
    vkf_vk_backend *vb = r->vb;
    vkf_vk_exec *ex = r->ex;
    if (ex->sets_left == 0) {
        VkDescriptorPoolSize ps[2] = {
            {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VKF_VK_SETS_PER_POOL * VKF_VK_MAX_BINDINGS},
            {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, VKF_VK_SETS_PER_POOL * VKF_VK_MAX_BINDINGS}};
        VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        pci.maxSets = VKF_VK_SETS_PER_POOL;
        pci.poolSizeCount = vb->caps.texel ? 2 : 1;
        pci.pPoolSizes = ps;
        VkDescriptorPool pool;
        VKF_VK_CHECK(vb->vk.vkCreateDescriptorPool(vb->device, &pci, NULL, &pool));
        VkDescriptorPool *np = realloc(ex->pools, sizeof *np * (size_t)(ex->n_pools + 1));
        if (!np) {
            vb->vk.vkDestroyDescriptorPool(vb->device, pool, NULL);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "descriptor pools");
        }
        ex->pools = np;
        ex->pools[ex->n_pools++] = pool;
        ex->sets_left = VKF_VK_SETS_PER_POOL;
    }
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = ex->pools[ex->n_pools - 1];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &p->set_layout;
    VKF_VK_CHECK(vb->vk.vkAllocateDescriptorSets(vb->device, &ai, out));
    ex->sets_left--;
    return VKF_OK;
}

/* ---------------------------------------------------------------- dispatch */

vkf_status vkf_vk_dispatch(vkf_vk_rec *r, vkf_vk_pipeline *p, const vkf_vk_win *wins, int n,
                           const void *pc, uint32_t pc_size, uint32_t gx, uint32_t gy,
                           uint32_t gz) {
    vkf_vk_backend *vb = r->vb;
    if (n + 1 != p->n_bindings)
        return vkf_error(VKF_ERROR_INTERNAL, "pipeline %s has %d bindings, dispatch gives %d",
                         p->key, p->n_bindings, n + 1);
    if (pc_size > VKF_VK_PC_BYTES || pc_size % 4)
        return vkf_error(VKF_ERROR_INTERNAL, "push constants of %u bytes for %s", pc_size, p->key);
    for (int i = 0; i < n; i++)
        if (((p->texel_mask >> (i + 1)) & 1u) != (wins[i].texel ? 1u : 0u))
            return vkf_error(VKF_ERROR_INTERNAL, "pipeline %s: binding %d is %s, the window is not",
                             p->key, i + 1, wins[i].texel ? "a storage buffer" : "a texel buffer");
    if (gx == 0 || gy == 0 || gz == 0) return VKF_OK;
    if (gx > vb->caps.max_wg_count[0] || gy > vb->caps.max_wg_count[1] ||
        gz > vb->caps.max_wg_count[2])
        return vkf_error(VKF_ERROR_INTERNAL, "%s: %u x %u x %u workgroups exceed the device limit",
                         p->key, gx, gy, gz);

    /* hazard: RAW, WAR, WAW against accesses since the last barrier */
    int hazard = 0;
    for (int i = 0; i < n && !hazard; i++) {
        VkDeviceSize lo = wins[i].off, hi = wins[i].off + wins[i].range;
        hazard = vkf_vk_overlaps(r->writes, r->n_writes, wins[i].buf, lo, hi) ||
                 (wins[i].write && vkf_vk_overlaps(r->reads, r->n_reads, wins[i].buf, lo, hi));
    }
    if (hazard) {
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vb->vk.vkCmdPipelineBarrier(r->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
                                    NULL);
        r->n_reads = r->n_writes = 0;
        r->ex->barriers++;
        vb->stats.barriers++;
    }
    for (int i = 0; i < n; i++) {
        VkDeviceSize lo = wins[i].off, hi = wins[i].off + wins[i].range;
        if (wins[i].write)
            VKF_TRY(vkf_vk_note(&r->writes, &r->n_writes, &r->cap_writes, wins[i].buf, lo, hi));
        else
            VKF_TRY(vkf_vk_note(&r->reads, &r->n_reads, &r->cap_reads, wins[i].buf, lo, hi));
    }

    VkDescriptorSet set;
    VKF_TRY(vkf_vk_alloc_set(r, p, &set));
    VkDescriptorBufferInfo bi[VKF_VK_MAX_BINDINGS];
    VkBufferView tv[VKF_VK_MAX_BINDINGS];
    VkWriteDescriptorSet wr[VKF_VK_MAX_BINDINGS];
    bi[0] = (VkDescriptorBufferInfo){vb->dyn_buf, 0, 256};
    for (int i = 0; i < n; i++) {
        bi[i + 1] = (VkDescriptorBufferInfo){wins[i].buf, wins[i].off, wins[i].range};
        if (wins[i].texel) VKF_TRY(vkf_vk_view_get(r, &wins[i], &tv[i + 1]));
    }
    for (int i = 0; i <= n; i++) {
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        wr[i].dstSet = set;
        wr[i].dstBinding = (uint32_t)i;
        wr[i].descriptorCount = 1;
        if (i > 0 && wins[i - 1].texel) {
            wr[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
            wr[i].pTexelBufferView = &tv[i];
        } else {
            wr[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            wr[i].pBufferInfo = &bi[i];
        }
    }
    vb->vk.vkUpdateDescriptorSets(vb->device, (uint32_t)(n + 1), wr, 0, NULL);
    if (r->ex->bound != p) {
        vb->vk.vkCmdBindPipeline(r->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
        r->ex->bound = p;
    }
    vb->vk.vkCmdBindDescriptorSets(r->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0,
                                   NULL);
    if (pc_size)
        vb->vk.vkCmdPushConstants(r->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pc_size, pc);
    vb->vk.vkCmdDispatch(r->cmd, gx, gy, gz);
    vkf_vk_exec *ex = r->ex;
    if (ex->qpool && ex->n_ts < VKF_VK_PROF_MAX) {
        vb->vk.vkCmdWriteTimestamp(r->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ex->qpool,
                                   ex->n_ts);
        ex->ts_op[ex->n_ts - 1] = r->op;
        ex->n_ts++;
    }
    r->ex->dispatches++;
    vb->stats.dispatches++;
    return VKF_OK;
}

/* ---------------------------------------------------------------- graphs */

vkf_status vkf_vk_scratch(vkf_vk_rec *r, size_t bytes, vkf_buffer **out) {
    vkf_vk_exec *ex = r->ex;
    vkf_buffer **ns = realloc(ex->scratch, sizeof *ns * (size_t)(ex->n_scratch + 1));
    if (!ns) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "scratch list");
    ex->scratch = ns;
    VKF_TRY(vkf_vk_buffer_alloc(&r->vb->base, bytes, VKF_BUFFER_ACTIVATIONS, out));
    ex->scratch[ex->n_scratch++] = *out;
    return VKF_OK;
}

static void vkf_vk_exec_free(vkf_vk_backend *vb, vkf_vk_exec *ex) {
    if (!ex) return;
    for (int i = 0; i < ex->n_scratch; i++)
        vkf_vk_buffer_free(&vb->base, ex->scratch[i]);
    free(ex->scratch);
    if (ex->cmd) vb->vk.vkFreeCommandBuffers(vb->device, vb->cmd_pool, 1, &ex->cmd);
    if (ex->qpool) vb->vk.vkDestroyQueryPool(vb->device, ex->qpool, NULL);
    for (int i = 0; i < ex->n_views; i++)
        vb->vk.vkDestroyBufferView(vb->device, ex->views[i].view, NULL);
    free(ex->views);
    free(ex->ts_op);
    for (int i = 0; i < ex->n_pools; i++)
        vb->vk.vkDestroyDescriptorPool(vb->device, ex->pools[i], NULL);
    free(ex->pools);
    free(ex);
}

void vkf_vk_graph_release(vkf_backend *be, vkf_graph *g) {
    vkf_vk_backend *vb = vkf_vk(be);
    if (!g || !g->exec) return;
    vb->vk.vkDeviceWaitIdle(vb->device);
    vkf_vk_exec_free(vb, g->exec);
    g->exec = NULL;
}

/* A new exec with its command buffer begun (and the profiling query pool when on). */
static vkf_status vkf_vk_exec_begin(vkf_vk_backend *vb, vkf_vk_exec **out) {
    vkf_status st = VKF_OK;
    vkf_vk_exec *ex = calloc(1, sizeof *ex);
    if (!ex) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "exec");
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = vb->cmd_pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    VKF_VK_CHECK_GOTO(vb->vk.vkAllocateCommandBuffers(vb->device, &cai, &ex->cmd), st, fail);
    if (vb->profile && vb->ts_bits) {
        VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qci.queryCount = VKF_VK_PROF_MAX;
        VKF_VK_CHECK_GOTO(vb->vk.vkCreateQueryPool(vb->device, &qci, NULL, &ex->qpool), st, fail);
        ex->ts_op = calloc(VKF_VK_PROF_MAX, sizeof *ex->ts_op);
        if (!ex->ts_op) {
            st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "profile table");
            goto fail;
        }
        ex->profiled = 1;
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKF_VK_CHECK_GOTO(vb->vk.vkBeginCommandBuffer(ex->cmd, &bi), st, fail);
    if (ex->qpool) {
        vb->vk.vkCmdResetQueryPool(ex->cmd, ex->qpool, 0, VKF_VK_PROF_MAX);
    }
    /* order against uploads and earlier submissions (which wrote or read these buffers) */
    vkf_vk_cmd_full_barrier(vb, ex->cmd);
    if (ex->qpool) {
        vb->vk.vkCmdWriteTimestamp(ex->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, ex->qpool, 0);
        ex->n_ts = 1;
    }
    *out = ex;
    return VKF_OK;
fail:
    vkf_vk_exec_free(vb, ex);
    return st;
}

static vkf_status vkf_vk_exec_end(vkf_vk_backend *vb, vkf_vk_exec *ex) {
    /* results visible to the host and to transfers (staged downloads) */
    vkf_vk_cmd_full_barrier(vb, ex->cmd);
    VKF_VK_CHECK(vb->vk.vkEndCommandBuffer(ex->cmd));
    return VKF_OK;
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
    uint64_t lost_at = vb->sw.simulate_device_lost;
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
    vb->stats.prof_submit_ms = 0;
    vb->stats.prof_submits = 0;
    return VKF_OK;
}

void vkf_backend_vulkan_stats_reset(vkf_backend *be) {
    if (vkf_backend_is_vulkan(be)) memset(&vkf_vk(be)->stats, 0, sizeof vkf_vk(be)->stats);
}
