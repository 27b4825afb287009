/* Command recording (DESIGN decision 3): a graph is recorded once into one command buffer, with
 * a barrier only where a dispatch reads what an earlier dispatch wrote (since the last barrier)
 * or writes what was read or written; later calls replay it. n_past, the one per-step value,
 * lives in a host-visible buffer that every kernel may read at binding 0. */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"

#define VKF_VK_SETS_PER_POOL 256

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
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vulkan: bytes [%llu, %llu) outside a buffer of %llu",
                         (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)b->size);
    uint64_t a = vb->caps.min_storage_align ? vb->caps.min_storage_align : 1;
    uint64_t abs_lo = b->offset + lo, abs_hi = b->offset + hi;
    uint64_t ws = abs_lo / a * a;
    uint64_t range = (abs_hi - ws + 3) / 4 * 4;
    if (range == 0) range = 4;
    if (ws + range > b->block->size) range = b->block->size - ws;
    if (range > vb->caps.max_storage_range)
        return vkf_error(VKF_ERROR_INTERNAL, "vulkan: window of %llu bytes exceeds maxStorageBufferRange %llu",
                         (unsigned long long)range, (unsigned long long)vb->caps.max_storage_range);
    w->buf = b->block->buf;
    w->off = ws;
    w->range = range;
    w->delta = abs_lo - ws;
    w->write = write;
    return VKF_OK;
}

/* ---------------------------------------------------------------- hazards */

