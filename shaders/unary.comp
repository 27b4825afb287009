#version 450
/* UNARY: dst = act(src0), ACT = vkf_unary (0 relu, 1 gelu erf, 2 gelu tanh, 3 silu, 4 sigmoid, 5 tanh). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "eltwise.glsl"
#include "math.glsl"

#ifndef ACT
#define ACT 0
#endif

float vkf_apply(float x, float y) {
#if ACT == 0
    return max(x, 0.0);
#elif ACT == 1
    return vkf_gelu_erf(x);
#elif ACT == 2
    return vkf_gelu_tanh(x);
#elif ACT == 3
    return vkf_silu(x);
#elif ACT == 4
    return vkf_sigmoid(x);
#else
    return vkf_tanh(x);
#endif
}
