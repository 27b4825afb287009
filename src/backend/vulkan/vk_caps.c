/* Device capabilities (docs/DESIGN.md, 'Cross-vendor by data'): everything vkformer needs to know
 * about a physical device, read once into vkf_vk_caps (properties, limits, subgroups, features,
 * memory, the cooperative-matrix shapes), with the switches' caps and off switches applied and the
 * cooperative-matrix choice made; and the `vkformer devices` report of them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend/vulkan/vk_internal.h"

/* ---------------------------------------------------------------- names */

static const char *vkf_vk_vendor_name(uint32_t id) {
    switch (id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x1022: return "AMD";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x1010: return "ImgTec";
    case 0x106B: return "Apple";
    case 0x14E4: return "Broadcom";
    case 0x19E5: return "Huawei";
    case 0x10005: return "Mesa";
    case 0x10002: return "VeriSilicon";
    case 0x10004: return "Codeplay";
    default: return "unknown";
    }
}

const char *vkf_vk_type_name(int32_t t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

static void vkf_vk_driver_version_str(const vkf_vk_caps *c, char *out, size_t n) {
    uint32_t v = c->driver_version;
    if (c->vendor_id == 0x10DE)
        snprintf(out, n, "%u.%u.%u.%u", (v >> 22) & 0x3ff, (v >> 14) & 0xff, (v >> 6) & 0xff,
                 v & 0x3f);
    else
        snprintf(out, n, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                 VK_API_VERSION_PATCH(v));
}

static const char *const k_subgroup_op_names[] = {
    "basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "clustered", "quad"};
static const char *const k_mem_flag_names[] = {
    "device_local",     "host_visible", "host_coherent",       "host_cached",
    "lazily_allocated", "protected",    "device_coherent_amd", "device_uncached_amd"};

static uint32_t vkf_vk_mem_flag_bit(int i) {
    static const uint32_t bits[] = {
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,       VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
        VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT,    VK_MEMORY_PROPERTY_PROTECTED_BIT,
        VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD, VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD};
    return bits[i];
}

static const char *vkf_vk_component_name(int32_t t) {
    switch (t) {
    case 0: return "f16";
    case 1: return "f32";
    case 2: return "f64";
    case 3: return "s8";
    case 4: return "s16";
    case 5: return "s32";
    case 6: return "s64";
    case 7: return "u8";
    case 8: return "u16";
    case 9: return "u32";
    case 10: return "u64";
    case 1000141000: return "bf16";
    default: return "?";
    }
}

static const char *vkf_vk_scope_name(int32_t s) {
    switch (s) {
    case 1: return "device";
    case 2: return "workgroup";
    case 3: return "subgroup";
    case 5: return "queue_family";
    default: return "?";
    }
}

/* ---------------------------------------------------------------- capabilities */

int vkf_vk_has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(e[i].extensionName, name) == 0) return 1;
    return 0;
}

VkExtensionProperties *vkf_vk_device_exts(VkPhysicalDevice pd, uint32_t *n) {
    *n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, n, NULL) != VK_SUCCESS || *n == 0)
        return NULL;
    VkExtensionProperties *e = calloc(*n, sizeof *e);
    if (!e || vkEnumerateDeviceExtensionProperties(pd, NULL, n, e) != VK_SUCCESS) {
        free(e);
        *n = 0;
        return NULL;
    }
    return e;
}

/* a switch that lowers a capability: applied and noted under its environment variable */
static void vkf_vk_cap_override(vkf_vk_caps *c, const char *env, uint64_t v, uint64_t *field) {
    if (v && v < *field) {
        *field = v;
        size_t l = strlen(c->overrides);
        snprintf(c->overrides + l, sizeof c->overrides - l, "%s%s=%llu", l ? " " : "", env,
                 (unsigned long long)v);
    }
}

/* one more shape a cooperative-matrix extension lists (as many as the caps hold) */
static void vkf_vk_coopmat_add(vkf_vk_caps *c, const vkf_vk_coopmat_shape *s) {
    if (c->n_coopmat < VKF_VK_MAX_COOPMAT) c->coopmat_shapes[c->n_coopmat++] = *s;
}

const char *vkf_vk_coopmat_kind_name(vkf_vk_coopmat_kind k) {
    switch (k) {
    case VKF_VK_COOPMAT_KHR: return "KHR";
    case VKF_VK_COOPMAT_NV: return "NV";
    case VKF_VK_COOPMAT_EMU: return "emulated";
    default: return "none";
    }
}

/* The cooperative-matrix matmul runs only where it is known to be worth it (docs/DESIGN.md,
 * 'Lessons from the field': drivers advertise cooperative matrices without fast hardware): an
 * allow-list by vendor and driver, an f16 x f16 -> f32 shape at subgroup scope, shaderFloat16,
 * subgroups, the Vulkan memory model (the GLSL extensions need it). VK_KHR_cooperative_matrix (AMD
 * RDNA3+, Intel Arc, NVIDIA) is preferred: GL_KHR_cooperative_matrix needs glslang 13.1+ (Debian 12
 * ships 12.0), so there the NV GLSL is compiled and its SPIR-V rewritten into the KHR form
 * (spv_coopmat_khr.c); VK_NV_cooperative_matrix is the path on devices without the KHR one.
 * A spelling also runs by default only once it has passed `selftest` on such hardware (a
 * GPU run of bench/gpu-check.sh coopmat): a wrong result on every prefill of a vendor's GPUs
 * would cost more than the speed it buys. Neither the NV nor the KHR spelling has run on a GPU
 * yet (bench/RESULTS.md): both wait for VKF_COOPMAT=1, which skips the allow-list and this
 * check (to try a device). VKF_NO_COOPMAT=1 turns it off.
 * VKF_COOPMAT_EMU=1 (tests): the same kernel with the matrix operations written out per
 * invocation, 16 x 16 x 16 (VKF_COOPMAT_EMU=8: 8 x 8 x 8), on any device with fp16 and a fixed
 * subgroup size. */
