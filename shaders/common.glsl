/* Shared by every kernel: device defines (with defaults so glslangValidator can check each
 * shader alone), the push-constant ABI, the dyn buffer, and small helpers.
 *
 * Device defines, set by the host from the device capabilities:
 *   VKF_HAS_SUBGROUP  1: subgroup basic+arithmetic ops are usable in compute shaders
 *   VKF_SUBGROUP_MIN  smallest subgroup size the device may use
 *   VKF_FP16          1: shaderFloat16 (kernels accumulate in f32 regardless: docs/DESIGN.md,
 *                     'Precision')
 *   VKF_MAX_SHARED    bytes of shared memory per workgroup */
#ifndef VKF_COMMON_GLSL
#define VKF_COMMON_GLSL

#ifndef VKF_HAS_SUBGROUP
#define VKF_HAS_SUBGROUP 0
#endif
#ifndef VKF_SUBGROUP_MIN
#define VKF_SUBGROUP_MIN 1
#endif
#ifndef VKF_FP16
#define VKF_FP16 0
#endif
#ifndef VKF_MAX_SHARED
#define VKF_MAX_SHARED 16384
#endif

#if VKF_HAS_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

#define VKF_GLSL 1
#include "vkf_abi.h"

/* binding 0 of every pipeline: the per-step values written by the host before each submit */
layout(set = 0, binding = 0) readonly buffer VkfDyn {
    int n_past;
} vkf_dyn;

#define VKF_NEG_INF uintBitsToFloat(0xff800000u)
#define VKF_POS_INF uintBitsToFloat(0x7f800000u)

#endif
