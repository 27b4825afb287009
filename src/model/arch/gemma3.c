/* gemma3 (text): as gemma2 without soft-caps, with per-head q/k RMSNorm, five local layers per
 * global one (llama.cpp's default period 6) and the local layers' own rope base
 * (rope.freq_base_swa) without the global layers' rope scaling. */
#include "graph/ops.h"
#include "model/arch.h"

const vkf_arch_desc vkf_arch_gemma3 = {
    .name = "gemma3",
    .hf_arch = {"Gemma3ForCausalLM"},
    VKF_ARCH_GEMMA,
    .scale_by_d_layers = 62, /* 27B */
    .swa_period = 6,
    .swa_rope_unscaled = 1,
    .tensors = VKF_TS_CORE | VKF_TS_QK_NORM | VKF_TS_POST_NORMS,
    .hf = {[VKF_T_FFN_NORM] = "layers.%d.pre_feedforward_layernorm.weight"},
};
