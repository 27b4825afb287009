/* Kernels: the shaders of shaders/ and the defines each takes, declared once (STYLE: kernel
 * variants keyed by typed structs, not "KEY=%d" strings).
 *
 * Each list below names a shader's defines, X(NAME, field, U): NAME as the shader spells it,
 * the field of the shader's variant struct (int32_t each), U = 1 where the GLSL reads it as an
 * unsigned literal ("4u"). From them come the variant structs (vkf_vk_matmul_texel_v, ...), the
 * kernel ids (VKF_VK_K_MATMUL_TEXEL, ...) and the table vkf_vk_defines reads: the one function
 * that spells defines. A misspelled field is a compile error; a define the shader does not
 * mention is refused when its pipeline is first made (the name is looked up in the source).
 *
 * The planner (vk_plan.c) fills a vkf_vk_kplan (kernel id, variant, specialization constants);
 * the recording code asks vkf_vk_kplan_pipe for its pipeline, keyed by exactly those values. */
#ifndef VKF_VK_KERNELS_H
#define VKF_VK_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

/* ---------------------------------------------------------------- the defines of each shader */

#define VKF_VK_D_SCALE(X) X(VEC4, vec4, 0)
#define VKF_VK_D_BINARY(X) X(OP_MUL, op_mul, 0) X(VEC4, vec4, 0)
#define VKF_VK_D_UNARY(X) X(ACT, act, 0) X(VEC4, vec4, 0)
#define VKF_VK_D_SWIGLU(X) X(GELU, gelu, 0) X(VEC4, vec4, 0) X(OAI, oai, 0)
#define VKF_VK_D_NORM(X) X(RMS, rms, 0)
#define VKF_VK_D_NORM_TEXEL(X) X(RMS, rms, 0) X(RES, res, 0) X(PAIR, pair, 0)
#define VKF_VK_D_SOFTMAX(X) X(LOG, log, 0)
#define VKF_VK_D_SOFTMAX_TEXEL(X) X(LOG, log, 0)
#define VKF_VK_D_EMBED(X) X(WTYPE, wtype, 0)
#define VKF_VK_D_COPY_ROWS(X) X(F16, f16, 0) X(KVQ, kvq, 0)
#define VKF_VK_D_KV_STORE(X) X(KV_F16, kv_f16, 0)
/* matmul.comp: split-K matrix-vector (MATVEC: MV_M activation rows, NOUT weight rows per
 * workgroup; FAST 16-byte loads, ROWLANE one row per lane) or tiled (TT x TT per invocation) */
#define VKF_VK_D_MATMUL(X)                                                                         \
    X(WTYPE, wtype, 0)                                                                             \
    X(MATVEC, matvec, 0)                                                                           \
    X(MV_M, mv_m, 0) X(NOUT, nout, 1) X(FAST, fast, 0) X(ROWLANE, rowlane, 0) X(TT, tt, 0)
/* matmul_texel.comp: the fields are explained in the shader and in vkf_vk_plan_mm_group */
/* clang-format off: one define a line (clang-format joins them differently each pass) */
#define VKF_VK_D_MATMUL_TEXEL(X)                                                                   \
    X(WTYPE, wtype, 0)                                                                             \
    X(NORM, norm, 0)                                                                               \
    X(SWIGLU, swiglu, 0)                                                                           \
    X(ACT, act, 0)                                                                                 \
    X(LANES, lanes, 0)                                                                             \
    X(W_SMALL, w_small, 0)                                                                         \
    X(ROWSEQ, rowseq, 0)                                                                           \
    X(W_ALIGN16, align16, 0)                                                                       \
    X(ROWSEQ_CH, rs_ch, 0)                                                                         \
    X(ROWSEQ_CT, rs_ct, 0)                                                                         \
    X(W_RAWP, rawp, 0)                                                                             \
    X(RS_P, rs_p, 0)                                                                               \
    X(RS_PAIRU, rs_pairu, 0)                                                                       \
    X(W_SSBO, ssbo, 0)
/* clang-format on */
/* matmul_coopmat.comp: the spelling (NV, emulated, KHR_SPV: NV GLSL rewritten into the KHR
 * SPIR-V form, else KHR GLSL), the weight type, the matrix
 * shape, SM x SN matrices per subgroup tile, TPS tiles per subgroup, SGS the subgroup size */
