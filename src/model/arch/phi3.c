/* phi3: fused Q|K|V and fused gate|up matrices, NEOX rope with LongRoPE factors (short, or long
 * when the context exceeds the original one) and attention factor; llama.cpp ignores its
 * sliding window. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_phi3 = {
    .name = "phi3",
    .hf_arch = {"Phi3ForCausalLM"},
    .rope_mode = VKF_ROPE_NEOX,
    .ffn = VKF_FFN_GLU_FUSED,
    .scale_q = 1,
    .ffn_act = VKF_UNARY_SILU,
    .tensors = (VKF_TS_CORE & ~(VKF_TS(VKF_T_ATTN_Q) | VKF_TS(VKF_T_ATTN_K) | VKF_TS(VKF_T_ATTN_V) |
                                VKF_TS(VKF_T_FFN_GATE))) |
               VKF_TS(VKF_T_ATTN_QKV) | VKF_TS(VKF_T_OUTPUT) | VKF_TS(VKF_T_ROPE_SHORT) |
               VKF_TS(VKF_T_ROPE_LONG),
    .optional = VKF_TS(VKF_T_OUTPUT) | VKF_TS(VKF_T_ROPE_SHORT) | VKF_TS(VKF_T_ROPE_LONG),
    .hf = {[VKF_T_FFN_UP] = "layers.%d.mlp.gate_up_proj.weight"},
};
