/* Graph-building helpers shared by the architectures: each call appends one node and returns
 * its destination. The builder's status is sticky: after the first failure every helper
 * returns NULL and does nothing, so a builder reads as straight-line math and checks once. */
#ifndef VKF_MODEL_BUILD_H
#define VKF_MODEL_BUILD_H

#include "graph/graph.h"

struct vkf_lora_use;
typedef struct vkf_gb {
    vkf_graph *g;
    vkf_status s; /* first failure, VKF_OK until then */
    /* the session's LoRA adapters (model/lora.h: vkf_lora_matmul), or none */
    const struct vkf_lora_use *lora;
    int n_lora;
} vkf_gb;

/* An F32 intermediate [rows, cols]. */
vkf_tensor *vkf_gb_new(vkf_gb *b, int64_t rows, int64_t cols, const char *fmt, ...);
/* A view of rows [r0, r0+n), columns [c0, c0+nc) of t. */
vkf_tensor *vkf_gb_view(vkf_gb *b, vkf_tensor *t, int64_t r0, int64_t n, int64_t c0, int64_t nc);
/* x[M,K] · w[N,K]ᵀ (+ bias when present) -> [M,N]. */
vkf_tensor *vkf_gb_matmul(vkf_gb *b, vkf_tensor *x, vkf_tensor *w, vkf_tensor *bias,
                          const char *name);
vkf_tensor *vkf_gb_layernorm(vkf_gb *b, vkf_tensor *x, vkf_tensor *w, vkf_tensor *bias, float eps,
                             const char *name);
vkf_tensor *vkf_gb_rmsnorm(vkf_gb *b, vkf_tensor *x, vkf_tensor *w, float eps, const char *name);
vkf_tensor *vkf_gb_add(vkf_gb *b, vkf_tensor *x, vkf_tensor *y, const char *name);
/* x * s (ggml_scale) */
vkf_tensor *vkf_gb_scale(vkf_gb *b, vkf_tensor *x, float s, const char *name);
vkf_tensor *vkf_gb_unary(vkf_gb *b, vkf_tensor *x, int act, const char *name);
vkf_tensor *vkf_gb_swiglu(vkf_gb *b, vkf_tensor *gate, vkf_tensor *up, const char *name);
vkf_tensor *vkf_gb_attention(vkf_gb *b, vkf_tensor *q, vkf_tensor *k, vkf_tensor *v,
                             vkf_tensor *lens, const vkf_attn_params *p, const char *name);
/* The same with attention sinks (F32 [1, n_head], absent: none; VKF_OP_ATTENTION's src4). */
vkf_tensor *vkf_gb_attention_sinks(vkf_gb *b, vkf_tensor *q, vkf_tensor *k, vkf_tensor *v,
                                   vkf_tensor *lens, vkf_tensor *sinks, const vkf_attn_params *p,
                                   const char *name);
/* dst rows [row0 + (dyn ? n_past : 0) + i] = src rows i. */
void vkf_gb_copy_rows(vkf_gb *b, vkf_tensor *dst, vkf_tensor *src, int32_t row0, int dyn);
/* Any other node with an explicit destination. */
void vkf_gb_node(vkf_gb *b, vkf_op op, vkf_tensor *dst, vkf_tensor *s0, vkf_tensor *s1,
                 vkf_tensor *s2, vkf_tensor *s3, const vkf_op_params *p);

/* NULL for an absent optional weight (bias, norm), else t. */
static inline vkf_tensor *vkf_opt(vkf_tensor *t) { return t->buf ? t : NULL; }

#endif
