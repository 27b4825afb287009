/* Models and sessions: the internal structures behind vkf_model / vkf_session (vkformer.h).
 *
 * A model is its hyperparameters, its weights (uploaded once to the context's backend) and its
 * tokenizer(s). A session owns the per-sequence state (KV caches, encoder memory) and a small
 * cache of graphs: one graph per (kind, tokens per step, batch, flags), built on first use and
 * replayed for every later step with a new n_past (docs/DESIGN.md,
 * 'Record once, replay every step').
 *
 * Architectures:
 *   transformer  encoder-decoder of "Attention Is All You Need" (post-LN or pre-LN, sinusoidal
 *                positions, relu/gelu FFN), the seed-transformer layout (safetensors)
 *   gpt2         pre-LN decoder, learned positions, fused QKV, gelu (HF safetensors or GGUF)
 *   llama        pre-RMSNorm decoder, RoPE, SwiGLU, grouped-query attention (GGUF) */
#ifndef VKF_MODEL_MODEL_H
#define VKF_MODEL_MODEL_H

#include <pthread.h>
#include <stdint.h>

#include "graph/backend.h"
#include "io/mapfile.h"
#include "model/arch.h"
#include "runtime/context.h"

/* The graph family: the encoder-decoder, or a decoder-only model whose architecture is a
 * descriptor (model/arch.h: vkf_model.desc). */
typedef enum vkf_arch {
    VKF_ARCH_TRANSFORMER = 0,
    VKF_ARCH_DECODER,
    VKF_ARCH_ENCODER, /* encoder-only (embeddings): a descriptor with encoder = 1 */
} vkf_arch;

/* The architecture's name: "transformer" or the descriptor's GGUF name. */
const char *vkf_model_arch_name(const vkf_model *m);

/* ------------------------------------------------------------------ hyperparameters */

typedef struct vkf_hparams {
    int32_t n_vocab;     /* output (decoder / target) vocabulary, tokens */
    int32_t n_src_vocab; /* encoder-decoder: source vocabulary; decoder-only: = n_vocab */
    int32_t n_ctx_train; /* the training context, as the file declares it (loaders), tokens */
    int32_t n_ctx;       /* the context the model is loaded for (vkf_model_set_ctx): position table
                            rows, the default and longest session context, tokens */
    int32_t d_model;     /* residual width */
    int32_t n_head;      /* query heads */
    int32_t n_kv_head;   /* key/value heads (GQA), divides n_head */
    int32_t head_dim;    /* d_model / n_head */
    int32_t n_layer;     /* decoder layers (decoder-only: all layers) */
    int32_t n_enc_layer; /* encoder layers (encoder-decoder only) */
    int32_t n_ff;        /* FFN inner width */
    float eps;           /* LayerNorm / RMSNorm epsilon */
    int32_t act;         /* vkf_unary of the FFN (gpt2, transformer) */
    int32_t norm_first;  /* transformer: 1 = pre-LN (nn.Transformer norm_first=True) */
    float emb_scale;     /* transformer: embeddings are multiplied by this */
    float attn_scale;    /* softmax scale, usually 1/sqrt(head_dim) */
    int32_t attn_scale_by_layer; /* gpt2 scale_attn_by_inverse_layer_idx: scale / (layer + 1) */
    int32_t n_rot;               /* RoPE dimensions (<= head_dim) */
    double rope_base;            /* RoPE frequency base */
    double rope_scale;           /* linear RoPE scaling: positions multiplied by this (1: none) */
    double rope_attn_factor;     /* multiplies cos and sin (LongRoPE attention factor; 1: none) */
    double rope_base_swa;        /* sliding-window layers' RoPE base */
    int32_t rope_factors;        /* 0 none, 1 rope_freqs (llama3), 2 short, 3 long (LongRoPE) */
    int32_t n_ctx_orig;          /* rope.scaling.original_context_length (0: absent) */
    int32_t rope_yarn;           /* YaRN (rope.scaling.type "yarn"): rope_scale is 1 / factor */
    float yarn_factor;           /* rope.scaling.factor as read (float, as llama.cpp keeps it) */
    float yarn_beta_fast, yarn_beta_slow; /* llama.cpp's defaults 32 and 1 */
    int32_t swa_window;  /* sliding window W (query p sees p - W < p' <= p); 0: none */
    int32_t swa_period;  /* layer il is local iff il % period < period - 1; 0: none */
    float attn_softcap;  /* attention logits c tanh(s / c); 0: none */
    float final_softcap; /* LM-head logits soft-cap; 0: none */
    float res_scale;     /* attention and FFN outputs times this before the residual add; 0: none */
    float logit_scale;   /* logits divided by this (times 1 / logit_scale, as llama.cpp); 0: none */
    int32_t bos_id, eos_id, pad_id; /* -1 when the model has none */
    int32_t add_bos;                /* tokenizing a prompt prepends BOS by default */
    /* mixture of experts ({arch}.expert_*; n_expert 0: a dense FFN) */
    int32_t n_expert, n_expert_used; /* experts, experts per token */
    int32_t n_ff_exp, n_ff_shexp;    /* an expert's and the shared expert's FFN width */
    int32_t gating;                  /* vkf_gating */
    float expert_weights_scale;      /* the chosen weights multiplied by this (0, 1: not) */
    /* encoder-only (embeddings) */
    int32_t n_types;   /* token types (BERT type_vocab_size); 0: none */
    int32_t pooling;   /* the model's vkf_pooling (never DEFAULT) */
    int32_t n_cls_out; /* outputs of the classifier head (rank pooling); 0: no head */
    int32_t normalize; /* 1: its vectors are L2-normalized by default */
    int32_t
        n_seq_max; /* longest input, tokens (sentence-transformers max_seq_length, else n_ctx) */
} vkf_hparams;

