/* phi3: fused Q|K|V and fused gate|up matrices, NEOX rope with LongRoPE factors (short, or long
 * when the context exceeds the original one) and attention factor; llama.cpp ignores its
 * sliding window. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_phi3 = {
    .name = "phi3",
    .hf_arch = {"Phi3ForCausalLM"},
    .norm = VKF_NORM_RMS,
    .pos = VKF_POS_ROPE,
    .rope_mode = VKF_ROPE_NEOX,
    .ffn = VKF_FFN_GLU_FUSED,
    .ffn_act = VKF_UNARY_SILU,
    .gguf =
        {
            [VKF_T_ATTN_NORM] = "blk.%d.attn_norm.weight",
            [VKF_T_ATTN_QKV] = "blk.%d.attn_qkv.weight",
            [VKF_T_ATTN_OUT] = "blk.%d.attn_output.weight",
            [VKF_T_FFN_NORM] = "blk.%d.ffn_norm.weight",
            [VKF_T_FFN_UP] = "blk.%d.ffn_up.weight",
            [VKF_T_FFN_DOWN] = "blk.%d.ffn_down.weight",
            [VKF_T_TOK_EMBD] = "token_embd.weight",
            [VKF_T_OUT_NORM] = "output_norm.weight",
            [VKF_T_OUTPUT] = "?output.weight",
            [VKF_T_ROPE_SHORT] = "?rope_factors_short.weight",
            [VKF_T_ROPE_LONG] = "?rope_factors_long.weight",
        },
    .hf =
        {
            [VKF_T_ATTN_NORM] = "layers.%d.input_layernorm.weight",
            [VKF_T_ATTN_QKV] = "layers.%d.self_attn.qkv_proj.weight",
            [VKF_T_ATTN_OUT] = "layers.%d.self_attn.o_proj.weight",
            [VKF_T_FFN_NORM] = "layers.%d.post_attention_layernorm.weight",
            [VKF_T_FFN_UP] = "layers.%d.mlp.gate_up_proj.weight",
            [VKF_T_FFN_DOWN] = "layers.%d.mlp.down_proj.weight",
            [VKF_T_TOK_EMBD] = "embed_tokens.weight",
            [VKF_T_OUT_NORM] = "norm.weight",
            [VKF_T_OUTPUT] = "?lm_head.weight",
        },
};
