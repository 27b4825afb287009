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
    .tensors =
        VKF_TS_ENCODER | VKF_TS(VKF_T_ATTN_QKV) | VKF_TS(VKF_T_ATTN_QKV_B) | VKF_TS(VKF_T_FFN_GATE),
    .optional = VKF_TS(VKF_T_ATTN_QKV_B) | VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_TOKEN_TYPES),
    .gguf = {VKF_ARCH_ENCODER_GGUF_NORMS},
};
