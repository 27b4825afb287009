/* qwen2: Qwen2 / Qwen2.5. As llama with q/k/v biases, NEOX rope (halves), tied embeddings in
 * the small models. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_qwen2 = {
    .name = "qwen2",
    .hf_arch = {"Qwen2ForCausalLM"},
    .rope_mode = VKF_ROPE_NEOX,
    .ffn_act = VKF_UNARY_SILU,
    .tensors = VKF_TS_CORE | VKF_TS_QKV_BIAS | VKF_TS(VKF_T_OUTPUT),
    .optional = VKF_TS(VKF_T_OUTPUT),
};
