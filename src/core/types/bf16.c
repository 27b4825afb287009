/* BF16: the high half of an IEEE single, 2 bytes per element. */
#include "core/dtype.h"
#include "core/wtype.h"

VKF_WTYPE_HALF(vkf_bf16_to_f32, vkf_f32_to_bf16)

const vkf_wtype vkf_wtype_bf16 = {
    "BF16", 30, 1, 2, 1, 8, 0, {0, 0}, deq, dot, quant, 0, VKF_ACT_BF16, vkf_act_dot_bf16, 0, 0};
