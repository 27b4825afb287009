/* Vulkan memory: device-local blocks sub-allocated first-fit (docs/DESIGN.md,
 * 'Weights once, memory planned'), staging uploads/downloads, direct mapping on unified-memory
 * devices, and the dyn (n_past) buffer. */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"

#define VKF_VK_BLOCK_MAX ((VkDeviceSize)256 << 20) /* largest shared block */
#define VKF_VK_BLOCK_MIN ((VkDeviceSize)16 << 20)  /* first block: small models stay small */
#define VKF_VK_STAGING_MAX ((VkDeviceSize)64 << 20)

static VkDeviceSize vkf_vk_round_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

/* The device-local heap used now, for the VKF_MAX_DEVICE_MEMORY simulation: imports excluded
 * (host memory used in place occupies none of the device's heap). */
static VkDeviceSize vkf_vk_heap_used(const vkf_vk_backend *vb) {
    VkDeviceSize u = 0;
    for (int i = 0; i < vb->n_blocks; i++)
        if (!vb->blocks[i]->imported) u += vb->blocks[i]->size;
    return u;
}

/* ---------------------------------------------------------------- memory types */

static uint32_t vkf_vk_mem_type(const vkf_vk_caps *c, uint32_t bits, uint32_t required,
                                uint32_t preferred) {
    uint32_t best = UINT32_MAX;
    for (uint32_t t = 0; t < c->n_mem_types; t++) {
        if (!(bits & (1u << t)) || (c->mem_type_flags[t] & required) != required) continue;
        if ((c->mem_type_flags[t] & preferred) == preferred) return t;
        if (best == UINT32_MAX) best = t;
    }
    return best;
}

static vkf_status vkf_vk_raw_buffer(vkf_vk_backend *vb, VkDeviceSize size, uint32_t mem_type,
                                    int map, VkBuffer *buf, VkDeviceMemory *mem, void **mapped) {
    vkf_status st = VKF_OK;
    *buf = VK_NULL_HANDLE;
    *mem = VK_NULL_HANDLE;
    if (mapped) *mapped = NULL;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT |
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VKF_VK_CHECK(vb->vk.vkCreateBuffer(vb->device, &bci, NULL, buf));
    VkMemoryRequirements req;
    vb->vk.vkGetBufferMemoryRequirements(vb->device, *buf, &req);
    if (!(req.memoryTypeBits & (1u << mem_type))) {
        st = vkf_error(VKF_ERROR_VULKAN, "memory type %u not allowed for a storage buffer on %s",
                       mem_type, vb->caps.name);
        goto fail;
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = mem_type;
    /* VKF_MAX_DEVICE_MEMORY=bytes simulates a small device: an allocation that would take the
     * heap's blocks past it fails as the driver's would (imports take none of it) */
    VkDeviceSize cap = vb->sw.max_device_memory;
    VkDeviceSize used = cap ? req.size + vkf_vk_heap_used(vb) : 0;
    VkResult r = cap && used > cap ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                   : vb->vk.vkAllocateMemory(vb->device, &mai, NULL, mem);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "vkAllocateMemory of %llu bytes failed: %s on %s",
                       (unsigned long long)req.size, vkf_vk_result_name(r), vb->caps.name);
        goto fail;
    }
    VKF_VK_CHECK_GOTO(r, st, fail);
    VKF_VK_CHECK_GOTO(vb->vk.vkBindBufferMemory(vb->device, *buf, *mem, 0), st, fail);
    if (map)
        VKF_VK_CHECK_GOTO(vb->vk.vkMapMemory(vb->device, *mem, 0, VK_WHOLE_SIZE, 0, mapped), st,
                          fail);
    return VKF_OK;
fail:
    if (*buf) vb->vk.vkDestroyBuffer(vb->device, *buf, NULL);
    if (*mem) vb->vk.vkFreeMemory(vb->device, *mem, NULL);
    *buf = VK_NULL_HANDLE;
    *mem = VK_NULL_HANDLE;
    return st;
}

