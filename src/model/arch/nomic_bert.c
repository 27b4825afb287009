/* nomic-bert: nomic-embed-text v1 / v1.5 (GGUF, as llama.cpp's converter writes it). BERT's
 * post-LN encoder with rotary positions (NEOX halves) instead of learned ones, a fused qkv
 * matrix, no biases in attention or FFN, and a SwiGLU FFN: down(silu(gate x) * up x). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_nomic_bert = {
    .name = "nomic-bert",
    .norm = VKF_NORM_LAYER,
    .pos = VKF_POS_ROPE,
    .rope_mode = VKF_ROPE_NEOX,
    .ffn = VKF_FFN_GLU,
    .ffn_act = VKF_UNARY_SILU,
    .encoder = 1,
    .gguf =
        {
            [VKF_T_ATTN_QKV] = "blk.%d.attn_qkv.weight",
            [VKF_T_ATTN_QKV_B] = "?blk.%d.attn_qkv.bias",
            [VKF_T_ATTN_OUT] = "blk.%d.attn_output.weight",
            [VKF_T_ATTN_OUT_B] = "?blk.%d.attn_output.bias",
            [VKF_T_ATTN_NORM] = "blk.%d.attn_output_norm.weight",
            [VKF_T_ATTN_NORM_B] = "blk.%d.attn_output_norm.bias",
            [VKF_T_FFN_GATE] = "blk.%d.ffn_gate.weight",
            [VKF_T_FFN_UP] = "blk.%d.ffn_up.weight",
            [VKF_T_FFN_DOWN] = "blk.%d.ffn_down.weight",
            [VKF_T_FFN_NORM] = "blk.%d.layer_output_norm.weight",
            [VKF_T_FFN_NORM_B] = "blk.%d.layer_output_norm.bias",
            [VKF_T_TOK_EMBD] = "token_embd.weight",
            [VKF_T_TOKEN_TYPES] = "?token_types.weight",
            [VKF_T_TOK_NORM] = "token_embd_norm.weight",
            [VKF_T_TOK_NORM_B] = "token_embd_norm.bias",
        },
};
