/* The Vulkan backend: one vkf_backend per VkDevice (docs/DESIGN.md: 'GLSL in, SPIR-V out',
 * 'Record once, replay every step', 'Weights once, memory planned').
 *
 * Usage:
 *     vkf_backend_vulkan_params p = {.switches = &sw};   // zero = defaults, switches from env
 *     vkf_backend *be;
 *     if (vkf_backend_vulkan_create_ex(&p, &be) != VKF_OK) ... vkf_last_error() ...
 *     ... vkf_tensor_alloc(be, ...), be->i->graph_compute(be, g, n_past) ...
 *     vkf_backend_free(be);
 *
 * Device selection: p.device is an index ("1") or a case-insensitive name substring; NULL or ""
 * falls back to the switches' device (VKF_DEVICE), then the first discrete GPU, integrated GPU,
 * then any device. Validation: p.validate or the switches' validate turns on
 * VK_LAYER_KHRONOS_validation with synchronization validation; any warning or error it reports
 * makes the next graph_compute or buffer_read fail with VKF_ERROR_VALIDATION carrying the
 * layer's text.
 *
 * Everything else the backend may be told is in vkf_switches (vkformer.h: the device caps that
 * make a large device look small, the off switches of the fast paths; and the kernel
 * experiments, core/switches.h, decoded from its opaque area), copied when the backend is
 * created: the device's capabilities apply the caps and off switches
 * once (vkf_vk_caps), and the planner (vk_plan.c) reads the rest when a graph is recorded.
 * Nothing in this directory reads the environment. */
#ifndef VKF_BACKEND_VULKAN_H
#define VKF_BACKEND_VULKAN_H

#include <stdint.h>

#include "core/switches.h"
#include "graph/backend.h"

#define VKF_VK_MAX_HEAPS 16
#define VKF_VK_MAX_MEM_TYPES 32
#define VKF_VK_MAX_COOPMAT 64

typedef struct vkf_vk_coopmat_shape {
    uint32_t m, n, k;                            /* MSize, NSize, KSize */
    int32_t a_type, b_type, c_type, result_type; /* VkComponentTypeKHR */
    int32_t saturating;                          /* saturatingAccumulation */
    int32_t scope;                               /* VkScopeKHR */
    int32_t nv; /* listed by VK_NV_cooperative_matrix (else VK_KHR_cooperative_matrix) */
} vkf_vk_coopmat_shape;

/* how the cooperative-matrix matmul is spelled (shaders/matmul_coopmat.comp) */
typedef enum vkf_vk_coopmat_kind {
    VKF_VK_COOPMAT_NONE = 0,
    VKF_VK_COOPMAT_KHR, /* VK_KHR_cooperative_matrix, GL_KHR_cooperative_matrix (glslang 13.1+) */
    VKF_VK_COOPMAT_NV,  /* VK_NV_cooperative_matrix, GL_NV_cooperative_matrix */
    VKF_VK_COOPMAT_EMU, /* written out per invocation, for tests on any device */
} vkf_vk_coopmat_kind;

