/* gpt2: pre-LayerNorm decoder, learned absolute positions, fused QKV with biases, GELU FFN
 * (the HF activation_function; GGUF: the tanh form llama.cpp uses), tied LM head. HF stores
 * Conv1D weights [in, out] (load_gpt2.c transposes them). */
#include "graph/ops.h"
#include "model/arch.h"

#define G(x) "h.%d." x
const vkf_arch_desc vkf_arch_gpt2 = {
    .name = "gpt2",
    .hf_arch = {"GPT2LMHeadModel"},
    .norm = VKF_NORM_LAYER,
    .pos = VKF_POS_LEARNED,
    .ffn = VKF_FFN_PLAIN,
    .ffn_act = VKF_UNARY_GELU_TANH,
    .tensors = VKF_TS(VKF_T_ATTN_NORM) | VKF_TS(VKF_T_ATTN_NORM_B) | VKF_TS(VKF_T_ATTN_QKV) |
               VKF_TS(VKF_T_ATTN_QKV_B) | VKF_TS(VKF_T_ATTN_OUT) | VKF_TS(VKF_T_ATTN_OUT_B) |
               VKF_TS(VKF_T_FFN_NORM) | VKF_TS(VKF_T_FFN_NORM_B) | VKF_TS(VKF_T_FFN_UP) |
               VKF_TS(VKF_T_FFN_UP_B) | VKF_TS(VKF_T_FFN_DOWN) | VKF_TS(VKF_T_FFN_DOWN_B) |
               VKF_TS(VKF_T_TOK_EMBD) | VKF_TS(VKF_T_POS_EMBD) | VKF_TS(VKF_T_OUT_NORM) |
               VKF_TS(VKF_T_OUT_NORM_B) | VKF_TS(VKF_T_OUTPUT),
    .optional = VKF_TS(VKF_T_OUTPUT),
    /* GGUF: the default names; HF: GPT-2's own */
    .hf =
        {
            [VKF_T_ATTN_NORM] = G("ln_1.weight"),
            [VKF_T_ATTN_NORM_B] = G("ln_1.bias"),
            [VKF_T_ATTN_QKV] = G("attn.c_attn.weight"),
            [VKF_T_ATTN_QKV_B] = G("attn.c_attn.bias"),
            [VKF_T_ATTN_OUT] = G("attn.c_proj.weight"),
            [VKF_T_ATTN_OUT_B] = G("attn.c_proj.bias"),
            [VKF_T_FFN_NORM] = G("ln_2.weight"),
            [VKF_T_FFN_NORM_B] = G("ln_2.bias"),
            [VKF_T_FFN_UP] = G("mlp.c_fc.weight"),
            [VKF_T_FFN_UP_B] = G("mlp.c_fc.bias"),
            [VKF_T_FFN_DOWN] = G("mlp.c_proj.weight"),
            [VKF_T_FFN_DOWN_B] = G("mlp.c_proj.bias"),
            [VKF_T_TOK_EMBD] = "wte.weight",
            [VKF_T_POS_EMBD] = "wpe.weight",
            [VKF_T_OUT_NORM] = "ln_f.weight",
            [VKF_T_OUT_NORM_B] = "ln_f.bias",
        },
};
#undef G