void vkf_vk_coopmat_choose(vkf_vk_caps *c, int32_t driver_id, const vkf_switches *sw,
                           const vkf_switches_xp *xp) {
    c->coopmat_use = 0;
    c->coopmat_kind = VKF_VK_COOPMAT_NONE;
    c->coopmat_off = NULL;
    if (sw->no_coopmat) {
        c->coopmat_off = "VKF_NO_COOPMAT=1";
        return;
    }
    if (!c->fp16 || !c->has_subgroup) {
        c->coopmat_off = !c->fp16 ? "no fp16 arithmetic" : "no subgroup operations";
        return;
    }
    uint64_t emu = xp->coopmat_emu;
    if (emu) {
        uint32_t sz = emu == 8 ? 8 : 16;
        if (c->subgroup_min != c->subgroup_max || sz * sz % c->subgroup_size) return;
        c->coopmat_use = 1;
        c->coopmat_kind = VKF_VK_COOPMAT_EMU;
        c->coopmat_m = c->coopmat_n = c->coopmat_k = sz;
        return;
    }
    if (!c->vulkan_memory_model) {
        c->coopmat_off = "no Vulkan memory model";
        return;
    }
    /* KHR wherever the device has it (GLSL KHR with glslang 13.1+, else NV GLSL rewritten into
     * the KHR SPIR-V form: spv_coopmat_khr.c); NV on devices with only VK_NV_cooperative_matrix.
     * VKF_COOPMAT=nv (bench/gpu-check.sh coopmat) keeps to NV where both exist. */
    int khr = c->coopmat && !(xp->coopmat == 2 && c->coopmat_nv), nv = c->coopmat_nv;
    const vkf_vk_coopmat_shape *best = NULL;
    for (uint32_t i = 0; i < c->n_coopmat; i++) {
        const vkf_vk_coopmat_shape *s = &c->coopmat_shapes[i];
        if (s->nv ? !nv || khr : !khr) continue; /* KHR where glslang compiles it, else NV */
        /* VkComponentTypeKHR: 0 FLOAT16, 1 FLOAT32; VkScopeKHR 3: subgroup */
        if (s->a_type != 0 || s->b_type != 0 || s->c_type != 1 || s->result_type != 1 ||
            s->scope != 3)
            continue;
        if (s->m > 32 || s->n > 32 || s->k > 32 || s->m % 8 || s->n % 8 || s->k % 8) continue;
        /* 16 x 16 x 16 first, else the deepest K (the kernel's weight units need BK = 2 K
         * of at least 32 elements for the block types) */
        int sq = s->m == 16 && s->n == 16 && s->k == 16;
        if (!best || (sq && !(best->m == 16 && best->n == 16 && best->k == 16)) ||
            (!sq && !(best->m == 16 && best->n == 16 && best->k == 16) && s->k > best->k))
            best = s;
    }
    if (!best) {
        c->coopmat_off = "no f16 x f16 -> f32 subgroup shape the kernel takes";
        return;
    }
    /* NVIDIA proprietary (tensor cores since Volta), AMD RADV / AMDVLK / proprietary (WMMA on
     * RDNA3), Intel ANV on discrete Arc (XMX); 4 = NVIDIA_PROPRIETARY, 1 AMD_PROPRIETARY,
     * 2 AMD_OPEN_SOURCE, 3 MESA_RADV, 6 INTEL_OPEN_SOURCE_MESA (VkDriverId) */
    int allowed =
        (c->vendor_id == 0x10de && driver_id == 4) ||
        (c->vendor_id == 0x1002 && (driver_id == 1 || driver_id == 2 || driver_id == 3)) ||
        (c->vendor_id == 0x8086 && driver_id == 6 &&
         c->type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
    /* the spellings that have passed selftest on allow-listed hardware: none yet */
    int verified = 0;
    if (xp->coopmat) allowed = verified = 1;
    if (!allowed || !verified) {
        c->coopmat_off = !allowed
                             ? "vendor and driver not on the allow-list (VKF_COOPMAT=1 tries it)"
                             : "this spelling has not yet been verified on a GPU "
                               "(VKF_COOPMAT=1 tries it)";
        return;
    }
    c->coopmat_use = 1;
    c->coopmat_kind = best->nv ? VKF_VK_COOPMAT_NV : VKF_VK_COOPMAT_KHR;
    c->coopmat_m = best->m;
    c->coopmat_n = best->n;
    c->coopmat_k = best->k;
}

/* What a device offers besides its properties: its extensions and API version. */
typedef struct vkf_vk_offer {
    const VkExtensionProperties *ext;
    uint32_t n_ext;
    int v11, v12, v13; /* API 1.1, 1.2, 1.3 */
} vkf_vk_offer;

static int vkf_vk_offers(const vkf_vk_offer *o, const char *ext) {
    return vkf_vk_has_ext(o->ext, o->n_ext, ext);
}

void vkf_vk_chain(VkBaseOutStructure **tail, void *s) {
    (*tail)->pNext = s;
    *tail = s;
}

/* Links s into the chain ending at *tail where the device knows the struct: core (its API
 * version has it) or it offers ext (NULL: no extension brings it). Returns whether it did, so
 * the caller reads the struct only where the driver filled it. */
static int vkf_vk_link(const vkf_vk_offer *o, VkBaseOutStructure **tail, int core, const char *ext,
                       void *s) {
    if (!core && !(ext && vkf_vk_offers(o, ext))) return 0;
    vkf_vk_chain(tail, s);
    return 1;
}

void vkf_vk_features_init(vkf_vk_features *f) {
    memset(f, 0, sizeof *f);
    f->f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f->s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    f->s8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
    f->f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    f->sgc.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES;
    f->vmm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES;
    f->cmnv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
    f->idp.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
}

/* Name, ids, type, the driver's threads (CPU drivers), limits. */
static void vkf_vk_caps_props(VkPhysicalDevice pd, const VkPhysicalDeviceProperties *p,
                              const vkf_switches *sw, vkf_vk_caps *c) {
    const VkPhysicalDeviceLimits *l = &p->limits;
    snprintf(c->name, sizeof c->name, "%s", p->deviceName);
    c->vendor_id = p->vendorID;
    c->device_id = p->deviceID;
    c->vendor = vkf_vk_vendor_name(p->vendorID);
    c->driver_version = p->driverVersion;
    c->type = (int32_t)p->deviceType;
    c->type_name = vkf_vk_type_name(c->type);
    /* a CPU driver runs a dispatch's workgroups on its own threads: llvmpipe starts one a CPU
     * online, or LP_NUM_THREADS, at most 32 (LP_MAX_THREADS); the decode kernel sizes its
     * workgroups for them (vkf_vk_rowseq_rows) */
    if (c->type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        uint64_t t = sw->driver_threads;
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        if (!t) t = online > 1 ? (uint64_t)online : 1;
        c->cpu_threads = (uint32_t)(t < 32 ? t : 32);
    }
    c->api_version = p->apiVersion;
    c->max_shared = l->maxComputeSharedMemorySize;
    for (int i = 0; i < 3; i++) {
        c->max_wg_size[i] = l->maxComputeWorkGroupSize[i];
        c->max_wg_count[i] = l->maxComputeWorkGroupCount[i];
    }
    c->max_wg_invocations = l->maxComputeWorkGroupInvocations;
    c->max_push_constants = l->maxPushConstantsSize;
    c->max_storage_buffers_per_stage = l->maxPerStageDescriptorStorageBuffers;
    c->max_storage_images_per_stage = l->maxPerStageDescriptorStorageImages;
    c->max_storage_range = l->maxStorageBufferRange;
    c->min_storage_align = l->minStorageBufferOffsetAlignment;
    c->timestamp_period = l->timestampPeriod;
    c->max_texel_elements = l->maxTexelBufferElements;
    c->min_texel_align = l->minTexelBufferOffsetAlignment;
    VkFormatProperties fp;
    vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R32G32B32A32_UINT, &fp);
    /* 16-byte texel loads: on CPU drivers (lavapipe) the image path is vectorized where
     * storage-buffer loads are not (bench/RESULTS.md) */
    c->texel = (fp.bufferFeatures & VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) != 0 &&
               c->max_texel_elements >= 65536 && l->maxPerStageDescriptorStorageImages >= 4;
    c->timestamps = l->timestampComputeAndGraphics ? 1 : 0;
    c->max_alloc = (uint64_t)1 << 30; /* the Vulkan 1.0 guarantee when maintenance3 is absent */
    memcpy(c->pipeline_cache_uuid, p->pipelineCacheUUID, 16);
}

