/* bert: the BERT encoder (all-MiniLM, BGE, E5, sentence-transformers' BERT models). Learned
 * positions and token types added to the token embeddings, then a LayerNorm; per layer,
 * post-LN: x = LN(x + Wo attn(q, k, v)), x = LN(x + down(gelu(up x))), with biases everywhere
 * and the exact (erf) GELU of Hugging Face's "gelu". GGUF names and keys are llama.cpp's
 * (bert.pooling_type); HF BertModel checkpoints are stored with no prefix (sentence-transformers)
 * or under "bert." (BertForMaskedLM and friends). BertForSequenceClassification (cross-encoders)
 * adds the classifier head model/load_hf.c reads: bert.pooler.dense (dense + tanh on [CLS]) and
 * classifier (the scores), rank pooling. */
#include "graph/ops.h"
#include "model/arch.h"

#define E(x) "encoder.layer.%d." x
const vkf_arch_desc vkf_arch_bert = {
    .name = "bert",
    .hf_arch = {"BertModel", "BertForMaskedLM", "BertForSequenceClassification"},
    .norm = VKF_NORM_LAYER,
    .pos = VKF_POS_LEARNED,
    .ffn = VKF_FFN_PLAIN,
    .ffn_act = VKF_UNARY_GELU_ERF,
    .encoder = 1,
    .hf_prefix = {"", "bert."},
    .tensors = VKF_TS_ENCODER | VKF_TS(VKF_T_ATTN_Q) | VKF_TS(VKF_T_ATTN_K) | VKF_TS(VKF_T_ATTN_V) |
               VKF_TS_QKV_BIAS | VKF_TS(VKF_T_FFN_UP_B) | VKF_TS(VKF_T_FFN_DOWN_B) |
               VKF_TS(VKF_T_POS_EMBD),
    .optional = VKF_TS_QKV_BIAS | VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_FFN_UP_B) |
                VKF_TS(VKF_T_FFN_DOWN_B) | VKF_TS(VKF_T_TOKEN_TYPES),
    .gguf = {VKF_ARCH_ENCODER_GGUF_NORMS},
    /* HF: BERT's own names (the embedding norm and token types are the default table's) */
    .hf =
        {
            [VKF_T_ATTN_Q] = E("attention.self.query.weight"),
            [VKF_T_ATTN_Q_B] = E("attention.self.query.bias"),
            [VKF_T_ATTN_K] = E("attention.self.key.weight"),
            [VKF_T_ATTN_K_B] = E("attention.self.key.bias"),
            [VKF_T_ATTN_V] = E("attention.self.value.weight"),
            [VKF_T_ATTN_V_B] = E("attention.self.value.bias"),
            [VKF_T_ATTN_OUT] = E("attention.output.dense.weight"),
            [VKF_T_ATTN_OUT_B] = E("attention.output.dense.bias"),
            [VKF_T_ATTN_NORM] = E("attention.output.LayerNorm.weight"),
            [VKF_T_ATTN_NORM_B] = E("attention.output.LayerNorm.bias"),
            [VKF_T_FFN_UP] = E("intermediate.dense.weight"),
            [VKF_T_FFN_UP_B] = E("intermediate.dense.bias"),
            [VKF_T_FFN_DOWN] = E("output.dense.weight"),
            [VKF_T_FFN_DOWN_B] = E("output.dense.bias"),
            [VKF_T_FFN_NORM] = E("output.LayerNorm.weight"),
            [VKF_T_FFN_NORM_B] = E("output.LayerNorm.bias"),
            [VKF_T_TOK_EMBD] = "embeddings.word_embeddings.weight",
            [VKF_T_POS_EMBD] = "embeddings.position_embeddings.weight",
        },
};
#undef E