/* Capabilities of one physical device, read once; the switches' caps and off switches applied. */
typedef struct vkf_vk_caps {
    char name[256];
    uint32_t vendor_id, device_id;
    const char *vendor;      /* "NVIDIA", "AMD", "Intel", "Mesa", ... (static string) */
    char driver_name[256];   /* VkPhysicalDeviceDriverProperties::driverName */
    char driver_info[256];   /* driverInfo, e.g. "Mesa 22.3.6 (LLVM 15.0.6)" */
    uint32_t driver_version; /* raw driverVersion */
    int32_t type;            /* VkPhysicalDeviceType */
    const char *type_name;   /* "discrete", "integrated", "virtual", "cpu", "other" */
    uint32_t cpu_threads;   /* CPU drivers: threads that share a dispatch's workgroups; 0 on GPUs */
    uint32_t api_version;   /* VK_MAKE_API_VERSION encoded */
    uint32_t subgroup_size; /* default subgroup size */
    uint32_t subgroup_min, subgroup_max; /* size control range (== subgroup_size without it) */
    int32_t subgroup_size_control;       /* a pipeline may require a subgroup size */
    uint32_t subgroup_stages;            /* VkShaderStageFlags */
    uint32_t subgroup_ops;               /* VkSubgroupFeatureFlags */
    int32_t has_subgroup; /* basic+arithmetic+ballot+shuffle in compute; VKF_NO_SUBGROUP clears */
    uint32_t max_shared;  /* bytes of shared memory per workgroup */
    uint32_t max_wg_size[3];
    uint32_t max_wg_invocations;
    uint32_t max_wg_count[3];
    uint32_t max_push_constants;            /* bytes */
    uint32_t max_storage_buffers_per_stage; /* maxPerStageDescriptorStorageBuffers */
    uint32_t max_storage_images_per_stage;  /* maxPerStageDescriptorStorageImages (texel buffers) */
    uint64_t max_storage_range;             /* maxStorageBufferRange, bytes */
    uint64_t max_alloc;                     /* maxMemoryAllocationSize, bytes */
    uint64_t min_storage_align;             /* minStorageBufferOffsetAlignment, bytes */
    int32_t texel; /* R32G32B32A32_UINT storage texel buffers usable; VKF_NO_TEXEL clears */
    uint64_t max_texel_elements; /* maxTexelBufferElements */
    uint64_t min_texel_align;    /* minTexelBufferOffsetAlignment, bytes */
    float timestamp_period;      /* nanoseconds per timestamp tick */
    int32_t timestamps;          /* timestampComputeAndGraphics (compute queues count time) */
    uint32_t n_heaps;
    uint64_t heap_size[VKF_VK_MAX_HEAPS];
    uint32_t heap_flags[VKF_VK_MAX_HEAPS]; /* VkMemoryHeapFlags */
    uint32_t n_mem_types;
    uint32_t mem_type_flags[VKF_VK_MAX_MEM_TYPES]; /* VkMemoryPropertyFlags */
    uint32_t mem_type_heap[VKF_VK_MAX_MEM_TYPES];
    int32_t unified;         /* every device-local heap has a host-visible memory type */
    int32_t storage16;       /* storageBuffer16BitAccess */
    int32_t storage8;        /* storageBuffer8BitAccess */
    int32_t fp16;            /* shaderFloat16; VKF_NO_FP16 clears */
    int32_t int8;            /* shaderInt8 */
    int32_t int_dot;         /* shaderIntegerDotProduct (Vulkan 1.3 or
                                VK_KHR_shader_integer_dot_product): OpSDot and friends */
    int32_t int_dot_accel;   /* integerDotProduct4x8BitPackedSignedAccelerated: the packed
                                4 x int8 dot is faster than the equivalent integer arithmetic */
    int32_t coopmat;         /* VK_KHR_cooperative_matrix present */
    int32_t coopmat_nv;      /* VK_NV_cooperative_matrix present */
    int32_t coopmat_use;     /* the coopmat matmul may run: allow-listed vendor and driver, its
                                spelling verified on such hardware (or VKF_COOPMAT=1 for both), an
                                f16 x f16 -> f32 subgroup shape, the memory model, and a glslang
                                that compiles the extension's GLSL (KHR: 13.1+, NV: any);
                                VKF_COOPMAT_EMU=1 sets it with the emulation; VKF_NO_COOPMAT=1
                                clears */
    const char *coopmat_off; /* why not, when the device has the extension and !coopmat_use */
    vkf_vk_coopmat_kind coopmat_kind;         /* the spelling in use, when coopmat_use */
    uint32_t coopmat_m, coopmat_n, coopmat_k; /* the shape it uses */
    int32_t vulkan_memory_model;              /* vulkanMemoryModel feature */
    uint32_t n_coopmat;
    vkf_vk_coopmat_shape coopmat_shapes[VKF_VK_MAX_COOPMAT];
    uint8_t pipeline_cache_uuid[16];
    int32_t host_import;        /* VK_EXT_external_memory_host: host allocations (a file mapping)
                                   can back device memory; VKF_NO_IMPORT clears */
    uint64_t host_import_align; /* minImportedHostPointerAlignment, bytes */
    char overrides[256];        /* switches that lowered a capability (as their environment
                                   variables), "" if none */
} vkf_vk_caps;

/* Counters, for tests and benchmarks (cumulative since create). */
typedef struct vkf_vk_stats {
    uint64_t shader_compiles;     /* GLSL -> SPIR-V compilations by glslang */
    uint64_t spirv_cache_hits;    /* SPIR-V served from the disk cache */
    uint64_t spirv_cache_rejects; /* cache files found corrupt or stale (then rebuilt) */
    uint64_t pipelines;           /* VkPipelines created */
    uint64_t recordings;          /* graphs recorded into command buffers */
    uint64_t submits;             /* queue submissions by graph_compute */
    uint64_t dispatches;          /* dispatches recorded */
    uint64_t barriers;            /* hazard barriers recorded */
    uint64_t validation_messages; /* messages from the validation layer */
    double compile_ms;            /* time spent in glslang */
    double pipeline_ms;           /* time spent in vkCreateComputePipelines */
    double record_ms;             /* wall time recording graphs into command buffers (their
                                     descriptor sets, SPIR-V cache reads, and the glslang and
                                     pipeline time above, which happen there on first use) */
    double first_dispatch_ms;     /* wall time of the submissions whose recording created
                                     pipelines: drivers may finish compiling a pipeline at its
                                     first dispatch (llvmpipe/lavapipe JIT-compiles each shader
                                     variant then), so this holds that work and the pass itself */
    /* per-op device time while profiling (vkf_backend_vulkan_profile or the profile switch):
     * timestamps around every dispatch, summed by the op of the node that recorded it */
    double prof_ms[VKF_OP_COUNT];
    uint64_t prof_dispatches[VKF_OP_COUNT];
    double prof_submit_ms; /* wall time of the profiled submissions (submit to fence) */
    uint64_t prof_submits;
    double prof_busy_ms; /* device time of the profiled submissions: first timestamp (before the
                            first dispatch) to the last (after the last profiled dispatch) */
    uint64_t prof_rec_dispatches; /* dispatches and hazard barriers in the command buffers of */
    uint64_t prof_rec_barriers;   /* the profiled submissions, summed per submission */
} vkf_vk_stats;