/* The properties2 chain (only structs the device knows): subgroups and their size range, the
 * driver, maxMemoryAllocationSize, host-memory import. Returns the VkDriverId (0: unknown). */
static int32_t vkf_vk_caps_props2(VkPhysicalDevice pd, const vkf_vk_offer *o, vkf_vk_caps *c) {
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlProperties sgc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT emh = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
    VkPhysicalDeviceShaderIntegerDotProductProperties idp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkBaseOutStructure *tail = (VkBaseOutStructure *)&p2;
    vkf_vk_link(o, &tail, o->v11, NULL, &sg);
    int has_sgc = vkf_vk_link(o, &tail, o->v13, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME, &sgc);
    int has_drv = vkf_vk_link(o, &tail, o->v12, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME, &drv);
    int has_m3 = vkf_vk_link(o, &tail, o->v11, VK_KHR_MAINTENANCE_3_EXTENSION_NAME, &m3);
    /* host-memory import only from API 1.1 on (its properties extend properties2 there) */
    int has_emh =
        o->v11 && vkf_vk_link(o, &tail, 0, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME, &emh);
    int has_idp =
        vkf_vk_link(o, &tail, o->v13, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME, &idp);
    vkGetPhysicalDeviceProperties2(pd, &p2);
    c->int_dot_accel = has_idp && idp.integerDotProduct4x8BitPackedSignedAccelerated;
    if (has_emh && emh.minImportedHostPointerAlignment) {
        c->host_import = 1;
        c->host_import_align = emh.minImportedHostPointerAlignment;
    }
    if (o->v11) {
        c->subgroup_size = sg.subgroupSize;
        c->subgroup_stages = sg.supportedStages;
        c->subgroup_ops = sg.supportedOperations;
    }
    c->subgroup_min = c->subgroup_max = c->subgroup_size;
    if (has_sgc && sgc.minSubgroupSize) {
        c->subgroup_min = sgc.minSubgroupSize;
        c->subgroup_max = sgc.maxSubgroupSize;
    }
    if (has_drv) {
        snprintf(c->driver_name, sizeof c->driver_name, "%s", drv.driverName);
        snprintf(c->driver_info, sizeof c->driver_info, "%s", drv.driverInfo);
    }
    if (has_m3 && m3.maxMemoryAllocationSize) c->max_alloc = m3.maxMemoryAllocationSize;
    return has_drv ? (int32_t)drv.driverID : 0;
}

