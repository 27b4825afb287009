/* Decoder-only and encoder-only architectures as data: one descriptor per architecture
 * (src/model/arch/<name>.c).
 *
 * A descriptor names the architecture (GGUF general.architecture, Hugging Face `architectures`),
 * the tensor slots it has, and the switches the one decoder graph builder (graph_decoder.c) and
 * the loaders (load_gguf.c, load_hf.c, load_gpt2.c) read. The zero value of every switch is
 * Llama's (RMSNorm, RoPE on adjacent pairs, gated FFN), so a descriptor sets only what differs.
 * Adding a llama-like architecture is one new file here plus its entry in vkf_arch_list
 * (arch.c).
 *
 * Tensor names: every slot has a default name in each format (vkf_arch_gguf_names: llama.cpp's
 * GGUF names; vkf_arch_hf_names: the Hugging Face Llama names), which a descriptor overrides
 * only where its checkpoints differ. Per-layer names hold one "%d" (the layer index). GGUF
 * names are the full names in the file; HF names follow the loader's prefix ("model." or
 * "transformer.", found by the loader). */
#ifndef VKF_MODEL_ARCH_H
#define VKF_MODEL_ARCH_H

#include <stddef.h>
#include <stdint.h>

typedef enum vkf_arch_norm { VKF_NORM_RMS = 0, VKF_NORM_LAYER } vkf_arch_norm;

typedef enum vkf_arch_pos {
    VKF_POS_ROPE = 0, /* rotary embeddings on q and k */
    VKF_POS_LEARNED,  /* learned absolute positions added to the embeddings */
} vkf_arch_pos;

typedef enum vkf_arch_ffn {
    VKF_FFN_GLU = 0,   /* down(act(gate x) * up x) (SwiGLU with SiLU, GeGLU with GELU-tanh) */
    VKF_FFN_PLAIN,     /* down(act(up x + b) ) + b */
    VKF_FFN_GLU_FUSED, /* as GLU with one up matrix [2 n_ff, d]: outputs [0, n_ff) gate, then up */
} vkf_arch_ffn;

/* Tensor slots: per layer first, then the model's globals. */
typedef enum vkf_arch_t {
    VKF_T_ATTN_NORM = 0,
    VKF_T_ATTN_NORM_B,
    VKF_T_ATTN_QKV,
    VKF_T_ATTN_QKV_B,
    VKF_T_ATTN_Q,
    VKF_T_ATTN_Q_B,
    VKF_T_ATTN_K,
    VKF_T_ATTN_K_B,
    VKF_T_ATTN_V,
    VKF_T_ATTN_V_B,
    VKF_T_ATTN_Q_NORM,
    VKF_T_ATTN_K_NORM,
    VKF_T_ATTN_OUT,
    VKF_T_ATTN_OUT_B,
    VKF_T_POST_ATTN_NORM,
    VKF_T_FFN_NORM,
    VKF_T_FFN_NORM_B,
    VKF_T_FFN_GATE,
    VKF_T_FFN_UP,
    VKF_T_FFN_UP_B,
    VKF_T_FFN_DOWN,
    VKF_T_FFN_DOWN_B,
    VKF_T_POST_FFN_NORM,
    VKF_T_FFN_GATE_INP,       /* mixture of experts: the router [n_expert, d] */
    VKF_T_FFN_GATE_EXPS,      /* the experts, 3-D [n_expert][n_ff_exp, d] */
    VKF_T_FFN_UP_EXPS,        /* [n_expert][n_ff_exp, d] */
    VKF_T_FFN_DOWN_EXPS,      /* [n_expert][d, n_ff_exp] */
    VKF_T_FFN_GATE_INP_SHEXP, /* the shared expert's gate logit [1, d] (Qwen2-MoE) */
    VKF_T_FFN_GATE_SHEXP,     /* the shared expert [n_ff_shexp, d] */
    VKF_T_FFN_UP_SHEXP,
    VKF_T_FFN_DOWN_SHEXP,  /* [d, n_ff_shexp] */
    VKF_T_ATTN_SINKS,      /* gpt-oss: one learned softmax sink logit per head [1, n_head] */
    VKF_T_FFN_GATE_INP_B,  /* gpt-oss: the router's bias [1, n_expert] */
    VKF_T_FFN_GATE_EXPS_B, /* gpt-oss: each expert's biases, [n_expert, n_ff_exp] */
    VKF_T_FFN_UP_EXPS_B,
    VKF_T_FFN_DOWN_EXPS_B, /* [n_expert, d] */
    VKF_T_LAYER_COUNT,
    VKF_T_TOK_EMBD = VKF_T_LAYER_COUNT,
    VKF_T_POS_EMBD,
    VKF_T_OUT_NORM,
    VKF_T_OUT_NORM_B,
    VKF_T_OUTPUT, /* absent: tied to the token embeddings */
    VKF_T_ROPE_FREQS,
    VKF_T_ROPE_SHORT,
    VKF_T_ROPE_LONG,
    VKF_T_TOKEN_TYPES, /* encoder-only: token-type embeddings [n_types, d] (row 0 is added) */
    VKF_T_TOK_NORM,    /* encoder-only: LayerNorm of the embeddings */
    VKF_T_TOK_NORM_B,
    VKF_T_COUNT
} vkf_arch_t;

