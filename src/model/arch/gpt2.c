/* gpt2: pre-LayerNorm decoder, learned absolute positions, fused QKV with biases, GELU FFN
 * (the HF activation_function; GGUF: the tanh form llama.cpp uses), tied LM head. HF stores
 * Conv1D weights [in, out] (load_gpt2.c transposes them). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_gpt2 = {
    .name = "gpt2",
    .hf_arch = {"GPT2LMHeadModel"},
    .norm = VKF_NORM_LAYER,
    .pos = VKF_POS_LEARNED,
    .ffn = VKF_FFN_PLAIN,
    .ffn_act = VKF_UNARY_GELU_TANH,
    .gguf =
        {
            [VKF_T_ATTN_NORM] = "blk.%d.attn_norm.weight",
            [VKF_T_ATTN_NORM_B] = "blk.%d.attn_norm.bias",
            [VKF_T_ATTN_QKV] = "blk.%d.attn_qkv.weight",
            [VKF_T_ATTN_QKV_B] = "blk.%d.attn_qkv.bias",
            [VKF_T_ATTN_OUT] = "blk.%d.attn_output.weight",
            [VKF_T_ATTN_OUT_B] = "blk.%d.attn_output.bias",
            [VKF_T_FFN_NORM] = "blk.%d.ffn_norm.weight",
            [VKF_T_FFN_NORM_B] = "blk.%d.ffn_norm.bias",
            [VKF_T_FFN_UP] = "blk.%d.ffn_up.weight",
            [VKF_T_FFN_UP_B] = "blk.%d.ffn_up.bias",
            [VKF_T_FFN_DOWN] = "blk.%d.ffn_down.weight",
            [VKF_T_FFN_DOWN_B] = "blk.%d.ffn_down.bias",
            [VKF_T_TOK_EMBD] = "token_embd.weight",
            [VKF_T_POS_EMBD] = "position_embd.weight",
            [VKF_T_OUT_NORM] = "output_norm.weight",
            [VKF_T_OUT_NORM_B] = "output_norm.bias",
            [VKF_T_OUTPUT] = "?output.weight",
        },
    .hf =
        {
            [VKF_T_ATTN_NORM] = "h.%d.ln_1.weight",
            [VKF_T_ATTN_NORM_B] = "h.%d.ln_1.bias",
            [VKF_T_ATTN_QKV] = "h.%d.attn.c_attn.weight",
            [VKF_T_ATTN_QKV_B] = "h.%d.attn.c_attn.bias",
            [VKF_T_ATTN_OUT] = "h.%d.attn.c_proj.weight",
            [VKF_T_ATTN_OUT_B] = "h.%d.attn.c_proj.bias",
            [VKF_T_FFN_NORM] = "h.%d.ln_2.weight",
            [VKF_T_FFN_NORM_B] = "h.%d.ln_2.bias",
            [VKF_T_FFN_UP] = "h.%d.mlp.c_fc.weight",
            [VKF_T_FFN_UP_B] = "h.%d.mlp.c_fc.bias",
            [VKF_T_FFN_DOWN] = "h.%d.mlp.c_proj.weight",
            [VKF_T_FFN_DOWN_B] = "h.%d.mlp.c_proj.bias",
            [VKF_T_TOK_EMBD] = "wte.weight",
            [VKF_T_POS_EMBD] = "wpe.weight",
            [VKF_T_OUT_NORM] = "ln_f.weight",
            [VKF_T_OUT_NORM_B] = "ln_f.bias",
            [VKF_T_OUTPUT] = "?lm_head.weight",
        },
};
