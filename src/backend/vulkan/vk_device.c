/* Vulkan device layer: loader (volk), instance and validation, physical-device capabilities,
 * device selection, the logical device, and the `vkformer devices` report. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend/vulkan/vk_internal.h"

/* volk is compiled into exactly this translation unit: the binaries load the loader at run
 * time and never link libvulkan. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <volk.c>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* ---------------------------------------------------------------- small helpers */

double vkf_vk_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

uint64_t vkf_vk_env_u64(const char *name) {
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 0);
    if (end == s) return 0;
    switch (*end) {
    case 'k':
    case 'K': v <<= 10; break;
    case 'm':
    case 'M': v <<= 20; break;
    case 'g':
    case 'G': v <<= 30; break;
    default: break;
    }
    return (uint64_t)v;
}

int vkf_vk_env_flag(const char *name) {
    const char *s = getenv(name);
    return s && *s && strcmp(s, "0") != 0;
}

/* ---------------------------------------------------------------- results */

const char *vkf_vk_result_name(VkResult r) {
    switch (r) {
#define C(x)                                                                                       \
    case x: return #x
        C(VK_SUCCESS);
        C(VK_NOT_READY);
        C(VK_TIMEOUT);
        C(VK_EVENT_SET);
        C(VK_EVENT_RESET);
        C(VK_INCOMPLETE);
        C(VK_ERROR_OUT_OF_HOST_MEMORY);
        C(VK_ERROR_OUT_OF_DEVICE_MEMORY);
        C(VK_ERROR_INITIALIZATION_FAILED);
        C(VK_ERROR_DEVICE_LOST);
        C(VK_ERROR_MEMORY_MAP_FAILED);
        C(VK_ERROR_LAYER_NOT_PRESENT);
        C(VK_ERROR_EXTENSION_NOT_PRESENT);
        C(VK_ERROR_FEATURE_NOT_PRESENT);
        C(VK_ERROR_INCOMPATIBLE_DRIVER);
        C(VK_ERROR_TOO_MANY_OBJECTS);
        C(VK_ERROR_FORMAT_NOT_SUPPORTED);
        C(VK_ERROR_FRAGMENTED_POOL);
        C(VK_ERROR_UNKNOWN);
        C(VK_ERROR_OUT_OF_POOL_MEMORY);
        C(VK_ERROR_INVALID_EXTERNAL_HANDLE);
        C(VK_ERROR_FRAGMENTATION);
        C(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS);
        C(VK_PIPELINE_COMPILE_REQUIRED);
        C(VK_ERROR_SURFACE_LOST_KHR);
        C(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR);
        C(VK_SUBOPTIMAL_KHR);
        C(VK_ERROR_OUT_OF_DATE_KHR);
        C(VK_ERROR_VALIDATION_FAILED_EXT);
#undef C
    default: return "VK_RESULT_UNKNOWN";
    }
}

vkf_status vkf_vk_fail(VkResult r, const char *call, const char *file, int line) {
    const char *base = strrchr(file, '/');
    return vkf_error(VKF_ERROR_VULKAN, "%s failed: %s (%d) at %s:%d", call, vkf_vk_result_name(r),
                     (int)r, base ? base + 1 : file, line);
}

/* ---------------------------------------------------------------- loader */

static pthread_once_t g_volk_once = PTHREAD_ONCE_INIT;
static VkResult g_volk_result = VK_ERROR_INITIALIZATION_FAILED;

static void vkf_vk_load_once(void) { g_volk_result = volkInitialize(); }

vkf_status vkf_vk_load(void) {
    pthread_once(&g_volk_once, vkf_vk_load_once);
    if (g_volk_result != VK_SUCCESS)
        return vkf_error(VKF_ERROR_NO_VULKAN,
                         "no Vulkan loader found: volkInitialize failed (%s); install the Vulkan "
                         "loader (libvulkan1) and a driver (e.g. mesa-vulkan-drivers for lavapipe)",
                         vkf_vk_result_name(g_volk_result));
    return VKF_OK;
}

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

static const char *vkf_vk_type_name(int32_t t) {
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

static int vkf_vk_has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(e[i].extensionName, name) == 0) return 1;
    return 0;
}

