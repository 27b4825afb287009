/* bert: the BERT encoder (all-MiniLM, BGE, E5, sentence-transformers' BERT models). Learned
 * positions and token types added to the token embeddings, then a LayerNorm; per layer,
 * post-LN: x = LN(x + Wo attn(q, k, v)), x = LN(x + down(gelu(up x))), with biases everywhere
 * and the exact (erf) GELU of Hugging Face's "gelu". GGUF names and keys are llama.cpp's
 * (bert.pooling_type); HF BertModel checkpoints are stored with no prefix (sentence-transformers)
 * or under "bert." (BertForMaskedLM and friends). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_bert = {
    .name = "bert",
    .hf_arch = {"BertModel", "BertForMaskedLM"},
    .norm = VKF_NORM_LAYER,
    .pos = VKF_POS_LEARNED,
    .ffn = VKF_FFN_PLAIN,
    .ffn_act = VKF_UNARY_GELU_ERF,
    .encoder = 1,
    .hf_prefix = {"", "bert."},
    .gguf =
        {
            [VKF_T_ATTN_Q] = "blk.%d.attn_q.weight",
            [VKF_T_ATTN_Q_B] = "?blk.%d.attn_q.bias",
            [VKF_T_ATTN_K] = "blk.%d.attn_k.weight",
            [VKF_T_ATTN_K_B] = "?blk.%d.attn_k.bias",
            [VKF_T_ATTN_V] = "blk.%d.attn_v.weight",
            [VKF_T_ATTN_V_B] = "?blk.%d.attn_v.bias",
            [VKF_T_ATTN_OUT] = "blk.%d.attn_output.weight",
            [VKF_T_ATTN_OUT_B] = "?blk.%d.attn_output.bias",
            [VKF_T_ATTN_NORM] = "blk.%d.attn_output_norm.weight",
            [VKF_T_ATTN_NORM_B] = "blk.%d.attn_output_norm.bias",
            [VKF_T_FFN_UP] = "blk.%d.ffn_up.weight",
            [VKF_T_FFN_UP_B] = "?blk.%d.ffn_up.bias",
            [VKF_T_FFN_DOWN] = "blk.%d.ffn_down.weight",
            [VKF_T_FFN_DOWN_B] = "?blk.%d.ffn_down.bias",
            [VKF_T_FFN_NORM] = "blk.%d.layer_output_norm.weight",
            [VKF_T_FFN_NORM_B] = "blk.%d.layer_output_norm.bias",
            [VKF_T_TOK_EMBD] = "token_embd.weight",
            [VKF_T_POS_EMBD] = "position_embd.weight",
            [VKF_T_TOKEN_TYPES] = "?token_types.weight",
            [VKF_T_TOK_NORM] = "token_embd_norm.weight",
            [VKF_T_TOK_NORM_B] = "token_embd_norm.bias",
        },
    .hf =
        {
            [VKF_T_ATTN_Q] = "encoder.layer.%d.attention.self.query.weight",
            [VKF_T_ATTN_Q_B] = "?encoder.layer.%d.attention.self.query.bias",
            [VKF_T_ATTN_K] = "encoder.layer.%d.attention.self.key.weight",
            [VKF_T_ATTN_K_B] = "?encoder.layer.%d.attention.self.key.bias",
            [VKF_T_ATTN_V] = "encoder.layer.%d.attention.self.value.weight",
            [VKF_T_ATTN_V_B] = "?encoder.layer.%d.attention.self.value.bias",
            [VKF_T_ATTN_OUT] = "encoder.layer.%d.attention.output.dense.weight",
            [VKF_T_ATTN_OUT_B] = "?encoder.layer.%d.attention.output.dense.bias",
            [VKF_T_ATTN_NORM] = "encoder.layer.%d.attention.output.LayerNorm.weight",
            [VKF_T_ATTN_NORM_B] = "encoder.layer.%d.attention.output.LayerNorm.bias",
            [VKF_T_FFN_UP] = "encoder.layer.%d.intermediate.dense.weight",
            [VKF_T_FFN_UP_B] = "?encoder.layer.%d.intermediate.dense.bias",
            [VKF_T_FFN_DOWN] = "encoder.layer.%d.output.dense.weight",
            [VKF_T_FFN_DOWN_B] = "?encoder.layer.%d.output.dense.bias",
            [VKF_T_FFN_NORM] = "encoder.layer.%d.output.LayerNorm.weight",
            [VKF_T_FFN_NORM_B] = "encoder.layer.%d.output.LayerNorm.bias",
            [VKF_T_TOK_EMBD] = "embeddings.word_embeddings.weight",
            [VKF_T_POS_EMBD] = "embeddings.position_embeddings.weight",
            [VKF_T_TOKEN_TYPES] = "?embeddings.token_type_embeddings.weight",
            [VKF_T_TOK_NORM] = "embeddings.LayerNorm.weight",
            [VKF_T_TOK_NORM_B] = "embeddings.LayerNorm.bias",
        },
};