/* ------------------------------------------------------------------ weights */

/* Matrix weights keep their stored dtype ([out, in] rows: row i is output feature i); vectors
 * (norms, biases) are F32 [1, n]. A tensor with buf == NULL is absent (no bias, no norm). */
typedef struct vkf_attn_w {
    vkf_tensor wqkv,
        bqkv;            /* fused [(n_head + 2 n_kv_head) * head_dim, d] and [1, same], or absent */
    vkf_tensor wq, bq;   /* [n_head*head_dim, d], [1, n_head*head_dim] (views of wqkv when fused) */
    vkf_tensor wk, bk;   /* [n_kv_head*head_dim, d] */
    vkf_tensor wv, bv;   /* [n_kv_head*head_dim, d] */
    vkf_tensor wkv, bkv; /* transformer cross-attention: rows [d, 3d) of in_proj, [2d, d] */
    vkf_tensor wo, bo;   /* [d, n_head*head_dim], [1, d] */
} vkf_attn_w;

typedef struct vkf_layer_w {
    vkf_attn_w self;             /* self-attention */
    vkf_attn_w cross;            /* transformer decoder: cross-attention (multihead_attn) */
    vkf_tensor norm1_w, norm1_b; /* [1, d]: gpt2 ln_1, llama attn_norm, transformer norm1 */
    vkf_tensor norm2_w, norm2_b; /* [1, d]: gpt2 ln_2, llama ffn_norm, transformer norm2 */
    vkf_tensor norm3_w, norm3_b; /* [1, d]: transformer decoder norm3 */
    vkf_tensor w_up, b_up;       /* [n_ff, d], [1, n_ff]: gpt2 c_fc, llama ffn_up, linear1 */
    vkf_tensor w_gate;           /* [n_ff, d]: llama ffn_gate */
    vkf_tensor w_down, b_down;   /* [d, n_ff], [1, d]: gpt2 mlp.c_proj, llama ffn_down, linear2 */
    vkf_tensor q_norm, k_norm;   /* [1, head_dim]: per-head RMSNorm of q and k (qwen3, gemma3) */
    vkf_tensor post_attn_norm, post_ffn_norm; /* [1, d]: gemma2/3 norms of the branch outputs */
    /* mixture of experts: router, the experts stacked (expert e: rows [e * out, (e + 1) * out)),
     * the shared expert and its gate logit */
    vkf_tensor gate_inp;                         /* [n_expert, d] */
    vkf_tensor gate_exps, up_exps;               /* [n_expert * n_ff_exp, d] */
    vkf_tensor down_exps;                        /* [n_expert * d, n_ff_exp] */
    vkf_tensor gate_inp_shexp;                   /* F32 [1, d] */
    vkf_tensor gate_shexp, up_shexp, down_shexp; /* [n_ff_shexp, d], same, [d, n_ff_shexp] */
    vkf_tensor attn_sinks;                       /* F32 [1, n_head] (gpt-oss) */
    vkf_tensor gate_inp_b;                       /* F32 [1, n_expert] (gpt-oss) */
    vkf_tensor gate_exps_b, up_exps_b;           /* [n_expert, n_ff_exp] (gpt-oss) */
    vkf_tensor down_exps_b;                      /* [n_expert, d] (gpt-oss) */
} vkf_layer_w;

