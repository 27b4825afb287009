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
 * malloc'ed NUL-terminated string; JSON when json != 0. The caller frees *out. */
vkf_status vkf_devices_report(int json, char **out);

typedef struct vkf_context_params {
    vkf_backend_kind backend; /* default AUTO */
    const char *device;       /* Vulkan device: index ("1") or name substring; NULL: env
                                 VKF_DEVICE, else first discrete, integrated, then any */
    int validate;             /* 1: Khronos validation layer on (also env VKF_VALIDATE=1) */
} vkf_context_params;

typedef struct vkf_context vkf_context;

vkf_status vkf_context_create(const vkf_context_params *p, vkf_context **out);
void vkf_context_free(vkf_context *ctx);
/* "cpu" or the Vulkan device name. */
const char *vkf_context_device_name(const vkf_context *ctx);
vkf_backend_kind vkf_context_backend(const vkf_context *ctx);

/* ---------------------------------------------------------------- self-test */

typedef struct vkf_selftest_result {
    int n_cases;  /* op x dtype x shape cases run */
    int n_failed; /* cases over their threshold or with a NaN/Inf mismatch */
} vkf_selftest_result;

/* Runs the op harness on ctx's backend against the CPU reference. When log is non-NULL it is
 * called with one line per case. */
vkf_status vkf_selftest(vkf_context *ctx, int quick, void (*log)(void *user, const char *line),
                        void *user, vkf_selftest_result *out);

/* ================================================================ models, sessions, tokenizers, generation
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
 *     vkf_model_tokenize(m, "source text", VKF_TOKENIZE_SOURCE | VKF_TOKENIZE_ADD_SPECIAL, src, cap, &n_src);
 *     vkf_translate_params tp = {.beam = 4};              // 0 or 1: greedy
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
    int no_mmap;           /* 1: read the file into memory instead of mapping it (llama.cpp's
                              --no-mmap: no page faults on the file later, the file may change).
                              0 (mapped, as llama.cpp): a GGUF file must not be truncated or
                              rewritten in place while the model is loaded (replacing it by a
                              rename is fine); reads past a shrunk file's end raise SIGBUS.
                              Either way, where the backend can use host memory (the CPU, and
                              unified-memory GPUs with VK_EXT_external_memory_host) the weights
                              are used in place, never copied */
} vkf_model_params;

/* Loads the weights onto ctx's backend (uploaded once). Errors name the file and tensor:
 * VKF_ERROR_FORMAT for a missing tensor or a wrong shape ("expected F32 [64, 192], found ..."),
 * VKF_ERROR_UNSUPPORTED for an unknown architecture or dtype, VKF_ERROR_IO for unreadable files.
 * The context must outlive the model. */
vkf_status vkf_model_load(vkf_context *ctx, const vkf_model_params *p, vkf_model **out);
void vkf_model_free(vkf_model *m);

typedef struct vkf_model_desc {
    const char *architecture; /* "transformer", "gpt2" or "llama" */
    const char *format;       /* "safetensors" or "gguf" */
    int encoder_decoder;      /* 1: use encode/decode_step/translate; 0: eval/generate */
    int32_t n_vocab;          /* output (target) vocabulary, tokens */
    int32_t n_src_vocab;      /* source vocabulary (encoder-decoder), else n_vocab, tokens */
    int32_t n_ctx;            /* longest sequence the model supports, tokens */
    int32_t n_ctx_train;      /* the training context from the file (n_ctx may be larger) */
    int ctx_extendable;       /* 1: positions are computed, so vkf_model_params.n_ctx may
                                 exceed n_ctx_train */
    int32_t d_model;          /* residual width */
    int32_t n_layer;          /* decoder layers (all layers of a decoder-only model) */
    int32_t n_enc_layer;      /* encoder layers (0 for decoder-only) */
    int32_t n_head;           /* query heads */
    int32_t n_kv_head;        /* key/value heads */
    int32_t n_ff;             /* feed-forward width */
    int32_t bos_id, eos_id, pad_id; /* -1 when the model has none */
    int has_tokenizer;        /* a (target) tokenizer is loaded */
    int has_src_tokenizer;    /* encoder-decoder: a source tokenizer is loaded */
    int64_t n_params;         /* parameters (elements of every distinct weight tensor) */
    vkf_dtype wtype;          /* stored dtype of the attention / FFN matrices */
    size_t weight_bytes;      /* bytes of weights and tables on the backend */
} vkf_model_desc;

