/* Dispatch helpers, the leaf every op encoder records through (vk_ops.c, vk_matmul.c,
 * vk_attention.c, vk_fuse.c; the graph walk in vk_record.c sits above them): windows over
 * buffers (bound ranges of at most maxStorageBufferRange, texel views), hazard barriers (one only
 * where a dispatch reads what an earlier one wrote since the last barrier, or writes what was
 * read or written), descriptor sets, the dispatch itself, kernel scratch, and the recording
 * state (vkf_vk_exec) a graph's command buffer lives in. */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "vkf_abi.h"

#define VKF_VK_SETS_PER_POOL 256

/* ---------------------------------------------------------------- tensor geometry */

static uint64_t vkf_vk_elem_size(vkf_dtype t) { return vkf_dtype_block_bytes(t); }

/* bytes of one row's data */
uint64_t vkf_vk_row_bytes(const vkf_tensor *t) { return vkf_dtype_row_bytes(t->dtype, t->cols); }

/* bytes between row starts */
uint64_t vkf_vk_stride_bytes(const vkf_tensor *t) {
    return vkf_wtype_is_quant(t->dtype) ? vkf_vk_row_bytes(t)
                                        : (uint64_t)t->row_stride * vkf_vk_elem_size(t->dtype);
}

/* rows of t that fit one window, at least 1 unless a single row is too long (then 0) */
int64_t vkf_vk_rows_fit(const vkf_tensor *t, uint64_t budget) {
    uint64_t rb = vkf_vk_row_bytes(t), sb = vkf_vk_stride_bytes(t);
    if (rb > budget) return 0;
    if (sb == 0) return t->rows;
    uint64_t n = (budget - rb) / sb + 1;
    return n > (uint64_t)t->rows ? t->rows : (int64_t)n;
}

vkf_status vkf_vk_fit_error(vkf_vk_rec *r, const vkf_tensor *t) {
    return vkf_error(VKF_ERROR_UNSUPPORTED,
                     "tensor %s: one row of %llu bytes exceeds the storage "
                     "window of %llu bytes (maxStorageBufferRange %llu)",
                     t->name, (unsigned long long)vkf_vk_row_bytes(t),
                     (unsigned long long)vkf_vk_window_budget(r->vb),
                     (unsigned long long)r->vb->caps.max_storage_range);
}

/* the window over rows [r0, r0+n) of t */
vkf_status vkf_vk_rows_win(vkf_vk_rec *r, const vkf_tensor *t, int64_t r0, int64_t n, int write,
                           vkf_vk_win *w) {
    if (!t->buf) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tensor %s has no buffer", t->name);
    if (n <= 0) n = 1;
    uint64_t sb = vkf_vk_stride_bytes(t);
    uint64_t lo = t->offset + (uint64_t)r0 * sb;
    uint64_t hi = lo + (uint64_t)(n - 1) * sb + vkf_vk_row_bytes(t);
    return vkf_vk_window(r, t->buf, lo, hi, write, w);
}

/* element offset of the window's first requested byte, for plain dtypes */
vkf_status vkf_vk_elem_off(const vkf_vk_win *w, const vkf_tensor *t, uint32_t *out) {
    uint64_t es = vkf_vk_elem_size(t->dtype);
    if (w->delta % es)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "tensor %s: byte offset %zu is not a multiple of "
                         "its element size %llu",
                         t->name, t->offset, (unsigned long long)es);
    *out = (uint32_t)(w->delta / es);
    return VKF_OK;
}

int64_t vkf_vk_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* the texel window over rows [r0, r0+n) of t */
vkf_status vkf_vk_rows_texwin(vkf_vk_rec *r, const vkf_tensor *t, int64_t r0, int64_t n,
                              vkf_vk_win *w) {
    if (n <= 0) n = 1;
    uint64_t sb = vkf_vk_stride_bytes(t);
    uint64_t lo = t->offset + (uint64_t)r0 * sb;
    uint64_t hi = lo + (uint64_t)(n - 1) * sb + vkf_vk_row_bytes(t);
    return vkf_vk_window_texel(r, t->buf, lo, hi, 0, w);
}