typedef struct vkf_model_w {
    vkf_tensor tok_embd; /* [n_vocab, d] (transformer: tgt_embed) */
    vkf_tensor src_embd; /* transformer: [n_src_vocab, d] */
    vkf_tensor
        pos_embd;    /* gpt2: learned [n_ctx, d]; transformer: sinusoidal table [n_ctx, d] F32 */
    vkf_tensor rope; /* RoPE: rotation table [n_ctx, n_rot] F32 */
    vkf_tensor rope_swa; /* sliding-window layers' table when it differs (gemma3), else absent */
    vkf_tensor enc_norm_w, enc_norm_b; /* transformer: final encoder LayerNorm [1, d] */
    vkf_tensor type_embd;              /* encoder-only: token-type embeddings F32 [n_types, d] */
    vkf_tensor tok_norm_w, tok_norm_b; /* encoder-only: LayerNorm of the embeddings [1, d] */
    vkf_tensor out_norm_w, out_norm_b; /* final norm [1, d] (transformer: decoder norm) */
    vkf_tensor output,
        output_b; /* LM head [n_vocab, d] (may be tok_embd: tied), bias [1, n_vocab] */
    /* encoder-only classifier head (cross-encoders, llama.cpp's cls / cls.output): rank pooling
     * is out = cls_out(tanh(cls(x[CLS]))), either part may be absent */
    vkf_tensor cls_w, cls_b;         /* [d, d], [1, d] (HF BertPooler.dense) */
    vkf_tensor cls_out_w, cls_out_b; /* [n_cls_out, d], [1, n_cls_out] (HF classifier) */
    vkf_layer_w *enc;                /* [n_enc_layer] */
    vkf_layer_w *dec; /* [n_layer] (decoder-only and encoder-only models: all layers) */
} vkf_model_w;

/* ------------------------------------------------------------------ tokenizers */

typedef struct vkf_tokenizer vkf_tokenizer; /* tokenizer/tokenizer.h */

/* Loads a tokenizer from a file or directory: vocab.json (+ merges.txt beside it), a character
 * vocabulary (char_vocab.json or any other .json in that format), a .gguf, or a directory
 * holding vocab.json + merges.txt or char_vocab.json. */
vkf_status vkf_model_tokenizer_load(const char *path, vkf_tokenizer **out);

/* ------------------------------------------------------------------ model */

#define VKF_MODEL_MAX_BUFS_INIT 64
/* Longest context a model file may declare (tokens): a corrupt length would otherwise size the
 * position tables and the default KV cache. */
#define VKF_MODEL_MAX_CTX (1 << 24)
/* Context of a RoPE model when none is asked for (capped by its training context): llama.cpp's
 * default -c. */
#define VKF_MODEL_DEFAULT_CTX 4096

