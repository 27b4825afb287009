/* A graph: the ordered op list of one forward pass (or one layer of it), its intermediate
 * tensors, and a memory plan that packs intermediates into one arena by lifetime.
 *
 * Build: vkf_graph_create, vkf_graph_tensor (intermediates), vkf_graph_op... ; then
 * vkf_graph_plan to place intermediates; then a backend executes it (backend.h), as many times
 * as needed, with a different n_past each time. Weights and caches are external tensors that
 * the caller allocated; the graph only points at them. */
#ifndef VKF_GRAPH_GRAPH_H
#define VKF_GRAPH_GRAPH_H

#include "graph/ops.h"

#define VKF_MAX_SRC 5

typedef struct vkf_node {
    vkf_op op;
    vkf_tensor *dst;
    vkf_tensor *src[VKF_MAX_SRC]; /* unused slots NULL */
    vkf_op_params p;
} vkf_node;

typedef struct vkf_backend vkf_backend;

typedef struct vkf_graph {
    vkf_node *nodes;
    int n_nodes, cap_nodes;
    vkf_tensor **tensors; /* intermediates owned by the graph (placed in the arena) */
    int *parent; /* per tensor: index of the intermediate it views, -1 (a root), -2 (views an
                    external tensor) */
    size_t *view_offset; /* per view: byte offset inside its parent */
    int n_tensors, cap_tensors;
    size_t arena_bytes;   /* set by vkf_graph_plan */
    vkf_buffer *arena;    /* allocated on the backend by vkf_graph_plan */
    vkf_backend *backend; /* the backend the arena lives on */
    void *exec;           /* backend-private: e.g. recorded command buffers */
    /* serve's batched step (one token per sequence): the backend chooses its kernels as for a
     * step of this many sequences where the graph has fewer, so that a sequence's result does
     * not depend on how many others the step computes; 0: as for the graph's own sizes */
    int32_t plan_batch;
    char name[64];
} vkf_graph;

vkf_status vkf_graph_create(vkf_backend *be, const char *name, vkf_graph **out);
void vkf_graph_free(vkf_graph *g);
/* A new intermediate tensor (F32 or I32), placed by vkf_graph_plan. NULL on out of memory. */
vkf_tensor *vkf_graph_tensor(vkf_graph *g, vkf_dtype dtype, int64_t rows, int64_t cols,
                             const char *name);
/* A view of rows [r0, r0+n) and columns [c0, c0+nc) of an intermediate or external tensor; when
 * parent is an intermediate the view is placed with it and keeps it alive. */
vkf_tensor *vkf_graph_view(vkf_graph *g, vkf_tensor *parent, int64_t r0, int64_t n, int64_t c0,
                           int64_t nc, const char *name);
/* Appends a node; checks operand shapes and dtypes (VKF_ERROR_INVALID_ARGUMENT naming them). */
vkf_status vkf_graph_add(vkf_graph *g, vkf_op op, vkf_tensor *dst, vkf_tensor *s0, vkf_tensor *s1,
                         vkf_tensor *s2, vkf_tensor *s3, const vkf_op_params *p);
/* The same with a node as built by the caller (every source slot, src[4] included). */
vkf_status vkf_graph_add_node(vkf_graph *g, const vkf_node *n);
/* Places intermediates by lifetime (first use to last use) in one arena and allocates it. */
vkf_status vkf_graph_plan(vkf_graph *g);

/* Shape/dtype check of one node, shared by vkf_graph_add and the op harness. */
vkf_status vkf_node_check(const vkf_node *n);

#endif