vkf_status vkf_vk_memory_init(vkf_vk_backend *vb) {
    const vkf_vk_caps *c = &vb->caps;
    vb->sub_align = c->min_storage_align > 64 ? c->min_storage_align : 64;
    vb->direct_map =
        c->unified && c->type != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU && !vb->xp.force_staging;
    /* the memory types a storage buffer may use */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = 4096;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT |
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VkBuffer probe;
    VKF_VK_CHECK(vb->vk.vkCreateBuffer(vb->device, &bci, NULL, &probe));
    VkMemoryRequirements req;
    vb->vk.vkGetBufferMemoryRequirements(vb->device, probe, &req);
    vb->vk.vkDestroyBuffer(vb->device, probe, NULL);
    if (req.alignment > vb->sub_align) vb->sub_align = req.alignment;

    const uint32_t hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if (vb->direct_map) {
        vb->mem_type_local =
            vkf_vk_mem_type(c, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | hv,
                            VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        if (vb->mem_type_local == UINT32_MAX) vb->direct_map = 0;
    }
    /* host memory (the model file's pages) can back buffers: vkf_vk_buffer_import */
    vb->base.import_host = vb->direct_map && c->host_import;
    if (!vb->direct_map)
        vb->mem_type_local =
            vkf_vk_mem_type(c, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    if (vb->mem_type_local == UINT32_MAX)
        vb->mem_type_local = vkf_vk_mem_type(c, req.memoryTypeBits, 0, 0);
    vb->mem_type_host =
        vkf_vk_mem_type(c, req.memoryTypeBits, hv, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (vb->mem_type_local == UINT32_MAX || vb->mem_type_host == UINT32_MAX)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "device %s has no usable memory type for storage "
                         "buffers (device-local %s, host-visible %s)",
                         c->name, vb->mem_type_local == UINT32_MAX ? "missing" : "ok",
                         vb->mem_type_host == UINT32_MAX ? "missing" : "ok");
    vb->block_size = VKF_VK_BLOCK_MAX < c->max_alloc ? VKF_VK_BLOCK_MAX : c->max_alloc;
    vb->block_size = vb->block_size / vb->sub_align * vb->sub_align;
    if (vb->block_size < vb->sub_align) vb->block_size = vb->sub_align;

    void *m = NULL;
    VKF_TRY(vkf_vk_raw_buffer(vb, 256, vb->mem_type_host, 1, &vb->dyn_buf, &vb->dyn_mem, &m));
    vb->dyn_map = m;
    memset(vb->dyn_map, 0, 256);
    return VKF_OK;
}

static void vkf_vk_block_destroy(vkf_vk_backend *vb, vkf_vk_block *blk) {
    if (!blk) return;
    if (blk->buf) vb->vk.vkDestroyBuffer(vb->device, blk->buf, NULL);
    if (blk->mem) vb->vk.vkFreeMemory(vb->device, blk->mem, NULL);
    free(blk->free);
    free(blk);
}

void vkf_vk_memory_destroy(vkf_vk_backend *vb) {
    if (!vb->device) return;
    for (int i = 0; i < vb->n_blocks; i++)
        vkf_vk_block_destroy(vb, vb->blocks[i]);
    free(vb->blocks);
    vb->blocks = NULL;
    vb->n_blocks = 0;
    for (int i = 0; i < VKF_VK_RING_SLOTS; i++) {
        if (vb->ring_busy[i])
            vb->vk.vkWaitForFences(vb->device, 1, &vb->ring_fence[i], VK_TRUE, UINT64_MAX);
        if (vb->ring_fence[i]) vb->vk.vkDestroyFence(vb->device, vb->ring_fence[i], NULL);
        vb->ring_fence[i] = VK_NULL_HANDLE;
        vb->ring_busy[i] = 0;
    }
    if (vb->staging) vb->vk.vkDestroyBuffer(vb->device, vb->staging, NULL);
    if (vb->staging_mem) vb->vk.vkFreeMemory(vb->device, vb->staging_mem, NULL);
    if (vb->dyn_buf) vb->vk.vkDestroyBuffer(vb->device, vb->dyn_buf, NULL);
    if (vb->dyn_mem) vb->vk.vkFreeMemory(vb->device, vb->dyn_mem, NULL);
    vb->staging = VK_NULL_HANDLE;
    vb->dyn_buf = VK_NULL_HANDLE;
}

/* ---------------------------------------------------------------- blocks */

static vkf_status vkf_vk_block_create(vkf_vk_backend *vb, VkDeviceSize size, int dedicated,
                                      vkf_vk_block **out) {
    vkf_vk_block *blk = calloc(1, sizeof *blk);
    if (!blk) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "block descriptor");
    vkf_status st = vkf_vk_raw_buffer(vb, size, vb->mem_type_local, vb->direct_map, &blk->buf,
                                      &blk->mem, &blk->map);
    if (st != VKF_OK) {
        free(blk);
        return st;
    }
    blk->size = size;
    blk->dedicated = dedicated;
    blk->cap_free = 8;
    blk->free = malloc(sizeof *blk->free * (size_t)blk->cap_free);
    if (!blk->free) {
        vkf_vk_block_destroy(vb, blk);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "block free list");
    }
    blk->free[0] = (vkf_vk_range){0, size};
    blk->n_free = 1;
    if (vb->n_blocks == vb->cap_blocks) {
        int cap = vb->cap_blocks ? vb->cap_blocks * 2 : 8;
        vkf_vk_block **nb = realloc(vb->blocks, sizeof *nb * (size_t)cap);
        if (!nb) {
            vkf_vk_block_destroy(vb, blk);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "block list");
        }
        vb->blocks = nb;
        vb->cap_blocks = cap;
    }
    vb->blocks[vb->n_blocks++] = blk;
    *out = blk;
    return VKF_OK;
}

