/* The context: picks the backend (Vulkan device, else the CPU when allowed) and owns it. */
#include "runtime/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "core/error.h"
#include "core/switches.h"

/* the machine this build runs on, as error messages name it */
#if defined(__aarch64__)
#define VKF_HOST_ARCH "aarch64"
#elif defined(__arm__)
#define VKF_HOST_ARCH "32-bit ARM"
#elif defined(__x86_64__)
#define VKF_HOST_ARCH "x86-64"
#else
#define VKF_HOST_ARCH "a machine other than x86-64"
#endif

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

/* Free bytes of a backend's device memory (0: unknown). */
static double context_free_bytes(vkf_backend *be) {
    vkf_backend_memory bm;
    memset(&bm, 0, sizeof bm);
    if (be->i->memory_info) be->i->memory_info(be, &bm);
    if (bm.has_budget) return (double)bm.budget;
    return bm.heap > bm.allocated ? (double)(bm.heap - bm.allocated) : 0.0;
}

/* The layer split: one more Vulkan backend (its own logical VkDevice) per further device, and
 * the share of the layers of each (the proportions given, else each device's free memory). */
static vkf_status context_split(vkf_context *ctx, const vkf_context_params *p) {
    if (ctx->kind != VKF_BACKEND_VULKAN)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "context_create: a layer split over %d devices needs the Vulkan backend",
                         p->n_devices);
    double sum = 0;
    int given = 0;
    for (int i = 0; i < p->n_tensor_split; i++) {
        if (!(p->tensor_split[i] >= 0.0f) || p->tensor_split[i] > 1e9f)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "tensor split (-ts): proportion %d is %g, expected a number >= 0", i,
                             (double)p->tensor_split[i]);
        sum += p->tensor_split[i];
        given |= p->tensor_split[i] > 0;
    }
    if (given && !(sum > 0))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "tensor split (-ts): the proportions sum to 0");
    for (int i = 1; i < p->n_devices; i++) {
        vkf_backend_vulkan_params vp = {.device = p->devices[i],
                                        .validate = p->validate,
                                        .switches = &ctx->sw,
                                        .shader_compiled = p->shader_compiled,
                                        .shader_compiled_user = p->shader_compiled_user};
        if (!vp.shader_compiled) {
            vp.shader_compiled = g_compile_cb;
            vp.shader_compiled_user = g_compile_user;
        }
        vkf_status s = vkf_backend_vulkan_create_ex(&vp, &ctx->dev_be[i]);
        if (s != VKF_OK)
            return vkf_error_prefix(s, "device %d of the split (-dev), \"%s\"", i,
                                    p->devices[i] ? p->devices[i] : "");
        ctx->n_dev = i + 1;
    }
    if (!given) { /* each device's free memory; equal shares when no device reports it */
        sum = 0;
        for (int i = 0; i < ctx->n_dev; i++)
            sum += ctx->prop[i] = context_free_bytes(ctx->dev_be[i]);
        for (int i = 0; i < ctx->n_dev && !(sum > 0); i++)
            ctx->prop[i] = 1.0;
        if (!(sum > 0)) sum = ctx->n_dev;
    } else {
        for (int i = 0; i < ctx->n_dev; i++)
            ctx->prop[i] = p->tensor_split[i];
    }
    for (int i = 0; i < ctx->n_dev; i++)
        ctx->prop[i] /= sum;
    return VKF_OK;
}

/* The device list of params p in *one: a comma-separated `device` (or switches' device) split
 * into devices[]; split mode NONE keeps only the main device; devices[0] becomes `device`. */
