/* The planner (docs/DESIGN.md, 'Cross-vendor by data'): one place maps (device capabilities,
 * switches, the tuning table or `vkformer tune`'s winners, the shapes and placement of an op's
 * tensors) to the kernel variant that runs it: a plan per op family, typed, with its kernels as
 * vkf_vk_kplan (vk_kernels.h). The encoders (vk_ops.c, vk_matmul.c, vk_attention.c, vk_fuse.c) ask
 * for a plan, then bind windows and record; they read no switch and choose no variant, except where
 * a choice depends on how a window falls (16-byte loads where the bound offsets allow: the plan
 * gives both kernels, the encoder picks per dispatch).
 *
 * Growth: a kernel family is a new plan (or a new route of one) here and its list in
 * vk_kernels.h; a per-device winner of `vkformer tune` lands in vkf_vk_mm_cfg through
 * vkf_vk_plan_mm_cfg; several devices each plan with their own backend (no global state). */
#ifndef VKF_VK_PLAN_H
#define VKF_VK_PLAN_H

#include "backend/vulkan/vk_kernels.h"
#include "graph/graph.h"

struct vkf_vk_backend;
struct vkf_vk_mm_group;
struct vkf_vk_mm_cfg;

/* workgroup sizes (specialization constant WG) of the kernels whose size is fixed */
#define VKF_VK_ELT_WG 256        /* element-wise, embed, positions, copies */
#define VKF_VK_ELT_PER_THREAD 16 /* and the elements one invocation takes */
#define VKF_VK_ROW_WG 256        /* norm.comp, softmax.comp, argmax, topk: a row per workgroup */
#define VKF_VK_NORM_TEXEL_WG 64  /* norm_texel.comp, softmax_texel.comp: a subgroup per row */
#define VKF_VK_ATTN_WG 128       /* attention.comp */
#define VKF_VK_ATTN_TEXEL_WG 64  /* attention_texel.comp's decode on CPU drivers, subgroups */
#define VKF_VK_MV_WG 64          /* matmul.comp's matrix-vector kernel */

/* 1 where the device takes the CPU drivers' choices (lavapipe), unless the gpu_table switch
 * gives it the GPUs' */
int vkf_vk_plan_cpu(const struct vkf_vk_backend *vb);

/* 1 where record-time fusion is on (vk_fuse.c; the no_fuse switch turns it off) */
int vkf_vk_plan_fusion(const struct vkf_vk_backend *vb);

/* ---------------------------------------------------------------- element-wise */

/* SCALE, ADD, MUL, UNARY, SWIGLU: k with 16-byte accesses (when vec4_ok), k1 without; the
 * encoder takes k where every bound offset, stride and the row length are multiples of 4 */
typedef struct vkf_vk_elt_plan {
    vkf_vk_kplan k, k1;
    int vec4_ok;
} vkf_vk_elt_plan;
vkf_status vkf_vk_plan_elt(const struct vkf_vk_backend *vb, const vkf_node *n, vkf_vk_elt_plan *p);

/* ---------------------------------------------------------------- rows */

/* LAYERNORM / RMSNORM (optionally with a residual added: dst = res + norm(x)), SOFTMAX /
 * LOG_SOFTMAX: texel = 1 for the one-subgroup-per-row texel kernel over groups workgroups, else
 * the general kernel one row per workgroup in chunks that fit a window */
typedef struct vkf_vk_rows_plan {
    int texel;
    vkf_vk_kplan k;
    uint64_t groups; /* texel: workgroups */
} vkf_vk_rows_plan;
void vkf_vk_plan_norm(const struct vkf_vk_backend *vb, const vkf_node *n, const vkf_tensor *res,
                      const vkf_tensor *dst, vkf_vk_rows_plan *p);
/* two independent weighted RMSNORMs of one width as one texel dispatch: 0 where they cannot be */
int vkf_vk_plan_norm_pair(const struct vkf_vk_backend *vb, const vkf_node *n1, const vkf_node *n2,
                          vkf_vk_rows_plan *p);
void vkf_vk_plan_softmax(const struct vkf_vk_backend *vb, const vkf_node *n, vkf_vk_rows_plan *p);

/* ARGMAX, TOPK, POOL, EMBED, ADD_POS, ROPE, COPY_ROWS, and the fused RoPE + KV-cache store: one
 * kernel each, by the op and the dtypes (kv_f16: an F16 cache) */
vkf_vk_kplan vkf_vk_plan_simple(const struct vkf_vk_backend *vb, const vkf_node *n);
vkf_vk_kplan vkf_vk_plan_kv_store(const struct vkf_vk_backend *vb, int kv_f16);

/* ---------------------------------------------------------------- matmul */

