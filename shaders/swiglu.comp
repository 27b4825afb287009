#version 450
/* SWIGLU: dst = silu(src0) * src1. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define HAS_B 1
#include "eltwise.glsl"
#include "math.glsl"

float vkf_apply(float x, float y) { return vkf_silu(x) * y; }