/* Sets of slots (vkf_arch_desc.tensors / .optional). */
#define VKF_TS(t) (1ull << (t))
/* Llama's tensors: the pre-norms, q, k, v, o, the gated FFN, embeddings and final norm */
#define VKF_TS_CORE                                                                                \
    (VKF_TS(VKF_T_ATTN_NORM) | VKF_TS(VKF_T_ATTN_Q) | VKF_TS(VKF_T_ATTN_K) |                       \
     VKF_TS(VKF_T_ATTN_V) | VKF_TS(VKF_T_ATTN_OUT) | VKF_TS(VKF_T_FFN_NORM) |                      \
     VKF_TS(VKF_T_FFN_GATE) | VKF_TS(VKF_T_FFN_UP) | VKF_TS(VKF_T_FFN_DOWN) |                      \
     VKF_TS(VKF_T_TOK_EMBD) | VKF_TS(VKF_T_OUT_NORM))
#define VKF_TS_QKV_BIAS (VKF_TS(VKF_T_ATTN_Q_B) | VKF_TS(VKF_T_ATTN_K_B) | VKF_TS(VKF_T_ATTN_V_B))
#define VKF_TS_QK_NORM (VKF_TS(VKF_T_ATTN_Q_NORM) | VKF_TS(VKF_T_ATTN_K_NORM))
/* a routed FFN: router and experts in place of the dense gate / up / down */
#define VKF_TS_MOE                                                                                 \
    (VKF_TS(VKF_T_FFN_GATE_INP) | VKF_TS(VKF_T_FFN_GATE_EXPS) | VKF_TS(VKF_T_FFN_UP_EXPS) |        \
     VKF_TS(VKF_T_FFN_DOWN_EXPS))
#define VKF_TS_DENSE_FFN (VKF_TS(VKF_T_FFN_GATE) | VKF_TS(VKF_T_FFN_UP) | VKF_TS(VKF_T_FFN_DOWN))
#define VKF_TS_SHEXP                                                                               \
    (VKF_TS(VKF_T_FFN_GATE_INP_SHEXP) | VKF_TS(VKF_T_FFN_GATE_SHEXP) |                             \
     VKF_TS(VKF_T_FFN_UP_SHEXP) | VKF_TS(VKF_T_FFN_DOWN_SHEXP))
/* gpt-oss's biases of the routed FFN: the router's and every expert's */
#define VKF_TS_MOE_BIAS                                                                            \
    (VKF_TS(VKF_T_FFN_GATE_INP_B) | VKF_TS(VKF_T_FFN_GATE_EXPS_B) | VKF_TS(VKF_T_FFN_UP_EXPS_B) |  \
     VKF_TS(VKF_T_FFN_DOWN_EXPS_B))
#define VKF_TS_POST_NORMS (VKF_TS(VKF_T_POST_ATTN_NORM) | VKF_TS(VKF_T_POST_FFN_NORM))

/* The Gemma family's block: NEOX rope, GeGLU (tanh GELU), post-attention and post-FFN norms,
 * embeddings times sqrt(d_model), HF norm weights stored as w - 1, q scaled before attention. */
#define VKF_ARCH_GEMMA                                                                             \
    .rope_mode = VKF_ROPE_NEOX, .ffn_act = VKF_UNARY_GELU_TANH, .post_norms = 1,                   \
    .emb_scale_sqrt_d = 1, .hf_norm_plus_one = 1, .scale_q = 1

/* Mixture of experts (vkf_arch_desc.moe). */
typedef enum vkf_arch_moe {
    VKF_MOE_NONE = 0,
    VKF_MOE_ALWAYS,   /* every layer routed; {arch}.expert_count and expert_used_count required */
    VKF_MOE_IF_COUNT, /* routed when the file has {arch}.expert_count > 0 (Mixtral as "llama") */
} vkf_arch_moe;