struct vkf_model {
    vkf_context *ctx;
    vkf_backend *be;
    vkf_arch arch;
    const vkf_arch_desc *desc; /* decoder-only: the architecture; NULL for the transformer */
    char path[1024];           /* as given to vkf_model_load */
    char format[16];           /* "safetensors" or "gguf" */
    vkf_hparams hp;
    int32_t ctx_req; /* vkf_model_params.n_ctx: positions asked for (0: the training context) */
    int32_t cache_type_k, cache_type_v; /* vkf_model_params': the KV cache the load's check
                                           assumes */
    int ctx_ext; /* positions are computed (vkf_model_set_ctx): n_ctx may pass the trained */
    vkf_model_w w;
    vkf_dtype wtype;     /* dtype of the attention/FFN matrices (verify tolerances, info) */
    int64_t n_params;    /* elements of every distinct weight tensor */
    size_t weight_bytes; /* bytes uploaded to the backend for weights and tables */
    int n_by_dtype[VKF_DTYPE_COUNT]; /* weight tensors per stored dtype */
    vkf_buffer **bufs; /* every buffer this model allocated (freed by vkf_model_free) */
    int n_bufs, cap_bufs;
    vkf_tokenizer *tok;     /* decoder/target tokenizer, or NULL */
    vkf_tokenizer *src_tok; /* encoder-decoder source tokenizer, or NULL */
    /* encode keeps a pre-token cache and scratch buffers in the tokenizer (tokenizer/tokenizer.h):
     * one encode at a time per model; decode only reads and needs no lock */
    pthread_mutex_t tok_lock;
    /* chat templates (model/model_chat.c): the template and the bos/eos token texts, or NULL */
    char *chat_template, *chat_template_tool_use, *chat_bos, *chat_eos;
    /* loading (model/weights.c): the model file's bytes, kept while a weight uses them in place */
    vkf_mapfile file;
    int no_mmap;                  /* vkf_model_params.no_mmap: file read into memory, not mapped */
    size_t weight_bytes_in_place; /* of weight_bytes: used from the file's memory, not copied */
    int n_in_place;               /* weight buffers over file */
    /* constrained sampling (structured/grammar.c): the vocabulary's token trie and grammar
     * engines kept between requests; made on first use, under its own lock */
    struct vkf_gcache *gcache;
    /* layer split (model/split.c; vkf_context_params.n_devices): n_dev devices, device i holds
     * layers [layer0[i], layer0[i + 1]) with their weights and KV cache, devices[0] the
     * embeddings, the last one the final norm and head; each device its own RoPE tables.
     * n_dev 1: everything on be (dev_be[0]). */
    int n_dev;
    vkf_backend *dev_be[VKF_MAX_DEVICES];
    int32_t layer0[VKF_MAX_DEVICES + 1];
    size_t dev_weight_bytes[VKF_MAX_DEVICES];
    vkf_tensor dev_rope[VKF_MAX_DEVICES], dev_rope_swa[VKF_MAX_DEVICES];
    int upload_dev;       /* the device vkf_model_upload writes to while loading */
    vkf_backend **buf_be; /* per entry of bufs: the backend it lives on */
};

/* ------------------------------------------------------------------ layer split (model/split.c)
 */

/* Assigns the layers to the context's devices (the proportions of vkf_context_params), for a
 * model whose n_layer is known; VKF_ERROR_UNSUPPORTED for an architecture that is not split. */
vkf_status vkf_model_split_assign(vkf_model *m);
/* "split i ..." lines of the model's text info (nothing without a split); returns the length. */
size_t vkf_model_split_text(const vkf_model *m, char *buf, size_t cap);
/* The device holding layer l (0 without a split). */
int vkf_model_layer_dev(const vkf_model *m, int l);
/* Backend of device i of the split. */
static inline vkf_backend *vkf_model_dev_be(const vkf_model *m, int i) {
    return m->n_dev > 1 ? m->dev_be[i] : m->be;
}

/* Loaders (model/load_*.c); each fills m->hp (hp.n_ctx_train from the file), m->w, m->tok, and
 * calls vkf_model_set_ctx once the hyperparameters are read, before it sizes anything by the
 * context. */
/* hp.n_ctx from hp.n_ctx_train and vkf_model_params.n_ctx, which it leaves as they are.
 * Computed positions (RoPE, sinusoidal): the context asked for, else min(VKF_MODEL_DEFAULT_CTX,
 * n_ctx_train) as llama.cpp's default -c (never a training context alone: 131072 for
 * Llama-3.x). A learned table: its n_ctx_train rows; a larger request is VKF_ERROR_UNSUPPORTED. */
vkf_status vkf_model_set_ctx(vkf_model *m, int computed);
vkf_status vkf_load_transformer(vkf_model *m, const char *dir);
vkf_status vkf_load_gpt2_hf(vkf_model *m, const char *dir);
vkf_status vkf_load_gguf(vkf_model *m, const char *path);
/* Hugging Face llama-family directory (model/load_hf.c) of the architecture desc. */
vkf_status vkf_load_hf(vkf_model *m, const char *dir, const vkf_arch_desc *desc);
/* GGUF's adjacent-pair rope layout from HF's halves (llama.cpp's converter permutes q / k rows
 * so): the rows of each head of hd interleaved; malloc'ed, NULL out of memory. */
