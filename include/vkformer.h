/* vkformer: transformer inference in C on any Vulkan GPU, with a CPU reference backend.
 *
 * Usage:
 *     vkf_context_params cp = {0};             // zero = defaults: best Vulkan device, else CPU
 *     vkf_context *ctx;
 *     if (vkf_context_create(&cp, &ctx) != VKF_OK) fprintf(stderr, "%s\n", vkf_last_error());
 *     ...
 *     vkf_context_free(ctx);
 *
 * Conventions: every function that can fail returns a vkf_status and, on failure, leaves a
 * message for vkf_last_error() (thread-local). The library never prints and never exits.
 * Objects come in create/free pairs; whoever creates frees.
 *
 * Thread safety: vkf_last_error() is per thread. A vkf_context may be used from one thread
 * at a time; distinct contexts may be used concurrently from different threads.
 */
#ifndef VKFORMER_H
#define VKFORMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VKF_VERSION_MAJOR 0
#define VKF_VERSION_MINOR 1
#define VKF_VERSION_PATCH 0

/* ---------------------------------------------------------------- status */

typedef enum vkf_status {
    VKF_OK = 0,
    VKF_ERROR_INVALID_ARGUMENT, /* a caller passed something out of contract */
    VKF_ERROR_IO,               /* open/read/write/mmap failed */
    VKF_ERROR_FORMAT,           /* a file is malformed (header, offsets, JSON, ...) */
    VKF_ERROR_UNSUPPORTED,      /* valid input this build does not handle (architecture, dtype) */
    VKF_ERROR_OUT_OF_MEMORY,    /* host or device allocation failed */
    VKF_ERROR_NO_VULKAN,        /* no Vulkan loader could be loaded */
    VKF_ERROR_NO_DEVICE,        /* no (matching) Vulkan device */
    VKF_ERROR_VULKAN,           /* a Vulkan call failed; the message names it */
    VKF_ERROR_SHADER,           /* a shader failed to compile */
    VKF_ERROR_TOKEN,            /* a token id out of range or text that cannot be tokenized */
    VKF_ERROR_CONTEXT_FULL,     /* the sequence does not fit the model's context */
    VKF_ERROR_VALIDATION,       /* the Vulkan validation layer reported a message */
    VKF_ERROR_INTERNAL,         /* a bug in vkformer */
} vkf_status;

/* Short name of a status, e.g. "VKF_ERROR_FORMAT". */
const char *vkf_status_name(vkf_status s);
/* Message of the last failure on this thread ("" if none). */
const char *vkf_last_error(void);

/* ---------------------------------------------------------------- dtypes */

typedef enum vkf_dtype {
    VKF_DTYPE_F32 = 0,
    VKF_DTYPE_F16,
    VKF_DTYPE_BF16,
    VKF_DTYPE_Q8_0, /* ggml block: f16 scale d, 32 x int8; x = d * q */
    VKF_DTYPE_Q4_0, /* ggml block: f16 scale d, 16 bytes of nibbles; x = d * (q - 8) */
    VKF_DTYPE_I32,
    VKF_DTYPE_COUNT
} vkf_dtype;

const char *vkf_dtype_name(vkf_dtype t);

/* ---------------------------------------------------------------- devices */

typedef enum vkf_backend_kind {
    VKF_BACKEND_AUTO = 0, /* Vulkan if a device is present, else CPU */
    VKF_BACKEND_CPU,
    VKF_BACKEND_VULKAN,
} vkf_backend_kind;

/* Writes a description of every Vulkan device (the `vkformer devices` report) to *out as a
 * malloc'ed NUL-terminated string; JSON when json != 0. The caller frees *out. */
vkf_status vkf_devices_report(int json, char **out);

typedef struct vkf_context_params {
    vkf_backend_kind backend; /* default AUTO */
    const char *device;       /* Vulkan device: index ("1") or name substring; NULL: env
                                 VKF_DEVICE, else first discrete, integrated, then any */
    int validate;             /* 1: Khronos validation layer on (also env VKF_VALIDATE=1) */
} vkf_context_params;

typedef struct vkf_context vkf_context;

vkf_status vkf_context_create(const vkf_context_params *p, vkf_context **out);
void vkf_context_free(vkf_context *ctx);
/* "cpu" or the Vulkan device name. */
const char *vkf_context_device_name(const vkf_context *ctx);
vkf_backend_kind vkf_context_backend(const vkf_context *ctx);

/* ---------------------------------------------------------------- self-test */

typedef struct vkf_selftest_result {
    int n_cases;  /* op x dtype x shape cases run */
    int n_failed; /* cases over their threshold or with a NaN/Inf mismatch */
} vkf_selftest_result;

/* Runs the op harness on ctx's backend against the CPU reference. When log is non-NULL it is
 * called with one line per case. */
vkf_status vkf_selftest(vkf_context *ctx, int quick, void (*log)(void *user, const char *line),
                        void *user, vkf_selftest_result *out);

#ifdef __cplusplus
}
#endif
#endif /* VKFORMER_H */
