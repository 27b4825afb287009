/* olmoe: OLMoE, a llama block whose q and k RMSNorms span the whole projection (not per
 * head), NEOX rope, and a routed FFN (softmax, top-k, the weights not renormalised) of
 * feed_forward_length experts. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_olmoe = {
    .name = "olmoe",
    .hf_arch = {"OlmoeForCausalLM"},
    .rope_mode = VKF_ROPE_NEOX,
    .ffn_act = VKF_UNARY_SILU,
    .moe = VKF_MOE_ALWAYS,
    .qk_norm_full = 1,
    .tensors =
        (VKF_TS_CORE & ~VKF_TS_DENSE_FFN) | VKF_TS_MOE | VKF_TS_QK_NORM | VKF_TS(VKF_T_OUTPUT),
};