/* The gating function, as llama.cpp's {arch}.expert_gating_func numbers it. */
typedef enum vkf_gating {
    VKF_GATING_SOFTMAX = 1,        /* softmax over the experts, then top-k */
    VKF_GATING_SIGMOID = 2,        /* sigmoid per expert (DeepSeek-V3), then top-k */
    VKF_GATING_SOFTMAX_WEIGHT = 3, /* top-k of the logits, then softmax over the k (gpt-oss) */
} vkf_gating;

/* BERT's encoder block in llama.cpp's GGUF names: biases on every matrix (a file may leave them
 * out), the post-attention norm "attn_output_norm", the post-FFN norm "layer_output_norm";
 * embeddings with token types (optional) and a LayerNorm. */
#define VKF_TS_ENCODER                                                                             \
    (VKF_TS(VKF_T_ATTN_NORM) | VKF_TS(VKF_T_ATTN_NORM_B) | VKF_TS(VKF_T_ATTN_OUT) |                \
     VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_FFN_NORM) | VKF_TS(VKF_T_FFN_NORM_B) |                \
     VKF_TS(VKF_T_FFN_UP) | VKF_TS(VKF_T_FFN_DOWN) | VKF_TS(VKF_T_TOK_EMBD) |                      \
     VKF_TS(VKF_T_TOKEN_TYPES) | VKF_TS(VKF_T_TOK_NORM) | VKF_TS(VKF_T_TOK_NORM_B))
#define VKF_ARCH_ENCODER_GGUF_NORMS                                                                \
    [VKF_T_ATTN_NORM] = "blk.%d.attn_output_norm.weight",                                          \
    [VKF_T_ATTN_NORM_B] = "blk.%d.attn_output_norm.bias",                                          \
    [VKF_T_FFN_NORM] = "blk.%d.layer_output_norm.weight",                                          \
    [VKF_T_FFN_NORM_B] = "blk.%d.layer_output_norm.bias"

typedef struct vkf_arch_desc {
    const char *name;       /* GGUF general.architecture (also the key prefix) */
    const char *hf_arch[3]; /* HF config.json "architectures" entries, NULL-terminated */
    vkf_arch_norm norm;     /* every norm of the model */
    vkf_arch_pos pos;
    int rope_mode; /* vkf_rope_mode: NORMAL (adjacent pairs) or NEOX (halves) */
    vkf_arch_ffn ffn;
    int ffn_act;           /* vkf_unary of the FFN (GLU: of the gate) */
    int post_norms;        /* x += norm(attn(norm x)); x += norm(ffn(norm x)) (gemma2/3) */
    int emb_scale_sqrt_d;  /* embeddings multiplied by sqrt(d_model) (gemma) */
    int softcaps;          /* reads {arch}.attn_logit_softcapping / final_logit_softcapping */
    int scale_q;           /* llama.cpp scales q, not the attention scores (vkf_attn_params) */
    int granite_scales;    /* reads {arch}.embedding_scale, residual_scale, attention.scale and
                              logit_scale (granite; vkf_hparams emb_scale, res_scale, attn_scale,
                              logit_scale) */
    int nope_period;       /* > 0: layer il has no RoPE when (il + 1) % nope_period == 0
                              (SmolLM3's NoPE layers; llama.cpp's fixed step 4) */
    int swa_period;        /* > 0: layer il uses the sliding window iff il % period < period - 1
                              (llama.cpp's default pattern when the file has none); 0: no SWA */
    int swa_rope_unscaled; /* local layers: rope base {arch}.rope.freq_base_swa, no rope scaling */
    int hf_norm_plus_one;  /* HF stores RMSNorm weights w - 1 (Gemma: x * (1 + w)) */
    int scale_by_d_layers; /* GGUF: with this many layers the query scale is 1/sqrt(d_model /
                              n_head), else 1/sqrt(head_dim) (llama.cpp's rule for the Gemma 27B
                              models, whose query_pre_attn_scalar no GGUF key carries); 0: never */
    int encoder;           /* encoder-only (embeddings, model/graph_encoder.c): bidirectional
                              attention over padded batches, a norm after each residual
                              (ATTN_NORM after attention, FFN_NORM after the FFN), token-type
                              embeddings and a norm on the input, pooled outputs */
    int moe;               /* vkf_arch_moe: the FFN routed over experts (VKF_TS_MOE tensors) */
    int moe_norm_w;        /* the k chosen weights renormalised to sum 1 (Mixtral, Qwen3-MoE) */
    int moe_ff_per_k;      /* no expert_feed_forward_length: experts of n_ff / expert_used_count
                              (Qwen2-MoE), else n_ff */
    int qk_norm_full;      /* q / k norms over the whole projection, not per head (OLMoE) */
    int moe_gating;        /* vkf_gating fixed by the architecture (llama.cpp's graph ignores
                              {arch}.expert_gating_func); 0: the key, absent softmax */
    int moe_swiglu_oai;    /* experts' activation: gpt-oss's clamped SwiGLU (alpha 1.702, limit
                              7, llama.cpp's constants), else SiLU */
    const char *hf_prefix[3]; /* HF tensor-name prefixes tried in order (the first under which
                                 the token embedding exists); all NULL: "model." */
    uint64_t tensors;         /* the slots it has (VKF_TS bits) */
    uint64_t optional;        /* of those, the ones a file may leave out (no bias, a tied output) */
    /* names that differ from the default tables (NULL: the default) */
    const char *gguf[VKF_T_COUNT];
    const char *hf[VKF_T_COUNT];
} vkf_arch_desc;