#define VKF_VK_D_MATMUL_COOPMAT(X)                                                                 \
    X(COOPMAT_NV, nv, 0)                                                                           \
    X(COOPMAT_EMU, emu, 0)                                                                         \
    X(COOPMAT_KHR_SPV, khr_spv, 0)                                                                 \
    X(WTYPE, wtype, 0)                                                                             \
    X(W_SMALL, w_small, 0)                                                                         \
    X(CM_M, cm_m, 0)                                                                               \
    X(CM_N, cm_n, 0) X(CM_K, cm_k, 0) X(SM, sm, 0) X(SN, sn, 0) X(TPS, tps, 0) X(SGS, sgs, 0)
/* quantize_q8.comp (activations to 32-value int8 blocks: QK 32 or 256, NORM: RMSNorm first)
 * and matmul_q8.comp (integer dot products; DOT_PLAIN: without OpSDot) */
#define VKF_VK_D_QUANTIZE_Q8(X) X(QK, qk, 0) X(NORM, norm, 0)
#define VKF_VK_D_MATMUL_Q8(X)                                                                      \
    X(WTYPE, wtype, 0)                                                                             \
    X(SWIGLU, swiglu, 0) X(ACT, act, 0) X(DOT_PLAIN, plain, 0) X(W_ALIGN16, align16, 0)
#define VKF_VK_D_ATTENTION(X)                                                                      \
    X(CHUNKED, chunked, 0) X(VEC4, vec4, 0) X(KV_F16, kv_f16, 0) X(SINKS, sinks, 0) X(KVQ, kvq, 0)
#define VKF_VK_D_ATTENTION_TEXEL(X)                                                                \
    X(MAXT, maxt, 1)                                                                               \
    X(HWMAX, hwmax, 1)                                                                             \
    X(KEYLANES, keylanes, 0)                                                                       \
    X(QLANES, qlanes, 0) X(QR, qr, 1) X(KV_F16, kv_f16, 0) X(SPLIT, split, 0)
#define VKF_VK_D_ATTENTION_MERGE(X) X(SPLIT, split, 0) X(HWMAX, hwmax, 1)
#define VKF_VK_D_MUL_MAT_ID(X) X(WTYPE, wtype, 0) X(GROUPED, grouped, 0)
#define VKF_VK_D_PROBE(X) X(MODE, mode, 0) X(CHAINS, chains, 0)

/* the device's defines, given to every kernel (shaders/common.glsl) */
#define VKF_VK_D_DEVICE(X)                                                                         \
    X(VKF_HAS_SUBGROUP, has_subgroup, 0)                                                           \
    X(VKF_SUBGROUP_MIN, subgroup_min, 0)                                                           \
    X(VKF_SUBGROUP_MAX, subgroup_max, 0)                                                           \
    X(VKF_FP16, fp16, 0)                                                                           \
    X(VKF_INT8, int8, 0) X(VKF_STORAGE16, storage16, 0) X(VKF_MAX_SHARED, max_shared, 0)

/* K(ID, name, shader, defines): every shader with defines; P(ID, shader): those without */
#define VKF_VK_KERNELS(K, P)                                                                       \
    K(SCALE, scale, "scale", VKF_VK_D_SCALE)                                                       \
    K(BINARY, binary, "binary", VKF_VK_D_BINARY)                                                   \
    K(UNARY, unary, "unary", VKF_VK_D_UNARY)                                                       \
    K(SWIGLU, swiglu, "swiglu", VKF_VK_D_SWIGLU)                                                   \
    K(NORM, norm, "norm", VKF_VK_D_NORM)                                                           \
    K(NORM_TEXEL, norm_texel, "norm_texel", VKF_VK_D_NORM_TEXEL)                                   \
    K(SOFTMAX, softmax, "softmax", VKF_VK_D_SOFTMAX)                                               \
    K(SOFTMAX_TEXEL, softmax_texel, "softmax_texel", VKF_VK_D_SOFTMAX_TEXEL)                       \
    K(EMBED, embed, "embed", VKF_VK_D_EMBED)                                                       \
    K(COPY_ROWS, copy_rows, "copy_rows", VKF_VK_D_COPY_ROWS)                                       \
    K(KV_STORE, kv_store, "kv_store", VKF_VK_D_KV_STORE)                                           \
    K(MATMUL, matmul, "matmul", VKF_VK_D_MATMUL)                                                   \
    K(MATMUL_TEXEL, matmul_texel, "matmul_texel", VKF_VK_D_MATMUL_TEXEL)                           \
    K(MATMUL_COOPMAT, matmul_coopmat, "matmul_coopmat", VKF_VK_D_MATMUL_COOPMAT)                   \
    K(QUANTIZE_Q8, quantize_q8, "quantize_q8", VKF_VK_D_QUANTIZE_Q8)                               \
    K(MATMUL_Q8, matmul_q8, "matmul_q8", VKF_VK_D_MATMUL_Q8)                                       \
    K(ATTENTION, attention, "attention", VKF_VK_D_ATTENTION)                                       \
    K(ATTENTION_TEXEL, attention_texel, "attention_texel", VKF_VK_D_ATTENTION_TEXEL)               \
    K(ATTENTION_MERGE, attention_merge, "attention_merge", VKF_VK_D_ATTENTION_MERGE)               \
    K(PROBE, probe, "probe", VKF_VK_D_PROBE)                                                       \
    K(MUL_MAT_ID, mul_mat_id, "mul_mat_id", VKF_VK_D_MUL_MAT_ID)                                   \
    P(MOE_WEIGHTS, "moe_weights")                                                                  \
    P(MOE_SUM, "moe_sum")                                                                          \
    P(MOE_GROUP_MASK, "moe_group_mask")                                                            \
    P(ARGMAX, "argmax")                                                                            \
    P(POOL, "pool")                                                                                \
    P(TOPK, "topk")                                                                                \
    P(ROPE, "rope")                                                                                \
    P(ADD_POS, "add_pos")

