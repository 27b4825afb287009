/* The CPU backend: host buffers and in-order execution of the reference ops. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "core/dtype.h"
#include "core/error.h"
#include "graph/backend.h"

typedef struct cpu_backend {
    vkf_backend base;
    int ggml; /* ggml-activation reference mode (cpu_ggml.c): a vkf_ggml_target, 0 off */
} cpu_backend;

static void cpu_destroy(vkf_backend *be) { free(be); }

static vkf_status cpu_buffer_alloc(vkf_backend *be, size_t size, vkf_buffer_usage usage,
                                   vkf_buffer **out) {
    vkf_buffer *b = calloc(1, sizeof *b);
    size_t rounded = (size + 63) / 64 * 64;
    if (b) b->data = aligned_alloc(64, rounded ? rounded : 64);
    if (!b || !b->data) {
        free(b);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes", size);
    }
    memset(b->data, 0, rounded ? rounded : 64);
    b->size = size;
    *out = b;
    return VKF_OK;
}

static void cpu_buffer_free(vkf_backend *be, vkf_buffer *b) {
    if (!b) return;
    if (!b->borrowed) free(b->data);
    free(b);
}

static vkf_status cpu_buffer_write(vkf_backend *be, vkf_buffer *b, size_t off, const void *src,
                                   size_t n) {
    if (off > b->size || n > b->size - off)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "cpu: write of %zu bytes at %zu past a %zu-byte buffer", n, off, b->size);
    if (b->borrowed)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "cpu: write to a read-only buffer (weights used in place)");
    memcpy((char *)b->data + off, src, n);
    return VKF_OK;
}

static vkf_status cpu_buffer_read(vkf_backend *be, vkf_buffer *b, size_t off, void *dst, size_t n) {
    if (off > b->size || n > b->size - off)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "cpu: read of %zu bytes at %zu past a %zu-byte buffer", n, off, b->size);
    memcpy(dst, (char *)b->data + off, n);
    return VKF_OK;
}

static vkf_status cpu_graph_compute(vkf_backend *be, vkf_graph *g, int32_t n_past) {
    int ggml = ((cpu_backend *)be)->ggml;
    for (int i = 0; i < g->n_nodes; i++) {
        vkf_status s =
            ggml ? vkf_cpu_ggml_op(&g->nodes[i], n_past, ggml) : vkf_cpu_op(&g->nodes[i], n_past);
        if (s != VKF_OK)
            return vkf_error_prefix(s, "graph %s, node %d (%s -> %s)", g->name, i,
                                    vkf_op_name(g->nodes[i].op), g->nodes[i].dst->name);
    }
    return VKF_OK;
}

static void cpu_graph_release(vkf_backend *be, vkf_graph *g) { g->exec = NULL; }

/* Weights in place: the kernels read host memory, so a stored tensor needs no copy. */
static vkf_status cpu_buffer_import(vkf_backend *be, const void *p, size_t n, const void *region,
                                    size_t region_size, vkf_buffer **out) {
    (void)be;
    (void)region;
    (void)region_size;
    *out = NULL;
    if ((uintptr_t)p % 16)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "cpu: import of memory that is not 16-byte aligned");
    vkf_buffer *b = calloc(1, sizeof *b);
    if (!b) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "cpu: out of host memory");
    b->data = (void *)(uintptr_t)p; /* read-only: weights are never written by a kernel */
    b->size = n;
    b->borrowed = 1;
    *out = b;
    return VKF_OK;
}

static const vkf_backend_i cpu_iface = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_write = cpu_buffer_write,
    .buffer_read = cpu_buffer_read,
    .graph_compute = cpu_graph_compute,
    .graph_release = cpu_graph_release,
    .buffer_import = cpu_buffer_import,
};

vkf_status vkf_backend_cpu_create_ex(int ggml_activations, vkf_backend **out) {
    cpu_backend *cb = calloc(1, sizeof *cb);
    if (!cb) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "cpu backend: out of host memory");
    cb->base.i = &cpu_iface;
    cb->base.import_host = 1; /* the kernels read host memory */
    cb->base.ubatch_default = 64;
    cb->ggml = ggml_activations;
    cb->base.kv_mixed = 1;
    cb->base.kv_block_no_rot = ggml_activations != 0;
    /* the reference loops decode every cache type (cpu_ops.c); the ggml-activations mode reads
     * an F32 cache as llama.cpp's attention without flash attention and the others as its flash
     * attention kernel (cpu_ggml.c) */
    cb->base.kv_dtypes = (1u << VKF_DTYPE_F32) | (1u << VKF_DTYPE_F16) | (1u << VKF_DTYPE_BF16) |
                         (1u << VKF_DTYPE_Q8_0) | (1u << VKF_DTYPE_Q4_0) | (1u << VKF_DTYPE_Q4_1) |
                         (1u << VKF_DTYPE_IQ4_NL) | (1u << VKF_DTYPE_Q5_0) | (1u << VKF_DTYPE_Q5_1);
    strcpy(cb->base.device_name, "cpu");
    *out = &cb->base;
    return VKF_OK;
}

vkf_status vkf_backend_cpu_create(vkf_backend **out) { return vkf_backend_cpu_create_ex(0, out); }