static int vkf_vk_overlaps(const vkf_vk_access *list, int n, VkBuffer buf, VkDeviceSize lo, VkDeviceSize hi) {
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

static vkf_status vkf_vk_alloc_set(vkf_vk_rec *r, int n_bindings, VkDescriptorSet *out) {
    vkf_vk_backend *vb = r->vb;
    vkf_vk_exec *ex = r->ex;
    if (ex->sets_left == 0) {
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                   VKF_VK_SETS_PER_POOL * VKF_VK_MAX_BINDINGS};
        VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        pci.maxSets = VKF_VK_SETS_PER_POOL;
        pci.poolSizeCount = 1;
        pci.pPoolSizes = &ps;
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
    ai.pSetLayouts = &vb->set_layout[n_bindings];
    VKF_VK_CHECK(vb->vk.vkAllocateDescriptorSets(vb->device, &ai, out));
    ex->sets_left--;
    return VKF_OK;
}

/* ---------------------------------------------------------------- dispatch */

vkf_status vkf_vk_dispatch(vkf_vk_rec *r, vkf_vk_pipeline *p, const vkf_vk_win *wins, int n,
                           const void *pc, uint32_t pc_size, uint32_t gx, uint32_t gy, uint32_t gz) {
    vkf_vk_backend *vb = r->vb;
    if (n + 1 != p->n_bindings)
        return vkf_error(VKF_ERROR_INTERNAL, "pipeline %s has %d bindings, dispatch gives %d", p->key,
                         p->n_bindings, n + 1);
    if (pc_size > VKF_VK_PC_BYTES || pc_size % 4)
        return vkf_error(VKF_ERROR_INTERNAL, "push constants of %u bytes for %s", pc_size, p->key);
    if (gx == 0 || gy == 0 || gz == 0) return VKF_OK;
    if (gx > vb->caps.max_wg_count[0] || gy > vb->caps.max_wg_count[1] || gz > vb->caps.max_wg_count[2])
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
                                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
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
    VKF_TRY(vkf_vk_alloc_set(r, p->n_bindings, &set));
    VkDescriptorBufferInfo bi[VKF_VK_MAX_BINDINGS];
    VkWriteDescriptorSet wr[VKF_VK_MAX_BINDINGS];
    bi[0] = (VkDescriptorBufferInfo){vb->dyn_buf, 0, 256};
    for (int i = 0; i < n; i++) bi[i + 1] = (VkDescriptorBufferInfo){wins[i].buf, wins[i].off, wins[i].range};
    for (int i = 0; i <= n; i++) {
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        wr[i].dstSet = set;
        wr[i].dstBinding = (uint32_t)i;
        wr[i].descriptorCount = 1;
        wr[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        wr[i].pBufferInfo = &bi[i];
    }
    vb->vk.vkUpdateDescriptorSets(vb->device, (uint32_t)(n + 1), wr, 0, NULL);
    if (r->ex->bound != p) {
        vb->vk.vkCmdBindPipeline(r->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
        r->ex->bound = p;
    }
    vb->vk.vkCmdBindDescriptorSets(r->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, NULL);
    if (pc_size) vb->vk.vkCmdPushConstants(r->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pc_size, pc);
    vb->vk.vkCmdDispatch(r->cmd, gx, gy, gz);
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
    for (int i = 0; i < ex->n_scratch; i++) vkf_vk_buffer_free(&vb->base, ex->scratch[i]);
    free(ex->scratch);
    if (ex->cmd) vb->vk.vkFreeCommandBuffers(vb->device, vb->cmd_pool, 1, &ex->cmd);
    for (int i = 0; i < ex->n_pools; i++) vb->vk.vkDestroyDescriptorPool(vb->device, ex->pools[i], NULL);
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

static const char *vkf_vk_op_label(vkf_op op) {
    static const char *const names[VKF_OP_COUNT] = {
        "MATMUL", "EMBED", "ADD_POS", "ROPE", "ADD", "MUL", "SCALE", "LAYERNORM", "RMSNORM",
        "UNARY", "SWIGLU", "SOFTMAX", "LOG_SOFTMAX", "ATTENTION", "COPY_ROWS", "ARGMAX", "TOPK"};
    return (unsigned)op < VKF_OP_COUNT ? names[op] : "?";
}

static vkf_status vkf_vk_record(vkf_vk_backend *vb, vkf_graph *g, vkf_vk_exec **out) {
    vkf_status st = VKF_OK;
    vkf_vk_exec *ex = calloc(1, sizeof *ex);
    if (!ex) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "graph %s: exec", g->name);
    vkf_vk_rec rec = {0};
    rec.vb = vb;
    rec.ex = ex;
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = vb->cmd_pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    VKF_VK_CHECK_GOTO(vb->vk.vkAllocateCommandBuffers(vb->device, &cai, &ex->cmd), st, fail);
    rec.cmd = ex->cmd;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKF_VK_CHECK_GOTO(vb->vk.vkBeginCommandBuffer(ex->cmd, &bi), st, fail);
    /* order against uploads and earlier submissions (which wrote or read these buffers) */
    vkf_vk_cmd_full_barrier(vb, ex->cmd);
    for (int i = 0; i < g->n_nodes; i++) {
        const vkf_node *nd = &g->nodes[i];
        st = vkf_vk_op_record(&rec, nd);
        if (st != VKF_OK) {
            vkf_error_prefix(st, "graph %s: node %d (%s -> %s)", g->name, i, vkf_vk_op_label(nd->op),
                             nd->dst ? nd->dst->name : "?");
            vb->vk.vkEndCommandBuffer(ex->cmd);
            goto fail;
        }
    }
    /* results visible to the host and to transfers (staged downloads) */
    vkf_vk_cmd_full_barrier(vb, ex->cmd);
    VKF_VK_CHECK_GOTO(vb->vk.vkEndCommandBuffer(ex->cmd), st, fail);
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

vkf_status vkf_vk_graph_compute(vkf_backend *be, vkf_graph *g, int32_t n_past) {
    vkf_vk_backend *vb = vkf_vk(be);
    VKF_TRY(vkf_vk_check_messages(vb));
    if (!g) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vulkan graph_compute: graph is NULL");
    if (n_past < 0) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "graph %s: n_past %d < 0", g->name, n_past);
    vkf_vk_exec *ex = g->exec;
    if (ex && (ex->n_nodes != g->n_nodes || ex->arena != g->arena)) {
        vkf_vk_graph_release(be, g);
        ex = NULL;
    }
    if (!ex) {
        VKF_TRY(vkf_vk_record(vb, g, &ex));
        g->exec = ex;
    }
    if (ex->dispatches == 0) return vkf_vk_check_messages(vb);
    vb->dyn_map[0] = n_past;
    VKF_TRY(vkf_vk_submit_wait(vb, ex->cmd));
    vb->stats.submits++;
    return vkf_vk_check_messages(vb);
}