static int vkf_vk_block_take(vkf_vk_block *blk, VkDeviceSize size, VkDeviceSize *off) {
    for (int i = 0; i < blk->n_free; i++) {
        if (blk->free[i].size < size) continue;
        *off = blk->free[i].off;
        blk->free[i].off += size;
        blk->free[i].size -= size;
        if (blk->free[i].size == 0) {
            memmove(&blk->free[i], &blk->free[i + 1],
                    sizeof *blk->free * (size_t)(blk->n_free - i - 1));
            blk->n_free--;
        }
        blk->n_live++;
        return 1;
    }
    return 0;
}

static vkf_status vkf_vk_block_give(vkf_vk_block *blk, VkDeviceSize off, VkDeviceSize size) {
    int i = 0;
    while (i < blk->n_free && blk->free[i].off < off)
        i++;
    int merge_prev = i > 0 && blk->free[i - 1].off + blk->free[i - 1].size == off;
    int merge_next = i < blk->n_free && off + size == blk->free[i].off;
    if (merge_prev && merge_next) {
        blk->free[i - 1].size += size + blk->free[i].size;
        memmove(&blk->free[i], &blk->free[i + 1],
                sizeof *blk->free * (size_t)(blk->n_free - i - 1));
        blk->n_free--;
    } else if (merge_prev) {
        blk->free[i - 1].size += size;
    } else if (merge_next) {
        blk->free[i].off = off;
        blk->free[i].size += size;
    } else {
        if (blk->n_free == blk->cap_free) {
            int cap = blk->cap_free * 2;
            vkf_vk_range *nf = realloc(blk->free, sizeof *nf * (size_t)cap);
            if (!nf) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "block free list");
            blk->free = nf;
            blk->cap_free = cap;
        }
        memmove(&blk->free[i + 1], &blk->free[i], sizeof *blk->free * (size_t)(blk->n_free - i));
        blk->free[i] = (vkf_vk_range){off, size};
        blk->n_free++;
    }
    blk->n_live--;
    return VKF_OK;
}

/* ---------------------------------------------------------------- buffers */

