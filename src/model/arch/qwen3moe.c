/* qwen3moe: Qwen3's block (per-head q/k RMSNorm, NEOX rope, no biases) with a routed FFN:
 * softmax over the experts, top-k, the k weights renormalised to sum 1; experts of
 * expert_feed_forward_length (absent: feed_forward_length / expert_used_count). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_qwen3moe = {
    .name = "qwen3moe",
    .hf_arch = {"Qwen3MoeForCausalLM"},
    .rope_mode = VKF_ROPE_NEOX,
    .ffn_act = VKF_UNARY_SILU,
    .moe = VKF_MOE_ALWAYS,
    .moe_norm_w = 1,
    .moe_ff_per_k = 1,
    .tensors =
        (VKF_TS_CORE & ~VKF_TS_DENSE_FFN) | VKF_TS_MOE | VKF_TS_QK_NORM | VKF_TS(VKF_T_OUTPUT),
    .optional = VKF_TS(VKF_T_OUTPUT),
};
