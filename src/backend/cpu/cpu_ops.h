/* The CPU reference ops: the specification of every op in src/graph/ops.h. */
#ifndef VKF_CPU_OPS_H
#define VKF_CPU_OPS_H

#include "graph/graph.h"

struct vkf_buffer {
    void *data;   /* host memory, 64-byte aligned (imported: the caller's, 16-byte aligned) */
    size_t size;  /* bytes */
    int borrowed; /* data belongs to the caller (buffer_import): not freed */
};

/* Executes one node on host memory; n_past is the per-step dynamic value. */
vkf_status vkf_cpu_op(const vkf_node *n, int32_t n_past);
/* The same in the ggml-activation reference mode (cpu_ggml.c) for a vkf_ggml_target. */
vkf_status vkf_cpu_ggml_op(const vkf_node *n, int32_t n_past, int target);

#endif
