/* granitemoe: IBM Granite 3.x MoE (and Granite MoE Shared, the same llama.cpp architecture).
 * Granite's block and its four multipliers (granite.c: embedding_scale, residual_scale,
 * attention.scale, logit_scale) with every layer routed: softmax over the experts, top-k, the k
 * weights renormalised (llama.cpp's graph fixes that gating), experts of feed_forward_length;
 * a shared expert when the file has one (expert_shared_feed_forward_length and the
 * ffn_{gate,up,down}_shexp tensors), added to the routed output without a gate. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_granitemoe = {
    .name = "granitemoe",
    .ffn_act = VKF_UNARY_SILU,
    .granite_scales = 1,
    .moe = VKF_MOE_ALWAYS,
    .moe_norm_w = 1,
    .moe_gating = VKF_GATING_SOFTMAX,
    .tensors = (VKF_TS_CORE & ~VKF_TS_DENSE_FFN) | VKF_TS_MOE | VKF_TS_QKV_BIAS |
               VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_OUTPUT) | VKF_TS(VKF_T_ROPE_FREQS) |
               (VKF_TS_SHEXP & ~VKF_TS(VKF_T_FFN_GATE_INP_SHEXP)),
    .optional = VKF_TS_QKV_BIAS | VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_OUTPUT) |
                VKF_TS(VKF_T_ROPE_FREQS) | (VKF_TS_SHEXP & ~VKF_TS(VKF_T_FFN_GATE_INP_SHEXP)),
};