/* The features2 chain: 16/8-bit storage, fp16 and int8 arithmetic, subgroup size control, the
 * memory model, NV cooperative matrices; then the subgroup operations the kernels need. */
static void vkf_vk_caps_features(VkPhysicalDevice pd, const vkf_vk_offer *o, vkf_vk_caps *c) {
    vkf_vk_features f;
    vkf_vk_features_init(&f);
    VkBaseOutStructure *tail = (VkBaseOutStructure *)&f.f2;
    int has_s16 = vkf_vk_link(o, &tail, o->v11, VK_KHR_16BIT_STORAGE_EXTENSION_NAME, &f.s16);
    int has_s8 = vkf_vk_link(o, &tail, o->v12, VK_KHR_8BIT_STORAGE_EXTENSION_NAME, &f.s8);
    int has_f16 = vkf_vk_link(o, &tail, o->v12, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME, &f.f16);
    int has_sgc =
        vkf_vk_link(o, &tail, o->v13, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME, &f.sgc);
    int has_vmm = vkf_vk_link(o, &tail, o->v12, NULL, &f.vmm);
    int has_cmnv = vkf_vk_link(o, &tail, 0, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, &f.cmnv);
    int has_idp =
        vkf_vk_link(o, &tail, o->v13, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME, &f.idp);
    vkGetPhysicalDeviceFeatures2(pd, &f.f2);
    c->int_dot = has_idp && f.idp.shaderIntegerDotProduct;
    c->coopmat_nv = has_cmnv && f.cmnv.cooperativeMatrix;
    c->vulkan_memory_model = has_vmm && f.vmm.vulkanMemoryModel;
    c->storage16 = has_s16 && f.s16.storageBuffer16BitAccess;
    c->storage8 = has_s8 && f.s8.storageBuffer8BitAccess;
    c->fp16 = has_f16 && f.f16.shaderFloat16;
    c->int8 = has_f16 && f.f16.shaderInt8;
    c->subgroup_size_control = has_sgc && f.sgc.subgroupSizeControl && f.sgc.computeFullSubgroups;
    uint32_t need_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                        VK_SUBGROUP_FEATURE_BALLOT_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    c->has_subgroup = (c->subgroup_stages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                      (c->subgroup_ops & need_ops) == need_ops && c->subgroup_min >= 4;
}

/* Heaps and memory types; unified: every device-local heap has a host-visible coherent type. */
static void vkf_vk_caps_memory(VkPhysicalDevice pd, vkf_vk_caps *c) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    c->n_heaps = mp.memoryHeapCount < VKF_VK_MAX_HEAPS ? mp.memoryHeapCount : VKF_VK_MAX_HEAPS;
    c->n_mem_types =
        mp.memoryTypeCount < VKF_VK_MAX_MEM_TYPES ? mp.memoryTypeCount : VKF_VK_MAX_MEM_TYPES;
    for (uint32_t i = 0; i < c->n_heaps; i++) {
        c->heap_size[i] = mp.memoryHeaps[i].size;
        c->heap_flags[i] = mp.memoryHeaps[i].flags;
    }
    for (uint32_t i = 0; i < c->n_mem_types; i++) {
        c->mem_type_flags[i] = mp.memoryTypes[i].propertyFlags;
        c->mem_type_heap[i] = mp.memoryTypes[i].heapIndex;
    }
    const uint32_t want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int n_local = 0, n_local_visible = 0;
    for (uint32_t h = 0; h < c->n_heaps; h++) {
        if (!(c->heap_flags[h] & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
        n_local++;
        for (uint32_t t = 0; t < c->n_mem_types; t++)
            if (c->mem_type_heap[t] == h && (c->mem_type_flags[t] & want) == want) {
                n_local_visible++;
                break;
            }
    }
    c->unified = n_local > 0 && n_local == n_local_visible;
}

/* The shapes VK_KHR_cooperative_matrix lists. */
static void vkf_vk_caps_coopmat_khr(VkInstance inst, VkPhysicalDevice pd, vkf_vk_caps *c) {
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR fn =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
            inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t n = 0;
    if (!fn || fn(pd, &n, NULL) != VK_SUCCESS || !n) return;
    VkCooperativeMatrixPropertiesKHR *cp = calloc(n, sizeof *cp);
    if (!cp) return;
    for (uint32_t i = 0; i < n; i++)
        cp[i].sType = VKF_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    VkResult r = fn(pd, &n, cp);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++) {
        vkf_vk_coopmat_shape sh = {cp[i].MSize,
                                   cp[i].NSize,
                                   cp[i].KSize,
                                   (int32_t)cp[i].AType,
                                   (int32_t)cp[i].BType,
                                   (int32_t)cp[i].CType,
                                   (int32_t)cp[i].ResultType,
                                   (int32_t)cp[i].saturatingAccumulation,
                                   (int32_t)cp[i].scope,
                                   0};
        vkf_vk_coopmat_add(c, &sh);
    }
    free(cp);
}

/* The shapes VK_NV_cooperative_matrix lists (its component types and scopes number as their
 * KHR successors). */
static void vkf_vk_caps_coopmat_nv(VkInstance inst, VkPhysicalDevice pd, vkf_vk_caps *c) {
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV fn =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
            inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    uint32_t n = 0;
    if (!fn || fn(pd, &n, NULL) != VK_SUCCESS || !n) return;
    VkCooperativeMatrixPropertiesNV *cp = calloc(n, sizeof *cp);
    if (!cp) return;
    for (uint32_t i = 0; i < n; i++)
        cp[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    VkResult r = fn(pd, &n, cp);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++) {
        vkf_vk_coopmat_shape sh = {cp[i].MSize,          cp[i].NSize,
                                   cp[i].KSize,          (int32_t)cp[i].AType,
                                   (int32_t)cp[i].BType, (int32_t)cp[i].CType,
                                   (int32_t)cp[i].DType, 0,
                                   (int32_t)cp[i].scope, 1};
        vkf_vk_coopmat_add(c, &sh);
    }
    free(cp);
}

/* notes a switch that changed a capability in c->overrides, as its environment variable */
static void vkf_vk_caps_note(vkf_vk_caps *c, const char *what) {
    size_t l = strlen(c->overrides);
    snprintf(c->overrides + l, sizeof c->overrides - l, "%s%s", l ? " " : "", what);
}

/* The switches' caps and off switches: the mobile profile (a small mobile GPU: 128 MiB storage
 * range, 256 MiB allocations, 16 KiB shared memory, no fp16, int8, 16/8-bit storage or subgroup
 * ops), then the single caps below it, then the off switches of capabilities. */
static void vkf_vk_caps_switches(vkf_vk_caps *c, const vkf_switches *sw) {
    if (sw->device_profile == VKF_DEVICE_PROFILE_MOBILE) {
        if (c->max_storage_range > (128u << 20)) c->max_storage_range = 128u << 20;
        if (c->max_alloc > (256u << 20)) c->max_alloc = 256u << 20;
        if (c->max_shared > (16u << 10)) c->max_shared = 16u << 10;
        c->fp16 = c->int8 = c->storage16 = c->storage8 = c->has_subgroup = 0;
        c->int_dot = c->int_dot_accel = 0;
        vkf_vk_caps_note(c, "VKF_DEVICE_PROFILE=mobile");
    }
    vkf_vk_cap_override(c, "VKF_MAX_STORAGE_BUFFER_RANGE", sw->max_storage_buffer_range,
                        &c->max_storage_range);
    vkf_vk_cap_override(c, "VKF_MAX_ALLOC", sw->max_alloc, &c->max_alloc);
    uint64_t sh = c->max_shared;
    vkf_vk_cap_override(c, "VKF_MAX_SHARED_MEMORY", sw->max_shared_memory, &sh);
    c->max_shared = (uint32_t)sh;
    struct {
        int on;
        int32_t *cap;
        const char *name;
    } off[] = {{sw->no_texel, &c->texel, "VKF_NO_TEXEL=1"},
               {sw->no_fp16, &c->fp16, "VKF_NO_FP16=1"},
               {sw->no_subgroup, &c->has_subgroup, "VKF_NO_SUBGROUP=1"},
               {sw->no_import, &c->host_import, "VKF_NO_IMPORT=1"}};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
        if (off[i].on && *off[i].cap) {
            *off[i].cap = 0;
            vkf_vk_caps_note(c, off[i].name);
        }
}

void vkf_vk_caps_read(VkInstance inst, VkPhysicalDevice pd, const vkf_switches *sw,
                      const vkf_switches_xp *xp, vkf_vk_caps *c) {
    memset(c, 0, sizeof *c);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    vkf_vk_offer o = {.v11 = props.apiVersion >= VK_API_VERSION_1_1,
                      .v12 = props.apiVersion >= VK_API_VERSION_1_2,
                      .v13 = props.apiVersion >= VK_API_VERSION_1_3};
    VkExtensionProperties *ext = vkf_vk_device_exts(pd, &o.n_ext);
    o.ext = ext;
    vkf_vk_caps_props(pd, &props, sw, c);
    int32_t driver_id = vkf_vk_caps_props2(pd, &o, c);
    vkf_vk_caps_features(pd, &o, c);
    vkf_vk_caps_memory(pd, c);
    c->coopmat = vkf_vk_offers(&o, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (c->coopmat) vkf_vk_caps_coopmat_khr(inst, pd, c);
    if (c->coopmat_nv) vkf_vk_caps_coopmat_nv(inst, pd, c);
    free(ext);
    vkf_vk_caps_switches(c, sw);
    /* after the switches: a profile without fp16 or subgroups has no cooperative matrices */
    vkf_vk_coopmat_choose(c, driver_id, sw, xp);
}

/* ---------------------------------------------------------------- devices report */

typedef struct vkf_vk_sbuf {
    char *p;
    size_t n, cap;
    int oom;
} vkf_vk_sbuf;

static void vkf_vk_sbuf_printf(vkf_vk_sbuf *s, const char *fmt, ...) VKF_PRINTF(2, 3);
static void vkf_vk_sbuf_printf(vkf_vk_sbuf *s, const char *fmt, ...) {
    if (s->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(s->p ? s->p + s->n : NULL, s->p ? s->cap - s->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (s->p && s->n + (size_t)k < s->cap) {
            s->n += (size_t)k;
            return;
        }
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->n + (size_t)k + 1)
            cap *= 2;
        char *np = realloc(s->p, cap);
        if (!np) {
            s->oom = 1;
            return;
        }
        s->p = np;
        s->cap = cap;
    }
}

static void vkf_vk_fmt_bytes(uint64_t b, char *out, size_t n) {
    if (b >= ((uint64_t)1 << 30) && b % ((uint64_t)1 << 20) == 0)
        snprintf(out, n, "%.2f GiB", (double)b / (double)(1 << 30));
    else if (b >= ((uint64_t)1 << 20))
        snprintf(out, n, "%.1f MiB", (double)b / (double)(1 << 20));
    else if (b >= 1024)
        snprintf(out, n, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(out, n, "%llu B", (unsigned long long)b);
}

static void vkf_vk_flags_str(uint32_t flags, const char *const *names, int n_names,
                             uint32_t (*bit)(int), char *out, size_t n) {
    size_t l = 0;
    out[0] = 0;
    for (int i = 0; i < n_names; i++)
        if (flags & bit(i)) {
            l += (size_t)snprintf(out + l, n - l, "%s%s", l ? "|" : "", names[i]);
            if (l >= n) return;
        }
    if (!l) snprintf(out, n, "none");
}

static uint32_t vkf_vk_subgroup_bit(int i) { return 1u << i; }
static uint32_t vkf_vk_heap_bit(int i) {
    return i == 0 ? VK_MEMORY_HEAP_DEVICE_LOCAL_BIT : VK_MEMORY_HEAP_MULTI_INSTANCE_BIT;
}
static const char *const k_heap_flag_names[] = {"device_local", "multi_instance"};

static void vkf_vk_report_text(vkf_vk_sbuf *s, uint32_t idx, const vkf_vk_caps *c, int is_default) {
    char a[64], b[64], f[256];
    vkf_vk_driver_version_str(c, a, sizeof a);
    vkf_vk_sbuf_printf(s, "device %u: %s%s\n", idx, c->name, is_default ? "  (default)" : "");
    vkf_vk_sbuf_printf(s, "  vendor: %s (0x%04x), device id 0x%04x, type: %s\n", c->vendor,
                       c->vendor_id, c->device_id, c->type_name);
    vkf_vk_sbuf_printf(s, "  driver: %s %s (version %s)\n",
                       c->driver_name[0] ? c->driver_name : "?", c->driver_info, a);
    vkf_vk_sbuf_printf(s, "  Vulkan API: %u.%u.%u\n", VK_API_VERSION_MAJOR(c->api_version),
                       VK_API_VERSION_MINOR(c->api_version), VK_API_VERSION_PATCH(c->api_version));
    if (c->cpu_threads) vkf_vk_sbuf_printf(s, "  driver threads: %u\n", c->cpu_threads);
    vkf_vk_flags_str(c->subgroup_ops, k_subgroup_op_names, 8, vkf_vk_subgroup_bit, f, sizeof f);
    vkf_vk_sbuf_printf(s, "  subgroup: size %u (range %u..%u%s), ops: %s%s\n", c->subgroup_size,
                       c->subgroup_min, c->subgroup_max,
                       c->subgroup_size_control ? ", size control" : "", f,
                       c->subgroup_stages & VK_SHADER_STAGE_COMPUTE_BIT ? "" : " (not in compute)");
    vkf_vk_fmt_bytes(c->max_shared, a, sizeof a);
    vkf_vk_sbuf_printf(s, "  shared memory per workgroup: %s\n", a);
    vkf_vk_sbuf_printf(s, "  max workgroup size: %u x %u x %u, invocations %u\n", c->max_wg_size[0],
                       c->max_wg_size[1], c->max_wg_size[2], c->max_wg_invocations);
    vkf_vk_fmt_bytes(c->max_storage_range, a, sizeof a);
    vkf_vk_fmt_bytes(c->max_alloc, b, sizeof b);
    vkf_vk_sbuf_printf(s,
                       "  maxStorageBufferRange: %s (%llu), maxMemoryAllocationSize: %s (%llu), "
                       "minStorageBufferOffsetAlignment: %llu\n",
                       a, (unsigned long long)c->max_storage_range, b,
                       (unsigned long long)c->max_alloc, (unsigned long long)c->min_storage_align);
    vkf_vk_sbuf_printf(s, "  unified memory: %s\n", c->unified ? "yes" : "no");
    if (c->host_import)
        vkf_vk_sbuf_printf(
            s, "  host memory import: yes (VK_EXT_external_memory_host, %llu-byte alignment)\n",
            (unsigned long long)c->host_import_align);
    else
        vkf_vk_sbuf_printf(s, "  host memory import: no\n");
    for (uint32_t h = 0; h < c->n_heaps; h++) {
        vkf_vk_fmt_bytes(c->heap_size[h], a, sizeof a);
        vkf_vk_flags_str(c->heap_flags[h], k_heap_flag_names, 2, vkf_vk_heap_bit, f, sizeof f);
        vkf_vk_sbuf_printf(s, "  heap %u: %s [%s]\n", h, a, f);
    }
    for (uint32_t t = 0; t < c->n_mem_types; t++) {
        vkf_vk_flags_str(c->mem_type_flags[t], k_mem_flag_names, 8, vkf_vk_mem_flag_bit, f,
                         sizeof f);
        vkf_vk_sbuf_printf(s, "  memory type %u: heap %u [%s]\n", t, c->mem_type_heap[t], f);
    }
    vkf_vk_sbuf_printf(s,
                       "  features: 16-bit storage %s, 8-bit storage %s, fp16 arithmetic %s, "
                       "int8 %s, integer dot product %s, subgroup ops %s, cooperative matrix %s\n",
                       c->storage16 ? "yes" : "no", c->storage8 ? "yes" : "no",
                       c->fp16 ? "yes" : "no", c->int8 ? "yes" : "no",
                       c->int_dot_accel ? "yes (accelerated)"
                       : c->int_dot     ? "yes (not accelerated)"
                                        : "no",
                       c->has_subgroup ? "yes" : "no",
                       c->coopmat && c->coopmat_nv ? "KHR and NV"
                       : c->coopmat                ? "KHR"
                       : c->coopmat_nv             ? "NV"
                                                   : "no");
    for (uint32_t i = 0; i < c->n_coopmat; i++) {
        const vkf_vk_coopmat_shape *m = &c->coopmat_shapes[i];
        vkf_vk_sbuf_printf(s, "    coopmat %s %ux%ux%u A %s B %s C %s -> %s, %s scope%s\n",
                           m->nv ? "NV " : "KHR", m->m, m->n, m->k,
                           vkf_vk_component_name(m->a_type), vkf_vk_component_name(m->b_type),
                           vkf_vk_component_name(m->c_type), vkf_vk_component_name(m->result_type),
                           vkf_vk_scope_name(m->scope), m->saturating ? ", saturating" : "");
    }
    if (c->coopmat_use)
        vkf_vk_sbuf_printf(s, "  prefill matmul: cooperative matrices, %s %ux%ux%u%s\n",
                           vkf_vk_coopmat_kind_name(c->coopmat_kind), c->coopmat_m, c->coopmat_n,
                           c->coopmat_k,
                           c->coopmat_kind == VKF_VK_COOPMAT_KHR && !vkf_vk_glslang_has_coopmat()
                               ? " (NV GLSL, SPIR-V rewritten into the KHR form)"
                               : "");
    else if ((c->coopmat || c->coopmat_nv) && c->coopmat_off)
        vkf_vk_sbuf_printf(s, "  prefill matmul: tiled kernel; cooperative matrices not used: %s\n",
                           c->coopmat_off);
    if (c->overrides[0]) vkf_vk_sbuf_printf(s, "  env overrides: %s\n", c->overrides);
}

static cJSON *vkf_vk_flags_json(uint32_t flags, const char *const *names, int n_names,
                                uint32_t (*bit)(int)) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n_names; i++)
        if (flags & bit(i)) cJSON_AddItemToArray(a, cJSON_CreateString(names[i]));
    return a;
}

static cJSON *vkf_vk_report_json(uint32_t idx, const vkf_vk_caps *c, int is_default) {
    char buf[64];
    cJSON *d = cJSON_CreateObject();
    if (!d) return NULL;
    cJSON_AddNumberToObject(d, "index", idx);
    cJSON_AddStringToObject(d, "name", c->name);
    cJSON_AddBoolToObject(d, "default", is_default);
    cJSON_AddStringToObject(d, "vendor", c->vendor);
    cJSON_AddNumberToObject(d, "vendor_id", c->vendor_id);
    cJSON_AddNumberToObject(d, "device_id", c->device_id);
    cJSON_AddStringToObject(d, "type", c->type_name);
    cJSON_AddStringToObject(d, "driver_name", c->driver_name);
    cJSON_AddStringToObject(d, "driver_info", c->driver_info);
    vkf_vk_driver_version_str(c, buf, sizeof buf);
    cJSON_AddStringToObject(d, "driver_version", buf);
    snprintf(buf, sizeof buf, "%u.%u.%u", VK_API_VERSION_MAJOR(c->api_version),
             VK_API_VERSION_MINOR(c->api_version), VK_API_VERSION_PATCH(c->api_version));
    cJSON_AddStringToObject(d, "api_version", buf);
    if (c->cpu_threads) cJSON_AddNumberToObject(d, "driver_threads", c->cpu_threads);
    cJSON *sg = cJSON_AddObjectToObject(d, "subgroup");
    if (sg) {
        cJSON_AddNumberToObject(sg, "size", c->subgroup_size);
        cJSON_AddNumberToObject(sg, "min_size", c->subgroup_min);
        cJSON_AddNumberToObject(sg, "max_size", c->subgroup_max);
        cJSON_AddBoolToObject(sg, "size_control", c->subgroup_size_control);
        cJSON_AddBoolToObject(sg, "compute",
                              (c->subgroup_stages & VK_SHADER_STAGE_COMPUTE_BIT) != 0);
        cJSON_AddItemToObject(
            sg, "ops",
            vkf_vk_flags_json(c->subgroup_ops, k_subgroup_op_names, 8, vkf_vk_subgroup_bit));
    }
    cJSON_AddNumberToObject(d, "shared_memory_per_workgroup", c->max_shared);
    cJSON *ws = cJSON_CreateIntArray(
        (const int[]){(int)c->max_wg_size[0], (int)c->max_wg_size[1], (int)c->max_wg_size[2]}, 3);
    cJSON_AddItemToObject(d, "max_workgroup_size", ws);
    cJSON_AddNumberToObject(d, "max_workgroup_invocations", c->max_wg_invocations);
    cJSON_AddNumberToObject(d, "max_storage_buffer_range", (double)c->max_storage_range);
    cJSON_AddNumberToObject(d, "max_memory_allocation_size", (double)c->max_alloc);
    cJSON_AddNumberToObject(d, "min_storage_buffer_offset_alignment", (double)c->min_storage_align);
    cJSON_AddNumberToObject(d, "max_push_constants_size", c->max_push_constants);
    cJSON_AddBoolToObject(d, "unified_memory", c->unified);
    cJSON_AddBoolToObject(d, "host_memory_import", c->host_import);
    cJSON_AddNumberToObject(d, "min_imported_host_pointer_alignment", (double)c->host_import_align);
    cJSON *heaps = cJSON_AddArrayToObject(d, "memory_heaps");
    for (uint32_t h = 0; heaps && h < c->n_heaps; h++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "size", (double)c->heap_size[h]);
        cJSON_AddItemToObject(
            o, "flags", vkf_vk_flags_json(c->heap_flags[h], k_heap_flag_names, 2, vkf_vk_heap_bit));
        cJSON_AddItemToArray(heaps, o);
    }
    cJSON *types = cJSON_AddArrayToObject(d, "memory_types");
    for (uint32_t t = 0; types && t < c->n_mem_types; t++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "heap", c->mem_type_heap[t]);
        cJSON_AddItemToObject(
            o, "flags",
            vkf_vk_flags_json(c->mem_type_flags[t], k_mem_flag_names, 8, vkf_vk_mem_flag_bit));
        cJSON_AddItemToArray(types, o);
    }
    cJSON *fe = cJSON_AddObjectToObject(d, "features");
    if (fe) {
        cJSON_AddBoolToObject(fe, "storage_16bit", c->storage16);
        cJSON_AddBoolToObject(fe, "storage_8bit", c->storage8);
        cJSON_AddBoolToObject(fe, "fp16", c->fp16);
        cJSON_AddBoolToObject(fe, "int8", c->int8);
        cJSON_AddBoolToObject(fe, "integer_dot_product", c->int_dot);
        cJSON_AddBoolToObject(fe, "integer_dot_product_accelerated", c->int_dot_accel);
        cJSON_AddBoolToObject(fe, "subgroup_ops", c->has_subgroup);
        cJSON_AddBoolToObject(fe, "cooperative_matrix", c->coopmat);
        cJSON_AddBoolToObject(fe, "cooperative_matrix_nv", c->coopmat_nv);
    }
    if (c->coopmat_use)
        cJSON_AddStringToObject(d, "cooperative_matrix_in_use",
                                vkf_vk_coopmat_kind_name(c->coopmat_kind));
    else
        cJSON_AddNullToObject(d, "cooperative_matrix_in_use");
    if (!c->coopmat_use && (c->coopmat || c->coopmat_nv) && c->coopmat_off)
        cJSON_AddStringToObject(d, "cooperative_matrix_not_used", c->coopmat_off);
    cJSON *cm = cJSON_AddArrayToObject(d, "cooperative_matrix_shapes");
    for (uint32_t i = 0; cm && i < c->n_coopmat; i++) {
        const vkf_vk_coopmat_shape *m = &c->coopmat_shapes[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "m", m->m);
        cJSON_AddNumberToObject(o, "n", m->n);
        cJSON_AddNumberToObject(o, "k", m->k);
        cJSON_AddStringToObject(o, "a", vkf_vk_component_name(m->a_type));
        cJSON_AddStringToObject(o, "b", vkf_vk_component_name(m->b_type));
        cJSON_AddStringToObject(o, "c", vkf_vk_component_name(m->c_type));
        cJSON_AddStringToObject(o, "result", vkf_vk_component_name(m->result_type));
        cJSON_AddStringToObject(o, "scope", vkf_vk_scope_name(m->scope));
        cJSON_AddStringToObject(o, "extension",
                                m->nv ? "VK_NV_cooperative_matrix" : "VK_KHR_cooperative_matrix");
        cJSON_AddBoolToObject(o, "saturating", m->saturating);
        cJSON_AddItemToArray(cm, o);
    }
    cJSON_AddStringToObject(d, "env_overrides", c->overrides);
    return d;
}

