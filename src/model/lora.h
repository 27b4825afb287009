/* LoRA adapters (model/lora.c): low-rank deltas of a model's matrices, applied in the graph as
 * llama.cpp's build_lora_mm does, W x + scale (B (A x)), or merged into the weights at load. */
#ifndef VKF_MODEL_LORA_H
#define VKF_MODEL_LORA_H

#include "model/build.h"
#include "model/model.h"

/* One adapted matrix: the model's weight and the pair that adapts it. */
typedef struct vkf_lora_pair {
    const vkf_tensor *base; /* the model's weight [out, in] (a field of m->w) */
    vkf_tensor a;           /* [r, in], the file's dtype */
    vkf_tensor b;           /* [out, r] */
    vkf_backend *be;        /* where a and b live: the base weight's device */
    char name[96];          /* the base tensor's GGUF name, "blk.0.attn_q.weight" */
} vkf_lora_pair;

struct vkf_lora {
    const vkf_model *m;
    char path[1024];
    float alpha;         /* adapter.lora.alpha (PEFT lora_alpha); 0: scale = the user's scale */
    char task_name[128]; /* adapter.lora.task_name ("" when absent: PEFT) */
    char prompt_prefix[1024]; /* adapter.lora.prompt_prefix */
    int n_pairs;
    vkf_lora_pair *pairs;
};

/* One adapter of a session's set and its user scale. */
typedef struct vkf_lora_use {
    const vkf_lora *a;
    float scale;
} vkf_lora_use;

/* The effective scale of a pair, llama.cpp's llama_adapter_lora_weight::get_scale: user_scale *
 * alpha / r (r: the rank, B's row length), or user_scale when alpha is 0. */
float vkf_lora_pair_scale(const vkf_lora *a, const vkf_lora_pair *p, float user_scale);

/* x · wᵀ (+ bias) plus, for each adapter of the set that adapts w, scale · (x · Aᵀ) · Bᵀ, in
 * llama.cpp's order (the base product, then each adapter's scaled delta added in set order). */
vkf_tensor *vkf_lora_matmul(vkf_gb *b, const vkf_lora_use *set, int n, vkf_tensor *x, vkf_tensor *w,
                            vkf_tensor *bias, const char *name);

/* 1 when an adapter of the builder's set (with a non-zero scale) adapts w. */
int vkf_lora_adapts(const vkf_gb *b, const vkf_tensor *w);

#endif