/* The shape's matmul configuration: `vkformer tune`'s winner for the device, driver, shape class
 * and weight type, else the tuning table (vk_tune.c); then the switches that force one
 * (mm_r, mm_tm, mm_wg, mm_lanes, no_texel_matmul, mm_tile). */
vkf_status vkf_vk_plan_mm_cfg(const struct vkf_vk_backend *vb, int64_t M, int64_t N, int64_t K,
                              vkf_dtype wtype, struct vkf_vk_mm_cfg *out);

/* Whether the group can run as one matmul_texel dispatch on this device (texels, alignment,
 * shared blocks, windows); *why (may be NULL) gets the reason when not. */
int vkf_vk_plan_mm_group_ok(const struct vkf_vk_backend *vb, const struct vkf_vk_mm_group *g,
                            const char **why);

/* matmul_texel.comp for a group (vkf_vk_plan_mm_group_ok holds): the kernel, and what the grid
 * needs: R weight rows per subgroup (per lane with lanes), tm activation rows per workgroup,
 * the workgroup size */
typedef struct vkf_vk_mm_group_plan {
    vkf_vk_kplan k; /* spec: wg, R, tm */
    uint32_t wg, R, tm;
    int lanes;     /* each lane owns R rows and walks all of K */
    int aligned16; /* weight rows must start on a texel in their window (W_ALIGN16, ROWSEQ_CH) */
    int ssbo;      /* a, w and the norm weight in storage windows of 16-byte vectors (W_SSBO) */
    int int_dot;   /* k is matmul_q8.comp, after kq (quantize_q8.comp) quantized a: the
                      integer-dot path (vkf_vk_plan_int_dot) */
    vkf_vk_kplan kq;
    uint32_t qk;  /* int_dot: values per activation scale (32, or 256 for Q8_K) */
    int row_each; /* one dispatch per activation row (ROWSEQ, a one-row kernel, in serve's
                     batched step: vkf_vk_plan_rowseq) */
} vkf_vk_mm_group_plan;
vkf_status vkf_vk_plan_mm_group(const struct vkf_vk_backend *vb, const struct vkf_vk_mm_group *g,
                                vkf_vk_mm_group_plan *p);

/* MATMUL: route TEXEL (a group of one on matmul_texel.comp), else matmul.comp (split-K
 * matrix-vector for M <= 8, tiled above) or the cooperative-matrix kernel; fast (when fast_ok)
 * is matmul.comp's FAST (and ROWLANE) variant, taken where the bound offsets allow */
typedef enum vkf_vk_mm_route {
    VKF_VK_MM_ROUTE_TEXEL = 0,
    VKF_VK_MM_ROUTE_MATVEC,
    VKF_VK_MM_ROUTE_TILED,
    VKF_VK_MM_ROUTE_COOPMAT,
} vkf_vk_mm_route;
typedef struct vkf_vk_mm_plan {
    vkf_vk_mm_route route;
    vkf_vk_kplan k, fast;
    int fast_ok, rowlane;
    uint32_t bm, bn; /* tiled and cooperative-matrix output tile */
} vkf_vk_mm_plan;
#define VKF_VK_MV_MAXM 8 /* matrix-vector up to this many activation rows */
#define VKF_VK_MV_NOUT 4 /* weight rows per matrix-vector workgroup */
#define VKF_VK_RL_WG 32  /* weight rows per ROWLANE workgroup (its workgroup size) */
vkf_status vkf_vk_plan_matmul(const struct vkf_vk_backend *vb, const vkf_node *n,
                              vkf_vk_mm_plan *p);

/* ---------------------------------------------------------------- attention */

/* ATTENTION: texel = 1 for attention_texel.comp (its layout: keylanes, qlanes with qr query rows
 * per lane, wg invocations, split key parts merged by attention_merge.comp), else attention.comp
 * (gen with 16-byte loads when vec4_ok, gen1 without), in key chunks of at most kmax keys where
 * chunked (one sequence past a window, or past what a CPU driver's invocation may walk) */
typedef struct vkf_vk_attn_plan {
    int texel;
    vkf_vk_kplan k, merge;
    uint32_t wg, split, qr;
    int keylanes, qlanes;
    vkf_vk_kplan gen, gen1;
    int vec4_ok, chunked;
    int64_t kmax, nb; /* keys per chunk; sequences per unchunked dispatch */
} vkf_vk_attn_plan;
vkf_status vkf_vk_plan_attention(const struct vkf_vk_backend *vb, const vkf_node *n,
                                 vkf_vk_attn_plan *p);
/* The KVQ code of a KV cache dtype the kernels quantize and decode themselves (bf16 and the
 * 32-element block types: its VKF_W_* code, kvq.glsl), else 0 (F32, F16). */
int vkf_vk_kvq(vkf_dtype t);

#endif
