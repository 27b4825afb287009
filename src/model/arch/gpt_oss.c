/* gpt-oss (OpenAI, llama.cpp's "gpt-oss"): q/k/v/o with biases (q/k/v optional, as llama.cpp
 * loads them), NEOX rope with YaRN scaling, a learned attention sink per head, sliding-window
 * attention on layers 0, 2, 4, ... (period 2), the pre-FFN norm named post_attention_norm, and
 * every layer routed: the router with a bias, top-k of its logits then a softmax over the k
 * (llama.cpp's graph fixes the gating whatever the file says), experts with biases and the
 * clamped SwiGLU swiglu_oai (alpha 1.702, limit 7). Its files carry MXFP4 experts. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_gpt_oss = {
    .name = "gpt-oss",
    .rope_mode = VKF_ROPE_NEOX,
    .ffn_act = VKF_UNARY_SILU,
    .swa_period = 2,
    .moe = VKF_MOE_ALWAYS,
    .moe_gating = VKF_GATING_SOFTMAX_WEIGHT,
    .moe_swiglu_oai = 1,
    .tensors = (VKF_TS_CORE & ~VKF_TS_DENSE_FFN) | VKF_TS_MOE | VKF_TS_MOE_BIAS | VKF_TS_QKV_BIAS |
               VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_ATTN_SINKS) | VKF_TS(VKF_T_OUTPUT),
    .optional = VKF_TS_QKV_BIAS,
    .gguf = {[VKF_T_FFN_NORM] = "blk.%d.post_attention_norm.weight"},
};