/* ---------------------------------------------------------------- generated types */

#define VKF_VK_FIELD_(NAME, field, u) int32_t field;
#define VKF_VK_STRUCT_(ID, name, shader, LIST)                                                     \
    typedef struct vkf_vk_##name##_v {                                                             \
        LIST(VKF_VK_FIELD_)                                                                        \
    } vkf_vk_##name##_v;
#define VKF_VK_NOSTRUCT_(ID, shader)
VKF_VK_KERNELS(VKF_VK_STRUCT_, VKF_VK_NOSTRUCT_)

typedef enum vkf_vk_kernel_id {
#define VKF_VK_ENUM_K_(ID, name, shader, LIST) VKF_VK_K_##ID,
#define VKF_VK_ENUM_P_(ID, shader) VKF_VK_K_##ID,
    VKF_VK_KERNELS(VKF_VK_ENUM_K_, VKF_VK_ENUM_P_)
#undef VKF_VK_ENUM_K_
#undef VKF_VK_ENUM_P_
        VKF_VK_K_COUNT
} vkf_vk_kernel_id;

/* every shader's variant, one of them in use (the kernel id says which) */
typedef union vkf_vk_variant {
#define VKF_VK_MEMBER_(ID, name, shader, LIST) vkf_vk_##name##_v name;
    VKF_VK_KERNELS(VKF_VK_MEMBER_, VKF_VK_NOSTRUCT_)
#undef VKF_VK_MEMBER_
} vkf_vk_variant;

#define VKF_VK_MAX_DEFINES 16 /* per shader */
#define VKF_VK_MAX_SPEC 8

/* A kernel as planned: the shader, its defines, its specialization constants (ids 0..n-1). Zero
 * the whole struct before filling it: the pipeline key is its bytes. */
typedef struct vkf_vk_kplan {
    vkf_vk_kernel_id id;
    vkf_vk_variant v;
    uint32_t spec[VKF_VK_MAX_SPEC];
    int n_spec;
} vkf_vk_kplan;

/* A shader's declaration: file name, define names, whether each is unsigned. */
typedef struct vkf_vk_kernel {
    const char *shader;
    int n_defines;
    const char *names[VKF_VK_MAX_DEFINES];
    uint8_t unsigned_lit[VKF_VK_MAX_DEFINES];
} vkf_vk_kernel;

extern const vkf_vk_kernel vkf_vk_kernels[VKF_VK_K_COUNT];

/* the device's defines (vkf_vk_device_defines spells them) */
typedef struct vkf_vk_device_v {
    VKF_VK_D_DEVICE(VKF_VK_FIELD_)
} vkf_vk_device_v;
int vkf_vk_device_defines(const vkf_vk_device_v *v, char *out, size_t n);

/* A kplan with its kernel, its variant zeroed, no specialization constants. */
vkf_vk_kplan vkf_vk_kplan_of(vkf_vk_kernel_id id);
/* "A=1;B=2u": the defines of k's variant, the only place they are spelled. Returns the length
 * (>= n: truncated). */
int vkf_vk_defines(const vkf_vk_kplan *k, char *out, size_t n);
/* 1 if every define name of kernel id appears in its expanded source text as a word; else 0 with
 * the first that does not in *missing. */
int vkf_vk_defines_used(vkf_vk_kernel_id id, const char *src, const char **missing);

#endif
