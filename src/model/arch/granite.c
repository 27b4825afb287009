/* granite: IBM Granite 3.x dense models. Llama's block (pre-RMSNorm, RoPE on adjacent pairs,
 * SwiGLU, grouped-query attention, optional biases) with four multipliers read from GGUF as
 * llama.cpp names them: {arch}.embedding_scale (embeddings times it), {arch}.residual_scale
 * (each attention and FFN output times it before the residual add), {arch}.attention.scale (the
 * softmax scale in place of 1/sqrt(head_dim)) and {arch}.logit_scale (the logits divided by it,
 * as llama.cpp does: times 1/logit_scale). The first three are optional (0: absent). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_granite = {
    .name = "granite",
    .ffn_act = VKF_UNARY_SILU,
    .granite_scales = 1,
    .tensors = VKF_TS_CORE | VKF_TS_QKV_BIAS | VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_OUTPUT) |
               VKF_TS(VKF_T_ROPE_FREQS),
    .optional = VKF_TS_QKV_BIAS | VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_OUTPUT) |
                VKF_TS(VKF_T_ROPE_FREQS),
};
