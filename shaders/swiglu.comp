#version 450
/* SWIGLU: dst = silu(src0) * src1; GELU=1: GeGLU, gelu_tanh(src0) * src1. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define HAS_B 1
#include "eltwise.glsl"
#include "math.glsl"

#ifndef GELU
#define GELU 0
#endif

float vkf_apply(float x, float y) {
#if GELU
    return vkf_gelu_tanh(x) * y;
#else
    return vkf_silu(x) * y;
#endif
}