static VkExtensionProperties *vkf_vk_device_exts(VkPhysicalDevice pd, uint32_t *n) {
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

static void vkf_vk_cap_override(vkf_vk_caps *c, const char *env, uint64_t *field) {
    uint64_t v = vkf_vk_env_u64(env);
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

/* The cooperative-matrix matmul runs only where it is known to be worth it (DESIGN, lessons
 * from the field: drivers advertise cooperative matrices without fast hardware): an allow-list
 * by vendor and driver, an f16 x f16 -> f32 shape at subgroup scope, shaderFloat16, subgroups,
 * the Vulkan memory model (the GLSL extensions need it), and a glslang that compiles the
 * extension's GLSL: GL_KHR_cooperative_matrix needs 13.1+ (Debian 12 ships 12.0), so with it
 * VK_NV_cooperative_matrix (NVIDIA, GL_NV_cooperative_matrix, any glslang) is the path.
 * A spelling also runs by default only once it has passed `selftest` on such hardware (a
 * GPU run of bench/gpu-check.sh coopmat): a wrong result on every prefill of a vendor's GPUs
 * would cost more than the speed it buys. Neither the NV nor the KHR spelling has run on a GPU
 * yet (bench/RESULTS.md): both wait for VKF_COOPMAT=1, which skips the allow-list and this
 * check (to try a device). VKF_NO_COOPMAT=1 turns it off.
 * VKF_COOPMAT_EMU=1 (tests): the same kernel with the matrix operations written out per
 * invocation, 16 x 16 x 16 (VKF_COOPMAT_EMU=8: 8 x 8 x 8), on any device with fp16 and a fixed
 * subgroup size. */
void vkf_vk_coopmat_choose(vkf_vk_caps *c, int32_t driver_id) {
    c->coopmat_use = 0;
    c->coopmat_kind = VKF_VK_COOPMAT_NONE;
    c->coopmat_off = NULL;
    if (vkf_vk_env_flag("VKF_NO_COOPMAT")) {
        c->coopmat_off = "VKF_NO_COOPMAT=1";
        return;
    }
    if (!c->fp16 || !c->has_subgroup) {
        c->coopmat_off = !c->fp16 ? "no fp16 arithmetic" : "no subgroup operations";
        return;
    }
    uint64_t emu = vkf_vk_env_u64("VKF_COOPMAT_EMU");
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
    int khr = c->coopmat && vkf_vk_glslang_has_coopmat(), nv = c->coopmat_nv;
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
        c->coopmat_off = c->coopmat && !nv && !khr
                             ? "GL_KHR_cooperative_matrix needs glslang 13.1 or later"
                             : "no f16 x f16 -> f32 subgroup shape the kernel takes";
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
    if (vkf_vk_env_flag("VKF_COOPMAT")) allowed = verified = 1;
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

void vkf_vk_caps_read(VkInstance inst, VkPhysicalDevice pd, vkf_vk_caps *c) {
    memset(c, 0, sizeof *c);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    uint32_t n_ext = 0;
    VkExtensionProperties *ext = vkf_vk_device_exts(pd, &n_ext);
    uint32_t api = props.apiVersion;
    int v11 = api >= VK_API_VERSION_1_1, v12 = api >= VK_API_VERSION_1_2,
        v13 = api >= VK_API_VERSION_1_3;

    snprintf(c->name, sizeof c->name, "%s", props.deviceName);
    c->vendor_id = props.vendorID;
    c->device_id = props.deviceID;
    c->vendor = vkf_vk_vendor_name(props.vendorID);
    c->driver_version = props.driverVersion;
    c->type = (int32_t)props.deviceType;
    c->type_name = vkf_vk_type_name(c->type);
    /* a CPU driver runs a dispatch's workgroups on its own threads: llvmpipe starts one a CPU
     * online, or LP_NUM_THREADS, at most 32 (LP_MAX_THREADS); the decode kernel sizes its
     * workgroups for them (vkf_vk_rowseq_rows) */
    if (c->type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        uint64_t t = vkf_vk_env_u64("LP_NUM_THREADS");
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        if (!t) t = online > 1 ? (uint64_t)online : 1;
        c->cpu_threads = (uint32_t)(t < 32 ? t : 32);
    }
    c->api_version = api;
    c->max_shared = props.limits.maxComputeSharedMemorySize;
    for (int i = 0; i < 3; i++) {
        c->max_wg_size[i] = props.limits.maxComputeWorkGroupSize[i];
        c->max_wg_count[i] = props.limits.maxComputeWorkGroupCount[i];
    }
    c->max_wg_invocations = props.limits.maxComputeWorkGroupInvocations;
    c->max_push_constants = props.limits.maxPushConstantsSize;
    c->max_storage_buffers_per_stage = props.limits.maxPerStageDescriptorStorageBuffers;
    c->max_storage_images_per_stage = props.limits.maxPerStageDescriptorStorageImages;
    c->max_storage_range = props.limits.maxStorageBufferRange;
    c->min_storage_align = props.limits.minStorageBufferOffsetAlignment;
    c->timestamp_period = props.limits.timestampPeriod;
    c->max_texel_elements = props.limits.maxTexelBufferElements;
    c->min_texel_align = props.limits.minTexelBufferOffsetAlignment;
    {
        VkFormatProperties fp;
        vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R32G32B32A32_UINT, &fp);
        /* 16-byte texel loads: on CPU drivers (lavapipe) the image path is vectorized where
         * storage-buffer loads are not (bench/RESULTS.md) */
        c->texel = (fp.bufferFeatures & VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) != 0 &&
                   c->max_texel_elements >= 65536 &&
                   props.limits.maxPerStageDescriptorStorageImages >= 4;
    }
    c->timestamps = props.limits.timestampComputeAndGraphics ? 1 : 0;
    c->max_alloc = (uint64_t)1 << 30; /* the Vulkan 1.0 guarantee when maintenance3 is absent */
    memcpy(c->pipeline_cache_uuid, props.pipelineCacheUUID, 16);

    /* properties2 chain: only structs the device knows */
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
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    int has_emh = v11 && vkf_vk_has_ext(ext, n_ext, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    int has_sgc = v13 || vkf_vk_has_ext(ext, n_ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    int has_drv = v12 || vkf_vk_has_ext(ext, n_ext, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    int has_m3 = v11 || vkf_vk_has_ext(ext, n_ext, VK_KHR_MAINTENANCE_3_EXTENSION_NAME);
    void **next = &p2.pNext;
    if (v11) {
        *next = &sg;
        next = &sg.pNext;
    }
    if (has_sgc) {
        *next = &sgc;
        next = &sgc.pNext;
    }
    if (has_drv) {
        *next = &drv;
        next = &drv.pNext;
    }
    if (has_m3) {
        *next = &m3;
        next = &m3.pNext;
    }
    if (has_emh) {
        *next = &emh;
        next = &emh.pNext;
    }
    vkGetPhysicalDeviceProperties2(pd, &p2);
    if (has_emh && emh.minImportedHostPointerAlignment) {
        c->host_import = 1;
        c->host_import_align = emh.minImportedHostPointerAlignment;
    }

    if (v11) {
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

    /* features2 chain */
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDevice8BitStorageFeatures s8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures sgcf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceVulkanMemoryModelFeatures vmm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cmnv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    int has_cmnv = vkf_vk_has_ext(ext, n_ext, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    int has_s16 = v11 || vkf_vk_has_ext(ext, n_ext, VK_KHR_16BIT_STORAGE_EXTENSION_NAME);
    int has_s8 = v12 || vkf_vk_has_ext(ext, n_ext, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    int has_f16 = v12 || vkf_vk_has_ext(ext, n_ext, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    next = &f2.pNext;
    if (has_s16) {
        *next = &s16;
        next = &s16.pNext;
    }
    if (has_s8) {
        *next = &s8;
        next = &s8.pNext;
    }
    if (has_f16) {
        *next = &f16;
        next = &f16.pNext;
    }
    if (has_sgc) {
        *next = &sgcf;
        next = &sgcf.pNext;
    }
    if (v12) {
        *next = &vmm;
        next = &vmm.pNext;
    }
    if (has_cmnv) {
        *next = &cmnv;
        next = &cmnv.pNext;
    }
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    c->coopmat_nv = has_cmnv && cmnv.cooperativeMatrix;
    c->vulkan_memory_model = v12 && vmm.vulkanMemoryModel;
    c->storage16 = has_s16 && s16.storageBuffer16BitAccess;
    c->storage8 = has_s8 && s8.storageBuffer8BitAccess;
    c->fp16 = has_f16 && f16.shaderFloat16;
    c->int8 = has_f16 && f16.shaderInt8;
    c->subgroup_size_control = has_sgc && sgcf.subgroupSizeControl && sgcf.computeFullSubgroups;
    uint32_t need_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                        VK_SUBGROUP_FEATURE_BALLOT_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    c->has_subgroup = (c->subgroup_stages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                      (c->subgroup_ops & need_ops) == need_ops && c->subgroup_min >= 4;

    /* memory */
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
    int n_local = 0, n_local_visible = 0;
    for (uint32_t h = 0; h < c->n_heaps; h++) {
        if (!(c->heap_flags[h] & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
        n_local++;
        const uint32_t want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                              VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        for (uint32_t t = 0; t < c->n_mem_types; t++)
            if (c->mem_type_heap[t] == h && (c->mem_type_flags[t] & want) == want) {
                n_local_visible++;
                break;
            }
    }
    c->unified = n_local > 0 && n_local == n_local_visible;

    /* cooperative matrix */
    if (vkf_vk_has_ext(ext, n_ext, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
        c->coopmat = 1;
        PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR fn =
            (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
                inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
        uint32_t n = 0;
        if (fn && fn(pd, &n, NULL) == VK_SUCCESS && n) {
            VkCooperativeMatrixPropertiesKHR *cp = calloc(n, sizeof *cp);
            if (cp) {
                for (uint32_t i = 0; i < n; i++)
                    cp[i].sType = VKF_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
                VkResult r = fn(pd, &n, cp);
                if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
                    for (uint32_t i = 0; i < n; i++) {
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
                }
                free(cp);
            }
        }
    }
    if (c->coopmat_nv) {
        PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV fn =
            (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
                inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
        uint32_t n = 0;
        if (fn && fn(pd, &n, NULL) == VK_SUCCESS && n) {
            VkCooperativeMatrixPropertiesNV *cp = calloc(n, sizeof *cp);
            if (cp) {
                for (uint32_t i = 0; i < n; i++)
                    cp[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
                VkResult r = fn(pd, &n, cp);
                if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
                    /* VkComponentTypeNV and VkScopeNV number as their KHR successors */
                    for (uint32_t i = 0; i < n; i++) {
                        vkf_vk_coopmat_shape sh = {cp[i].MSize,          cp[i].NSize,
                                                   cp[i].KSize,          (int32_t)cp[i].AType,
                                                   (int32_t)cp[i].BType, (int32_t)cp[i].CType,
                                                   (int32_t)cp[i].DType, 0,
                                                   (int32_t)cp[i].scope, 1};
                        vkf_vk_coopmat_add(c, &sh);
                    }
                }
                free(cp);
            }
        }
    }
    free(ext);
    int32_t driver_id = has_drv ? (int32_t)drv.driverID : 0;

    /* VKF_DEVICE_PROFILE=mobile: a small mobile GPU (128 MiB storage range, 256 MiB allocations,
     * 16 KiB shared memory, no fp16, int8, 16/8-bit storage or subgroup ops); the single caps
     * below may lower it further */
    const char *prof = getenv("VKF_DEVICE_PROFILE");
    if (prof && strcmp(prof, "mobile") == 0) {
        if (c->max_storage_range > (128u << 20)) c->max_storage_range = 128u << 20;
        if (c->max_alloc > (256u << 20)) c->max_alloc = 256u << 20;
        if (c->max_shared > (16u << 10)) c->max_shared = 16u << 10;
        c->fp16 = c->int8 = c->storage16 = c->storage8 = c->has_subgroup = 0;
        snprintf(c->overrides, sizeof c->overrides, "VKF_DEVICE_PROFILE=mobile");
    }
    /* env caps, to exercise the small-device paths on a big device */
    vkf_vk_cap_override(c, "VKF_MAX_STORAGE_BUFFER_RANGE", &c->max_storage_range);
    vkf_vk_cap_override(c, "VKF_MAX_ALLOC", &c->max_alloc);
    uint64_t sh = c->max_shared;
    vkf_vk_cap_override(c, "VKF_MAX_SHARED_MEMORY", &sh);
    c->max_shared = (uint32_t)sh;
    if (vkf_vk_env_flag("VKF_NO_TEXEL") && c->texel) {
        c->texel = 0;
        size_t l = strlen(c->overrides);
        snprintf(c->overrides + l, sizeof c->overrides - l, "%sVKF_NO_TEXEL=1", l ? " " : "");
    }
    if (vkf_vk_env_flag("VKF_NO_FP16") && c->fp16) {
        c->fp16 = 0;
        size_t l = strlen(c->overrides);
        snprintf(c->overrides + l, sizeof c->overrides - l, "%sVKF_NO_FP16=1", l ? " " : "");
    }
    if (vkf_vk_env_flag("VKF_NO_SUBGROUP") && c->has_subgroup) {
        c->has_subgroup = 0;
        size_t l = strlen(c->overrides);
        snprintf(c->overrides + l, sizeof c->overrides - l, "%sVKF_NO_SUBGROUP=1", l ? " " : "");
    }
    if (vkf_vk_env_flag("VKF_NO_IMPORT") && c->host_import) {
        c->host_import = 0;
        size_t l = strlen(c->overrides);
        snprintf(c->overrides + l, sizeof c->overrides - l, "%sVKF_NO_IMPORT=1", l ? " " : "");
    }
    /* after the overrides: a profile without fp16 or subgroups has no cooperative matrices */
    vkf_vk_coopmat_choose(c, driver_id);
}

/* ---------------------------------------------------------------- validation messages */

static VKAPI_ATTR VkBool32 VKAPI_CALL
vkf_vk_debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT type,
                const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)type;
    vkf_vk_backend *vb = user;
    if (!vb || !(sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)))
        return VK_FALSE;
    const char *msg = data && data->pMessage ? data->pMessage : "(no message)";
    const char *id = data && data->pMessageIdName ? data->pMessageIdName : "";
    pthread_mutex_lock(&vb->msg_lock);
    size_t add = strlen(msg) + strlen(id) + 32;
    char *p = realloc(vb->msgs, vb->msgs_len + add);
    if (p) {
        vb->msgs = p;
        vb->msgs_len += (size_t)snprintf(
            p + vb->msgs_len, add, "%s[%s %s] %s", vb->msgs_len ? "\n" : "",
            sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning", id, msg);
    }
    vb->n_msgs++;
    vb->stats.validation_messages++;
    pthread_mutex_unlock(&vb->msg_lock);
    return VK_FALSE;
}

vkf_status vkf_vk_check_messages(vkf_vk_backend *vb) {
    if (!vb->validate) return VKF_OK;
    vkf_status st = VKF_OK;
    pthread_mutex_lock(&vb->msg_lock);
    if (vb->n_msgs) {
        st = vkf_error(VKF_ERROR_VALIDATION, "Vulkan validation layer reported %d message(s): %s",
                       vb->n_msgs, vb->msgs ? vb->msgs : "");
        free(vb->msgs);
        vb->msgs = NULL;
        vb->msgs_len = 0;
        vb->n_msgs = 0;
    }
    pthread_mutex_unlock(&vb->msg_lock);
    return st;
}

/* ---------------------------------------------------------------- instance */

static const char *const k_validation_layer = "VK_LAYER_KHRONOS_validation";

static vkf_status vkf_vk_instance_create(vkf_vk_backend *vb, int validate, VkInstance *out) {
    VKF_TRY(vkf_vk_load());
    uint32_t api = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&api);
    if (api < VK_API_VERSION_1_1)
        return vkf_error(VKF_ERROR_NO_VULKAN,
                         "the Vulkan loader supports only %u.%u; vkformer "
                         "needs Vulkan 1.1",
                         VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
    if (api > VK_API_VERSION_1_3) api = VK_API_VERSION_1_3;

    uint32_t n_iext = 0;
    VKF_VK_CHECK(vkEnumerateInstanceExtensionProperties(NULL, &n_iext, NULL));
    VkExtensionProperties *iext = calloc(n_iext + 1, sizeof *iext);
    if (!iext) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "instance extension list");
    VkResult r = vkEnumerateInstanceExtensionProperties(NULL, &n_iext, iext);
    if (r != VK_SUCCESS) {
        free(iext);
        return vkf_vk_fail(r, "vkEnumerateInstanceExtensionProperties", __FILE__, __LINE__);
    }
    const char *exts[4];
    uint32_t n_exts = 0;
    int portability = vkf_vk_has_ext(iext, n_iext, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    if (portability) exts[n_exts++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
    int have_debug_utils = vkf_vk_has_ext(iext, n_iext, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    free(iext);

    VkValidationFeatureEnableEXT vf_enable[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT vf = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    const char *layers[1];
    uint32_t n_layers = 0;
    if (validate) {
        uint32_t n_l = 0;
        VKF_VK_CHECK(vkEnumerateInstanceLayerProperties(&n_l, NULL));
        VkLayerProperties *lp = calloc(n_l + 1, sizeof *lp);
        if (!lp) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "layer list");
        r = vkEnumerateInstanceLayerProperties(&n_l, lp);
        int found = 0;
        for (uint32_t i = 0; r == VK_SUCCESS && i < n_l; i++)
            if (strcmp(lp[i].layerName, k_validation_layer) == 0) found = 1;
        free(lp);
        if (!found)
            return vkf_error(VKF_ERROR_UNSUPPORTED,
                             "validation requested (validate=1 or VKF_VALIDATE=1) but %s is not "
                             "installed (Debian: vulkan-validationlayers)",
                             k_validation_layer);
        /* the layer provides VK_EXT_validation_features (and debug utils) itself */
        uint32_t n_lext = 0;
        VKF_VK_CHECK(vkEnumerateInstanceExtensionProperties(k_validation_layer, &n_lext, NULL));
        VkExtensionProperties *lext = calloc(n_lext + 1, sizeof *lext);
        if (!lext) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "layer extension list");
        r = vkEnumerateInstanceExtensionProperties(k_validation_layer, &n_lext, lext);
        int have_vf = r == VK_SUCCESS &&
                      vkf_vk_has_ext(lext, n_lext, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        have_debug_utils |=
            r == VK_SUCCESS && vkf_vk_has_ext(lext, n_lext, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        free(lext);
        if (!have_vf || !have_debug_utils)
            return vkf_error(VKF_ERROR_UNSUPPORTED, "%s lacks %s", k_validation_layer,
                             !have_vf ? VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME
                                      : VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        layers[n_layers++] = k_validation_layer;
        exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        exts[n_exts++] = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
        vf.enabledValidationFeatureCount = 1;
        vf.pEnabledValidationFeatures = vf_enable;
        mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        mci.pfnUserCallback = vkf_vk_debug_cb;
        mci.pUserData = vb;
        /* the messenger in pNext also catches messages of vkCreateInstance/vkDestroyInstance */
        vf.pNext = &mci;
    }

    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkformer";
    app.applicationVersion =
        VK_MAKE_API_VERSION(0, VKF_VERSION_MAJOR, VKF_VERSION_MINOR, VKF_VERSION_PATCH);
    app.pEngineName = "vkformer";
    app.engineVersion = app.applicationVersion;
    app.apiVersion = api;
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pNext = validate ? &vf : NULL;
    ici.flags = portability ? VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR : 0;
    ici.pApplicationInfo = &app;
    ici.enabledLayerCount = n_layers;
    ici.ppEnabledLayerNames = layers;
    ici.enabledExtensionCount = n_exts;
    ici.ppEnabledExtensionNames = exts;
    r = vkCreateInstance(&ici, NULL, out); /* no ICD at all: INCOMPATIBLE_DRIVER, i.e. no device */
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return vkf_error(VKF_ERROR_NO_DEVICE,
                         "no Vulkan driver: vkCreateInstance failed: VK_ERROR_INCOMPATIBLE_DRIVER");
    VKF_VK_CHECK(r);
    /* instance-level pointers: the loader's trampolines, valid for every instance */
    volkLoadInstanceOnly(*out);

    if (validate && vb) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                *out, "vkCreateDebugUtilsMessengerEXT");
        vb->destroy_messenger = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            *out, "vkDestroyDebugUtilsMessengerEXT");
        if (!create || !vb->destroy_messenger) {
            vkDestroyInstance(*out, NULL);
            *out = VK_NULL_HANDLE;
            return vkf_error(VKF_ERROR_UNSUPPORTED, "vkCreateDebugUtilsMessengerEXT unavailable");
        }
        mci.pNext = NULL;
        r = create(*out, &mci, NULL, &vb->messenger);
        if (r != VK_SUCCESS) {
            vkDestroyInstance(*out, NULL);
            *out = VK_NULL_HANDLE;
            return vkf_vk_fail(r, "vkCreateDebugUtilsMessengerEXT", __FILE__, __LINE__);
        }
    }
    return VKF_OK;
}

/* ---------------------------------------------------------------- selection */

static vkf_status vkf_vk_physical_devices(VkInstance inst, VkPhysicalDevice **pds, uint32_t *n) {
    *n = 0;
    *pds = NULL;
    VKF_VK_CHECK(vkEnumeratePhysicalDevices(inst, n, NULL));
    if (*n == 0) return VKF_OK;
    *pds = calloc(*n, sizeof **pds);
    if (!*pds) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "physical device list");
    VkResult r = vkEnumeratePhysicalDevices(inst, n, *pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(*pds);
        *pds = NULL;
        return vkf_vk_fail(r, "vkEnumeratePhysicalDevices", __FILE__, __LINE__);
    }
    return VKF_OK;
}

/* The default choice: first discrete GPU, else integrated, else the first device. */
static uint32_t vkf_vk_default_device(VkPhysicalDevice *pds, uint32_t n) {
    static const VkPhysicalDeviceType order[] = {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU,
                                                 VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU};
    for (int o = 0; o < 2; o++)
        for (uint32_t i = 0; i < n; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(pds[i], &p);
            if (p.deviceType == order[o]) return i;
        }
    return 0;
}

static int vkf_vk_icontains(const char *hay, const char *needle) {
    size_t nl = strlen(needle);
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < nl && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == nl) return 1;
    }
    return nl == 0;
}

static vkf_status vkf_vk_select(VkPhysicalDevice *pds, uint32_t n, const char *spec,
                                uint32_t *out) {
    if (n == 0)
        return vkf_error(VKF_ERROR_NO_DEVICE, "no Vulkan device found (install a driver, e.g. "
                                              "mesa-vulkan-drivers for the lavapipe CPU device)");
    if (!spec || !*spec) {
        *out = vkf_vk_default_device(pds, n);
        return VKF_OK;
    }
    int all_digits = 1;
    for (const char *s = spec; *s; s++)
        if (!isdigit((unsigned char)*s)) all_digits = 0;
    if (all_digits) {
        unsigned long idx = strtoul(spec, NULL, 10);
        if (idx < n) {
            *out = (uint32_t)idx;
            return VKF_OK;
        }
    } else {
        for (uint32_t i = 0; i < n; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(pds[i], &p);
            if (vkf_vk_icontains(p.deviceName, spec)) {
                *out = i;
                return VKF_OK;
            }
        }
    }
    char list[1024] = "";
    size_t l = 0;
    for (uint32_t i = 0; i < n && l < sizeof list - 1; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pds[i], &p);
        l += (size_t)snprintf(list + l, sizeof list - l, "%s%u: %s (%s)", i ? ", " : "", i,
                              p.deviceName, vkf_vk_type_name(p.deviceType));
        if (l >= sizeof list) l = sizeof list - 1;
    }
    return vkf_error(VKF_ERROR_NO_DEVICE,
                     "no Vulkan device matches \"%s\" (an index or a name "
                     "substring); devices: %s",
                     spec, list);
}

/* ---------------------------------------------------------------- logical device */

vkf_status vkf_vk_device_init(vkf_vk_backend *vb, const char *device, int validate) {
    vb->validate = validate;
    VKF_TRY(vkf_vk_instance_create(vb, validate, &vb->instance));
    VkPhysicalDevice *pds = NULL;
    uint32_t n = 0, idx = 0;
    VKF_TRY(vkf_vk_physical_devices(vb->instance, &pds, &n));
    const char *spec = device && *device ? device : getenv("VKF_DEVICE");
    vkf_status st = vkf_vk_select(pds, n, spec, &idx);
    if (st != VKF_OK) {
        free(pds);
        return st;
    }
    vb->phys = pds[idx];
    free(pds);
    vkf_vk_caps_read(vb->instance, vb->phys, &vb->caps);
    vkf_vk_caps *c = &vb->caps;
    if (c->api_version < VK_API_VERSION_1_1)
        return vkf_error(
            VKF_ERROR_UNSUPPORTED, "device %s supports Vulkan %u.%u; vkformer needs 1.1", c->name,
            VK_API_VERSION_MAJOR(c->api_version), VK_API_VERSION_MINOR(c->api_version));
    vb->target_vulkan = c->api_version >= VK_API_VERSION_1_2 ? 12 : 11;
    snprintf(vb->base.device_name, sizeof vb->base.device_name, "%s", c->name);
    /* F16 KV caches (llama.cpp's default): half the memory, and on CPU drivers too no slower
     * since attention_texel.comp reads F16 texels (lavapipe, decode attention at 2048 keys with
     * K/V from memory, CPU ms F32 / F16: heads of 64 2.9-3.4 / 2.3-2.6, 128 4.5 / 4.6-4.8, 256
     * 2.4-2.5 / 1.6-1.8; qwen3-0.6b at depth 1536 pp512 32.6 / 34.3, tg16 8.34 / 8.27 t/s;
     * bench/RESULTS.md) */
    vb->base.kv_f16_default = 1;
    /* prompt passes: bounded by the device's speed (graph/backend.h) */
    vb->base.ubatch_default = c->type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 64 : 512;

    /* a compute queue */
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vb->phys, &nq, NULL);
    VkQueueFamilyProperties qf[64];
    if (nq > 64) nq = 64;
    vkGetPhysicalDeviceQueueFamilyProperties(vb->phys, &nq, qf);
    int qfi = -1;
    for (uint32_t i = 0; i < nq && qfi < 0; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) qfi = (int)i;
    if (qfi < 0) return vkf_error(VKF_ERROR_UNSUPPORTED, "device %s has no compute queue", c->name);
    vb->queue_family = (uint32_t)qfi;
    vb->ts_bits = qf[qfi].timestampValidBits;

    /* extensions and features we use (when the device has them) */
    uint32_t n_ext = 0;
    VkExtensionProperties *ext = vkf_vk_device_exts(vb->phys, &n_ext);
    const char *exts[9];
    uint32_t n_exts = 0;
    int v12 = c->api_version >= VK_API_VERSION_1_2, v13 = c->api_version >= VK_API_VERSION_1_3;
    if (vkf_vk_has_ext(ext, n_ext, "VK_KHR_portability_subset"))
        exts[n_exts++] = "VK_KHR_portability_subset";
    if (!v12 && vkf_vk_has_ext(ext, n_ext, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME))
        exts[n_exts++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
    if (!v12 && vkf_vk_has_ext(ext, n_ext, VK_KHR_8BIT_STORAGE_EXTENSION_NAME))
        exts[n_exts++] = VK_KHR_8BIT_STORAGE_EXTENSION_NAME;
    int sgc_ext = !v13 && vkf_vk_has_ext(ext, n_ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    if (sgc_ext) exts[n_exts++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    int has_s8 = v12 || vkf_vk_has_ext(ext, n_ext, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    int has_f16 = v12 || vkf_vk_has_ext(ext, n_ext, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    if (c->host_import && vkf_vk_has_ext(ext, n_ext, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME))
        exts[n_exts++] =
            VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME; /* weights used in place (vk_memory.c) */
    else
        c->host_import = 0;
    /* the driver's budget for the fit checks (model/memory.c) */
    vb->has_budget = vkf_vk_has_ext(ext, n_ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (vb->has_budget) exts[n_exts++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    free(ext);

    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDevice8BitStorageFeatures s8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures sgcf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    void **next = &f2.pNext;
    s16.storageBuffer16BitAccess = c->storage16 ? VK_TRUE : VK_FALSE;
    *next = &s16;
    next = &s16.pNext;
    if (has_s8) {
        s8.storageBuffer8BitAccess = c->storage8 ? VK_TRUE : VK_FALSE;
        *next = &s8;
        next = &s8.pNext;
    }
    if (has_f16) {
        f16.shaderFloat16 = c->fp16 ? VK_TRUE : VK_FALSE;
        f16.shaderInt8 = c->int8 ? VK_TRUE : VK_FALSE;
        *next = &f16;
        next = &f16.pNext;
    }
    if (v13 || sgc_ext) {
        sgcf.subgroupSizeControl = c->subgroup_size_control ? VK_TRUE : VK_FALSE;
        sgcf.computeFullSubgroups = c->subgroup_size_control ? VK_TRUE : VK_FALSE;
        *next = &sgcf;
        next = &sgcf.pNext;
    }
    /* cooperative matrix (only where it will be used) and the memory model its GLSL needs */
    struct {
        VkStructureType sType;
        void *pNext;
        VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
    } cmf = {(VkStructureType)1000506000 /* COOPERATIVE_MATRIX_FEATURES_KHR */, NULL, VK_TRUE,
             VK_FALSE};
    VkPhysicalDeviceVulkanMemoryModelFeatures vmmf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cmnvf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .cooperativeMatrix = VK_TRUE};
    int cm_ext = c->coopmat_use &&
                 (c->coopmat_kind == VKF_VK_COOPMAT_KHR || c->coopmat_kind == VKF_VK_COOPMAT_NV);
    if (cm_ext && n_exts < 8) {
        if (c->coopmat_kind == VKF_VK_COOPMAT_NV) {
            exts[n_exts++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
            *next = &cmnvf;
            next = &cmnvf.pNext;
        } else {
            exts[n_exts++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
            *next = &cmf;
            next = &cmf.pNext;
        }
        vmmf.vulkanMemoryModel = VK_TRUE;
        *next = &vmmf;
        next = &vmmf.pNext;
    }

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = vb->queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &f2;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = n_exts;
    dci.ppEnabledExtensionNames = exts;
    VKF_VK_CHECK(vkCreateDevice(vb->phys, &dci, NULL, &vb->device));
    volkLoadDeviceTable(&vb->vk, vb->device);
    vb->vk.vkGetDeviceQueue(vb->device, vb->queue_family, 0, &vb->queue);

    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpi.queueFamilyIndex = vb->queue_family;
    VKF_VK_CHECK(vb->vk.vkCreateCommandPool(vb->device, &cpi, NULL, &vb->cmd_pool));
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = vb->cmd_pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    VKF_VK_CHECK(vb->vk.vkAllocateCommandBuffers(vb->device, &cai, &vb->xfer_cmd));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKF_VK_CHECK(vb->vk.vkCreateFence(vb->device, &fci, NULL, &vb->fence));
    return VKF_OK;
}

void vkf_vk_device_destroy(vkf_vk_backend *vb) {
    if (vb->device) {
        vb->vk.vkDeviceWaitIdle(vb->device);
        if (vb->fence) vb->vk.vkDestroyFence(vb->device, vb->fence, NULL);
        if (vb->cmd_pool) vb->vk.vkDestroyCommandPool(vb->device, vb->cmd_pool, NULL);
        vb->vk.vkDestroyDevice(vb->device, NULL);
        vb->device = VK_NULL_HANDLE;
    }
    if (vb->instance) {
        if (vb->messenger && vb->destroy_messenger)
            vb->destroy_messenger(vb->instance, vb->messenger, NULL);
        vkDestroyInstance(vb->instance, NULL);
        vb->instance = VK_NULL_HANDLE;
    }
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
                       "int8 %s, subgroup ops %s, cooperative matrix %s\n",
                       c->storage16 ? "yes" : "no", c->storage8 ? "yes" : "no",
                       c->fp16 ? "yes" : "no", c->int8 ? "yes" : "no",
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
        vkf_vk_sbuf_printf(s, "  prefill matmul: cooperative matrices, %s %ux%ux%u\n",
                           vkf_vk_coopmat_kind_name(c->coopmat_kind), c->coopmat_m, c->coopmat_n,
                           c->coopmat_k);
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
            vkf_vk_caps_read(inst, pds[i], c);
            cJSON_AddItemToArray(arr, vkf_vk_report_json(i, c, i == def));
        }
        *out = arr ? cJSON_Print(root) : NULL;
        cJSON_Delete(root);
        if (!*out) st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "devices report JSON");
    } else {
        vkf_vk_sbuf s = {0};
        if (n == 0) vkf_vk_sbuf_printf(&s, "no Vulkan devices\n");
        for (uint32_t i = 0; i < n; i++) {
            vkf_vk_caps_read(inst, pds[i], c);
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
