/* The context: picks the backend (Vulkan device, else the CPU when allowed) and owns it. */
#include "model/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "core/error.h"
#include "core/switches.h"

/* The shader-compile callback of contexts created without one of their own
 * (vkf_context_params.shader_compiled): read when a context is created, which carries it from
 * then on down to its backend. */
static void (*g_compile_cb)(void *user, int n_compiled, const char *shader);
static void *g_compile_user;

void vkf_set_shader_compile_callback(void (*cb)(void *user, int n_compiled, const char *shader),
                                     void *user) {
    g_compile_user = user;
    g_compile_cb = cb;
}

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
    /* the switches: read once, here (DESIGN 6); everything below takes this copy */
    if (p->switches)
        ctx->sw = *p->switches;
    else
        vkf_switches_from_env(&ctx->sw);
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
        vkf_backend_vulkan_params vp = {.device = p->device,
                                        .validate = p->validate,
                                        .switches = &ctx->sw,
                                        .shader_compiled = p->shader_compiled,
                                        .shader_compiled_user = p->shader_compiled_user};
        if (!vp.shader_compiled) {
            vp.shader_compiled = g_compile_cb;
            vp.shader_compiled_user = g_compile_user;
        }
        s = vkf_backend_vulkan_create_ex(&vp, &ctx->be);
        ctx->kind = VKF_BACKEND_VULKAN;
        ctx->serialize = 1;
        /* AUTO falls back to the CPU when there is no loader or no device at all; an explicit
         * device request or a broken device is an error the caller must see. The reason stays
         * in ctx->fallback and in vkf_last_error() (the CPU backend sets no message), so a
         * front end can print a one-line notice. */
        if (s != VKF_OK && p->backend == VKF_BACKEND_AUTO && !(p->device && *p->device) &&
            !ctx->sw.device[0] && (s == VKF_ERROR_NO_VULKAN || s == VKF_ERROR_NO_DEVICE)) {
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

void vkf_context_switches(const vkf_context *ctx, vkf_switches *out) {
    if (out) *out = ctx->sw;
}

void vkf_context_lock(vkf_context *ctx) {
    if (ctx->serialize) pthread_mutex_lock(&ctx->lock);
}

void vkf_context_unlock(vkf_context *ctx) {
    if (ctx->serialize) pthread_mutex_unlock(&ctx->lock);
}
