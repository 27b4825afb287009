#include "model/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "core/error.h"

vkf_status vkf_context_create(const vkf_context_params *p, vkf_context **out) {
    vkf_context_params def = {0};
    if (!p) p = &def;
    vkf_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "context: out of host memory");
    vkf_status s = VKF_OK;
    if (p->backend == VKF_BACKEND_CPU) {
        s = vkf_backend_cpu_create(&ctx->be);
        ctx->kind = VKF_BACKEND_CPU;
    } else {
        const char *env = getenv("VKF_VALIDATE");
        int validate = p->validate || (env && strcmp(env, "1") == 0);
        s = vkf_backend_vulkan_create(p->device, validate, &ctx->be);
        ctx->kind = VKF_BACKEND_VULKAN;
        /* AUTO falls back to the CPU when there is no loader or no device at all; an explicit
         * device request or a broken device is an error the caller must see. */
        if (s != VKF_OK && p->backend == VKF_BACKEND_AUTO && !p->device && !getenv("VKF_DEVICE") &&
            (s == VKF_ERROR_NO_VULKAN || s == VKF_ERROR_NO_DEVICE)) {
            s = vkf_backend_cpu_create(&ctx->be);
            ctx->kind = VKF_BACKEND_CPU;
        }
    }
    if (s != VKF_OK) {
        free(ctx);
        return s;
    }
    *out = ctx;
    return VKF_OK;
}

void vkf_context_free(vkf_context *ctx) {
    if (!ctx) return;
    vkf_backend_free(ctx->be);
    free(ctx);
}

const char *vkf_context_device_name(const vkf_context *ctx) { return ctx->be->device_name; }

vkf_backend_kind vkf_context_backend(const vkf_context *ctx) { return ctx->kind; }