/* [lo, hi): the absolute bytes tensors t[0..n) span in their block (one block, checked by the
 * caller) */
void vkf_vk_tensors_span(const vkf_tensor *const *t, int n, uint64_t *lo, uint64_t *hi) {
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < n; i++) {
        uint64_t l = t[i]->buf->offset + t[i]->offset, h = l + vkf_tensor_nbytes(t[i]);
        if (l < *lo) *lo = l;
        if (h > *hi) *hi = h;
    }
}

/* the WTYPE define of the kernels: the vkf_dtype value (shaders/dtypes.glsl) */
int vkf_vk_wtype(vkf_dtype t) { return vkf_wtype_is_weight(t) ? (int)t : VKF_W_F32; }

/* elements one kernel step decodes (K must be a multiple for the FAST and texel paths) */
int64_t vkf_vk_wunit(vkf_dtype t) { return vkf_wtype_is_weight(t) ? vkf_wtype_of(t)->gpu_unit : 4; }

/* byte alignment the kernels read a weight row with: 4 for F32 and for blocks whose size is a
 * multiple of 4 (shaders/dtypes.glsl reads their words directly), 2 for even sizes, else 1
 * (MXFP4's 17-byte blocks: read at any byte offset) */
uint64_t vkf_vk_walign(vkf_dtype t) {
    size_t bb = vkf_dtype_block_bytes(t);
    return t == VKF_DTYPE_F32 || bb % 4 == 0 ? 4 : bb % 2 == 0 ? 2 : 1;
}

/* byte offset of a weight window; rows must start aligned as vkf_vk_walign says */
vkf_status vkf_vk_weight_off(const vkf_vk_win *w, const vkf_tensor *t, uint32_t *boff) {
    uint64_t need = vkf_vk_walign(t->dtype);
    if (w->delta % need || vkf_vk_stride_bytes(t) % need)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "weight %s (%s): offset %zu / row stride must be a "
                         "multiple of %llu bytes",
                         t->name, vkf_dtype_name(t->dtype), t->offset, (unsigned long long)need);
    *boff = (uint32_t)w->delta;
    return VKF_OK;
}

int vkf_vk_weight_ok(vkf_dtype t) { return vkf_wtype_is_weight(t); }

vkf_status vkf_vk_pipe(vkf_vk_rec *r, const vkf_vk_kplan *k, vkf_vk_pipeline **p) {
    return vkf_vk_kplan_pipe(r->vb, k, p);
}

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
    if (texel == 1 && !vb->caps.texel)
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
    *w = (vkf_vk_win){blk->buf, ws, range, abs_lo - ws, write, texel == 1};
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

/* ---------------------------------------------------------------- recording state */

vkf_status vkf_vk_scratch(vkf_vk_rec *r, size_t bytes, vkf_buffer **out) {
    vkf_vk_exec *ex = r->ex;
    vkf_buffer **ns = realloc(ex->scratch, sizeof *ns * (size_t)(ex->n_scratch + 1));
    if (!ns) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "scratch list");
    ex->scratch = ns;
    VKF_TRY(vkf_vk_buffer_alloc(&r->vb->base, bytes, VKF_BUFFER_ACTIVATIONS, out));
    ex->scratch[ex->n_scratch++] = *out;
    return VKF_OK;
}

void vkf_vk_exec_free(vkf_vk_backend *vb, vkf_vk_exec *ex) {
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

/* A new exec with its command buffer begun (and the profiling query pool when on). */
vkf_status vkf_vk_exec_begin(vkf_vk_backend *vb, vkf_vk_exec **out) {
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

vkf_status vkf_vk_exec_end(vkf_vk_backend *vb, vkf_vk_exec *ex) {
    /* results visible to the host and to transfers (staged downloads) */
    vkf_vk_cmd_full_barrier(vb, ex->cmd);
    VKF_VK_CHECK(vb->vk.vkEndCommandBuffer(ex->cmd));
    return VKF_OK;
}
