/* Vulkan device layer: loader (volk), instance and validation, device selection, the logical
 * device. The capabilities and the `vkformer devices` report: vk_caps.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

vkf_status vkf_vk_instance_create(vkf_vk_backend *vb, int validate, VkInstance *out) {
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
                             "validation requested (validate or VKF_VALIDATE=1) but %s is not "
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

vkf_status vkf_vk_physical_devices(VkInstance inst, VkPhysicalDevice **pds, uint32_t *n) {
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
uint32_t vkf_vk_default_device(VkPhysicalDevice *pds, uint32_t n) {
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
    vkf_status st = vkf_vk_select(pds, n, device, &idx);
    if (st != VKF_OK) {
        free(pds);
        return st;
    }
    vb->phys = pds[idx];
    free(pds);
    vkf_vk_caps_read(vb->instance, vb->phys, &vb->sw, &vb->xp, &vb->caps);
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
    /* every cache type: F32 / F16 read by every attention kernel, bf16 and the 32-element block
     * types quantized by copy_rows.comp and decoded by attention.comp (kvq.glsl) with core
     * features only (32-bit storage words and their atomics); K and V in one type */
    vb->base.kv_dtypes = (1u << VKF_DTYPE_F32) | (1u << VKF_DTYPE_F16) | (1u << VKF_DTYPE_BF16) |
                         (1u << VKF_DTYPE_Q8_0) | (1u << VKF_DTYPE_Q4_0) | (1u << VKF_DTYPE_Q4_1) |
                         (1u << VKF_DTYPE_IQ4_NL) | (1u << VKF_DTYPE_Q5_0) | (1u << VKF_DTYPE_Q5_1);
    vb->base.kv_dtypes_why = NULL;
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
    const char *exts[10];
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

    vkf_vk_features f;
    vkf_vk_features_init(&f);
    VkBaseOutStructure *tail = (VkBaseOutStructure *)&f.f2;
    f.s16.storageBuffer16BitAccess = c->storage16 ? VK_TRUE : VK_FALSE;
    vkf_vk_chain(&tail, &f.s16);
    if (has_s8) {
        f.s8.storageBuffer8BitAccess = c->storage8 ? VK_TRUE : VK_FALSE;
        vkf_vk_chain(&tail, &f.s8);
    }
    if (has_f16) {
        f.f16.shaderFloat16 = c->fp16 ? VK_TRUE : VK_FALSE;
        f.f16.shaderInt8 = c->int8 ? VK_TRUE : VK_FALSE;
        vkf_vk_chain(&tail, &f.f16);
    }
    if (v13 || sgc_ext) {
        f.sgc.subgroupSizeControl = c->subgroup_size_control ? VK_TRUE : VK_FALSE;
        f.sgc.computeFullSubgroups = c->subgroup_size_control ? VK_TRUE : VK_FALSE;
        vkf_vk_chain(&tail, &f.sgc);
    }
    /* integer dot products (matmul_q8.comp's OpSDot): core in 1.3, else the extension */
    if (c->int_dot && (v13 || n_exts < 8)) {
        if (!v13) exts[n_exts++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
        f.idp.shaderIntegerDotProduct = VK_TRUE;
        vkf_vk_chain(&tail, &f.idp);
    } else {
        c->int_dot = c->int_dot_accel = 0; /* not enabled: the plain fallback only */
    }
    /* cooperative matrix (only where it will be used) and the memory model its GLSL needs */
    struct {
        VkStructureType sType;
        void *pNext;
        VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
    } cmf = {(VkStructureType)1000506000 /* COOPERATIVE_MATRIX_FEATURES_KHR */, NULL, VK_TRUE,
             VK_FALSE};
    int cm_ext = c->coopmat_use &&
                 (c->coopmat_kind == VKF_VK_COOPMAT_KHR || c->coopmat_kind == VKF_VK_COOPMAT_NV);
    if (cm_ext && n_exts < 8) {
        if (c->coopmat_kind == VKF_VK_COOPMAT_NV) {
            exts[n_exts++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
            f.cmnv.cooperativeMatrix = VK_TRUE;
            vkf_vk_chain(&tail, &f.cmnv);
        } else {
            exts[n_exts++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
            vkf_vk_chain(&tail, &cmf);
        }
        f.vmm.vulkanMemoryModel = VK_TRUE;
        vkf_vk_chain(&tail, &f.vmm);
    }

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = vb->queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &f.f2;
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