void *vkf_hf_permute_rows(const void *src, int64_t rows, size_t row_bytes, int64_t hd);
/* llama3 rope scaling: the n_rot/2 frequency divisors llama.cpp's converter writes as
 * rope_freqs.weight, from config.json's rope_scaling object rs (a cJSON *); also used by
 * `vkformer quantize` (quantize/quantize_hf_llama.c). */
struct cJSON;
void vkf_hf_llama3_factors(const vkf_hparams *hp, const struct cJSON *rs, float *f);
/* Loads the layer and global tensors through get(user, slot, name, t, optional) for every slot
 * with a name in names (vkf_arch_tensor_names_get of the descriptor in the loader's format); ties
 * the LM head. */
typedef vkf_status (*vkf_slot_get)(void *user, vkf_arch_t slot, const char *name, vkf_tensor *t,
                                   int optional);
vkf_status vkf_model_load_slots(vkf_model *m, const vkf_arch_tensor_names *names, vkf_slot_get get,
                                void *user);
/* Hyperparameters every RoPE decoder derives the same way, and the rotation tables
 * (rope_factors: head_dim/2 host values or NULL). */
vkf_status vkf_model_rope_tables(vkf_model *m, const float *rope_factors);
/* 1 when layer l uses the sliding window. */
int vkf_layer_swa(const vkf_hparams *hp, int l);

/* ------------------------------------------------------------------ weight upload
 * (model/weights.c) */

/* How a stored tensor becomes a backend tensor. */
typedef enum vkf_wkind {
    VKF_W_MATRIX = 0, /* 2-D [out, in] (or an embedding [n, d]) kept in its stored dtype */
    VKF_W_VECTOR,     /* 1-D [n], converted to F32 [1, n] */
    VKF_W_CONV1D,     /* HF Conv1D [in, out]: transposed on the host to [out, in], dtype kept */
} vkf_wkind;

/* Uploads rows x cols elements of dtype src_dtype from data, as described by kind. The stored
 * shape has already been checked by the caller. name goes into the tensor (error messages). */
vkf_status vkf_model_upload(vkf_model *m, vkf_tensor *t, const char *name, vkf_wkind kind,
                            vkf_dtype dtype, int64_t rows, int64_t cols, const void *data);
/* Brings the model file into memory (mapped, or read with no_mmap) as m->file, for a loader
 * whose weights may then be used in place by vkf_model_upload. */
vkf_status vkf_model_open_file(vkf_model *m, const char *path);
/* 1 when the backend can use weights where they lie in m->file (no copy): the CPU, unified-
 * memory devices with VK_EXT_external_memory_host; not with VKF_NO_IMPORT=1. */
int vkf_model_in_place_possible(const vkf_model *m);
/* Releases m->file unless a weight buffer uses it (then vkf_model_free does). */
void vkf_model_release_file(vkf_model *m);
/* VKF_ERROR_OUT_OF_MEMORY, before anything is allocated, when need more bytes do not fit the
 * device's memory (model/memory.c): "<path>: <what> needs X GiB, the device has Y; <advice>". */
vkf_status vkf_memory_check_fit(vkf_model *m, uint64_t need, const char *what, const char *advice);
/* Before a loader uploads anything (model/memory.c): the weights (data_bytes of them in the
 * file), the position tables of hp.n_ctx and, when a context was asked for (vkf_model_params.
 * n_ctx), one sequence's KV cache of it (vkf_model_params.cache_type_k / _v) must fit the backend.
 */
vkf_status vkf_model_check_load(vkf_model *m, uint64_t data_bytes);
/* The KV cache's dtype for a vkf_cache_type (a valid one), and its bytes for n_batch sequences of
 * n_ctx tokens, K in dtype k and V in v (with the encoder-decoder's cross-attention memory): the
 * one place that sizes it. */
vkf_dtype vkf_session_cache_dtype(const vkf_model *m, int32_t cache_type);
uint64_t vkf_kv_cache_bytes(const vkf_model *m, int32_t n_ctx, int32_t n_batch, vkf_dtype k,
                            vkf_dtype v);
/* VKF_OK when the model's architecture and every backend it runs on can keep a K cache of type
 * k and a V cache of type v; else the refusal, naming the type, the cache and why
 * (VKF_ERROR_INVALID_ARGUMENT for a value that is no vkf_cache_type, VKF_ERROR_UNSUPPORTED for
 * a type this model or device cannot use). who prefixes the message ("session_create"). */