vkf_status vkf_vk_buffer_alloc(vkf_backend *be, size_t size, vkf_buffer_usage usage,
                               vkf_buffer **out) {
    vkf_vk_backend *vb = vkf_vk(be);
    *out = NULL;
    VkDeviceSize asize = vkf_vk_round_up(size ? size : 1, vb->sub_align);
    if (asize > vb->caps.max_alloc)
        return vkf_error(
            VKF_ERROR_OUT_OF_MEMORY,
            "buffer of %zu bytes exceeds maxMemoryAllocationSize %llu of %s%s; split it "
            "into buffers of at most that size",
            size, (unsigned long long)vb->caps.max_alloc, vb->caps.name,
            strstr(vb->caps.overrides, "VKF_MAX_ALLOC") ? " (capped by VKF_MAX_ALLOC)" : "");
    vkf_buffer *b = calloc(1, sizeof *b);
    if (!b) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "buffer descriptor");
    b->size = size;
    b->alloc = asize;
    b->usage = usage;
    if (asize > vb->block_size / 2) { /* big tensors get their own allocation */
        vkf_status st = vkf_vk_block_create(vb, asize, 1, &b->block);
        if (st != VKF_OK) {
            free(b);
            return st;
        }
        vkf_vk_block_take(b->block, asize, &b->offset);
        *out = b;
        return VKF_OK;
    }
    for (int i = 0; i < vb->n_blocks; i++) {
        vkf_vk_block *blk = vb->blocks[i];
        if (!blk->dedicated && vkf_vk_block_take(blk, asize, &b->offset)) {
            b->block = blk;
            *out = b;
            return VKF_OK;
        }
    }
    /* a new shared block, growing with what is already allocated */
    VkDeviceSize total = 0;
    for (int i = 0; i < vb->n_blocks; i++)
        if (!vb->blocks[i]->dedicated) total += vb->blocks[i]->size;
    VkDeviceSize bs = VKF_VK_BLOCK_MIN;
    while (bs < total && bs < vb->block_size)
        bs *= 2;
    if (bs > vb->block_size) bs = vb->block_size;
    while (bs < asize)
        bs *= 2;
    if (bs > vb->caps.max_alloc) bs = asize;
    vkf_vk_block *blk;
    vkf_status st = vkf_vk_block_create(vb, bs, 0, &blk);
    if (st != VKF_OK) {
        free(b);
        return st;
    }
    vkf_vk_block_take(blk, asize, &b->offset);
    b->block = blk;
    *out = b;
    return VKF_OK;
}

/* Destroys a block that holds no buffer. */
static void vkf_vk_buffer_release_block(vkf_vk_backend *vb, vkf_vk_block *blk) {
    vb->vk.vkDeviceWaitIdle(vb->device);
    for (int i = 0; i < vb->n_blocks; i++)
        if (vb->blocks[i] == blk) {
            vb->blocks[i] = vb->blocks[--vb->n_blocks];
            break;
        }
    vkf_vk_block_destroy(vb, blk);
}

void vkf_vk_buffer_free(vkf_backend *be, vkf_buffer *b) {
    if (!b) return;
    vkf_vk_backend *vb = vkf_vk(be);
    vkf_vk_block *blk = b->block;
    if (blk->imported) /* views of an import: only counted */
        blk->n_live--;
    else
        vkf_vk_block_give(blk, b->offset, b->alloc);
    free(b);
    if (blk->n_live == 0) vkf_vk_buffer_release_block(vb, blk);
}

/* ---------------------------------------------------------------- host memory in place */

/* The heap buffers come from (VKF_MAX_DEVICE_MEMORY, else the heap of the device-local memory
 * type), what this backend allocated there, the host memory it uses in place (imports take no
 * heap), and the driver's budget where VK_EXT_memory_budget is enabled. */
void vkf_vk_memory_info(vkf_backend *be, vkf_backend_memory *out) {
    vkf_vk_backend *vb = vkf_vk(be);
    memset(out, 0, sizeof *out);
    uint64_t cap = vb->sw.max_device_memory;
    uint32_t heap =
        vb->mem_type_local < vb->caps.n_mem_types ? vb->caps.mem_type_heap[vb->mem_type_local] : 0;
    out->capped = cap != 0;
    out->heap = cap ? cap : vb->caps.heap_size[heap];
    out->unified = vb->direct_map;
    for (int i = 0; i < vb->n_blocks; i++) {
        if (vb->blocks[i]->imported)
            out->in_place += vb->blocks[i]->size;
        else
            out->allocated += vb->blocks[i]->size;
    }
    if (vb->has_budget) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 mp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &b};
        vkGetPhysicalDeviceMemoryProperties2(vb->phys, &mp);
        out->has_budget = 1;
        out->budget =
            b.heapBudget[heap] > b.heapUsage[heap] ? b.heapBudget[heap] - b.heapUsage[heap] : 0;
    }
}

