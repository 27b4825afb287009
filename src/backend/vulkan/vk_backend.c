/* The Vulkan vkf_backend: create/destroy and the interface table. The work lives in
 * vk_device.c (device), vk_memory.c (buffers), vk_shader.c (pipelines), vk_record.c (the graph
 * walk and submission), vk_fuse.c (record-time fusions), vk_ops.c, vk_matmul.c and
 * vk_attention.c (one encoder per op family), vk_dispatch.c (the windows and dispatches they
 * record through) and vk_tune.c (kernel variants per device). */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"

static void vkf_vk_destroy(vkf_backend *be) {
    vkf_vk_backend *vb = vkf_vk(be);
    if (!vb) return;
    if (vb->device) vb->vk.vkDeviceWaitIdle(vb->device);
    vkf_vk_shaders_destroy(vb);
    vkf_vk_tune_destroy(vb);
    vkf_vk_memory_destroy(vb);
    vkf_vk_device_destroy(vb);
    pthread_mutex_destroy(&vb->msg_lock);
    free(vb->msgs);
    free(vb);
}

static const vkf_backend_i k_vulkan_i = {
    .name = "vulkan",
    .destroy = vkf_vk_destroy,
    .buffer_alloc = vkf_vk_buffer_alloc,
    .buffer_free = vkf_vk_buffer_free,
    .buffer_write = vkf_vk_buffer_write,
    .buffer_read = vkf_vk_buffer_read,
    .graph_compute = vkf_vk_graph_compute,
    .graph_release = vkf_vk_graph_release,
    .buffer_import = vkf_vk_buffer_import,
    .memory_info = vkf_vk_memory_info,
};

vkf_status vkf_backend_vulkan_create_ex(const vkf_backend_vulkan_params *p, vkf_backend **out) {
    if (!out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vkf_backend_vulkan_create: out is NULL");
    *out = NULL;
    vkf_backend_vulkan_params def = {0};
    if (!p) p = &def;
    VKF_TRY(vkf_vk_load());
    vkf_vk_backend *vb = calloc(1, sizeof *vb);
    if (!vb) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "vulkan backend");
    vb->base.i = &k_vulkan_i;
    pthread_mutex_init(&vb->msg_lock, NULL);
    if (p->switches)
        vb->sw = *p->switches;
    else
        vkf_switches_from_env(&vb->sw);
    vkf_switches_xp_get(&vb->sw, &vb->xp);
    vb->shader_compiled = p->shader_compiled;
    vb->shader_compiled_user = p->shader_compiled_user;
    const char *device = p->device && *p->device ? p->device : vb->sw.device;
    vkf_status st = vkf_vk_device_init(vb, device, p->validate || vb->sw.validate);
    if (st == VKF_OK) st = vkf_vk_memory_init(vb);
    if (st == VKF_OK) st = vkf_vk_shaders_init(vb);
    if (st == VKF_OK) vkf_vk_tune_init(vb);
    if (st == VKF_OK && vb->sw.profile && vb->ts_bits) vb->profile = 1;
    /* messages during device creation count too */
    if (st == VKF_OK) st = vkf_vk_check_messages(vb);
    if (st != VKF_OK) {
        vkf_vk_destroy(&vb->base);
        return st;
    }
    *out = &vb->base;
    return VKF_OK;
}

vkf_status vkf_backend_vulkan_create(const char *device, int validate, vkf_backend **out) {
    vkf_backend_vulkan_params p = {.device = device, .validate = validate};
    return vkf_backend_vulkan_create_ex(&p, out);
}

vkf_switches *vkf_backend_vulkan_switches(vkf_backend *be) {
    return vkf_backend_is_vulkan(be) ? &vkf_vk(be)->sw : NULL;
}

vkf_switches_xp *vkf_backend_vulkan_experiments(vkf_backend *be) {
    return vkf_backend_is_vulkan(be) ? &vkf_vk(be)->xp : NULL;
}

int vkf_backend_is_vulkan(const vkf_backend *be) { return be && be->i == &k_vulkan_i; }

const vkf_vk_caps *vkf_backend_vulkan_caps(const vkf_backend *be) {
    return vkf_backend_is_vulkan(be) ? &((const vkf_vk_backend *)be)->caps : NULL;
}

vkf_vk_stats vkf_backend_vulkan_stats(const vkf_backend *be) {
    vkf_vk_stats s;
    memset(&s, 0, sizeof s);
    if (vkf_backend_is_vulkan(be)) s = ((const vkf_vk_backend *)be)->stats;
    return s;
}

const char *vkf_backend_vulkan_cache_dir(const vkf_backend *be) {
    return vkf_backend_is_vulkan(be) ? ((const vkf_vk_backend *)be)->cache_dir : "";
}