static vkf_status context_devices(vkf_context *ctx, const vkf_context_params *p,
                                  vkf_context_params *one) {
    *one = *p;
    if (p->split_mode < VKF_SPLIT_DEFAULT || p->split_mode > VKF_SPLIT_ROW)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "context_create: split_mode %d is not a vkf_split_mode (0 default, 1 "
                         "none, 2 layer)",
                         p->split_mode);
    if (p->split_mode == VKF_SPLIT_ROW)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "split mode row (-sm row) is llama.cpp's tensor parallelism (each matrix "
                         "split by rows across the devices), not implemented: use -sm layer");
    if (p->n_devices < 0 || p->n_devices > VKF_MAX_DEVICES)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "context_create: n_devices %d outside [0, %d]",
                         p->n_devices, VKF_MAX_DEVICES);
    const char *list = p->device && *p->device ? p->device : ctx->sw.device;
    if (p->n_devices == 0 && list && strchr(list, ',')) {
        int n = 0;
        for (const char *c = list; n <= VKF_MAX_DEVICES;) {
            const char *e = strchr(c, ',');
            size_t len = e ? (size_t)(e - c) : strlen(c);
            if (n == VKF_MAX_DEVICES)
                return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                                 "device list (-dev) \"%s\": more than %d devices", list,
                                 VKF_MAX_DEVICES);
            if (len == 0 || len >= sizeof ctx->dev_names[0])
                return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                                 "device list (-dev) \"%s\": entry %d is %s", list, n,
                                 len ? "too long" : "empty");
            memcpy(ctx->dev_names[n], c, len);
            ctx->dev_names[n][len] = 0;
            one->devices[n] = ctx->dev_names[n];
            n++;
            if (!e) break;
            c = e + 1;
        }
        one->n_devices = n;
    }
    int nd = one->n_devices < 1 ? 1 : one->n_devices;
    if (p->n_tensor_split < 0 || p->n_tensor_split > VKF_MAX_DEVICES ||
        (p->n_tensor_split && p->n_tensor_split != nd))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "tensor split (-ts) has %d proportions for %d device%s (-dev): give one "
                         "per device",
                         p->n_tensor_split, nd, nd == 1 ? "" : "s");
    if (p->main_device && p->split_mode != VKF_SPLIT_NONE)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "main device (-mg) %d: in layer mode the output head sits on the last "
                         "device of the list (-dev), as in llama.cpp's; -mg picks the one device "
                         "of -sm none",
                         p->main_device);
    if (p->main_device < 0 || p->main_device >= nd)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "main device (-mg) %d outside the %d device%s listed (-dev)",
                         p->main_device, nd, nd == 1 ? "" : "s");
    if (one->n_devices >= 1)
        one->device = one->devices[p->split_mode == VKF_SPLIT_NONE ? p->main_device : 0];
    if (p->split_mode == VKF_SPLIT_NONE) one->n_devices = 0;
    return VKF_OK;
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
    /* the switches: read once, here (docs/DESIGN.md, 'Switches read once'); everything below takes
     * this copy */
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
#if !defined(__x86_64__)
    /* the mode reproduces llama.cpp's x86-64 kernels (their AVX2 / AVX-512 orders of summation);
     * on another machine llama.cpp runs other kernels (on aarch64 NEON's, with its own repacks),
     * whose sums the mode does not reproduce: refused, not approximated */
    if (p->ggml_activations) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return vkf_error(
            VKF_ERROR_UNSUPPORTED,
            "context_create: ggml_activations %s reproduces llama.cpp's x86-64 "
            "arithmetic (AVX2 / AVX-512 orders of summation); this build is for " VKF_HOST_ARCH
            ", where llama.cpp's CPU kernels (NEON on aarch64) sum in other orders: "
            "the mode is refused here",
            vkf_ggml_target_name(p->ggml_activations));
    }
#endif
    vkf_context_params one;
    vkf_status ds = context_devices(ctx, p, &one);
    if (ds != VKF_OK) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return ds;
    }
    p = &one;
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
    ctx->n_dev = 1;
    ctx->dev_be[0] = ctx->be;
    if (s == VKF_OK && p->n_devices >= 2) s = context_split(ctx, p);
    if (s != VKF_OK) {
        for (int i = 1; i < ctx->n_dev; i++)
            vkf_backend_free(ctx->dev_be[i]);
        vkf_backend_free(ctx->be);
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return s;
    }
    *out = ctx;
    return VKF_OK;
}

void vkf_context_free(vkf_context *ctx) {
    if (!ctx) return;
    for (int i = 1; i < ctx->n_dev; i++)
        vkf_backend_free(ctx->dev_be[i]);
    vkf_backend_free(ctx->be);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

const char *vkf_context_device_name(const vkf_context *ctx) { return ctx->be->device_name; }

int vkf_context_n_devices(const vkf_context *ctx) { return ctx->n_dev; }

const char *vkf_context_device_name_at(const vkf_context *ctx, int i) {
    return i >= 0 && i < ctx->n_dev ? ctx->dev_be[i]->device_name : NULL;
}

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