/* Imports host memory [base, base + size) (page-aligned) as one dedicated, read-only block. */
static vkf_status vkf_vk_import_block(vkf_vk_backend *vb, uintptr_t base, VkDeviceSize size,
                                      vkf_vk_block **out) {
    VkMemoryHostPointerPropertiesEXT hp = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    if (!vb->vk.vkGetMemoryHostPointerPropertiesEXT ||
        vb->vk.vkGetMemoryHostPointerPropertiesEXT(
            vb->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, (const void *)base,
            &hp) != VK_SUCCESS)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: host pointer properties unavailable",
                         vb->caps.name);
    vkf_status st = VKF_OK;
    vkf_vk_block *blk = calloc(1, sizeof *blk);
    if (!blk) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "imported block descriptor");
    VkExternalMemoryBufferCreateInfo ebi = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
    ebi.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.pNext = &ebi;
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT |
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VKF_VK_CHECK_GOTO(vb->vk.vkCreateBuffer(vb->device, &bci, NULL, &blk->buf), st, fail);
    VkMemoryRequirements req;
    vb->vk.vkGetBufferMemoryRequirements(vb->device, blk->buf, &req);
    uint32_t bits = req.memoryTypeBits & hp.memoryTypeBits, type = UINT32_MAX;
    /* device-local types only: host memory on a device with faster memory of its own would
     * make every weight read cross the bus */
    for (uint32_t t = 0; t < vb->caps.n_mem_types && type == UINT32_MAX; t++)
        if ((bits & (1u << t)) &&
            (vb->caps.mem_type_flags[t] & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            type = t;
    if (type == UINT32_MAX || req.size > size) {
        st = vkf_error(VKF_ERROR_UNSUPPORTED,
                       "%s: no device-local memory type for imported host memory", vb->caps.name);
        goto fail;
    }
    VkImportMemoryHostPointerInfoEXT imp = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
    imp.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    imp.pHostPointer = (void *)base;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.pNext = &imp;
    mai.allocationSize = size;
    mai.memoryTypeIndex = type;
    VkResult r = vb->vk.vkAllocateMemory(vb->device, &mai, NULL, &blk->mem);
    if (r != VK_SUCCESS) {
        blk->mem = VK_NULL_HANDLE;
        st = vkf_error(VKF_ERROR_UNSUPPORTED, "%s: import of %llu bytes of host memory failed: %s",
                       vb->caps.name, (unsigned long long)size, vkf_vk_result_name(r));
        goto fail;
    }
    VKF_VK_CHECK_GOTO(vb->vk.vkBindBufferMemory(vb->device, blk->buf, blk->mem, 0), st, fail);
    if (vb->n_blocks == vb->cap_blocks) {
        int cap2 = vb->cap_blocks ? vb->cap_blocks * 2 : 8;
        vkf_vk_block **nb = realloc(vb->blocks, sizeof *nb * (size_t)cap2);
        if (!nb) {
            st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "block list");
            goto fail;
        }
        vb->blocks = nb;
        vb->cap_blocks = cap2;
    }
    blk->size = size;
    blk->map = (void *)base; /* host reads (vkf_tensor_read) come straight from the pages */
    blk->dedicated = 1;      /* never sub-allocated: its buffers are views, counted in n_live */
    blk->imported = 1;
    vb->blocks[vb->n_blocks++] = blk;
    *out = blk;
    return VKF_OK;
fail:
    if (blk->buf) vb->vk.vkDestroyBuffer(vb->device, blk->buf, NULL);
    if (blk->mem) vb->vk.vkFreeMemory(vb->device, blk->mem, NULL);
    free(blk);
    return st;
}

/* A weights buffer over host memory (the model file's mapping, or the memory it was read into),
 * on devices whose device-local memory is the host's: the kernels read the file's pages
 * directly, so the weights exist once (docs/DESIGN.md, 'Weights once, memory planned'). Imports are
 * made in large chunks of the region (up to maxMemoryAllocationSize, from the page of the first
 * tensor that needs one), so that neighbouring tensors share a block and the fused matmul groups
 * (Q/K/V, gate/up), which bind their weights as one window of one block, stay fused; each tensor is
 * a view of the chunk that holds it. */
