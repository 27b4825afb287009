/* The backend interface: a backend owns buffers and executes graphs. Two implementations:
 * src/backend/cpu (the reference) and src/backend/vulkan. */
#ifndef VKF_GRAPH_BACKEND_H
#define VKF_GRAPH_BACKEND_H

#include "graph/graph.h"

typedef enum vkf_buffer_usage {
    VKF_BUFFER_WEIGHTS = 0, /* written once, read by kernels */
    VKF_BUFFER_ACTIVATIONS, /* read and written by kernels */
    VKF_BUFFER_IO,          /* written/read by the host often (inputs, logits) */
} vkf_buffer_usage;

/* A device's memory (vkf_backend_i.memory_info). */
typedef struct vkf_backend_memory {
    uint64_t heap;      /* bytes of the heap buffers are allocated from: VKF_MAX_DEVICE_MEMORY,
                           else the heap of the device-local memory type in use */
    uint64_t allocated; /* bytes allocated there now; host memory used in place (imported: the
                           model file's pages) occupies no heap and is not counted */
    uint64_t in_place;  /* bytes of host memory used in place (VK_EXT_external_memory_host) */
    uint64_t budget;    /* VK_EXT_memory_budget: heapBudget - heapUsage, the bytes the driver
                           says this process may still allocate there (valid if has_budget) */
    int has_budget;
    int unified; /* the heap is the host's memory (integrated GPUs, lavapipe): its size is a
                    driver's figure (lavapipe: 2 GiB whatever the host has, and it allocates
                    past it), what can really be allocated is what the host has available */
    int capped;  /* heap is VKF_MAX_DEVICE_MEMORY (a small device simulated) */
} vkf_backend_memory;

typedef struct vkf_backend_i {
    const char *name; /* "cpu" or "vulkan" */
    void (*destroy)(vkf_backend *be);
    vkf_status (*buffer_alloc)(vkf_backend *be, size_t size, vkf_buffer_usage usage,
                               vkf_buffer **out);
    void (*buffer_free)(vkf_backend *be, vkf_buffer *b);
    /* Host <-> buffer copies; offsets in bytes. Complete when the call returns. */
    vkf_status (*buffer_write)(vkf_backend *be, vkf_buffer *b, size_t off, const void *src,
                               size_t n);
    vkf_status (*buffer_read)(vkf_backend *be, vkf_buffer *b, size_t off, void *dst, size_t n);
    /* Runs every node of g in order with the given n_past; returns when results are visible to
     * buffer_read. The Vulkan backend records g once (g->exec) and replays it afterwards. */
    vkf_status (*graph_compute)(vkf_backend *be, vkf_graph *g, int32_t n_past);
    /* Releases g->exec. */
    void (*graph_release)(vkf_backend *be, vkf_graph *g);
    /* Optional (NULL: never). A read-only WEIGHTS buffer over the n bytes at p, used in place
     * (no copy). p lies in region (a page-aligned host allocation, readable up to its end
     * rounded up to a page: the model file's mapping), which the backend may import around p;
     * region must stay valid and unchanged until the buffer is freed. VKF_ERROR_UNSUPPORTED
     * when this device cannot use that memory directly (no VK_EXT_external_memory_host, memory
     * not device-local, alignment): the caller copies. */
    vkf_status (*buffer_import)(vkf_backend *be, const void *p, size_t n, const void *region,
                                size_t region_size, vkf_buffer **out);
    /* Optional (NULL: the backend allocates host memory, as the CPU backend). The memory its
     * buffers come from, as the fit checks (model/memory.c) see it. */
    void (*memory_info)(vkf_backend *be, vkf_backend_memory *out);
} vkf_backend_i;

struct vkf_backend {
    const vkf_backend_i *i;
    char device_name[256];
    int kv_f16_default; /* sessions default to an F16 KV cache (GPU-type Vulkan devices) */
    /* bit (1 << dtype) for each KV cache dtype whose rows its COPY_ROWS writes and its
     * ATTENTION reads (F32 and F16 everywhere; the block types where the kernels decode them);
     * 0 is read as F32 | F16 */
    uint32_t kv_dtypes;
    int kv_mixed; /* K and V may be of different types (else the same one) */
    /* the block types only where llama.cpp keeps them unrotated: its KV cache multiplies each
     * head of q, k and v by a Walsh-Hadamard matrix when the type is quantized and head_dim a
     * multiple of 64 (llama-kv-cache.cpp's attn_rot_k / _v), which the ggml-activations mode does
     * not reproduce, so it refuses those (never an answer that is not llama.cpp's) */
    int kv_block_no_rot;
    /* the reason the others are refused, for the message ("the Vulkan attention kernels read
     * F32 and F16 caches"); NULL: none given */
    const char *kv_dtypes_why;
    int import_host;    /* buffer_import works here: weights are used in place from the file */
    int ubatch_default; /* tokens per forward pass of a long prompt by default (sessions): 512 on
                           GPUs; 64 on CPU devices, where passes of 64 run as fast per token as
                           passes of 512 (bench/RESULTS.md: TinyLlama Q4_K_M on lavapipe, pp64
                           26.5 / pp512 26.2-26.6 t/s; the CPU backend's reference loops pp64
                           418 / pp512 394 t/s) and Ctrl-C is heard within one pass */
};

vkf_status vkf_backend_cpu_create(vkf_backend **out);
/* ggml_activations: a vkf_ggml_target, llama.cpp's CPU arithmetic (cpu_ggml.c); 0: off. */
vkf_status vkf_backend_cpu_create_ex(int ggml_activations, vkf_backend **out);

static inline void vkf_backend_free(vkf_backend *be) {
    if (be) be->i->destroy(be);
}

/* Convenience: allocate a buffer for t (contiguous) and write data (may be NULL). */
vkf_status vkf_tensor_alloc(vkf_backend *be, vkf_tensor *t, vkf_buffer_usage usage,
                            const void *data);
vkf_status vkf_tensor_write(vkf_backend *be, vkf_tensor *t, const void *data);
vkf_status vkf_tensor_read(vkf_backend *be, const vkf_tensor *t, void *data);
/* Reads t as f32 rows (dequantizing), contiguous rows*cols floats. */
vkf_status vkf_tensor_read_f32(vkf_backend *be, const vkf_tensor *t, float *data);

#endif