vkf_status vkf_cache_types_check(const vkf_model *m, int32_t k, int32_t v, const char *who);
/* Uploads host F32 data [rows, cols] (tables the engine computes). Not counted as parameters. */
vkf_status vkf_model_upload_table(vkf_model *m, vkf_tensor *t, const char *name, int64_t rows,
                                  int64_t cols, const float *data);
/* Counts an aliased tensor (a tied LM head) once: nothing to do but mark it. */
int vkf_tensor_present(const vkf_tensor *t);

/* ------------------------------------------------------------------ sessions */

typedef enum vkf_sgraph_kind {
    VKF_SG_DECODER = 0, /* decoder-only forward, or the transformer decoder */
    VKF_SG_ENCODER,     /* transformer encoder + cross K/V for every decoder layer */
    VKF_SG_EMBED,       /* encoder-only forward of right-padded sequences (flags: vkf_pooling) */
} vkf_sgraph_kind;

#define VKF_SG_LAST_ONLY 1 /* decoder graph: the LM head runs on each sequence's last row only */
/* decoder-only graph, one token per sequence, each sequence at its own position (positions and
 * cache rows from the input tensors pos / kvrow: serve's continuous batching) */
#define VKF_SG_PERSEQ 2

/* One device's part of a split graph: its layers' nodes, its copies of the per-step inputs and
 * the residual stream crossing from the previous device (xin) and to the next one (xout). */
typedef struct vkf_sgpart {
    vkf_graph *g;
    vkf_backend *be;
    vkf_tensor lens, pos, kvrow; /* part 0: copies of the sgraph's own; others: this device's */
    vkf_tensor xin;              /* F32 IO [rows, d]: parts > 0 */
    vkf_tensor xout;             /* F32 IO [rows, d]: every part but the last */
} vkf_sgpart;

typedef struct vkf_sgraph {
    vkf_sgraph_kind kind;
    int32_t n;     /* tokens per sequence in one step */
    int32_t batch; /* sequences (decoder) or source sequences (encoder) */
    int32_t rep;   /* encoder: copies of each source's cross K/V (beam search), else 1 */
    int32_t flags; /* VKF_SG_* */
    vkf_graph *g;
    vkf_tensor ids; /* I32 [1, batch*n]: input tokens, rewritten before each compute */
    vkf_tensor
        lens;       /* I32 [1, batch]: key lengths of the (self-)attention, rewritten per compute */
    vkf_tensor out; /* F32: logits / log-probs [rows, n_vocab], or encoder memory [batch*n, d] */
    int32_t seq0;   /* first cache sequence the graph works on (vkf_session_seq_eval), else 0 */
    vkf_tensor pos; /* VKF_SG_PERSEQ: I32 [1, batch] position of each sequence's token */
    vkf_tensor kvrow; /* VKF_SG_PERSEQ: I32 [1, batch] cache row it is stored at */
    uint64_t last_use;
    /* layer split: n_parts (>= 2) graphs, one per device, run in order (g = part[0].g; ids on
     * device 0, out on the last); 0 without a split. xfer: host copy of the residual stream */
    int n_parts;
    int cur; /* while building: the part nodes are added to */
    vkf_sgpart part[VKF_MAX_DEVICES];
    float *xfer;
} vkf_sgraph;

#define VKF_SESSION_MAX_GRAPHS 8
/* Prompts longer than a session's max_chunk are evaluated in chunks, so one submission stays
 * bounded (GPU watchdogs end long submissions; docs/DESIGN.md, 'Lessons from the field') and the
 * abort callback is heard between them: by default the backend's ubatch_default
 * (graph/backend.h). */