void vkf_model_describe(const vkf_model *m, vkf_model_desc *out);
/* A report of the architecture, hyperparameters, parameter count, dtypes and the memory a
 * session needs, as text (json == 0) or JSON; *out is malloc'ed, the caller frees it. */
vkf_status vkf_model_info(const vkf_model *m, int json, char **out);

enum {
    VKF_TOKENIZE_ADD_SPECIAL = 1, /* add BOS/EOS where the tokenizer's defaults say so */
    VKF_TOKENIZE_SOURCE = 2,      /* encoder-decoder: the source-side tokenizer */
    VKF_DETOKENIZE_SPECIAL = 4,   /* render control tokens (BOS, EOS, ...) as their text */
};

/* Tokenizes NUL-terminated text into tokens[0..cap); *n gets the count. VKF_ERROR_INVALID_ARGUMENT
 * if more than cap tokens result (*n still gets the count needed); VKF_ERROR_UNSUPPORTED if the
 * model has no tokenizer. */
vkf_status vkf_model_tokenize(vkf_model *m, const char *text, int flags, int32_t *tokens, int32_t cap,
                              int32_t *n);
/* Detokenizes tokens[0..n) into a malloc'ed NUL-terminated string (the caller frees it). */
vkf_status vkf_model_detokenize(const vkf_model *m, const int32_t *tokens, int32_t n, int flags, char **out);

/* ---- KV cache type (architectures topic): F16 halves the cache; default F16 on GPU-type
 * Vulkan devices (as llama.cpp), F32 on CPU-type devices (lavapipe) and the CPU backend. */
typedef enum vkf_cache_type { VKF_CACHE_DEFAULT = 0, VKF_CACHE_F32, VKF_CACHE_F16 } vkf_cache_type;

typedef struct vkf_session_params {
    int32_t n_ctx;   /* tokens per sequence the KV cache holds; 0 = the model's maximum */
    int32_t n_batch; /* sequences evaluated together (beam search needs >= the beam width);
                        0 = 1 */
    int32_t cache_type; /* vkf_cache_type of the self-attention K/V caches (decoder-only) */
} vkf_session_params;

vkf_status vkf_session_create(vkf_model *m, const vkf_session_params *p, vkf_session **out);
void vkf_session_free(vkf_session *s);
/* Empties the KV cache (and forgets the encoded source). */
void vkf_session_reset(vkf_session *s);
int32_t vkf_session_n_past(const vkf_session *s); /* tokens in the cache */
int32_t vkf_session_n_ctx(const vkf_session *s);  /* capacity per sequence, tokens */
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

/* ---------------------------------------------------------------- sampling and generation */

typedef struct vkf_sampler_params {
    float temp;    /* softmax temperature; <= 0: greedy (argmax, ties to the lowest id) */
    int32_t top_k; /* sample among the k most likely tokens; 0: all */
    float top_p;   /* sample among the most likely tokens whose probabilities sum to >= top_p;
                      0 or >= 1: all */
    uint64_t seed; /* random seed: the same seed, model and prompt give the same tokens */
} vkf_sampler_params;

typedef struct vkf_sampler vkf_sampler;

vkf_status vkf_sampler_create(const vkf_sampler_params *p, vkf_sampler **out);
void vkf_sampler_free(vkf_sampler *s);
/* Picks a token from logits[0..n_vocab) (temperature, then top-k, then top-p). */
vkf_status vkf_sampler_sample(vkf_sampler *s, const float *logits, int32_t n_vocab, int32_t *token);

typedef enum vkf_stop_reason {
    VKF_STOP_NONE = 0,
    VKF_STOP_EOS,          /* the model produced its end-of-sequence token (not emitted) */
    VKF_STOP_LENGTH,       /* n_predict tokens were generated */
    VKF_STOP_CONTEXT_FULL, /* the session's context filled up first */
    VKF_STOP_CALLBACK,     /* the token callback asked to stop */
} vkf_stop_reason;

typedef struct vkf_generate_stats {
    int32_t n_prompt;     /* prompt tokens evaluated */
    int32_t n_generated;  /* tokens generated (EOS not counted) */
    double prompt_ms;     /* wall time of the prompt pass, milliseconds */
    double gen_ms;        /* wall time of the generation steps, milliseconds */
    double prompt_tps;    /* prompt tokens per second */
    double gen_tps;       /* generated tokens per second */
    vkf_stop_reason stop; /* why generation ended */
} vkf_generate_stats;

