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

/* VKF_OK when the target's arithmetic for weights of type t has been checked bit-identical
 * against its build; else VKF_ERROR_UNSUPPORTED naming the target, the type, why, and the types
 * it is checked on. */
vkf_status vkf_ggml_target_check(int target, vkf_dtype t);

#endif
