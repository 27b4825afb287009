/* The context: picks the backend (Vulkan device, else the CPU when allowed) and owns it. */
#include "model/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "core/error.h"

vkf_status vkf_context_create(const vkf_context_params *p, vkf_context **out) {
    vkf_context_params def = {0};
    if (!p) p = &def;
    if (!out) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "context_create: NULL output");
    *out = NULL;
    if (p->backend != VKF_BACKEND_AUTO && p->backend != VKF_BACKEND_CPU &&
        p->backend != VKF_BACKEND_VULKAN)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "context_create: backend %d is not AUTO, CPU or VULKAN", (int)p->backend);
    vkf_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "context: out of host memory");
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    int mrc = pthread_mutex_init(&ctx->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    if (mrc != 0) {
        free(ctx);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "context: cannot create its mutex");
    }
    vkf_status s = VKF_OK;
    if (p->ggml_activations && p->backend == VKF_BACKEND_VULKAN) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "context_create: ggml_activations is a CPU backend mode");
    }
    if (p->ggml_activations && !vkf_ggml_target_name(p->ggml_activations)) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "context_create: ggml_activations %d is not a vkf_ggml_target "
                         "(1 avx2, 2 avx512-2026, 3 avx512-2025)",
                         p->ggml_activations);
    }
    if (p->backend == VKF_BACKEND_CPU || p->ggml_activations) {
        s = vkf_backend_cpu_create_ex(p->ggml_activations, &ctx->be);
        ctx->ggml_activations = p->ggml_activations;
        ctx->kind = VKF_BACKEND_CPU;
    } else {
        const char *env = getenv("VKF_VALIDATE");
        int validate = p->validate || (env && strcmp(env, "1") == 0);
        s = vkf_backend_vulkan_create(p->device, validate, &ctx->be);
        ctx->kind = VKF_BACKEND_VULKAN;
        ctx->serialize = 1;
        /* AUTO falls back to the CPU when there is no loader or no device at all; an explicit
         * device request or a broken device is an error the caller must see. The reason stays
         * in ctx->fallback and in vkf_last_error() (the CPU backend sets no message), so a
         * front end can print a one-line notice. */
        if (s != VKF_OK && p->backend == VKF_BACKEND_AUTO && !(p->device && *p->device) &&
            !getenv("VKF_DEVICE") && (s == VKF_ERROR_NO_VULKAN || s == VKF_ERROR_NO_DEVICE)) {
            snprintf(ctx->fallback, sizeof ctx->fallback, "%s", vkf_last_error());
            s = vkf_backend_cpu_create(&ctx->be);
            ctx->kind = VKF_BACKEND_CPU;
            ctx->serialize = 0;
            if (s == VKF_OK)
                vkf_error(VKF_OK, "no usable Vulkan device, running on the CPU: %s", ctx->fallback);
        }
    }
    if (s != VKF_OK) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return s;
    }
    *out = ctx;
    return VKF_OK;
}

void vkf_context_free(vkf_context *ctx) {
    if (!ctx) return;
    vkf_backend_free(ctx->be);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

const char *vkf_context_device_name(const vkf_context *ctx) { return ctx->be->device_name; }

vkf_backend_kind vkf_context_backend(const vkf_context *ctx) { return ctx->kind; }

void vkf_context_lock(vkf_context *ctx) {
    if (ctx->serialize) pthread_mutex_lock(&ctx->lock);
}

void vkf_context_unlock(vkf_context *ctx) {
    if (ctx->serialize) pthread_mutex_unlock(&ctx->lock);
}
