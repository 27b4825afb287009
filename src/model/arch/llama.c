/* llama: Llama-2/3.x, Mistral, SmolLM, TinyLlama. Pre-RMSNorm decoder, RoPE on adjacent pairs
 * (GGUF "normal" layout; HF checkpoints are permuted at load), SwiGLU FFN, grouped-query
 * attention; optional q/k/v/o biases; Llama-3.x rope_freqs.weight divides the frequencies.
 * Mixtral is this architecture with llama.expert_count > 0: a routed FFN in place of the dense
 * one (softmax, top-k, the weights renormalised; experts of feed_forward_length); from HF,
 * MixtralForCausalLM's block_sparse_moe (router "gate", experts w1 gate, w3 up, w2 down). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_llama = {
    .name = "llama",
    .hf_arch = {"LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM"},
    .ffn_act = VKF_UNARY_SILU,
    .moe = VKF_MOE_IF_COUNT,
    .moe_norm_w = 1,
    .tensors = VKF_TS_CORE | VKF_TS_MOE | VKF_TS_QKV_BIAS | VKF_TS(VKF_T_ATTN_OUT_B) |
               VKF_TS(VKF_T_OUTPUT) | VKF_TS(VKF_T_ROPE_FREQS),
    .optional = VKF_TS_QKV_BIAS | VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_OUTPUT) |
                VKF_TS(VKF_T_ROPE_FREQS),
    .hf =
        {
            [VKF_T_FFN_GATE_INP] = "layers.%d.block_sparse_moe.gate.weight",
            [VKF_T_FFN_GATE_EXPS] = "layers.%d.block_sparse_moe.experts.%%d.w1.weight",
            [VKF_T_FFN_UP_EXPS] = "layers.%d.block_sparse_moe.experts.%%d.w3.weight",
            [VKF_T_FFN_DOWN_EXPS] = "layers.%d.block_sparse_moe.experts.%%d.w2.weight",
        },
};