vkf_status vkf_devices_report(int json, char **out) {
    if (!out) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vkf_devices_report: out is NULL");
    *out = NULL;
    VkInstance inst = VK_NULL_HANDLE;
    VKF_TRY(vkf_vk_instance_create(NULL, 0, &inst));
    VkPhysicalDevice *pds = NULL;
    uint32_t n = 0;
    vkf_status st = vkf_vk_physical_devices(inst, &pds, &n);
    if (st != VKF_OK) {
        vkDestroyInstance(inst, NULL);
        return st;
    }
    uint32_t def = n ? vkf_vk_default_device(pds, n) : 0;
    vkf_switches sw;
    vkf_switches_from_env(&sw);
    vkf_switches_xp xp;
    vkf_switches_xp_get(&sw, &xp);
    vkf_vk_caps *c = malloc(sizeof *c);
    if (!c) {
        free(pds);
        vkDestroyInstance(inst, NULL);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "devices report");
    }
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *arr = root ? cJSON_AddArrayToObject(root, "devices") : NULL;
        for (uint32_t i = 0; arr && i < n; i++) {
            vkf_vk_caps_read(inst, pds[i], &sw, &xp, c);
            cJSON_AddItemToArray(arr, vkf_vk_report_json(i, c, i == def));
        }
        *out = arr ? cJSON_Print(root) : NULL;
        cJSON_Delete(root);
        if (!*out) st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "devices report JSON");
    } else {
        vkf_vk_sbuf s = {0};
        if (n == 0) vkf_vk_sbuf_printf(&s, "no Vulkan devices\n");
        for (uint32_t i = 0; i < n; i++) {
            vkf_vk_caps_read(inst, pds[i], &sw, &xp, c);
            vkf_vk_report_text(&s, i, c, i == def);
        }
        if (s.oom || !s.p) {
            free(s.p);
            st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "devices report");
        } else {
            *out = s.p;
        }
    }
    free(c);
    free(pds);
    vkDestroyInstance(inst, NULL);
    return st;
}
