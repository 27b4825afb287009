/* Vulkan backend internals shared by the files of src/backend/vulkan: the per-device context,
 * buffers and memory blocks, pipelines, and the recording state. Not an API for other layers. */
#ifndef VKF_VK_INTERNAL_H
#define VKF_VK_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <volk.h>

#include "backend/vulkan/vk_backend.h"
#include "backend/vulkan/vk_kernels.h"
#include "backend/vulkan/vk_plan.h"
#include "core/error.h"
#include "core/switches.h"
#include "graph/backend.h"

/* ---------------------------------------------------------------- VK_KHR_cooperative_matrix */
/* The Debian 1.3.239 headers predate the KHR extension: declare the few pieces we query. */
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VKF_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    int32_t scope; /* VkScopeKHR */
} VkCooperativeMatrixPropertiesKHR;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice, uint32_t *, VkCooperativeMatrixPropertiesKHR *);
#else
#define VKF_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR                                       \
    VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
#endif

/* ---------------------------------------------------------------- checks */

/* Records "call failed: VK_ERROR_x (file:line)" as VKF_ERROR_VULKAN. */
vkf_status vkf_vk_fail(VkResult r, const char *call, const char *file, int line);
const char *vkf_vk_result_name(VkResult r);

/* Every Vulkan call that returns a VkResult goes through one of these. */
#define VKF_VK_CHECK(call)                                                                         \
    do {                                                                                           \
        VkResult vkf_vk_r_ = (call);                                                               \
        if (vkf_vk_r_ != VK_SUCCESS) return vkf_vk_fail(vkf_vk_r_, #call, __FILE__, __LINE__);     \
    } while (0)
/* Variant for functions with cleanup: sets `st` and jumps to `label`. */
#define VKF_VK_CHECK_GOTO(call, st, label)                                                         \
    do {                                                                                           \
        VkResult vkf_vk_r_ = (call);                                                               \
        if (vkf_vk_r_ != VK_SUCCESS) {                                                             \
            st = vkf_vk_fail(vkf_vk_r_, #call, __FILE__, __LINE__);                                \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* ---------------------------------------------------------------- memory */

typedef struct vkf_vk_range {
    VkDeviceSize off, size;
} vkf_vk_range;

/* One VkDeviceMemory with one VkBuffer spanning it, sub-allocated first-fit. */
typedef struct vkf_vk_block {
    VkDeviceMemory mem;
    VkBuffer buf;
    VkDeviceSize size;
    void *map;          /* persistent mapping on unified memory, else NULL */
    int dedicated;      /* one buffer owns the whole block */
    int imported;       /* host memory used in place (VK_EXT_external_memory_host): read-only */
    vkf_vk_range *free; /* sorted, coalesced free ranges */
    int n_free, cap_free;
    int n_live; /* live sub-allocations */
} vkf_vk_block;

struct vkf_buffer {
    vkf_vk_block *block;
    VkDeviceSize offset; /* bytes from the start of block->buf */
    VkDeviceSize size;   /* requested bytes */
    VkDeviceSize alloc;  /* bytes reserved in the block */
    vkf_buffer_usage usage;
};

/* ---------------------------------------------------------------- pipelines */

#define VKF_VK_MAX_BINDINGS 8 /* binding 0 is the dyn buffer, then up to 7 tensors */
#define VKF_VK_PC_BYTES 128   /* push-constant range of every layout (the guaranteed minimum) */

typedef struct vkf_vk_pipeline {
    vkf_vk_kplan kp; /* what it was made for: the map's key */
    char *key;       /* "shader{defines} spec ...", for messages */
    uint64_t hash;
    int n_bindings;      /* including binding 0 (dyn); as the module declares them */
    uint32_t texel_mask; /* bit i: binding i is a storage texel buffer (R32G32B32A32_UINT) */
    VkPipeline pipeline;
    VkPipelineLayout layout;          /* borrowed from the backend */
    VkDescriptorSetLayout set_layout; /* borrowed from the backend */
} vkf_vk_pipeline;

/* One descriptor-set layout and pipeline layout per (binding count, texel mask). */
typedef struct vkf_vk_layout {
    int n_bindings;
    uint32_t texel_mask;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipe_layout;
} vkf_vk_layout;

#define VKF_VK_MAX_LAYOUTS 64

/* ---------------------------------------------------------------- the backend */

#define VKF_VK_RING_SLOTS 4

typedef struct vkf_vk_backend {
    vkf_backend base; /* first: the vkf_backend handed out */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
    VkPhysicalDevice phys;
    VkDevice device;
    struct VolkDeviceTable vk; /* per-device function table: no global device state */
    VkQueue queue;
    uint32_t queue_family;
    uint32_t ts_bits; /* timestampValidBits of the queue family (0: no timestamps) */
    int profile;      /* per-dispatch timestamps in recorded graphs */
    VkCommandPool cmd_pool;
    VkCommandBuffer xfer_cmd; /* one-shot uploads/downloads */
    VkFence fence;
    uint64_t timeout_ns; /* longest wait for one submission (switch gpu_timeout_ms, 120 s) */
    int unusable;        /* a submission timed out or the device was lost: every later call fails */
    vkf_vk_caps caps;
    vkf_switches sw;        /* as given at creation (vkf_backend_vulkan_switches) */
    vkf_switches_xp xp;     /* sw's experiments (vkf_backend_vulkan_experiments) */
    uint32_t target_vulkan; /* 12 or 11: glslang target environment */
    int validate;

    /* validation messages since the last report */
    pthread_mutex_t msg_lock;
    char *msgs;
    size_t msgs_len;
    int n_msgs;

    /* memory */
    vkf_vk_block **blocks;
    int n_blocks, cap_blocks;
    VkDeviceSize block_size; /* size of shared blocks */
    VkDeviceSize sub_align;  /* alignment of sub-allocations */
    int direct_map;          /* unified memory: host reads/writes buffers through mappings */
    int has_budget;          /* VK_EXT_memory_budget enabled: vkf_vk_memory_info reports it */
    uint32_t mem_type_local; /* device-local (host-visible too when direct_map) */
    uint32_t mem_type_host;  /* host-visible coherent, for staging and the dyn buffer */
    VkBuffer staging;
    VkDeviceMemory staging_mem;
    void *staging_map;
    VkDeviceSize staging_size;
    /* uploads: the staging buffer as a ring of slots, each with its command buffer and fence,
     * so the host fills one slot while the device copies the others (vk_memory.c) */
    VkCommandBuffer ring_cmd[VKF_VK_RING_SLOTS];
    VkFence ring_fence[VKF_VK_RING_SLOTS];
    int ring_busy[VKF_VK_RING_SLOTS];
    VkBuffer dyn_buf; /* int32 n_past, read by kernels (binding 0) */
    VkDeviceMemory dyn_mem;
    int32_t *dyn_map;

    /* shaders and pipelines */
    char cache_dir[1024]; /* "" when disk caching is off */
    VkPipelineCache pipeline_cache;
    char pipeline_cache_path[1200];
    vkf_vk_layout layouts[VKF_VK_MAX_LAYOUTS];
    int n_layouts;
    vkf_vk_pipeline **pipelines;
    int n_pipelines, cap_pipelines;
    char device_defines[256]; /* "VKF_FP16=1;..." derived from caps */
    void (*shader_compiled)(void *user, int n_compiled, const char *shader);
    void *shader_compiled_user;

    /* tuning (vk_tune.c): choices cached by `vkformer tune`, per shape class and weight dtype */
    int tune_have[3][VKF_DTYPE_COUNT];
    struct vkf_vk_mm_cfg *tune_cfg;         /* [3][VKF_DTYPE_COUNT] */
    const struct vkf_vk_mm_cfg *tune_force; /* while timing a candidate */
    int64_t plan_batch; /* while recording a graph: its vkf_graph.plan_batch (vk_plan.c) */

    vkf_vk_stats stats;
} vkf_vk_backend;

static inline vkf_vk_backend *vkf_vk(vkf_backend *be) { return (vkf_vk_backend *)be; }

/* ---------------------------------------------------------------- vk_device.c */

/* Loads the Vulkan loader once per process (volk). */
vkf_status vkf_vk_load(void);
/* Instance, device selection, caps, logical device, queue, pools. */
vkf_status vkf_vk_device_init(vkf_vk_backend *vb, const char *device, int validate);
void vkf_vk_device_destroy(vkf_vk_backend *vb);
/* VKF_ERROR_VALIDATION with the recorded texts if the layer reported anything; clears them. */
vkf_status vkf_vk_check_messages(vkf_vk_backend *vb);
/* The instance (validation layer and messenger when validate; vb may be NULL without), the
 * physical devices (*pds malloc'ed), the default choice among them (first discrete GPU, else
 * integrated, else the first). */
vkf_status vkf_vk_instance_create(vkf_vk_backend *vb, int validate, VkInstance *out);
vkf_status vkf_vk_physical_devices(VkInstance inst, VkPhysicalDevice **pds, uint32_t *n);
uint32_t vkf_vk_default_device(VkPhysicalDevice *pds, uint32_t n);

/* ---------------------------------------------------------------- vk_caps.c */

/* "discrete", "integrated", "virtual", "cpu", "other" */
const char *vkf_vk_type_name(int32_t t);
/* the device's extensions (malloc'ed, *n of them; NULL when none); whether e lists name */
VkExtensionProperties *vkf_vk_device_exts(VkPhysicalDevice pd, uint32_t *n);
int vkf_vk_has_ext(const VkExtensionProperties *e, uint32_t n, const char *name);
/* Reads caps of a physical device and applies the switches' caps and off switches. */
void vkf_vk_caps_read(VkInstance inst, VkPhysicalDevice pd, const vkf_switches *sw,
                      const vkf_switches_xp *xp, vkf_vk_caps *c);
/* "KHR", "NV", "emulated" or "none" */
const char *vkf_vk_coopmat_kind_name(vkf_vk_coopmat_kind k);
/* sets c->coopmat_use, _kind, the shape and coopmat_off from the caps read so far and the
 * switches */
void vkf_vk_coopmat_choose(vkf_vk_caps *c, int32_t driver_id, const vkf_switches *sw,
                           const vkf_switches_xp *xp);
/* The features2 chain's structs: read when the caps are (vkf_vk_caps_read), enabled when the
 * device is created (vk_device.c). vkf_vk_features_init zeroes them and sets each sType; none
 * is linked until vkf_vk_chain links it. */
typedef struct vkf_vk_features {
    VkPhysicalDeviceFeatures2 f2; /* the head */
    VkPhysicalDevice16BitStorageFeatures s16;
    VkPhysicalDevice8BitStorageFeatures s8;
    VkPhysicalDeviceShaderFloat16Int8Features f16;
    VkPhysicalDeviceSubgroupSizeControlFeatures sgc;
    VkPhysicalDeviceVulkanMemoryModelFeatures vmm;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cmnv;
    VkPhysicalDeviceShaderIntegerDotProductFeatures idp;
} vkf_vk_features;
void vkf_vk_features_init(vkf_vk_features *f);
/* appends s (a Vulkan struct: sType, pNext first) to a pNext chain whose last struct is *tail */
void vkf_vk_chain(VkBaseOutStructure **tail, void *s);

/* ---------------------------------------------------------------- vk_memory.c */

vkf_status vkf_vk_memory_init(vkf_vk_backend *vb);
void vkf_vk_memory_destroy(vkf_vk_backend *vb);
vkf_status vkf_vk_buffer_alloc(vkf_backend *be, size_t size, vkf_buffer_usage usage,
                               vkf_buffer **out);
void vkf_vk_buffer_free(vkf_backend *be, vkf_buffer *b);
vkf_status vkf_vk_buffer_write(vkf_backend *be, vkf_buffer *b, size_t off, const void *src,
                               size_t n);
vkf_status vkf_vk_buffer_read(vkf_backend *be, vkf_buffer *b, size_t off, void *dst, size_t n);
vkf_status vkf_vk_buffer_import(vkf_backend *be, const void *p, size_t n, const void *region,
                                size_t region_size, vkf_buffer **out);
void vkf_vk_memory_info(vkf_backend *be, vkf_backend_memory *out);
/* Submits cmd and waits for it on the backend fence. */
/* VKF_ERROR_VULKAN once a submission timed out or the device was lost. */
vkf_status vkf_vk_check_usable(const vkf_vk_backend *vb);
vkf_status vkf_vk_submit_wait(vkf_vk_backend *vb, VkCommandBuffer cmd);
/* A full memory barrier between everything before and everything after (start of a submission). */
void vkf_vk_cmd_full_barrier(vkf_vk_backend *vb, VkCommandBuffer cmd);

/* ---------------------------------------------------------------- vk_shader.c */

vkf_status vkf_vk_shaders_init(vkf_vk_backend *vb);
void vkf_vk_shaders_destroy(vkf_vk_backend *vb);
/* The pipeline of a planned kernel (vk_kernels.h): shaders/<shader>.comp with the variant's
 * defines (the device's are added) and its specialization constants, created on first use and
 * kept under the plan's values. Its descriptor layout comes from the compiled module
 * (vkf_vk_reflect): the bindings it declares, storage buffers or storage texel buffers of
 * 16-byte R32G32B32A32_UINT texels (GLSL `uimageBuffer` with layout rgba32ui). */
vkf_status vkf_vk_kplan_pipe(vkf_vk_backend *vb, const vkf_vk_kplan *k, vkf_vk_pipeline **out);
/* The bindings a SPIR-V module declares in set 0: count (the highest + 1) and texel ones. */
vkf_status vkf_vk_reflect(const uint32_t *w, size_t n, const char *shader, int *n_bindings,
                          uint32_t *texel_mask);
/* 1 if the glslang linked in compiles GL_KHR_cooperative_matrix (13.1 and later). */
int vkf_vk_glslang_has_coopmat(void);
/* SPIR-V with SPV_NV_cooperative_matrix -> the same module in SPV_KHR_cooperative_matrix's form
 * (spv_coopmat_khr.c): *out malloc'd; a module it cannot rewrite is refused with the reason */
vkf_status vkf_spv_coopmat_nv_to_khr(const uint32_t *words, size_t n_words, uint32_t **out,
                                     size_t *n_out);
/* VKF_ERROR_SHADER unless every define name of kernel id appears in its shader's expanded
 * source (what vkf_vk_kplan_pipe checks before a compile; for tests of the whole table). */
vkf_status vkf_vk_kernel_source_check(vkf_vk_kernel_id id);
/* GLSL -> SPIR-V through the disk cache; *words malloc'ed. For tests via the backend. */
vkf_status vkf_vk_spirv_get(vkf_vk_backend *vb, const char *shader, const char *defines,
                            uint32_t **words, size_t *n_words);

/* ---------------------------------------------------------------- vk_dispatch.c (the leaf) */

/* A storage-buffer window bound for one dispatch. */
typedef struct vkf_vk_win {
    VkBuffer buf;
    VkDeviceSize off, range; /* descriptor offset/range (offset aligned) */
    VkDeviceSize delta;      /* bytes from the window start to the requested first byte */
    int write;
    int texel; /* bound as a storage texel buffer: range a multiple of 16 bytes */
} vkf_vk_win;

typedef struct vkf_vk_access {
    VkBuffer buf;
    VkDeviceSize lo, hi;
} vkf_vk_access;

#define VKF_VK_PROF_MAX 8192 /* timestamps per recording; dispatches beyond are not profiled */

/* The recording of one graph: its command buffer and what it binds (vk_dispatch.c). */
typedef struct vkf_vk_exec vkf_vk_exec;
struct vkf_vk_exec {
    VkCommandBuffer cmd;
    VkDescriptorPool *pools;
    int n_pools;
    uint32_t sets_left; /* in the last pool */
    int n_nodes;        /* the graph as recorded: re-record when it changes */
    vkf_buffer *arena;
    vkf_vk_pipeline *bound;
    uint64_t dispatches, barriers;
    vkf_buffer **scratch; /* kernel scratch (attention key-chunk state), freed with the exec */
    int n_scratch;
    /* profiling: timestamp 0 before the first dispatch, timestamp i+1 after dispatch i */
    int profiled;
    VkQueryPool qpool;
    uint32_t n_ts;
    int *ts_op; /* [VKF_VK_PROF_MAX]: the op of each profiled dispatch */
    /* texel views made for this recording (one per distinct window), destroyed with it */
    struct vkf_vk_view {
        VkBuffer buf;
        VkDeviceSize off, range;
        VkBufferView view;
    } * views;
    int n_views, cap_views;
};

typedef struct vkf_vk_rec {
    vkf_vk_backend *vb;
    vkf_vk_exec *ex;
    VkCommandBuffer cmd;
    vkf_vk_access *reads, *writes; /* since the last barrier */
    int n_reads, n_writes, cap_reads, cap_writes;
    int op; /* vkf_op of the node being recorded: profiles attribute dispatches to it */
} vkf_vk_rec;

/* Bytes a dispatch may bind from one buffer: maxStorageBufferRange less alignment slack. */
uint64_t vkf_vk_window_budget(const vkf_vk_backend *vb);
/* A window over bytes [lo, hi) of b (relative to b's start). */
vkf_status vkf_vk_window(vkf_vk_rec *r, const vkf_buffer *b, uint64_t lo, uint64_t hi, int write,
                         vkf_vk_win *w);
/* The same as a texel window (caps.texel): the start aligned for texel views, the range whole
 * 16-byte texels within the block; w->delta is then the byte offset of lo inside the view. */
vkf_status vkf_vk_window_texel(vkf_vk_rec *r, const vkf_buffer *b, uint64_t lo, uint64_t hi,
                               int write, vkf_vk_win *w);
/* A window over absolute bytes [abs_lo, abs_hi) of a block (several tensors of one block:
 * fused dispatches); texel: 1 as vkf_vk_window_texel, VKF_VK_WIN_VEC4 the same start and range
 * bound as a storage buffer (of 16-byte vectors: the kernel indexes it as it would the texel
 * view), 0 as vkf_vk_window. */
#define VKF_VK_WIN_VEC4 2
vkf_status vkf_vk_window_block(vkf_vk_rec *r, const vkf_vk_block *blk, uint64_t abs_lo,
                               uint64_t abs_hi, int write, int texel, vkf_vk_win *w);
/* Bytes a texel window may span (maxTexelBufferElements and maxStorageBufferRange). */
uint64_t vkf_vk_texel_budget(const vkf_vk_backend *vb);
/* Records one dispatch: a barrier first if it reads what was written since the last barrier or
 * writes what was read or written; then binds dyn + wins[0..n) at bindings 0..n. */
vkf_status vkf_vk_dispatch(vkf_vk_rec *r, vkf_vk_pipeline *p, const vkf_vk_win *wins, int n,
                           const void *pc, uint32_t pc_size, uint32_t gx, uint32_t gy, uint32_t gz);
/* the pipeline of a planned kernel on the backend being recorded on */
vkf_status vkf_vk_pipe(vkf_vk_rec *r, const vkf_vk_kplan *k, vkf_vk_pipeline **p);
/* A device buffer that lives as long as the recording being made (kernel scratch). */
vkf_status vkf_vk_scratch(vkf_vk_rec *r, size_t bytes, vkf_buffer **out);
/* A new recording with its command buffer begun (and the profiling query pool when on), ended
 * (results visible to the host and transfers), freed (with its scratch, views and sets). */
vkf_status vkf_vk_exec_begin(vkf_vk_backend *vb, vkf_vk_exec **out);
vkf_status vkf_vk_exec_end(vkf_vk_backend *vb, vkf_vk_exec *ex);
void vkf_vk_exec_free(vkf_vk_backend *vb, vkf_vk_exec *ex);

/* bytes of one row's data; bytes between row starts */
uint64_t vkf_vk_row_bytes(const vkf_tensor *t);
uint64_t vkf_vk_stride_bytes(const vkf_tensor *t);
/* rows of t that fit one window, at least 1 unless a single row is too long (then 0) */
int64_t vkf_vk_rows_fit(const vkf_tensor *t, uint64_t budget);
/* VKF_ERROR_UNSUPPORTED: one row of t exceeds a storage window */
vkf_status vkf_vk_fit_error(vkf_vk_rec *r, const vkf_tensor *t);
/* the storage window over rows [r0, r0+n) of t; the texel window (16-byte texels) */
vkf_status vkf_vk_rows_win(vkf_vk_rec *r, const vkf_tensor *t, int64_t r0, int64_t n, int write,
                           vkf_vk_win *w);
vkf_status vkf_vk_rows_texwin(vkf_vk_rec *r, const vkf_tensor *t, int64_t r0, int64_t n,
                              vkf_vk_win *w);
/* element offset of the window's first requested byte, for plain dtypes */
vkf_status vkf_vk_elem_off(const vkf_vk_win *w, const vkf_tensor *t, uint32_t *out);
int64_t vkf_vk_min64(int64_t a, int64_t b);
/* [lo, hi): the absolute bytes tensors t[0..n) span in their block (one block, checked by the
 * caller) */
void vkf_vk_tensors_span(const vkf_tensor *const *t, int n, uint64_t *lo, uint64_t *hi);
/* weights: the WTYPE define of the kernels (the vkf_dtype value, shaders/dtypes.glsl); the byte
 * alignment the kernels read a row with; the byte offset of a weight window (rows aligned so);
 * 1 if the kernels take the type */
int vkf_vk_wtype(vkf_dtype t);
uint64_t vkf_vk_walign(vkf_dtype t);
vkf_status vkf_vk_weight_off(const vkf_vk_win *w, const vkf_tensor *t, uint32_t *boff);
int vkf_vk_weight_ok(vkf_dtype t);

/* ---------------------------------------------------------------- vk_record.c (the graph walk) */

vkf_status vkf_vk_graph_compute(vkf_backend *be, vkf_graph *g, int32_t n_past);
/* Records the dispatches of fn (called once) into a command buffer and submits it reps times,
 * each submission timed on the host (submit to fence); ms[0..reps) gets the times (may be
 * NULL). For peak probes and micro-benchmarks outside any graph. */
vkf_status vkf_vk_run_recorded(vkf_vk_backend *vb, vkf_status (*fn)(vkf_vk_rec *r, void *user),
                               void *user, int reps, double *ms);
void vkf_vk_graph_release(vkf_backend *be, vkf_graph *g);

/* ---------------------------------------------------------------- the encoders (vk_ops.c, ...) */

/* Records node n. */
vkf_status vkf_vk_op_record(vkf_vk_rec *r, const vkf_node *n);
/* the MATMUL and ATTENTION encoders */
vkf_status vkf_vk_op_matmul(vkf_vk_rec *r, const vkf_node *n);
vkf_status vkf_vk_op_attention(vkf_vk_rec *r, const vkf_node *n);

/* One dispatch of matmul_texel.comp: a plain matmul, or a fused group built by vk_fuse.c. */
typedef struct vkf_vk_mm_group {
    const vkf_tensor *a;       /* [M, K] activations (the RMSNorm input when norm_w is set) */
    const vkf_tensor *w[3];    /* [N_i, K] weights, one dtype, all in one memory block */
    const vkf_tensor *d[3];    /* [M, N_i] outputs, all in one memory block (swiglu: d[0] only) */
    int n_mats;                /* 1..3 (swiglu: 2, gate then up) */
    const vkf_tensor *bias[3]; /* [1, N_i] F32 per matrix, all or none, in one memory block
                                  (q/k/v with biases: qwen2); swiglu: none */
    const vkf_tensor *res;     /* [M, N_0] residual added to the product, single matrix only */
    const vkf_tensor *norm_w;  /* [1, K] RMSNorm weight folded in (NULL: none) */
    float eps;
    int swiglu; /* 1: d[0] = silu(a.w0^T) * (a.w1^T); 2: gelu_tanh(a.w0^T) * (a.w1^T) (GeGLU) */
    int act;    /* 1 + vkf_unary applied after the bias (0: none) */
    vkf_tensor wv[2]; /* w[0] and w[1] when they are the two row halves of one fused gate|up
                         matrix (phi3) */
} vkf_vk_mm_group;

/* Records norm (LAYERNORM or RMSNORM) with the residual added, dst = res + norm(x), as one
 * norm_texel dispatch; returns 0 (nothing recorded) where the texel kernel cannot take it, else
 * 1 with the status in *st. res may be dst itself. */
int vkf_vk_norm_res_record(vkf_vk_rec *r, const vkf_node *norm, const vkf_tensor *res,
                           const vkf_tensor *dst, vkf_status *st);
/* Records two independent weighted RMSNORMs of the same width (qwen3's and gemma3's per-head q
 * and k norms) as one norm_texel dispatch; 0 (nothing recorded) where it cannot, else 1 with
 * the status in *st. The caller checks that neither reads or overwrites what the other writes. */
int vkf_vk_norm_pair_record(vkf_vk_rec *r, const vkf_node *n1, const vkf_node *n2, vkf_status *st);
/* Records the group (vkf_vk_plan_mm_group_ok must hold). */
vkf_status vkf_vk_mm_group_record(vkf_vk_rec *r, const vkf_vk_mm_group *g);

/* ---------------------------------------------------------------- vk_fuse.c */

/* Tries the fusion patterns that start at node i of g; records the fused dispatch and returns
 * the number of nodes it replaced in *used (0: none matched, record node i alone).
 * The no_fuse switch turns fusion off. */
vkf_status vkf_vk_fuse_record(vkf_vk_rec *r, const vkf_graph *g, int i, int *used);

/* ---------------------------------------------------------------- vk_tune.c */

typedef enum vkf_vk_mm_kind {
    VKF_VK_MM_TEXEL = 0, /* matmul_texel.comp: subgroup split-K on 16-byte texels, any M */
    VKF_VK_MM_TILED,     /* matmul.comp tiled (M > 8) / split-K matvec (M <= 8): storage buffers */
} vkf_vk_mm_kind;

struct vkf_vk_mm_cfg {
    vkf_vk_mm_kind kind;
    uint32_t wg;    /* workgroup size */
    uint32_t r, tm; /* texel: weight rows per subgroup (per lane with lanes), activation rows */
    uint32_t lanes; /* texel: 1 = each lane owns r weight rows and walks all of K (no split-K) */
    uint32_t bm, bn, bk; /* tiled: output tile and K slice */
    uint32_t tt;         /* tiled: each invocation's outputs, tt x tt (0: 4) */
    uint32_t int_dot;    /* texel, M <= 8, quantized weights: 1 = activations quantized to int8
                            blocks and integer dot products (matmul_q8.comp), where valid */
};
typedef struct vkf_vk_mm_cfg vkf_vk_mm_cfg;

/* The matmul variant for this shape: the autotuner's cached choice for the device and shape
 * class when there is one (`vkformer tune`), else the tuning table for the device. The no_tune
 * switch ignores the cached choices. */
vkf_status vkf_vk_tune_matmul(const vkf_vk_backend *vb, int64_t M, int64_t N, int64_t K,
                              vkf_dtype wtype, vkf_vk_mm_cfg *out);
/* Reads `vkformer tune`'s cached choices for this device and driver (the backend's creation). */
void vkf_vk_tune_init(vkf_vk_backend *vb);
void vkf_vk_tune_destroy(vkf_vk_backend *vb);

/* ---------------------------------------------------------------- small helpers */

double vkf_vk_now_ms(void);
/* elements one matmul kernel step decodes (vk_dispatch.c) */
int64_t vkf_vk_wunit(vkf_dtype t);

/* ---------------------------------------------------------------- vk_rowseq.c (the planner's) */

/* the decode kernel on CPU drivers, ROWSEQ (vk_rowseq.c): units a lane takes (0: not taken, and
 * *pair the rows a step), blocks per lane chunk, weight rows per subgroup */
int vkf_vk_mm_rowseq(const vkf_vk_backend *vb, const vkf_vk_mm_cfg *cfg, int64_t M, int64_t K,
                     vkf_dtype wt, int small, int *pair);
int vkf_vk_rowseq_chunk(const vkf_vk_caps *c, const vkf_switches_xp *xp, const vkf_vk_mm_group *g,
                        int64_t K, int *texels);
uint32_t vkf_vk_rowseq_rows(const vkf_vk_caps *c, const vkf_switches_xp *xp,
                            const vkf_vk_mm_cfg *cfg, const int64_t *n, int n_rows, int64_t K,
                            int nw, uint32_t step);

#endif
