/* The context's device through the public API: its description, its counters, and `vkformer
 * tune`'s autotuner, so that the front ends (src/cli, src/serve) need no backend header. */
#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "core/error.h"
#include "runtime/context.h"
#include "vkformer.h"

vkf_status vkf_context_device_info(const vkf_context *ctx, vkf_device_info *out) {
    if (!ctx || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "context_device_info: NULL context or output");
    memset(out, 0, sizeof *out);
    const vkf_vk_caps *c = vkf_backend_vulkan_caps(ctx->be);
    if (!c) { /* the CPU backend */
        snprintf(out->name, sizeof out->name, "%s", ctx->be->device_name);
        snprintf(out->type, sizeof out->type, "host");
        out->unified = 1;
        out->host_import = 1;
        return VKF_OK;
    }
    snprintf(out->name, sizeof out->name, "%s", c->name);
    snprintf(out->driver, sizeof out->driver, "%s %s", c->driver_name, c->driver_info);
    snprintf(out->type, sizeof out->type, "%s", c->type_name);
    snprintf(out->vendor, sizeof out->vendor, "%s", c->vendor ? c->vendor : "");
    out->vendor_id = c->vendor_id;
    out->device_id = c->device_id;
    out->api_version = c->api_version;
    out->subgroup_size = c->subgroup_size;
    out->max_alloc = c->max_alloc;
    out->max_storage_range = c->max_storage_range;
    out->unified = c->unified;
    out->host_import = c->host_import;
    out->fp16 = c->fp16;
    out->int8 = c->int8;
    out->coopmat = c->coopmat_use;
    return VKF_OK;
}

vkf_status vkf_context_device_stats(const vkf_context *ctx, vkf_device_stats *out) {
    if (!ctx || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "context_device_stats: NULL context or output");
    memset(out, 0, sizeof *out);
    if (!vkf_backend_is_vulkan(ctx->be)) return VKF_OK;
    vkf_vk_stats st = vkf_backend_vulkan_stats(ctx->be);
    out->shader_compiles = st.shader_compiles;
    out->spirv_cache_hits = st.spirv_cache_hits;
    out->pipelines = st.pipelines;
    out->recordings = st.recordings;
    out->submits = st.submits;
    out->dispatches = st.dispatches;
    out->barriers = st.barriers;
    out->compile_ms = st.compile_ms;
    out->pipeline_ms = st.pipeline_ms;
    out->record_ms = st.record_ms;
    out->first_dispatch_ms = st.first_dispatch_ms;
    return VKF_OK;
}

vkf_status vkf_tune(vkf_context *ctx, int quick, void (*log)(void *user, const char *line),
                    void *user, char *path_out, size_t path_n) {
    if (!ctx) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tune: NULL context");
    if (!vkf_backend_is_vulkan(ctx->be))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "tune: the context runs on the CPU backend; tuning times Vulkan kernels");
    vkf_context_lock(ctx);
    vkf_status st = vkf_backend_vulkan_tune(ctx->be, quick, log, user, path_out, path_n);
    vkf_context_unlock(ctx);
    return st;
}
