/* qwen3: per-head RMSNorm of q and k before NEOX rope, head_dim from attention.key_length (n_head
 * * head_dim may differ from d_model), no biases. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_qwen3 = {
    .name = "qwen3",
    .hf_arch = {"Qwen3ForCausalLM"},
    .rope_mode = VKF_ROPE_NEOX,
    .ffn_act = VKF_UNARY_SILU,
    .tensors = VKF_TS_CORE | VKF_TS_QK_NORM | VKF_TS(VKF_T_OUTPUT),
    .optional = VKF_TS(VKF_T_OUTPUT),
};
