/* F16: IEEE half, 2 bytes per element. */
#include "core/dtype.h"
#include "core/wtype.h"

VKF_WTYPE_HALF(vkf_f16_to_f32, vkf_f32_to_f16)

const vkf_wtype vkf_wtype_f16 = {
    "F16", 1, 1, 2, 1, 8, 0, {0, 0}, deq, dot, quant, 0, VKF_ACT_F16, vkf_act_dot_f16, 0, 0};
