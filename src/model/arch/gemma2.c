/* gemma2: embeddings x sqrt(d_model), RMSNorm with post-attention and post-FFN norms, GeGLU
 * (tanh GELU), attention-logit and final-logit soft-caps, sliding window on layers 0, 2, 4, ...
 * (llama.cpp's default period 2), NEOX rope, tied output. HF stores norm weights w - 1 (the
 * HF loader adds the 1). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_gemma2 = {
    .name = "gemma2",
    .hf_arch = {"Gemma2ForCausalLM"},
    VKF_ARCH_GEMMA,
    .scale_by_d_layers = 46, /* 27B */
    .softcaps = 1,
    .swa_period = 2,
    .tensors = VKF_TS_CORE | VKF_TS_POST_NORMS,
    .hf = {[VKF_T_FFN_NORM] = "layers.%d.pre_feedforward_layernorm.weight"},
};
