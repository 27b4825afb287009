/* qwen2moe: Qwen2's block (q/k/v biases, NEOX rope) with a routed FFN (softmax, top-k, the
 * weights not renormalised) plus a shared expert whose output is scaled by
 * sigmoid(ffn_gate_inp_shexp · x); experts of expert_feed_forward_length (absent:
 * feed_forward_length / expert_used_count), the shared one of
 * expert_shared_feed_forward_length (absent: feed_forward_length). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_qwen2moe = {
    .name = "qwen2moe",
    .hf_arch = {"Qwen2MoeForCausalLM"},
    .rope_mode = VKF_ROPE_NEOX,
    .ffn_act = VKF_UNARY_SILU,
    .moe = VKF_MOE_ALWAYS,
    .moe_ff_per_k = 1,
    .tensors = (VKF_TS_CORE & ~VKF_TS_DENSE_FFN) | VKF_TS_MOE | VKF_TS_SHEXP | VKF_TS_QKV_BIAS |
               VKF_TS(VKF_T_OUTPUT),
    .optional = VKF_TS_QKV_BIAS,
};
