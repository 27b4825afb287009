/* smollm3: SmolLM3. Llama's block (RoPE on adjacent pairs in GGUF, HF checkpoints permuted at
 * load, SwiGLU, grouped-query attention, tied embeddings in the released models) with NoPE
 * layers: every fourth layer (il = 3, 7, 11, ...) attends without rotary positions. llama.cpp
 * fixes that step at 4 (no GGUF key); Hugging Face's config.json lists it as no_rope_layers. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_smollm3 = {
    .name = "smollm3",
    .hf_arch = {"SmolLM3ForCausalLM"},
    .ffn_act = VKF_UNARY_SILU,
    .nope_period = 4,
    .tensors = VKF_TS_CORE | VKF_TS_QKV_BIAS | VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_OUTPUT),
    .optional = VKF_TS_QKV_BIAS | VKF_TS(VKF_T_ATTN_OUT_B) | VKF_TS(VKF_T_OUTPUT),
};