/* Called once per generated token, as soon as it is sampled: its id and its text (piece[0..len),
 * may be a partial UTF-8 sequence for byte-level vocabularies; empty without a tokenizer).
 * Return non-zero to stop. */
typedef int (*vkf_token_callback)(void *user, int32_t token, const char *piece, size_t len);

/* Decoder-only generation: appends prompt[0..n_prompt) to the session, then samples up to
 * n_predict tokens, feeding each back, until the model's EOS. A prompt that does not fit the
 * context is VKF_ERROR_CONTEXT_FULL before anything runs; filling the context while generating
 * stops with stats->stop = VKF_STOP_CONTEXT_FULL and returns VKF_ERROR_CONTEXT_FULL (the tokens
 * so far were delivered). stats may be NULL. */
vkf_status vkf_generate(vkf_session *s, const int32_t *prompt, int32_t n_prompt, int32_t n_predict,
                        const vkf_sampler_params *sp, vkf_token_callback cb, void *user,
                        vkf_generate_stats *stats);

typedef struct vkf_translate_params {
    int32_t beam;         /* beam width; 0 or 1: greedy (argmax, ties to the lowest id) */
    int32_t max_len;      /* most tokens to generate; 0: the session's n_ctx - 1 */
    float length_penalty; /* beam ranking: sum of log-probs / length^length_penalty; 0: raw sum */
} vkf_translate_params;

/* Encoder-decoder: encodes src[0..n_src) and decodes from BOS (greedy, or beam search; the
 * session needs n_batch >= beam). out[0..*n_out) gets the generated tokens without the leading
 * BOS, ending with EOS when one was produced. score (may be NULL) gets the sum of their
 * log-probs. VKF_ERROR_INVALID_ARGUMENT if cap is too small for max_len tokens. */
vkf_status vkf_translate(vkf_session *s, const int32_t *src, int32_t n_src, const vkf_translate_params *p,
                         int32_t *out, int32_t cap, int32_t *n_out, float *score);

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
    int n_cases;       /* cases run (one per case and model) */
    int n_failed;      /* cases that did not pass */
    double worst_abs;  /* largest max_abs over the cases */
} vkf_verify_summary;

/* Runs the cases of a fixture directory (seed-transformer cases.json, llama.cpp-style
 * cases.json, or a shipped model directory's expected.json) on ctx: teacher-forced logits / log-probs against the reference, tokenization,
 * free-running greedy, with thresholds fixed per architecture and weight type. only: NULL for
 * every case, else only the cases whose name contains it ("fox", "q8_0"). on_case (may be NULL)
 * is called after each case. Returns an error only when the fixtures cannot be read or a model
 * cannot be loaded; failing cases are counted in out->n_failed. */
vkf_status vkf_verify(vkf_context *ctx, const char *dir, const char *only,
                      void (*on_case)(void *user, const vkf_verify_case *c), void *user,
                      vkf_verify_summary *out);

/* ---------------------------------------------------------------- memory (issue 16: memory and
 * loading) */

/* Memory by use, bytes. On unified-memory devices "device" memory is host RAM. */
typedef struct vkf_memory_info {
    uint64_t weights;          /* weights and the tables computed from them, on the backend */
    uint64_t weights_in_place; /* of weights: used where the model file's bytes are (mapped, or
                                  read once with no_mmap), no copy made */
    uint64_t kv_cache;         /* session only: self-attention K/V (and encoder memory) */
    uint64_t activations;      /* session only: the graphs' activation arenas, inputs, outputs */
    uint64_t device_total;     /* bytes the device has for buffers (its largest device-local heap,
                                  or VKF_MAX_DEVICE_MEMORY); 0 = unknown (the CPU backend) */
    uint64_t device_used;      /* bytes this context's backend holds now (imports included) */
} vkf_memory_info;

/* The model's weights (kv_cache and activations are 0). */
vkf_status vkf_model_memory(const vkf_model *m, vkf_memory_info *out);
/* The model's weights plus this session's KV cache and activations (graphs built so far). */
vkf_status vkf_session_memory(const vkf_session *s, vkf_memory_info *out);

#ifdef __cplusplus
}
#endif
#endif /* VKFORMER_H */