typedef struct vkf_backend_vulkan_params {
    const char *device;           /* index or name substring; NULL or "": switches->device */
    int validate;                 /* 1: validation layer (also switches->validate) */
    const vkf_switches *switches; /* NULL: vkf_switches_from_env; copied */
    /* after every GLSL -> SPIR-V compilation: the count so far on this backend, the shader */
    void (*shader_compiled)(void *user, int n_compiled, const char *shader);
    void *shader_compiled_user;
} vkf_backend_vulkan_params;

/* Creates a Vulkan backend on the selected device. VKF_ERROR_NO_VULKAN without a loader,
 * VKF_ERROR_NO_DEVICE when nothing matches the device (the message lists the devices). */
vkf_status vkf_backend_vulkan_create_ex(const vkf_backend_vulkan_params *p, vkf_backend **out);
/* The same with the switches of the environment. */
vkf_status vkf_backend_vulkan_create(const char *device, int validate, vkf_backend **out);
/* The switches a Vulkan backend runs with (NULL for other backends). Tests and tools may change
 * the ones the planner reads between recordings (graphs recorded afterwards see them); the
 * device caps and off switches folded into vkf_vk_caps, no_tune, the cache directory and the
 * timeout are read when the backend is made (or first used). */
vkf_switches *vkf_backend_vulkan_switches(vkf_backend *be);
/* Its kernel experiments (the switches' experiments, decoded at creation), the same way. */
vkf_switches_xp *vkf_backend_vulkan_experiments(vkf_backend *be);
/* 1 if be is a Vulkan backend. */
int vkf_backend_is_vulkan(const vkf_backend *be);
/* The device capabilities of a Vulkan backend (NULL for other backends). */
const vkf_vk_caps *vkf_backend_vulkan_caps(const vkf_backend *be);
/* Counters of a Vulkan backend; zeros for other backends. */
vkf_vk_stats vkf_backend_vulkan_stats(const vkf_backend *be);
/* The SPIR-V cache directory in use ("" when caching is off). */
const char *vkf_backend_vulkan_cache_dir(const vkf_backend *be);
/* Turns per-dispatch timestamps on or off (graphs are re-recorded when this changes) and clears
 * the prof_* counters. VKF_ERROR_UNSUPPORTED when the queue has no timestamps. */
vkf_status vkf_backend_vulkan_profile(vkf_backend *be, int on);
#define VKF_VK_MAX_READ_PROBES 8

/* Peaks measured on the device by vkf_backend_vulkan_peaks (vk_probe.c). */
typedef struct vkf_vk_peaks {
    double fma_f32_gflops;  /* fp32 FMA throughput */
    double fma_f16_gflops;  /* fp16 FMA throughput (0 without shaderFloat16) */
    double copy_gbs;        /* buffer copy in a kernel, bytes read + written per second
                               (best repetition) */
    double copy_median_gbs; /* the same, median repetition */
    double read_gbs[VKF_VK_MAX_READ_PROBES]; /* read-only bandwidth by access pattern (best) */
    double read_median_gbs[VKF_VK_MAX_READ_PROBES]; /* the same, median repetition */
    uint64_t probe_bytes; /* bytes per probe buffer (512 MiB unless the device holds less) */
    const char *read_names[VKF_VK_MAX_READ_PROBES];
    int n_read;
    double read_best_gbs;       /* the best of read_gbs: the denominator of weight-bound kernels */
    double dispatch_us;         /* one more 1-workgroup dispatch without a barrier */
    double dispatch_barrier_us; /* the same, each behind a hazard barrier */
    double dispatch_64wg_us;    /* a dispatch of 64 trivial workgroups */
    double submit_us;           /* one submission of one trivial dispatch, submit to fence */
} vkf_vk_peaks;

/* Runs the peak probes (quick: smaller and fewer repetitions). */
vkf_status vkf_backend_vulkan_peaks(vkf_backend *be, int quick, vkf_vk_peaks *out);

/* Autotuner (`vkformer tune`): times the matmul variants (texel split-K shapes, shared-memory
 * tiles) for each shape class (decode, small batch, prefill) and weight type on this device,
 * keeps the fastest, and writes them to the cache directory (path_out gets the file), where
 * later backends on the same device and driver read them instead of the tuning table. log (may
 * be NULL) gets one line per choice. quick: smaller shapes and fewer candidates. */
vkf_status vkf_backend_vulkan_tune(vkf_backend *be, int quick,
                                   void (*log)(void *user, const char *line), void *user,
                                   char *path_out, size_t path_n);

/* Clears every counter of vkf_vk_stats. */
void vkf_backend_vulkan_stats_reset(vkf_backend *be);

#endif