vkf_status vkf_vk_buffer_import(vkf_backend *be, const void *p, size_t n, const void *region,
                                size_t region_size, vkf_buffer **out) {
    vkf_vk_backend *vb = vkf_vk(be);
    *out = NULL;
    VKF_TRY(vkf_vk_check_usable(vb));
    if (!vb->caps.host_import || !vb->direct_map)
        return vkf_error(
            VKF_ERROR_UNSUPPORTED,
            "%s: no host memory import (VK_EXT_external_memory_host on unified memory)",
            vb->caps.name);
    VkDeviceSize a = vb->caps.host_import_align;
    uintptr_t lo = (uintptr_t)p, hi = lo + (n ? n : 1), r0 = (uintptr_t)region;
    /* the region's pages: a mapping covers its last page whole */
    uintptr_t r1 = r0 + (uintptr_t)vkf_vk_round_up(region_size, a);
    /* the kernels' windows start at a multiple of minStorageBufferOffsetAlignment and take the
     * rest as an element offset, which the F16/F32 paths want 16-byte aligned (as a copy is) */
    if (lo % 16 || r0 % a || lo < r0 || hi > r1)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: host memory at %p (%zu bytes) cannot be imported", vb->caps.name, p,
                         n);
    vkf_vk_block *blk = NULL;
    for (int i = 0; i < vb->n_blocks && !blk; i++) {
        vkf_vk_block *c = vb->blocks[i];
        if (c->imported && (uintptr_t)c->map <= lo && hi <= (uintptr_t)c->map + c->size) blk = c;
    }
    if (!blk) {
        uintptr_t base = lo / a * a;
        VkDeviceSize chunk = vb->caps.max_alloc / a * a, size = vkf_vk_round_up(hi - base, a);
        if (size > chunk)
            return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: %zu bytes exceed maxMemoryAllocationSize",
                             vb->caps.name, n);
        size = r1 - base < chunk ? r1 - base : chunk;
        VKF_TRY(vkf_vk_import_block(vb, base, size, &blk));
    }
    vkf_buffer *b = calloc(1, sizeof *b);
    if (!b) {
        if (blk->n_live == 0) vkf_vk_buffer_release_block(vb, blk);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "imported buffer descriptor");
    }
    blk->n_live++;
    b->block = blk;
    b->offset = lo - (uintptr_t)blk->map;
    b->size = n;
    b->alloc = n ? n : 1;
    b->usage = VKF_BUFFER_WEIGHTS;
    *out = b;
    return VKF_OK;
}

/* ---------------------------------------------------------------- transfers */

void vkf_vk_cmd_full_barrier(vkf_vk_backend *vb, VkCommandBuffer cmd) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                       VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                       VK_ACCESS_HOST_READ_BIT;
    vb->vk.vkCmdPipelineBarrier(cmd,
                                VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                                VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0,
                                1, &mb, 0, NULL, 0, NULL);
}

/* Submits cmd and waits at most timeout_ns. A wait that times out leaves the work pending on
 * the queue (the fence may not be reset then), and a lost device loses everything: both make
 * the backend unusable, and every later call says so, so the caller moves to another context
 * (the CPU) instead of reading half-written results. */
vkf_status vkf_vk_check_usable(const vkf_vk_backend *vb) {
    if (vb->unusable)
        return vkf_error(VKF_ERROR_VULKAN,
                         "%s is unusable after an earlier GPU timeout or device loss",
                         vb->caps.name);
    return VKF_OK;
}

vkf_status vkf_vk_submit_wait(vkf_vk_backend *vb, VkCommandBuffer cmd) {
    VKF_TRY(vkf_vk_check_usable(vb));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    VkResult r = vb->vk.vkQueueSubmit(vb->queue, 1, &si, vb->fence);
    if (r == VK_ERROR_DEVICE_LOST) vb->unusable = 1;
    if (r != VK_SUCCESS) return vkf_vk_fail(r, "vkQueueSubmit", __FILE__, __LINE__);
    if (!vb->timeout_ns) {
        int64_t ms = vb->sw.gpu_timeout_ms;
        /* < 0 (VKF_GPU_TIMEOUT_MS=0): the shortest wait there is (tests) */
        uint64_t m = ms < 0 ? 0 : ms ? (uint64_t)ms : 120000;
        vb->timeout_ns = ms < 0 ? 1 : m > UINT64_MAX / 1000000u ? UINT64_MAX : m * 1000000u;
    }
    r = vb->vk.vkWaitForFences(vb->device, 1, &vb->fence, VK_TRUE, vb->timeout_ns);
    if (r == VK_TIMEOUT) {
        vb->unusable = 1;
        return vkf_error(VKF_ERROR_VULKAN,
                         "%s: the GPU did not finish within %.0f ms (VK_TIMEOUT; "
                         "VKF_GPU_TIMEOUT_MS sets the limit)",
                         vb->caps.name, (double)vb->timeout_ns / 1e6);
    }
    if (r != VK_SUCCESS) {
        if (r == VK_ERROR_DEVICE_LOST) vb->unusable = 1;
        return vkf_vk_fail(r, "vkWaitForFences", __FILE__, __LINE__);
    }
    VKF_VK_CHECK(vb->vk.vkResetFences(vb->device, 1, &vb->fence));
    return VKF_OK;
}

