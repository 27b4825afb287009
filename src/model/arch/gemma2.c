/* gemma2: embeddings x sqrt(d_model), RMSNorm with post-attention and post-FFN norms, GeGLU
 * (tanh GELU), attention-logit and final-logit soft-caps, sliding window on layers 0, 2, 4, ...
 * (llama.cpp's default period 2), NEOX rope, tied output. HF stores norm weights w - 1 (the
 * HF loader adds the 1). */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_gemma2 = {
    .name = "gemma2",
    .hf_arch = {"Gemma2ForCausalLM"},
    .norm = VKF_NORM_RMS,
    .pos = VKF_POS_ROPE,
    .rope_mode = VKF_ROPE_NEOX,
    .ffn = VKF_FFN_GLU,
    .ffn_act = VKF_UNARY_GELU_TANH,
    .post_norms = 1,
    .hf_norm_plus_one = 1,
    .scale_by_d_layers = 46, /* 27B */
    .emb_scale_sqrt_d = 1,
    .softcaps = 1,
    .swa_period = 2,
    .gguf =
        {
            [VKF_T_ATTN_NORM] = "blk.%d.attn_norm.weight",
            [VKF_T_ATTN_Q] = "blk.%d.attn_q.weight",
            [VKF_T_ATTN_K] = "blk.%d.attn_k.weight",
            [VKF_T_ATTN_V] = "blk.%d.attn_v.weight",
            [VKF_T_ATTN_OUT] = "blk.%d.attn_output.weight",
            [VKF_T_POST_ATTN_NORM] = "blk.%d.post_attention_norm.weight",
            [VKF_T_FFN_NORM] = "blk.%d.ffn_norm.weight",
            [VKF_T_FFN_GATE] = "blk.%d.ffn_gate.weight",
            [VKF_T_FFN_UP] = "blk.%d.ffn_up.weight",
            [VKF_T_FFN_DOWN] = "blk.%d.ffn_down.weight",
            [VKF_T_POST_FFN_NORM] = "blk.%d.post_ffw_norm.weight",
            [VKF_T_TOK_EMBD] = "token_embd.weight",
            [VKF_T_OUT_NORM] = "output_norm.weight",
        },
    .hf =
        {
            [VKF_T_ATTN_NORM] = "layers.%d.input_layernorm.weight",
            [VKF_T_ATTN_Q] = "layers.%d.self_attn.q_proj.weight",
            [VKF_T_ATTN_K] = "layers.%d.self_attn.k_proj.weight",
            [VKF_T_ATTN_V] = "layers.%d.self_attn.v_proj.weight",
            [VKF_T_ATTN_OUT] = "layers.%d.self_attn.o_proj.weight",
            [VKF_T_POST_ATTN_NORM] = "layers.%d.post_attention_layernorm.weight",
            [VKF_T_FFN_NORM] = "layers.%d.pre_feedforward_layernorm.weight",
            [VKF_T_FFN_GATE] = "layers.%d.mlp.gate_proj.weight",
            [VKF_T_FFN_UP] = "layers.%d.mlp.up_proj.weight",
            [VKF_T_FFN_DOWN] = "layers.%d.mlp.down_proj.weight",
            [VKF_T_POST_FFN_NORM] = "layers.%d.post_feedforward_layernorm.weight",
            [VKF_T_TOK_EMBD] = "embed_tokens.weight",
            [VKF_T_OUT_NORM] = "norm.weight",
        },
};