/* The default names of every slot (arch.c); NULL: no such tensor in that format. */
extern const char *const vkf_arch_gguf_names[VKF_T_COUNT];
extern const char *const vkf_arch_hf_names[VKF_T_COUNT];

typedef enum vkf_arch_format { VKF_ARCH_GGUF = 0, VKF_ARCH_HF } vkf_arch_format;

/* An architecture's tensor names in one format: name[t] (NULL: not in this architecture or
 * format), opt[t] = 1 where a file may leave it out. A loader may adjust its copy (a tied
 * output). */
typedef struct vkf_arch_tensor_names {
    const char *name[VKF_T_COUNT];
    unsigned char opt[VKF_T_COUNT];
} vkf_arch_tensor_names;

void vkf_arch_tensor_names_get(const vkf_arch_desc *a, vkf_arch_format f,
                               vkf_arch_tensor_names *out);

/* The registry (arch.c): NULL-terminated list, lookup by GGUF name and by HF architecture. */
extern const vkf_arch_desc *const vkf_arch_list[];
const vkf_arch_desc *vkf_arch_by_gguf(const char *name);
const vkf_arch_desc *vkf_arch_by_hf(const char *hf_arch);
/* "llama, gpt2, ..." for error messages */
const char *vkf_arch_names(void);
/* "LlamaForCausalLM, MistralForCausalLM, ...": the HF architectures of the RoPE decoders */
const char *vkf_arch_hf_list(void);

/* How the loaders read a slot: shape from the hyperparameters and where it goes. */
typedef enum vkf_arch_dim {
    VKF_D_0 = 0, /* 1-D */
    VKF_D_MODEL,
    VKF_D_Q,    /* n_head * head_dim */
    VKF_D_KV,   /* n_kv_head * head_dim */
    VKF_D_QKV,  /* (n_head + 2 n_kv_head) * head_dim */
    VKF_D_HEAD, /* head_dim */
    VKF_D_FF,
    VKF_D_FF2, /* 2 n_ff (fused gate|up) */
    VKF_D_VOCAB,
    VKF_D_CTX,
    VKF_D_ROT2,     /* n_rot / 2 */
    VKF_D_TYPES,    /* token types (BERT's type_vocab_size) */
    VKF_D_EXPERT,   /* n_expert */
    VKF_D_FF_EXP,   /* an expert's FFN width */
    VKF_D_FF_SHEXP, /* the shared expert's FFN width */
    VKF_D_HEADS,    /* n_head */
} vkf_arch_dim;

typedef struct vkf_arch_slot {
    int vector;       /* 1-D: stored [in] -> F32 [1, in] */
    vkf_arch_dim in;  /* ne[0]: the row length */
    vkf_arch_dim out; /* ne[1]: rows (matrices) */
    size_t offset;    /* offsetof the vkf_tensor in vkf_layer_w (layers) or vkf_model_w */
    int experts;      /* 3-D: ne[2] = n_expert matrices, loaded as [n_expert * out, in] */
} vkf_arch_slot;

extern const vkf_arch_slot vkf_arch_slots[VKF_T_COUNT];
struct vkf_model;
int64_t vkf_arch_dim_value(const struct vkf_model *m, vkf_arch_dim d);
/* The stored shape of a slot: ne0 (row length) and ne1 (rows; 0 for vectors). */
void vkf_arch_slot_shape(const struct vkf_model *m, vkf_arch_t t, int64_t *ne0, int64_t *ne1);

#endif