static vkf_status vkf_vk_staging_ensure(vkf_vk_backend *vb) {
    if (vb->staging) return VKF_OK;
    VkDeviceSize size =
        VKF_VK_STAGING_MAX < vb->caps.max_alloc ? VKF_VK_STAGING_MAX : vb->caps.max_alloc;
    void *m = NULL;
    VKF_TRY(vkf_vk_raw_buffer(vb, size, vb->mem_type_host, 1, &vb->staging, &vb->staging_mem, &m));
    vb->staging_map = m;
    vb->staging_size = size;
    return VKF_OK;
}

/* One staged copy: to_device ? staging -> b : b -> staging. */
static vkf_status vkf_vk_staged_copy(vkf_vk_backend *vb, vkf_buffer *b, size_t off, size_t n,
                                     int to_device) {
    VKF_VK_CHECK(vb->vk.vkResetCommandBuffer(vb->xfer_cmd, 0));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VKF_VK_CHECK(vb->vk.vkBeginCommandBuffer(vb->xfer_cmd, &bi));
    vkf_vk_cmd_full_barrier(vb, vb->xfer_cmd);
    VkBufferCopy region;
    if (to_device) {
        region = (VkBufferCopy){0, b->offset + off, n};
        vb->vk.vkCmdCopyBuffer(vb->xfer_cmd, vb->staging, b->block->buf, 1, &region);
    } else {
        region = (VkBufferCopy){b->offset + off, 0, n};
        vb->vk.vkCmdCopyBuffer(vb->xfer_cmd, b->block->buf, vb->staging, 1, &region);
    }
    vkf_vk_cmd_full_barrier(vb, vb->xfer_cmd);
    VKF_VK_CHECK(vb->vk.vkEndCommandBuffer(vb->xfer_cmd));
    return vkf_vk_submit_wait(vb, vb->xfer_cmd);
}

static vkf_status vkf_vk_check_range(const vkf_buffer *b, size_t off, size_t n, const char *what) {
    if (!b) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: buffer is NULL", what);
    if (off > b->size || n > b->size - off)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: bytes [%zu, %zu) outside a buffer of %llu bytes", what, off, off + n,
                         (unsigned long long)b->size);
    return VKF_OK;
}

/* Waits for ring slot i's copy, if one is in flight. */
static vkf_status vkf_vk_ring_wait(vkf_vk_backend *vb, int i) {
    if (!vb->ring_busy[i]) return VKF_OK;
    VkResult r = vb->vk.vkWaitForFences(vb->device, 1, &vb->ring_fence[i], VK_TRUE,
                                        vb->timeout_ns ? vb->timeout_ns : UINT64_MAX);
    if (r == VK_TIMEOUT || r == VK_ERROR_DEVICE_LOST) vb->unusable = 1;
    if (r != VK_SUCCESS) return vkf_vk_fail(r, "vkWaitForFences (upload ring)", __FILE__, __LINE__);
    vb->ring_busy[i] = 0;
    VKF_VK_CHECK(vb->vk.vkResetFences(vb->device, 1, &vb->ring_fence[i]));
    return VKF_OK;
}

/* Uploads through the staging ring (discrete GPUs): while the device copies slot i into b, the
 * host fills slot i + 1 (reading the model file: page faults or disk reads), so reading and
 * copying overlap. Returns when every copy of this write is done. */
