#version 450
/* SWIGLU: dst = silu(src0) * src1; GELU=1: GeGLU, gelu_tanh(src0) * src1; OAI=1: gpt-oss's
 * swiglu_oai, x = min(src0, limit), y = clamp(src1, -limit, limit), x sigmoid(alpha x) (y + 1)
 * with alpha = p.scale, limit = p.cap. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define HAS_B 1
#include "eltwise.glsl"
#include "math.glsl"

#ifndef GELU
#define GELU 0
#endif
#ifndef OAI
#define OAI 0
#endif

float vkf_apply(float x, float y) {
#if OAI
    float g = min(x, p.cap);
    return g / (1.0 + exp(p.scale * -g)) * (clamp(y, -p.cap, p.cap) + 1.0);
#elif GELU
    return vkf_gelu_tanh(x) * y;
#else
    return vkf_silu(x) * y;
#endif
}