struct vkf_session {
    vkf_model *m;
    int32_t n_ctx;     /* tokens per sequence in the KV cache */
    int32_t n_batch;   /* sequences */
    int32_t n_past;    /* tokens already in the cache (every sequence advances together) */
    int32_t max_chunk; /* longest step per graph compute: vkf_session_params.n_ubatch, else the
                          backend's ubatch_default (tests lower it) */
    int (*abort_cb)(void *user); /* vkf_session_params.abort_callback: heard before each pass */
    void *abort_user;
    vkf_tensor *kc, *vc; /* [n_layer]: [n_batch*n_ctx, n_kv_head*head_dim] self-attention caches */
    vkf_dtype cache_dtype_k, cache_dtype_v; /* of kc / vc (vkf_session_params.cache_type_k / _v) */
    /* encoder-decoder */
    vkf_tensor *xk, *xv; /* [n_layer]: [n_batch*n_src_max, d] cross-attention K/V of the memory */
    int32_t n_src_max;   /* rows per sequence in xk/xv: the model's n_ctx */
    vkf_tensor src_lens; /* I32 [1, n_batch]: valid source length per sequence */
    int32_t enc_slots;   /* sequences holding encoder memory (0: nothing encoded) */
    int32_t *host_lens;  /* [n_batch] scratch */
    vkf_sgraph graphs[VKF_SESSION_MAX_GRAPHS];
    int n_graphs;
    uint64_t clock;
    /* LoRA adapters applied by the decoder graphs (vkf_session_set_lora, model/lora.c): the
     * scales are in the graphs, so a new set drops the cached graphs */
    struct vkf_lora_use *lora;
    int n_lora;
};

/* Releases the session's cached graphs (rebuilt on next use): after its adapter set changed. */
void vkf_session_drop_graphs(vkf_session *s);

/* Graph builders (model/graph_*.c): fill sg->g, sg->ids, sg->lens, sg->out. */
vkf_status vkf_build_decoder_graph(vkf_session *s, vkf_sgraph *sg);
vkf_status vkf_build_encdec_decoder_graph(vkf_session *s, vkf_sgraph *sg);
vkf_status vkf_build_encoder_graph(vkf_session *s, vkf_sgraph *sg);
/* encoder-only (model/graph_encoder.c): sg->out is [batch, d] pooled (flags: the vkf_pooling),
 * or [batch * n, d] per token (VKF_POOLING_NONE) */
vkf_status vkf_build_embed_graph(vkf_session *s, vkf_sgraph *sg);
/* The session's cached graph of that shape (built on first use), and its computation; for
 * generate/embed.c. */
vkf_status vkf_session_graph(vkf_session *s, vkf_sgraph_kind kind, int32_t n, int32_t batch,
                             int32_t flags, vkf_sgraph **out);
vkf_status vkf_session_graph_compute(vkf_session *s, vkf_sgraph *sg);
/* Hugging Face encoder-only directory (model/load_hf_encoder.c): hyperparameters from
 * config.json (BERT's or nomic-bert's keys) and sentence-transformers' modules.json,
 * 1_Pooling/config.json and sentence_bert_config.json; cfg is the config.json. */
struct vkf_json_config;
vkf_status vkf_hf_encoder_config(vkf_model *m, const struct vkf_json_config *cfg, const char *dir);
/* The tokenizer of an HF encoder directory: tokenizer.json, else vocab.txt (+
 * tokenizer_config.json) */
vkf_status vkf_hf_encoder_tokenizer(vkf_model *m, const char *dir);

/* Batched internals (used by verify, translate and the public single-sequence calls). */

/* Decoder-only or transformer decoder: appends n tokens to each of `batch` sequences
 * (tokens[b*n + i]). key_lens: per sequence, the number of valid keys after this step (NULL:
 * n_past + n for all; teacher forcing with right padding passes the real lengths). out: NULL,
 * or rows*n_vocab floats (logits, or log-probs for the transformer), rows = batch*n, or batch
 * when last_only. */
vkf_status vkf_session_step(vkf_session *s, int32_t batch, int32_t n, const int32_t *tokens,
                            const int32_t *key_lens, int last_only, float *out);
/* Transformer encoder over `batch` right-padded sources of n tokens (src[b*n + j], valid
 * lengths src_lens[b]); stores rep copies of each source's cross K/V (slots b*rep .. b*rep+rep-1)
 * and resets the decoder (n_past = 0). mem_out: NULL or [batch, n, d] floats (after the final
 * encoder norm). */
vkf_status vkf_session_encode_batch(vkf_session *s, int32_t batch, int32_t n, const int32_t *src,
                                    const int32_t *src_lens, int32_t rep, float *mem_out);
/* Copies the self-attention caches of sequence from[j] to sequence j, for j < batch (beam
 * search reordering); rows [0, n_past). */
vkf_status vkf_session_reorder(vkf_session *s, int32_t batch, const int32_t *from);

/* Checks token ids against a vocabulary: VKF_ERROR_TOKEN naming the first bad one. */
vkf_status vkf_check_tokens(const int32_t *tokens, int64_t n, int32_t n_vocab, const char *what);

#endif