static vkf_status vkf_vk_ring_write(vkf_vk_backend *vb, vkf_buffer *b, size_t off, const void *src,
                                    size_t n) {
    if (!vb->ring_fence[0]) {
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        cai.commandPool = vb->cmd_pool;
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = VKF_VK_RING_SLOTS;
        VKF_VK_CHECK(vb->vk.vkAllocateCommandBuffers(vb->device, &cai, vb->ring_cmd));
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        for (int i = 0; i < VKF_VK_RING_SLOTS; i++)
            VKF_VK_CHECK(vb->vk.vkCreateFence(vb->device, &fci, NULL, &vb->ring_fence[i]));
    }
    size_t slot = (size_t)(vb->staging_size / VKF_VK_RING_SLOTS) / 256 * 256;
    vkf_status st = VKF_OK;
    int i = 0;
    for (size_t done = 0; done < n && st == VKF_OK; i = (i + 1) % VKF_VK_RING_SLOTS) {
        size_t k = n - done < slot ? n - done : slot;
        st = vkf_vk_ring_wait(vb, i);
        if (st != VKF_OK) break;
        memcpy((char *)vb->staging_map + (size_t)i * slot, (const char *)src + done, k);
        VkCommandBuffer cmd = vb->ring_cmd[i];
        VKF_VK_CHECK_GOTO(vb->vk.vkResetCommandBuffer(cmd, 0), st, out);
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        VKF_VK_CHECK_GOTO(vb->vk.vkBeginCommandBuffer(cmd, &bi), st, out);
        vkf_vk_cmd_full_barrier(vb, cmd);
        VkBufferCopy region = {(VkDeviceSize)i * slot, b->offset + off + done, k};
        vb->vk.vkCmdCopyBuffer(cmd, vb->staging, b->block->buf, 1, &region);
        vkf_vk_cmd_full_barrier(vb, cmd);
        VKF_VK_CHECK_GOTO(vb->vk.vkEndCommandBuffer(cmd), st, out);
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        VkResult r = vb->vk.vkQueueSubmit(vb->queue, 1, &si, vb->ring_fence[i]);
        if (r == VK_ERROR_DEVICE_LOST) vb->unusable = 1;
        if (r != VK_SUCCESS) {
            st = vkf_vk_fail(r, "vkQueueSubmit (upload ring)", __FILE__, __LINE__);
            break;
        }
        vb->ring_busy[i] = 1;
        done += k;
    }
out:
    for (int j = 0; j < VKF_VK_RING_SLOTS; j++) {
        vkf_status w = vkf_vk_ring_wait(vb, j);
        if (st == VKF_OK) st = w;
    }
    return st;
}

vkf_status vkf_vk_buffer_write(vkf_backend *be, vkf_buffer *b, size_t off, const void *src,
                               size_t n) {
    vkf_vk_backend *vb = vkf_vk(be);
    VKF_TRY(vkf_vk_check_usable(vb));
    VKF_TRY(vkf_vk_check_range(b, off, n, "vulkan buffer_write"));
    if (n == 0) return VKF_OK;
    if (b->block->imported)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "vulkan buffer_write: the buffer is host memory used in place "
                         "(read-only weights)");
    if (b->block->map) {
        memcpy((char *)b->block->map + b->offset + off, src, n);
        return VKF_OK;
    }
    VKF_TRY(vkf_vk_staging_ensure(vb));
    if (n > vb->staging_size / VKF_VK_RING_SLOTS && !vb->sw.no_upload_ring)
        return vkf_vk_ring_write(vb, b, off, src, n);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < vb->staging_size ? n - done : (size_t)vb->staging_size;
        memcpy(vb->staging_map, (const char *)src + done, k);
        VKF_TRY(vkf_vk_staged_copy(vb, b, off + done, k, 1));
        done += k;
    }
    return VKF_OK;
}

vkf_status vkf_vk_buffer_read(vkf_backend *be, vkf_buffer *b, size_t off, void *dst, size_t n) {
    vkf_vk_backend *vb = vkf_vk(be);
    VKF_TRY(vkf_vk_check_usable(vb)); /* mapped memory of a pending or lost submission is garbage */
    VKF_TRY(vkf_vk_check_messages(vb));
    VKF_TRY(vkf_vk_check_range(b, off, n, "vulkan buffer_read"));
    if (n == 0) return VKF_OK;
    if (b->block->map) {
        memcpy(dst, (const char *)b->block->map + b->offset + off, n);
        return vkf_vk_check_messages(vb);
    }
    VKF_TRY(vkf_vk_staging_ensure(vb));
    for (size_t done = 0; done < n;) {
        size_t k = n - done < vb->staging_size ? n - done : (size_t)vb->staging_size;
        VKF_TRY(vkf_vk_staged_copy(vb, b, off + done, k, 0));
        memcpy((char *)dst + done, vb->staging_map, k);
        done += k;
    }
    return vkf_vk_check_messages(vb);
}
